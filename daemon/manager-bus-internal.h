/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The bus layer's state and method handlers, shared by its files:
 * manager-bus.c (the vtable, properties, the connection, signals),
 * manager-bus-read.c (the methods that read) and manager-bus-change.c (the
 * methods that change things). Nothing else includes this.
 */
#pragma once

#include "bus-auth.h"
#include "manager.h"
#include "ratelimit.h"

/* CollectStats calls that wait for the collection under way; more get Busy. */
#define STATS_WAITERS_MAX 8

/*
 * GetTask of a process with many threads: the threads are read this many per turn of the loop, so that
 * execs, other callers and the watchdog go between (one walk of 10,000 threads in one dispatch stalled
 * everything for a quarter of a second). Walks in flight are bounded per user and in all; past a bound
 * the call is refused with LimitsExceeded, which names it.
 */
#define TASK_WALK_CHUNK 128
#define TASK_WALKS_PER_USER 2
#define TASK_WALKS_MAX 16

typedef struct TaskWalk TaskWalk;

/*
 * A CollectStats call waiting for the collection. Its caller's bus name is
 * tracked: a caller that hangs up frees its slot at once (not when the
 * collection ends), and a collection nobody waits for any more ends.
 */
typedef struct StatsWaiter {
        sd_bus_message *call;
        sd_bus_track *track;  /* NULL on a direct connection (no bus names) */
        sd_bus_slot *check;   /* NameHasOwner: the caller may have gone before the track's match was in */
} StatsWaiter;

typedef struct ManagerBus {
        sd_bus_slot *object_slot;
        sd_bus_slot *name_slot;
        BusAuth *auth;
        TokenBucket applied; /* for the Applied signal */
        StatsWaiter stats_waiters[STATS_WAITERS_MAX]; /* answered when the collection ends */
        unsigned n_stats_waiters;
        TaskWalk *walks[TASK_WALKS_MAX]; /* GetTask replies being filled in, a chunk per turn */
        unsigned n_walks;
} ManagerBus;

/* Drops the walks in flight (their callers get no answer: the connection is going). */
void manager_bus_walks_free(ManagerBus *b);
/* manager-bus-change.c: the waiters dropped unanswered (the bus is going). */
void manager_bus_stats_waiters_free(ManagerBus *b);

/* Every method learns its caller first; the argument decides pid or pidfd. */
#define CALLER_METHOD(name, impl, by_pidfd)                                                               \
        static int name##_caller(sd_bus_message *call, const BusCaller *c, void *userdata,                \
                                 sd_bus_error *error) {                                                   \
                return impl(userdata, call, c, by_pidfd, error);                                          \
        }                                                                                                 \
        int name(sd_bus_message *call, void *userdata, sd_bus_error *error) {                             \
                Manager *m = userdata;                                                                    \
                if (!m->bus_state || !m->bus_state->auth)                                                 \
                        return sd_bus_error_set(error, SD_BUS_ERROR_FAILED, "Not ready.");                \
                return bus_auth_with_caller(m->bus_state->auth, call, name##_caller, m, error);           \
        }

/* The vtable's methods. */
int method_get_task(sd_bus_message *call, void *userdata, sd_bus_error *error);
int method_get_task_by_pidfd(sd_bus_message *call, void *userdata, sd_bus_error *error);
int method_list_applied(sd_bus_message *call, void *userdata, sd_bus_error *error);
int method_explain(sd_bus_message *call, void *userdata, sd_bus_error *error);
int method_explain_by_pidfd(sd_bus_message *call, void *userdata, sd_bus_error *error);
int method_list_rules(sd_bus_message *call, void *userdata, sd_bus_error *error);
int method_list_profiles(sd_bus_message *call, void *userdata, sd_bus_error *error);
int method_reload(sd_bus_message *call, void *userdata, sd_bus_error *error);
int method_set_profile(sd_bus_message *call, void *userdata, sd_bus_error *error);
int method_set_latency_nice(sd_bus_message *call, void *userdata, sd_bus_error *error);
int method_set_latency_nice_by_pidfd(sd_bus_message *call, void *userdata, sd_bus_error *error);
int method_set_foreground(sd_bus_message *call, void *userdata, sd_bus_error *error);
int method_set_foreground_by_pidfd(sd_bus_message *call, void *userdata, sd_bus_error *error);
int method_end_foreground(sd_bus_message *call, void *userdata, sd_bus_error *error);
int method_collect_stats(sd_bus_message *call, void *userdata, sd_bus_error *error);
int method_get_last_stats(sd_bus_message *call, void *userdata, sd_bus_error *error);
