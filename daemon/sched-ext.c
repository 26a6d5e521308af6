/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sched_ext sysfs files in latniced's terms. The kernel writes the
 * state as one of four words and a newline; root/ops holds the name the
 * BPF scheduler gave itself, which its loader chose (scx's Rust schedulers
 * append their version and build: "lavd_1.0.5_g1c2d3e4_x86_64_unknown_
 * linux_gnu"). Whatever else a file holds is taken as unknown, never
 * trusted as text.
 */

#include <stdio.h>
#include <string.h>

#include "sched-ext.h"
#include "string-table.h"

static const char *const scx_state_table[_SCX_STATE_MAX] = {
        [SCX_ABSENT] = "absent",
        [SCX_DISABLED] = "disabled",
        [SCX_ENABLING] = "enabling",
        [SCX_ENABLED] = "enabled",
        [SCX_DISABLING] = "disabling",
        [SCX_UNKNOWN] = "unknown",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(scx_state, ScxState);

ScxState scx_state_parse(const char *buf, size_t n) {
        if (!buf)
                return SCX_UNKNOWN;
        /* One word, then at most a newline (the kernel's sysfs_emit("%s\n")). */
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\0'))
                n--;
        for (ScxState s = SCX_DISABLED; s <= SCX_DISABLING; s++)
                if (n == strlen(scx_state_table[s]) && memcmp(buf, scx_state_table[s], n) == 0)
                        return s;
        return SCX_UNKNOWN;
}

static bool name_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
               c == '-' || c == '.';
}

void scx_ops_name_parse(const char *buf, size_t n, char ret[static SCX_NAME_MAX]) {
        size_t len = 0;

        ret[0] = 0;
        if (!buf)
                return;
        while (len < n && name_char(buf[len]))
                len++;
        /* Ended by anything but the end of the line: not a name we can show. */
        if (len < n && buf[len] != '\n' && buf[len] != '\0')
                return;
        /* The version suffix starts at the first "_<digits>." after the first character: "_1.0.5". */
        for (size_t i = 1; i < len; i++) {
                size_t j = i + 1;

                if (buf[i] != '_')
                        continue;
                while (j < len && buf[j] >= '0' && buf[j] <= '9')
                        j++;
                if (j > i + 1 && j < len && buf[j] == '.') {
                        len = i;
                        break;
                }
        }
        if (len > SCX_NAME_MAX - 1)
                len = SCX_NAME_MAX - 1;
        memcpy(ret, buf, len);
        ret[len] = 0;
}

bool scx_in_charge(const ScxStatus *s) {
        switch (s->state) {
        case SCX_ENABLING:
        case SCX_DISABLING:
        case SCX_UNKNOWN:
                /* A changing (or unreadable) state: claim no effect until it settles. */
                return true;
        case SCX_ENABLED:
                return !s->partial;
        default:
                return false;
        }
}

int scx_backend_string(const ScxStatus *s, const char *base, char *buf, size_t size) {
        const char *when = s->state == SCX_ENABLING ? "enabling; " : s->state == SCX_DISABLING ? "disabling; " : "";

        if (!scx_in_charge(s))
                return snprintf(buf, size, "%s", base);
        if (s->state == SCX_ENABLED && strcmp(s->name, SCX_LATNICE_NAME) == 0)
                return snprintf(buf, size, "%s", SCX_LATNICE_BACKEND);
        return snprintf(buf, size, SCX_BACKEND_PREFIX "%s%s (%s" SCX_NOT_HONOURED ")", s->name[0] ? ":" : "",
                        s->name, when);
}

bool sched_ext_note(const char *backend, char *buf, size_t size) {
        const size_t k = strlen(SCX_BACKEND_PREFIX);
        char name[SCX_NAME_MAX] = "";
        const char *p;

        if (size > 0)
                buf[0] = 0;
        if (!backend || strncmp(backend, SCX_BACKEND_PREFIX, k) != 0)
                return false;
        if (strcmp(backend, SCX_LATNICE_BACKEND) == 0) {
                snprintf(buf, size,
                         "latnice's own BPF scheduler (sched_ext: latnice, scx_latnice) runs the tasks: it reads "
                         "the values latniced sets and honours them.");
                return true;
        }
        p = backend + k;
        if (*p != ':' && *p != ' ')
                return false;
        if (*p == ':')
                scx_ops_name_parse(p + 1, strcspn(p + 1, " "), name);
        snprintf(buf, size,
                 "A BPF scheduler (sched_ext%s%s) runs the tasks and ignores latency nice: the values "
                 "latniced sets stay on the tasks and take effect again when the fair class is back.",
                 name[0] ? ": " : "", name);
        return true;
}
