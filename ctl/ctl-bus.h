/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * latnicectl's side of org.latnice1: the connection, the polkit agent for a
 * terminal, and method calls that turn a failure into a message and an exit
 * status, so that each verb is its reply and its output.
 */
#pragma once

#include <inttypes.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "ctl-table.h"
#include "util.h"

/*
 * The system bus if latniced owns its name: 0 and *ret; < 0 and *ret_why
 * (free it; NULL: not wanted) if not. Quiet: the caller decides whether
 * that is an error or a reason to fall back.
 */
int ctl_bus_connect(sd_bus **ret, char **ret_why);
/* The same for the verbs that need latniced: says why not, CTL_EXIT_FAILURE. */
int ctl_bus_connect_or_fail(sd_bus **ret);

/* A text polkit agent on this terminal around a privileged call; 0 when none is needed or possible. */
pid_t ctl_polkit_agent_open(void);
void ctl_polkit_agent_close(pid_t pid);

/*
 * Calls METHOD of org.latnice1.Manager for a process, through its pidfd
 * variant ("<method>ByPIDFD") where a pidfd opens, so latniced acts on the
 * very process named even if its pid is reused meanwhile. value NULL: the
 * method takes none.
 */
int ctl_bus_call_for_pid(sd_bus *bus, const char *method, pid_t pid, const int32_t *value, sd_bus_error *error,
                         sd_bus_message **reply);

/*
 * The calls of the verbs: CTL_EXIT_OK, or they print "Failed to WHAT: why"
 * and return the exit status the error maps to. WHAT is a verb phrase
 * ("list the rules"); ctl_call_for_pid() says "Failed to WHAT PID N: why".
 */
int ctl_call(sd_bus *bus, const char *interface, const char *method, const char *what, sd_bus_message **reply,
             const char *types, ...);
int ctl_call_for_pid(sd_bus *bus, const char *method, pid_t pid, const int32_t *value, const char *what,
                     sd_bus_message **reply);
/*
 * A property of latniced and where it goes: a field at offset of the
 * caller's struct, read as its basic type (char * for "s", char ** for
 * "as") or, for a container, by read.
 */
typedef struct CtlProperty {
        const char *name;
        const char *signature;
        int (*read)(sd_bus_message *m, void *field);
        size_t offset;
} CtlProperty;

/*
 * The reply of Properties.GetAll into the fields of userdata. Properties
 * not in map (a newer latniced) or of another type are skipped.
 */
int ctl_bus_read_properties(sd_bus_message *reply, const CtlProperty *map, size_t n, void *userdata);
/* Frees what ctl_bus_read_properties() put in userdata's fields; those with their own read are the caller's. */
void ctl_bus_properties_done(const CtlProperty *map, size_t n, void *userdata);

/*
 * A rule as latniced names it in its replies ("sssui": kind, name, file,
 * line, latency nice), valid while the reply is. In a table it is the
 * columns CTL_RULE_COLUMNS, filled by ctl_table_add_rule(); in a sentence
 * CTL_RULE_FORMAT_STR with CTL_RULE_FORMAT_VAL(), as sd-id128's macros.
 */
typedef struct CtlRule {
        const char *kind, *name, *file;
        uint32_t line;
        int32_t value;
} CtlRule;

#define CTL_RULE_COLUMNS                \
        { NULL, "kind", TABLE_STRING }, \
        { NULL, "name", TABLE_STRING }, \
        { NULL, "file", TABLE_STRING }, \
        { NULL, "line", TABLE_UINT },   \
        { NULL, "latency_nice", TABLE_INT }
void ctl_table_add_rule(Table *t, const CtlRule *rule);

/* "[Process game] /etc/latnice.d/50-games.conf:3 -> LatencyNice=-10" */
#define CTL_RULE_FORMAT_STR "[%s %s] %s:%" PRIu32 " -> LatencyNice=%" PRIi32
#define CTL_RULE_FORMAT_VAL(r) (r).kind, (r).name, (r).file, (r).line, (r).value

/* A reply that does not read as documented (or no memory to read it): says so, CTL_EXIT_FAILURE. */
int ctl_bad_reply(int r);
/* table_print(): CTL_EXIT_OK, or it says why the table did not reach standard output, CTL_EXIT_FAILURE. */
int ctl_table_print(Table *t);
