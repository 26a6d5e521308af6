/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pure half of the scheduler layer (see sched-map.h). */

#include <string.h>

#include "sched-map.h"
#include "string-table.h"

/* The kernel's sched_prio_to_weight[] (kernel/sched/core.c), nice -20..19. */
static const uint32_t prio_to_weight[LATNICE_WIDTH] = LATNICE_PRIO_TO_WEIGHT;

static const char * const backend_table[_BACKEND_MAX] = {
        [BACKEND_NONE] = "none",
        [BACKEND_LATENCY_NICE] = "latency-nice",
        [BACKEND_EEVDF_SLICE] = "eevdf-slice",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(backend, Backend);
DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(backend, Backend);

const char *sched_policy_to_string(unsigned policy) {
        switch (policy & ~(unsigned) LATNICE_SCHED_RESET_ON_FORK) {
        case LATNICE_SCHED_OTHER:
                return "other";
        case LATNICE_SCHED_FIFO:
                return "fifo";
        case LATNICE_SCHED_RR:
                return "rr";
        case LATNICE_SCHED_BATCH:
                return "batch";
        case LATNICE_SCHED_IDLE:
                return "idle";
        case LATNICE_SCHED_DEADLINE:
                return "deadline";
        case LATNICE_SCHED_EXT:
                return "ext";
        default:
                return "unknown";
        }
}

static uint64_t clamp_slice(uint64_t s) {
        if (s < LATNICE_SLICE_MIN_NS)
                return LATNICE_SLICE_MIN_NS;
        if (s > LATNICE_SLICE_MAX_NS)
                return LATNICE_SLICE_MAX_NS;
        return s;
}

uint64_t latnice_to_slice_ns(int latency_nice, uint64_t base_slice_ns) {
        if (latency_nice == 0 || base_slice_ns == 0)
                return 0;
        if (latency_nice < LATNICE_MIN)
                latency_nice = LATNICE_MIN;
        if (latency_nice > LATNICE_MAX)
                latency_nice = LATNICE_MAX;
        return latnice_slice_of_weight(base_slice_ns, prio_to_weight[LATNICE_TO_PRIO(latency_nice)]);
}

/* The slice ln stands for, with ln 0 as the default slice itself. */
static uint64_t effective_slice(int ln, uint64_t base) {
        return ln == 0 ? clamp_slice(base) : latnice_to_slice_ns(ln, base);
}

/* Is a/b (>= 1) closer to 1 than c/d (>= 1)? Both ratios of clamped slices (<= 1e8): no overflow. */
static int ratio_cmp(uint64_t a_hi, uint64_t a_lo, uint64_t b_hi, uint64_t b_lo) {
        unsigned __int128 l = (unsigned __int128) a_hi * b_lo, r = (unsigned __int128) b_hi * a_lo;

        return l < r ? -1 : l > r ? 1 : 0;
}

int latnice_from_slice_ns(uint64_t slice_ns, uint64_t base_slice_ns) {
        uint64_t best_hi = 0, best_lo = 1;
        int best = 0;
        bool have = false;

        if (slice_ns == 0 || base_slice_ns == 0)
                return 0;
        slice_ns = clamp_slice(slice_ns);
        /* Nearest on the geometric scale the weights form; ties (clamped
         * ranges) go to the value closest to 0, the weakest one that gives
         * this slice. Walk outwards from 0 so the first minimum wins. */
        for (int k = 0; k <= 2 * LATNICE_MAX + 1; k++) {
                int ln = (k % 2 == 0) ? k / 2 : -(k + 1) / 2;
                uint64_t s, hi, lo;

                if (!latnice_valid(ln))
                        continue;
                s = effective_slice(ln, base_slice_ns);
                hi = s > slice_ns ? s : slice_ns;
                lo = s > slice_ns ? slice_ns : s;
                if (!have || ratio_cmp(hi, lo, best_hi, best_lo) < 0) {
                        best = ln;
                        best_hi = hi;
                        best_lo = lo;
                        have = true;
                }
        }
        return best;
}

void latnice_range_from_slice_ns(uint64_t slice_ns, uint64_t base_slice_ns, int *ret_lo, int *ret_hi) {
        int ln = latnice_from_slice_ns(slice_ns, base_slice_ns), lo = ln, hi = ln;
        uint64_t s = effective_slice(ln, base_slice_ns);

        /* Clamping maps a run of values to one slice: report all of them. */
        if (slice_ns != 0 && base_slice_ns != 0 && s == clamp_slice(slice_ns)) {
                while (lo > LATNICE_MIN && effective_slice(lo - 1, base_slice_ns) == s)
                        lo--;
                while (hi < LATNICE_MAX && effective_slice(hi + 1, base_slice_ns) == s)
                        hi++;
        }
        *ret_lo = lo;
        *ret_hi = hi;
}
