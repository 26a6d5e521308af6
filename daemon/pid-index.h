/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A pid -> entry index for tables that keep their entries dense in an
 * array (the applied table, the proc connector's record of forks). Pure:
 * no I/O, no logging. Open addressing with Fibonacci hashing (consecutive
 * pids spread), linear probing and backward-shift deletion, so a lookup
 * never walks tombstones. The index does not own the entries: key() tells
 * the pid of entry k.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef pid_t (*pid_index_key_t)(const void *entries, uint32_t k);

typedef struct PidIndex {
        uint32_t *slots; /* 0 = empty, else entry index + 1 */
        size_t n_slots;  /* a power of two, or 0 before the first resize */
        pid_index_key_t key;
} PidIndex;

#define PID_INDEX_MIN_SLOTS 16U

void pid_index_done(PidIndex *x);
/* Entry index + 1 of pid, 0 if it has none. */
uint32_t pid_index_get(const PidIndex *x, const void *entries, pid_t pid);
/*
 * Makes room for entry n (n entries there now), growing the index to keep
 * its load at most 3/4: 0 or -ENOMEM.
 */
int pid_index_reserve(PidIndex *x, const void *entries, size_t n);
/*
 * Appends a copy of e (size bytes) to the dense array *entries of *n entries
 * (room for *alloc, grown with array_grow()) and indexes it under its pid:
 * 0, or -ENOMEM with the table as it was.
 */
int pid_index_append(PidIndex *x, void **entries, size_t *alloc, size_t *n, const void *e, size_t size);
/* pid's entry is k from now on: a new one (after pid_index_reserve()), or one that moved. */
void pid_index_set(PidIndex *x, const void *entries, pid_t pid, uint32_t k);
/* pid leaves the index (its entry may then be moved or dropped). */
void pid_index_delete(PidIndex *x, const void *entries, pid_t pid);
/* After removals: halves the index while under 1/8 full (n entries); a failure keeps it as it is. */
void pid_index_shrink(PidIndex *x, const void *entries, size_t n);
