/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Scheduler statistics for latnicectl stats: one collection at a time, for
 * a bounded time. While it runs the stats BPF program is attached
 * (stats-bpf.c) and every process latniced gave a value is in its rule's
 * class, kept current as latniced applies and forgets values; at the end
 * the histograms are read, the program is detached and the stats_done hook
 * (the bus layer) gets the result. The last result is kept for status.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "latnice/stats.h"
#include "manager.h"

typedef struct StatsClassResult {
        char *name;        /* the rule's name, "" for everything else */
        uint32_t flags;    /* LATNICE_STATS_F_* */
        uint32_t processes; /* processes that were in the class during the collection */
        struct latnice_stats_hist hist;
} StatsClassResult;

typedef struct StatsResult {
        uint64_t finished_usec;  /* CLOCK_REALTIME */
        uint64_t duration_usec;  /* what was measured */
        char *hook;              /* "tp_btf" or "tracepoint" */
        char *note;              /* what the numbers mean here (a scheduler note), "" if nothing to add */
        uint64_t missed;         /* wakeups that found no room for their time */
        StatsClassResult *classes;
        size_t n_classes;        /* the comparison class is last */
} StatsResult;

StatsResult *stats_result_free(StatsResult *result);
static inline void stats_result_freep(StatsResult **result) {
        stats_result_free(*result);
}

/*
 * Starts a collection of duration_usec. -EBUSY while one runs; other errors
 * (the program cannot attach) with a sentence in *ret_reason.
 */
int manager_stats_start(Manager *m, uint64_t duration_usec, char **ret_reason);
bool manager_stats_running(const Manager *m);
/* When the running collection ends (CLOCK_MONOTONIC usec), 0 if none runs. */
uint64_t manager_stats_deadline(const Manager *m);
const StatsResult *manager_stats_last(const Manager *m);

/* manager-decide.c: an entry of the applied table was put or changed its rule; a process was forgotten. */
void manager_stats_on_record(Manager *m, const AppliedProcess *e);
void manager_stats_on_forget(Manager *m, pid_t pid);

/* The callers that asked went away: the running collection ends now, without a result (nobody to tell). */
void manager_stats_cancel(Manager *m);

/* latniced stops: a running collection is dropped (its program detached). */
void manager_stats_free(Manager *m);
