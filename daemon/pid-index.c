/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pid -> entry index of the daemon's tables (see pid-index.h). */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pid-index.h"
#include "util.h"

static size_t home_of(const PidIndex *x, pid_t pid) {
        return (size_t) (((uint32_t) pid * 2654435769U) & (uint32_t) (x->n_slots - 1));
}

/* The slot holding pid, or the empty slot where it would go. */
static size_t find_slot(const PidIndex *x, const void *entries, pid_t pid) {
        size_t i = home_of(x, pid);

        while (x->slots[i] != 0 && x->key(entries, x->slots[i] - 1) != pid)
                i = (i + 1) & (x->n_slots - 1);
        return i;
}

void pid_index_done(PidIndex *x) {
        free(x->slots);
        x->slots = NULL;
        x->n_slots = 0;
}

uint32_t pid_index_get(const PidIndex *x, const void *entries, pid_t pid) {
        if (x->n_slots == 0 || pid <= 0)
                return 0;
        return x->slots[find_slot(x, entries, pid)];
}

static int rehash(PidIndex *x, const void *entries, size_t n, size_t n_slots) {
        uint32_t *slots = calloc(n_slots, sizeof(uint32_t));

        if (!slots)
                return -ENOMEM;
        free(x->slots);
        x->slots = slots;
        x->n_slots = n_slots;
        for (size_t k = 0; k < n; k++)
                x->slots[find_slot(x, entries, x->key(entries, (uint32_t) k))] = (uint32_t) (k + 1);
        return 0;
}

int pid_index_reserve(PidIndex *x, const void *entries, size_t n) {
        if ((n + 1) * 4 <= x->n_slots * 3)
                return 0;
        return rehash(x, entries, n, x->n_slots ? x->n_slots * 2 : PID_INDEX_MIN_SLOTS);
}

int pid_index_append(PidIndex *x, void **entries, size_t *alloc, size_t *n, const void *e, size_t size) {
        int r;

        r = pid_index_reserve(x, *entries, *n);
        if (r < 0)
                return r;
        r = array_grow(entries, alloc, *n, size);
        if (r < 0)
                return r;
        memcpy((char *) *entries + *n * size, e, size);
        pid_index_set(x, *entries, x->key(*entries, (uint32_t) *n), (uint32_t) *n);
        (*n)++;
        return 0;
}

void pid_index_set(PidIndex *x, const void *entries, pid_t pid, uint32_t k) {
        x->slots[find_slot(x, entries, pid)] = k + 1;
}

void pid_index_delete(PidIndex *x, const void *entries, pid_t pid) {
        size_t i, j;

        if (x->n_slots == 0 || pid <= 0)
                return;
        i = find_slot(x, entries, pid);
        if (x->slots[i] == 0)
                return;
        /* Backward-shift deletion: pull later members of the probe run into the hole unless they
         * already sit at or after their home. */
        x->slots[i] = 0;
        for (j = (i + 1) & (x->n_slots - 1); x->slots[j] != 0; j = (j + 1) & (x->n_slots - 1)) {
                size_t home = home_of(x, x->key(entries, x->slots[j] - 1));

                /* Is home cyclically in (i, j]? Then it stays. */
                if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
                        continue;
                x->slots[i] = x->slots[j];
                x->slots[j] = 0;
                i = j;
        }
}

void pid_index_shrink(PidIndex *x, const void *entries, size_t n) {
        if (x->n_slots > PID_INDEX_MIN_SLOTS && n * 8 < x->n_slots)
                (void) rehash(x, entries, n, x->n_slots / 2);
}
