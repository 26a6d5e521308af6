/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The scheduler statistics program (daemon/bpf/stats.bpf.c) as an owned
 * object: loaded and attached by stats_bpf_new(), detached and unloaded by
 * stats_bpf_free(), so that nothing stays attached between collections.
 * No logging: failures come back as errno plus a sentence in *ret_reason.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "latnice/stats.h"

typedef struct StatsBpf StatsBpf;

typedef struct StatsBpfOptions {
        uint32_t n_classes;    /* 2..LATNICE_STATS_MAX_CLASSES, "everything else" included */
        size_t max_processes;  /* plain tracepoints: processes the class table holds */
        bool ns_translate;     /* latniced runs in a child pid namespace */
        uint64_t pidns_dev;
        uint64_t pidns_ino;
        bool force_tracepoint; /* skip tp_btf (testing the fallback) */
} StatsBpfOptions;

int stats_bpf_new(const StatsBpfOptions *o, StatsBpf **ret, char **ret_reason);
StatsBpf *stats_bpf_free(StatsBpf *b);
static inline void stats_bpf_freep(StatsBpf **b) {
        stats_bpf_free(*b);
}

/* "tp_btf" or "tracepoint": which hooks are attached. */
const char *stats_bpf_hook(const StatsBpf *b);

/*
 * Puts process pid (in latniced's pid namespace; pidfd pins it) in class
 * cls, or back in "everything else" with LATNICE_STATS_CLASS_OTHER.
 * 1: it was put in cls now; 0: it was there already (or left a class);
 * -ESRCH: it is gone.
 */
int stats_bpf_set_class(StatsBpf *b, pid_t pid, int pidfd, uint32_t cls);

/* The class's histogram, summed over CPUs. */
int stats_bpf_read(StatsBpf *b, uint32_t cls, struct latnice_stats_hist *ret);
/* Wakeups that found no room for their time. */
uint64_t stats_bpf_missed(StatsBpf *b);
