/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A statistics result of latniced (CollectStats, LastStats) as latnicectl reads it: see ctl-stats.c. */
#pragma once

#include <stdint.h>
#include <systemd/sd-bus.h>

#include "latnice/stats.h"

typedef struct CtlStatsClass {
        char *name;
        uint32_t flags, processes;
        struct latnice_stats_hist hist;
} CtlStatsClass;

typedef struct CtlStats {
        uint64_t finished_usec, duration_usec, missed;
        char *hook, *note;
        CtlStatsClass *classes;
        size_t n_classes;
} CtlStats;

/* Reads "ttssta(suuttttat)" (the fields, not a struct around them). */
int ctl_stats_read(sd_bus_message *m, CtlStats *ret);
void ctl_stats_done(CtlStats *s);
/* status's lines about the last collection; nothing if there was none. */
void ctl_stats_status(const CtlStats *s);
/* ,"last_stats":{...} for status --json: the p99 of each class, null without a collection. */
void ctl_stats_status_json(const CtlStats *s);
