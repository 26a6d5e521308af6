/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* See manager-stubs.h. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manager-foreground.h"
#include "manager-rules.h"
#include "manager-stats.h"
#include "manager-stubs.h"
#include "manager.h"

int stub_reload_result;
char stub_profile[64];
unsigned stub_stats_starts;

int manager_reload(Manager *m, bool startup) {
        return stub_reload_result;
}

int manager_set_profile(Manager *m, const char *name) {
        if (strcmp(name, "broken") == 0)
                return -EINVAL;
        snprintf(stub_profile, sizeof(stub_profile), "%s", name);
        return 0;
}

bool manager_foreground_enabled(const Manager *m) {
        return false;
}

int manager_foreground_set(Manager *m, uid_t owner, pid_t pid, uint64_t start_time, uid_t uid, const char *session,
                           sd_bus_message *call) {
        return 0;
}

int manager_foreground_current(Manager *m, uid_t owner, pid_t pid, uint64_t start_time, const char *session,
                               sd_bus_message *call) {
        return -ENOENT;
}

char *manager_foreground_describe(const Manager *m) {
        return strdup("off");
}

int manager_stats_start(Manager *m, uint64_t duration_usec, char **ret_reason) {
        stub_stats_starts++;
        *ret_reason = strdup("not in this test");
        return -EOPNOTSUPP;
}

bool manager_stats_running(const Manager *m) {
        return false;
}

uint64_t manager_stats_deadline(const Manager *m) {
        return 0;
}

const StatsResult *manager_stats_last(const Manager *m) {
        return NULL;
}

void manager_stats_on_record(Manager *m, const AppliedProcess *e) {
}

void manager_stats_on_forget(Manager *m, pid_t pid) {
}

void manager_stats_cancel(Manager *m) {
}
