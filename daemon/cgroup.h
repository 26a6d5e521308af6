/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cgroups for unit rules: where the hierarchies are mounted (pure v2, or the
 * v1/v2 hybrid where the cpu controller sits on v1), which directory a
 * cgroup path like "/game.slice" is, the per-cgroup latency-nice knob where
 * the kernel has one, and the pids of a subtree for the per-task fallback
 * where it has not. A -util module: file I/O below the mountinfo path handed
 * in, no logging, no globals. latniced never creates or moves cgroups
 * (systemd owns the tree).
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

typedef enum CGroupHierarchy {
        CGROUP_HIER_UNIFIED, /* the cgroup2 mount */
        CGROUP_HIER_CPU,     /* the one with the cpu controller: v1 "cpu" if mounted, else the unified one */
        CGROUP_HIER_SYSTEMD, /* systemd's full unit tree: unified if mounted, else v1 name=systemd */
        _CGROUP_HIER_MAX,
} CGroupHierarchy;

typedef struct CGroupMount {
        char *path; /* mount point; NULL: not mounted */
        char *root; /* cgroup path of the mount's root (mountinfo field 4), normally "/" */
} CGroupMount;

typedef struct CGroupMounts {
        CGroupMount unified;    /* cgroup2 */
        CGroupMount cpu_v1;     /* v1 hierarchy whose options carry "cpu" */
        CGroupMount systemd_v1; /* v1 name=systemd */
} CGroupMounts;

/*
 * Reads a mountinfo file (normally /proc/self/mountinfo) and fills ret with
 * the first mount of each hierarchy (one with root "/" preferred). Returns
 * 0 (missing hierarchies stay NULL), -ENOENT if there is no cgroup mount at
 * all, or another negative errno.
 */
int cgroup_mounts_find(const char *mountinfo_path, CGroupMounts *ret);
void cgroup_mounts_done(CGroupMounts *m);

/* The mount serving h, or NULL if it is not mounted. */
const CGroupMount *cgroup_mounts_get(const CGroupMounts *m, CGroupHierarchy h);
/* True if h is a v1 hierarchy here (decides the knob's name and scale). */
bool cgroup_hierarchy_is_v1(const CGroupMounts *m, CGroupHierarchy h);

/* True for "/" and absolute paths without ".", ".." or empty components. */
bool cgroup_path_valid(const char *cgroup_path);

/*
 * Maps a cgroup path ("/game.slice/x.scope", as in /proc/PID/cgroup or
 * systemd's ControlGroup, relative to the cgroup namespace) to its
 * directory in hierarchy h. Does not check that it exists. -EINVAL for an
 * invalid path, -ENXIO if h is not mounted, -EXDEV if the path is outside
 * the mount's root.
 */
int cgroup_path_to_dir(const CGroupMounts *m, CGroupHierarchy h, const char *cgroup_path, char **ret);

/* The knob's file name in the cpu hierarchy: "cpu.latency.nice" (v2), "cpu.latency" (v1), NULL if no cpu hierarchy. */
const char *cgroup_latency_knob(const CGroupMounts *m);

/*
 * Reads / writes a cgroup's latency nice (-20..19) through the knob of the
 * cpu hierarchy: cpu.latency.nice on v2, cpu.latency (0..39 = ln + 20) on
 * v1. -ENOENT if the cgroup has no directory in the cpu hierarchy (on the
 * hybrid: systemd made none, the unit needs CPUAccounting=yes),
 * -EOPNOTSUPP if the directory exists but the kernel has no knob,
 * -ENXIO if no cpu hierarchy is mounted, -EINVAL for a bad path or value,
 * -EBADMSG if the knob holds something unexpected. The root cgroup never
 * has the knob (CFTYPE_NOT_ON_ROOT in kernel/): -EOPNOTSUPP there too.
 */
int cgroup_latency_nice_get(const CGroupMounts *m, const char *cgroup_path, int *ret);
int cgroup_latency_nice_set(const CGroupMounts *m, const char *cgroup_path, int latency_nice);

/*
 * The pids in cgroup.procs of the cgroup and all its descendants in
 * hierarchy h (use CGROUP_HIER_SYSTEMD for a unit's tasks). Returns the
 * count (ret is NULL for 0), -ENOENT if the cgroup does not exist, other
 * negative errno. A snapshot: processes keep moving and exiting.
 */
int cgroup_list_pids(const CGroupMounts *m, CGroupHierarchy h, const char *cgroup_path, pid_t **ret);
