/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The scheduler statistics that daemon/bpf/stats.bpf.c aggregates in the
 * kernel while latnicectl stats collects: per class (a rule that set the
 * task's value, or "everything else"), a log2 histogram of wakeup latency
 * in microseconds, as runqlat draws it, and the count of involuntary
 * preemptions. Shared by the BPF program, latniced and latnicectl.
 */
#pragma once

#ifndef __bpf__ /* BPF programs have them from daemon/bpf/kernel-types.h */
#include <linux/types.h>
#endif

/* Bucket i holds latencies of [2^i, 2^(i+1)) us; bucket 0 also holds 0 us. The last one is open. */
#define LATNICE_STATS_SLOTS 27

/*
 * Class 0 is "everything else": every task latniced did not set. Rules get
 * 1.. in the order they first applied during the collection; a rule beyond
 * the last class shares LATNICE_STATS_MAX_CLASSES - 1 ("more rules").
 */
#define LATNICE_STATS_CLASS_OTHER 0
#define LATNICE_STATS_MAX_CLASSES 64

struct latnice_stats_hist {
        __u64 slots[LATNICE_STATS_SLOTS];
        __u64 wakeups;     /* wakeups measured: the sum of slots, counted on its own */
        __u64 total_ns;    /* their summed latency */
        __u64 max_ns;
        __u64 preemptions; /* switched out while still runnable */
};

/* The seconds one collection may last (CollectStats). */
#define LATNICE_STATS_MIN_SEC 1
#define LATNICE_STATS_MAX_SEC 60

/* CollectStats's class flags. */
#define LATNICE_STATS_F_OTHER 0x1        /* the comparison class: tasks latniced did not set */
#define LATNICE_STATS_F_RULE_REMOVED 0x2 /* the rule was gone when the collection ended */
#define LATNICE_STATS_F_MORE_RULES 0x4   /* the shared class of rules beyond the last one */
