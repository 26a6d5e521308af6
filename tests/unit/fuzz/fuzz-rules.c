/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target for the rule parser. With -Dfuzz=true it is linked with
 * libFuzzer; otherwise fuzz-main.c replays the corpus in tests/unit/fuzz/corpus
 * as part of the unit suite. Every loaded rule must satisfy the loader's
 * invariants, whatever the input, and the indexed matcher must decide as
 * the linear one does.
 */

#include <stdint.h>
#include <stdlib.h>

#include "match.h"
#include "rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        RuleSet *s = NULL;
        TaskInfo t = { .comm = "fuzz", .exe = "/usr/bin/fuzz", .cgroup = "/fuzz.slice/x.scope" };
        MatchResult m = {};

        if (rule_set_load_buffer("fuzz.conf", (const char *) data, size, &s) < 0)
                abort(); /* only OOM may fail */
        for (size_t i = 0; i < s->n_rules; i++) {
                const Rule *r = &s->rules[i];
                bool any = false;

                if (r->latency_nice < -20 || r->latency_nice > 19 || !r->name || r->line == 0)
                        abort();
                for (size_t k = 0; k < _MATCH_KEY_MAX; k++)
                        any = any || rule_match(r, k);
                if (!any)
                        abort();
        }
        for (size_t i = 0; i < s->n_errors; i++)
                if (!s->errors[i].message)
                        abort();
        if (match_task(s, &t, true, &m) < 0)
                abort();
        {
                /* The index decides as the linear matcher does, whatever the rules. */
                static const char *comms[] = { "fuzz", "Web Content", "a", "Foo[Steam].exe", "" };
                MatchIndex *ix = NULL;
                MatchResult a = {}, b = {};

                if (match_index_new(s, &ix) < 0)
                        abort();
                for (size_t i = 0; i < sizeof(comms) / sizeof(comms[0]); i++) {
                        TaskInfo u = t;

                        u.comm = comms[i];
                        if (match_task(s, &u, true, &a) < 0 || match_index_task(ix, &u, true, &b) < 0)
                                abort();
                        if (a.rule != b.rule || a.n_shadowed != b.n_shadowed)
                                abort();
                        for (size_t j = 0; j < a.n_shadowed; j++)
                                if (a.shadowed[j] != b.shadowed[j])
                                        abort();
                        match_result_done(&a);
                        match_result_done(&b);
                }
                match_index_free(ix);
        }
        match_result_done(&m);
        (void) match_unit(s, "x.scope");
        rule_set_free(s);
        return 0;
}
