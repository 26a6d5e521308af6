/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Percentiles and drawing of log2 histograms: see stats-hist.h. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats-hist.h"

void stats_bucket_bounds(unsigned i, uint64_t *ret_lo, uint64_t *ret_hi) {
        const unsigned n_slots = LATNICE_STATS_SLOTS;

        *ret_lo = i == 0 ? 0 : UINT64_C(1) << i;
        *ret_hi = i + 1 >= n_slots ? UINT64_MAX : (UINT64_C(1) << (i + 1)) - 1;
}

double stats_percentile(const struct latnice_stats_hist *h, double p) {
        const __u64 *slots = h->slots;
        const unsigned n_slots = LATNICE_STATS_SLOTS;
        uint64_t total = 0, below = 0;
        double want;

        for (unsigned i = 0; i < n_slots; i++)
                total += slots[i];
        if (total == 0 || p <= 0)
                return 0;
        if (p > 100)
                p = 100;
        want = (double) total * p / 100.0;
        for (unsigned i = 0; i < n_slots; i++) {
                uint64_t lo, hi;
                double span;

                if (slots[i] == 0 || (double) (below + slots[i]) < want) {
                        below += slots[i];
                        continue;
                }
                stats_bucket_bounds(i, &lo, &hi);
                /* The open last bucket: its lower bound is all that is known. */
                if (hi == UINT64_MAX)
                        return (double) lo;
                span = (double) (hi + 1 - lo);
                return (double) lo + span * ((want - (double) below) / (double) slots[i]);
        }
        return 0; /* not reached: want <= total */
}

char *stats_hist_draw(const struct latnice_stats_hist *h, unsigned width) {
        const __u64 *slots = h->slots;
        const unsigned n_slots = LATNICE_STATS_SLOTS;
        uint64_t max = 0;
        unsigned last = 0, bar;
        char *buf = NULL;
        size_t size = 0;
        FILE *f;

        for (unsigned i = 0; i < n_slots; i++) {
                if (slots[i] > 0)
                        last = i;
                if (slots[i] > max)
                        max = slots[i];
        }
        if (max == 0)
                return strdup("");
        /* "%10llu -> %-10s : %-8llu |" is 37 columns, and the closing '|' one more. */
        bar = width >= 38 + 10 ? width - 38 : 10;
        f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        fprintf(f, "%10s%14s : %-8s %s\n", "usecs", "", "count", "distribution");
        for (unsigned i = 0; i <= last; i++) {
                uint64_t lo, hi;
                unsigned stars = (unsigned) ((slots[i] * bar + max - 1) / max);
                char hi_s[24];

                stats_bucket_bounds(i, &lo, &hi);
                if (hi == UINT64_MAX)
                        snprintf(hi_s, sizeof(hi_s), "...");
                else
                        snprintf(hi_s, sizeof(hi_s), "%llu", (unsigned long long) hi);
                fprintf(f, "%10llu -> %-10s : %-8llu |", (unsigned long long) lo, hi_s,
                        (unsigned long long) slots[i]);
                for (unsigned s = 0; s < bar; s++)
                        fputc(s < stars ? '*' : ' ', f);
                fputs("|\n", f);
        }
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}
