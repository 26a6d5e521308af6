/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The map of granted values that scx_latnice reads (include/latnice/granted.h):
 * opening its pin and keeping it equal to the applied table. A -util module:
 * the map comes in as an fd, nothing is logged, no globals.
 */
#pragma once

#include <stdint.h>

#include "applied.h"
#include "latnice/granted.h"

/* The key and value of an applied-table entry. */
void granted_entry(const AppliedProcess *e, struct latnice_granted_key *ret_key,
                   struct latnice_granted_value *ret_value);

/*
 * Opens the pinned map at path (BPF_OBJ_GET). -ENOENT: no scheduler pinned one (yet); -EPERM: the pin is
 * not root's (a map somebody else made must not be mistaken for it); -EPROTO: a map of another layout (an
 * older or newer scx_latnice). *ret_id: the map's id, which tells a map pinned anew from the one held.
 */
int granted_map_open(const char *path, int *ret_fd, uint32_t *ret_id);

/* Writes one entry's value (BPF_ANY); -E2BIG when the map is full. */
int granted_map_put(int fd, const AppliedProcess *e);
/* Removes one entry's key; 0 if it was not there. */
int granted_map_remove(int fd, const AppliedProcess *e);

typedef struct GrantedSync {
        unsigned n_written; /* entries of the table written */
        unsigned n_failed;  /* not written (the map is full); the first error is returned */
        unsigned n_stale;   /* keys in the map the table does not have: removed */
} GrantedSync;

/*
 * Makes the map equal to the table: keys the table does not have (or has with another value) are removed
 * or rewritten, every entry written. Entries are never removed before their new value is there, so a task
 * keeps its value throughout. 0, or the first error of a write.
 */
int granted_map_sync(int fd, AppliedTable *t, GrantedSync *ret);
