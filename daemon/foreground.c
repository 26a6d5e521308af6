/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The foreground boost's decisions (see foreground.h). */
#include <stdio.h>
#include <string.h>

#include "foreground.h"
#include "string-table.h"
#include "util.h"

static const char *const foreground_cover_table[_FOREGROUND_COVER_MAX] = {
        [FOREGROUND_COVER_UNIT] = "unit",
        [FOREGROUND_COVER_TREE] = "tree",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(foreground_cover, ForegroundCover);
DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(foreground_cover, ForegroundCover);

ForegroundAction foreground_decide(const ForegroundView *v, int boost) {
        if (v->realtime)
                return FOREGROUND_LEAVE_REALTIME;
        if (v->boosted)
                return FOREGROUND_KEEP;
        if (v->manual)
                return FOREGROUND_LEAVE_MANUAL;
        if (v->has_value && !v->ours)
                return FOREGROUND_LEAVE_FOREIGN;
        if (v->rule && !v->focused && v->value > 0)
                return FOREGROUND_LEAVE_RULE;
        if (v->value <= boost)
                return FOREGROUND_LEAVE_BETTER;
        return FOREGROUND_BOOST;
}

static bool has_suffix(const char *s, size_t len, const char *suffix) {
        size_t l = strlen(suffix);

        return len > l && memcmp(s + len - l, suffix, l) == 0;
}

bool foreground_user_unit(const char *cgroup, uid_t uid, char *ret_unit, size_t size) {
        char manager[64];
        const char *p, *leaf, *end;
        size_t n;

        if (!cgroup || cgroup[0] != '/')
                return false;
        snprintf(manager, sizeof(manager), "/user@%u.service/", (unsigned) uid);
        p = strstr(cgroup, manager);
        if (!p)
                return false;
        /* Below the manager: slices, then the unit, then (maybe) its own sub-cgroups. */
        leaf = p + strlen(manager) - 1;
        for (;;) {
                const char *comp = leaf + 1;

                end = strchr(comp, '/');
                n = end ? (size_t) (end - comp) : strlen(comp);
                if (n == 0)
                        return false;
                if (has_suffix(comp, n, ".slice")) {
                        if (!end)
                                return false;
                        leaf = end;
                        continue;
                }
                if (!has_suffix(comp, n, ".scope") && !has_suffix(comp, n, ".service"))
                        return false;
                /* The user manager's own process, and the helpers every session shares, are no application. */
                if ((n == strlen("init.scope") && memcmp(comp, "init.scope", n) == 0) ||
                    (n > 8 && memcmp(comp, "session-", 8) == 0))
                        return false;
                if ((size_t) (comp + n - cgroup) >= size)
                        return false;
                memcpy(ret_unit, cgroup, (size_t) (comp + n - cgroup));
                ret_unit[comp + n - cgroup] = 0;
                return true;
        }
}
