/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the in-kernel prefilter must let through for a RuleSet. For every
 * process rule one key the kernel can check cheaply is chosen (names of
 * Comm=, of Exe='s file name, of Parent=, exact names of Ancestor=, or
 * User=/Group= ids, Unit=);
 * keys are ANDed, so one such key suffices. A glob is narrowed to what the
 * kernel can check, its literal start ("Foo[Steam].exe" lets "Foo..."
 * through) or, for an Exe= path glob, a literal file name; user space
 * decides the rest. Only a rule with nothing the kernel can check widens
 * the filter to everything (pass_all): the filter never drops a possible
 * match. Pure logic.
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
        bool want_renames;       /* some process rule has Comm=: a rename after exec can change a decision */
        bool renames_all;        /* one has a Comm= the comm names cannot express: every rename passes */
        bool want_thread_renames; /* some process rule has Thread=: renames of other threads than the main one
                                   * pass when the new or the old name is in the comm names (which hold Thread='s) */
        bool thread_renames_all;  /* one has a Thread= the comm names cannot express: every thread rename passes */
        char *pass_all_reason;   /* which rule forced pass_all, for the log */
        FilterName *comm;
        size_t n_comm;
        FilterName *exe;         /* file name of the binary */
        size_t n_exe;
        FilterName *parent;
        size_t n_parent;
        FilterName *ancestor;    /* Ancestor= names, exact only: checked against ancestors' comm and file name */
        size_t n_ancestor;
        char **users;            /* User= values (names or numbers) */
        char **groups;
        char **units;            /* Unit= patterns of rules that rely on the cgroup ancestry */
} FilterSpec;

/* The most names one prefilter map takes; far beyond any real rule set, it bounds kernel memory. */
#define FILTER_NAMES_MAX (1U << 20)

void filter_spec_done(FilterSpec *f);
/* capacity: maximum entries per name map (beyond it: pass_all). */
int filter_spec_build(const RuleSet *s, size_t capacity, FilterSpec *ret);

/* How many of the names are exact (a hash map) and how many prefixes (a trie). */
void filter_names_count(const FilterName *names, size_t n, size_t *ret_exact, size_t *ret_prefix);

/*
 * Does the process rule have a key the kernel can check? If not, every exec
 * on the machine has to wake latniced (latnicectl check warns about it).
 */
bool filter_rule_checkable(const Rule *rule);
