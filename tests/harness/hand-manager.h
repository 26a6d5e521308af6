/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A Manager built by hand for the unit tests of the daemon's modules (test-decide,
 * test-manager-sources), and the real child processes they decide: /proc, an applied table, an
 * event loop that runs only where a test runs it, this kernel's backend, rules from a text, and no
 * event source, bus, state file or units.
 */
#pragma once

#include <sys/types.h>

#include "manager.h"

/* Two rules: lnt-batchy gets 7, lnt-snappy -4; other names (lnt-plain) match nothing. */
extern const char hand_rules[];

/*
 * The Manager, or NULL after printing "SKIP: why" where it cannot decide real processes (not root,
 * no latency nice backend). what: who needs root, for that message. Children are killed at exit.
 */
Manager *hand_manager_new(const char *rules, const char *what);
/* Rules from text, which must load without errors. */
RuleSet *hand_rules_load(const char *name, const char *text);

/* A child named comm that waits to be killed; its pid. */
pid_t hand_child(const char *comm);
/* It renames itself (prctl), and has when this returns. */
void hand_child_rename(pid_t pid, const char *comm);
/* Killed and reaped: its pid is gone. */
void hand_child_kill(pid_t pid);
