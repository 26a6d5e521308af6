/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target for the rule parser. With -Dfuzz=true it is linked with
 * libFuzzer; otherwise fuzz-main.c replays the corpus in tests/fuzz/corpus
 * as part of the unit suite. Every loaded rule must satisfy the loader's
 * invariants, whatever the input.
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
        match_result_done(&m);
        (void) match_unit(s, "x.scope");
        rule_set_free(s);
        return 0;
}
