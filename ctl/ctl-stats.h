/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A statistics result of latniced (CollectStats, LastStats) as latnicectl reads it: see ctl-stats.c. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
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
/* status's lines about the last collection (free it); NULL if there was none. */
char *ctl_stats_status_text(const CtlStats *s);
/* status's "last_stats" with json: the p99 of each class; NULL (null) without a collection. */
json_object *ctl_stats_status_json(const CtlStats *s, bool json);
