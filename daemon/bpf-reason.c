/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* See bpf-reason.h. */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf-reason.h"

void bpf_load_reason(const char *what, int r_btf, int r_tp, char **ret) {
        /* libbpf finds a tracepoint's id in tracefs: say so when that is what is missing. */
        bool no_tracefs = r_tp == -ENOENT && access("/sys/kernel/tracing/events", F_OK) < 0 &&
                          access("/sys/kernel/debug/tracing/events", F_OK) < 0;

        if (asprintf(ret, "%s (tp_btf: %s; tracepoint: %s%s)", what, r_btf < 0 ? strerror(-r_btf) : "not tried",
                     strerror(-r_tp), no_tracefs ? ", tracefs is not mounted at /sys/kernel/tracing" : "") < 0)
                *ret = NULL;
}
