/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The shapes of org.latnice1's replies, shared by the bus files: strings
 * that processes chose, escaped to valid UTF-8; a rule; a rule's keys; a
 * task; a statistics result. Each returns what sd_bus_message_append()
 * does.
 */
#pragma once

#include <systemd/sd-bus.h>

#include "manager-stats.h"
#include "match.h"
#include "rules.h"

/*
 * Escaped copies of strings for one append: valid UTF-8 whatever a process
 * named itself. One BusEsc holds BUS_ESC_MAX copies, more than any one append
 * below takes (Explain's task has 9); a copy beyond that, or one that
 * cannot be made, gives "" and makes bus_bus_esc_done() fail the append, so that
 * nothing is sent with a string silently missing.
 */
#define BUS_ESC_MAX 16

typedef struct BusEsc {
        char *bufs[BUS_ESC_MAX];
        unsigned n;
        int error;
} BusEsc;

const char *bus_esc(BusEsc *e, const char *s);
/* Frees the copies; returns r, or the error of a copy that was not made. */
int bus_esc_done(BusEsc *e, int r);

/* One string, escaped. */
int bus_append_str(sd_bus_message *m, const char *s);
/* (sssui): kind, name, file, line, latency nice; empty for none. */
int bus_append_rule(sd_bus_message *reply, const Rule *rule);
/* as: the rule's keys, "Comm=a b*" (rule_format_key()); empty for none. */
int bus_append_rule_keys(sd_bus_message *reply, const Rule *rule);
/* a{ss}: what Explain says of a task (pid, comm, exe, cmdline, ancestors, user, cgroup, unit, ...). */
int bus_append_task(sd_bus_message *reply, const TaskInfo *t);
/* (tt ss t a(suuttttat)): finished (realtime usec), duration, hook, note, missed wakeups, classes. */
int bus_append_stats_result(sd_bus_message *reply, const StatsResult *result);
