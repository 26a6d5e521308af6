/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the in-kernel prefilter must let through for a RuleSet. For every
 * process rule one key the kernel can check cheaply is chosen (exact names
 * and "prefix*" globs of Comm=, of Exe='s file name, of Parent=, or User=/
 * Group= ids); keys are ANDed, so one such key suffices. A rule with none
 * widens the filter to everything (pass_all): the filter never drops a
 * possible match. Pure logic.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "rules.h"

typedef struct FilterName {
        char name[32];
        unsigned len;   /* bytes that must match */
        bool exact;     /* whole (NUL-padded) name, else a prefix of len bytes */
} FilterName;

typedef struct FilterSpec {
        bool pass_all;
        bool want_args;
        char *pass_all_reason;   /* which rule forced pass_all, for the log */
        FilterName *comm;
        size_t n_comm;
        FilterName *exe;         /* file name of the binary */
        size_t n_exe;
        FilterName *parent;
        size_t n_parent;
        char **users;            /* User= values (names or numbers) */
        char **groups;
        char **units;            /* Unit= patterns of rules that rely on the cgroup ancestry */
} FilterSpec;

void filter_spec_done(FilterSpec *f);
/* capacity: maximum entries per name map (beyond it: pass_all). */
int filter_spec_build(const RuleSet *s, size_t capacity, FilterSpec *ret);
