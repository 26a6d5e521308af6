/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who is calling, and may they: the caller's identity for every method of
 * org.latnice1 (asked of the bus driver asynchronously, remembered per
 * unique name), and polkit checks for what needs authorization. Neither
 * ever blocks the loop: a call waits, pending, until the answer is in.
 * No logging; the caller's reply carries what went wrong.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

typedef struct BusCaller {
        uid_t uid; /* effective uid at connection time, as the bus vouches for it */
        pid_t pid; /* 0 if unknown */
} BusCaller;

typedef struct BusAuth BusAuth;

BusAuth *bus_auth_new(sd_bus *bus);
/* Fails the calls still waiting (they die with the connection anyway). */
BusAuth *bus_auth_free(BusAuth *a);

/*
 * Runs handler(call, caller, userdata) once the caller is known: at once
 * when it is (a cached unique name, or a direct connection's peer), else
 * after GetConnectionCredentials. A handler that returns < 0 or sets the
 * error gets that as the reply. Returns what a method handler returns.
 */
typedef int (*BusCallerHandler)(sd_bus_message *call, const BusCaller *caller, void *userdata, sd_bus_error *error);
int bus_auth_with_caller(BusAuth *a, sd_bus_message *call, BusCallerHandler handler, void *userdata,
                         sd_bus_error *error);

/*
 * Root: cont(call, data) now. Anybody else: polkit's CheckAuthorization of
 * action for the caller's bus name, and cont once it says yes; an error
 * reply otherwise. At most a few checks wait per uid: one user cannot
 * block the others. Takes ownership of data (free_data frees it).
 * details: NULL, or key, value, ..., NULL: what polkit rules read with
 * action.lookup(key) and the action's message shows as $(key).
 */
typedef int (*BusAuthContinuation)(sd_bus_message *call, void *data, sd_bus_error *error);
int bus_auth_polkit(BusAuth *a, sd_bus_message *call, const BusCaller *caller, const char *action,
                    const char *const *details, BusAuthContinuation cont, void *data, void (*free_data)(void *),
                    sd_bus_error *error);

/* Checks waiting for polkit, and identity lookups waiting for the bus (for tests and status). */
unsigned bus_auth_n_pending(const BusAuth *a);
