/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cgroup knob of a [Unit] rule (see unit-knob.h). */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "unit-knob.h"

int unit_knob_set(const CGroupMounts *mounts, UnitKnob *k, const char *cgroup, int value) {
        int before, r;

        if (k->cgroup && strcmp(k->cgroup, cgroup) != 0)
                return -EINVAL;
        r = cgroup_latency_nice_get(mounts, cgroup, &before);
        if (r < 0)
                return r;
        if (k->cgroup && before == value && k->value == value)
                return 0;
        r = cgroup_latency_nice_set(mounts, cgroup, value);
        if (r < 0)
                return r;
        if (!k->cgroup) {
                k->cgroup = strdup(cgroup);
                if (!k->cgroup) {
                        (void) cgroup_latency_nice_set(mounts, cgroup, before);
                        return -ENOMEM;
                }
                k->before = before;
        }
        k->value = value;
        return 1;
}

int unit_knob_restore(const CGroupMounts *mounts, const UnitKnob *k) {
        int now, r;

        if (!k->cgroup)
                return 0;
        r = cgroup_latency_nice_get(mounts, k->cgroup, &now);
        if (r < 0)
                return r;
        if (now != k->value)
                return 0;
        r = cgroup_latency_nice_set(mounts, k->cgroup, k->before);
        return r < 0 ? r : 1;
}
