/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one latency-nice <-> slice mapping (DESIGN.md), in a form every side
 * can include: latniced and latnicectl (daemon/sched-map.c), the in-kernel
 * EEVDF variant's description (kernel/README.md) and the BPF scheduler
 * (scheduler/scx_latnice.bpf.c), which must not pull in libc headers. So:
 * no includes, plain C types, integer arithmetic only.
 *
 *     slice(ln) = clamp(base * 1024 / weight(ln), 0.1 ms, 100 ms)
 *
 * weight() is the kernel's sched_prio_to_weight[] (kernel/sched/core.c),
 * 1024 at 0; base is the default slice. ln 0 means "no custom slice".
 */
#pragma once

#define LATNICE_MIN (-20)
#define LATNICE_MAX 19
#define LATNICE_DEFAULT 0
#define LATNICE_WIDTH 40

/* cgroup v1 "cpu.latency" takes the latency priority: nice + 20, 0..39. */
#define LATNICE_TO_PRIO(ln) ((ln) + 20)
#define LATNICE_FROM_PRIO(p) ((p) - 20)

/* Mainline clamps a custom slice to [0.1 ms, 100 ms]. */
#define LATNICE_SLICE_MIN_NS 100000ULL
#define LATNICE_SLICE_MAX_NS 100000000ULL

/* sched_prio_to_weight[], nice -20..19, as an initializer. */
#define LATNICE_PRIO_TO_WEIGHT                                  \
        {                                                       \
                /* -20 */ 88761, 71755, 56483, 46273, 36291,    \
                /* -15 */ 29154, 23254, 18705, 14949, 11916,    \
                /* -10 */ 9548,  7620,  6100,  4904,  3906,     \
                /*  -5 */ 3121,  2501,  1991,  1586,  1277,     \
                /*   0 */ 1024,  820,   655,   526,   423,      \
                /*   5 */ 335,   272,   215,   172,   137,      \
                /*  10 */ 110,   87,    70,    56,    45,       \
                /*  15 */ 36,    29,    23,    18,    15,       \
        }

/* clamp(base * 1024 / weight): the slice of a value whose weight is w (base is at most a few 100 ms:
 * base * 1024 cannot overflow). */
static inline unsigned long long latnice_slice_of_weight(unsigned long long base_ns, unsigned w) {
        unsigned long long s = w ? base_ns * 1024 / w : LATNICE_SLICE_MAX_NS;

        return s < LATNICE_SLICE_MIN_NS ? LATNICE_SLICE_MIN_NS : s > LATNICE_SLICE_MAX_NS ? LATNICE_SLICE_MAX_NS : s;
}
