/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The foreground boost's decisions, apart from the daemon: which processes
 * the focused one stands for (its user unit, or its process tree), and
 * whether one of them gets the boost. A pure module: no I/O (the listings
 * are foreground-util.h's), no logging, no state.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* [Foreground] Cover=: what the focused process stands for. */
typedef enum ForegroundCover {
        FOREGROUND_COVER_UNIT, /* its user unit (app scope or service) when it has one, else its tree */
        FOREGROUND_COVER_TREE, /* the process and its descendants */
        _FOREGROUND_COVER_MAX,
        _FOREGROUND_COVER_INVALID = -EINVAL,
} ForegroundCover;

const char *foreground_cover_to_string(ForegroundCover c);
ForegroundCover foreground_cover_from_string(const char *s);

/* Processes one boost covers at most: a focused shell with a big build under it stays cheap. */
#define FOREGROUND_MAX_PROCESSES 256

/* What latniced knows about one process that a boost would cover. */
typedef struct ForegroundView {
        bool realtime;   /* SCHED_FIFO/RR/DEADLINE: latency nice means nothing */
        bool has_value;  /* its value is not the default */
        int value;       /* its latency nice */
        bool ours;       /* latniced set that value (a rule, or a boost) */
        bool manual;     /* set through SetLatencyNice: somebody's explicit choice */
        bool boosted;    /* it already carries the foreground boost */
        bool rule;       /* ours, from a rule (not a boost, not SetLatencyNice) */
        bool focused;    /* the focused process itself, not one that it stands for */
} ForegroundView;

typedef enum ForegroundAction {
        FOREGROUND_BOOST,         /* give it the boost */
        FOREGROUND_KEEP,          /* it has it already */
        FOREGROUND_LEAVE_REALTIME,
        FOREGROUND_LEAVE_FOREIGN, /* a value latniced did not set */
        FOREGROUND_LEAVE_MANUAL,  /* a SetLatencyNice choice */
        FOREGROUND_LEAVE_BETTER,  /* already at the boost or lower (a rule's value): a boost never makes it worse */
        FOREGROUND_LEAVE_RULE,    /* a rule's value above the default (batch work) on a process the focused one
                                   * stands for: a build started in a focused terminal stays what its rule says */
} ForegroundAction;

ForegroundAction foreground_decide(const ForegroundView *v, int boost);

/*
 * Is cgroup (a unified-hierarchy path) a unit of uid's systemd user manager
 * that stands for one application: an app scope or service below
 * user@UID.service, not the manager itself, a slice or a session scope?
 * Then the unit is what Cover=unit boosts. The unit's own cgroup path (the
 * leaf up to its .scope/.service component) goes to ret_unit.
 */
bool foreground_user_unit(const char *cgroup, uid_t uid, char *ret_unit, size_t size);
