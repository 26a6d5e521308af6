/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cgroup mounts, paths, the latency-nice knob and subtree pid lists. Every
 * path is derived from a mountinfo file handed in, so the same code works
 * on the host, in a cgroup namespace and on a test's fake tree.
 */

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "cgroup.h"
#include "latnice/uapi.h"
#include "util.h"

#define MOUNTINFO_MAX (4 * 1024 * 1024)
#define PROCS_MAX (64 * 1024 * 1024)
#define SUBTREE_MAX_DEPTH 64

static void mount_done(CGroupMount *m) {
        free(m->path);
        free(m->root);
        *m = (CGroupMount) {};
}

void cgroup_mounts_done(CGroupMounts *m) {
        mount_done(&m->unified);
        mount_done(&m->cpu_v1);
        mount_done(&m->systemd_v1);
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static char *unescape(const char *s, size_t len) {
        char *ret = malloc(len + 1), *d = ret;

        if (!ret)
                return NULL;
        for (size_t i = 0; i < len; i++) {
                if (s[i] == '\\' && i + 3 < len && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
                    s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
                        *d++ = (char) ((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
                        i += 3;
                } else
                        *d++ = s[i];
        }
        *d = 0;
        return ret;
}

/* Is word an element of the comma-separated list (len bytes)? */
static bool list_has(const char *list, size_t len, const char *word) {
        size_t wl = strlen(word);

        for (const char *p = list, *end = list + len; p < end;) {
                const char *c = memchr(p, ',', (size_t) (end - p));
                size_t l = c ? (size_t) (c - p) : (size_t) (end - p);

                if (l == wl && memcmp(p, word, wl) == 0)
                        return true;
                p += l + 1;
        }
        return false;
}

static int take_mount(CGroupMount *m, const char *root, size_t root_len, const char *path, size_t path_len) {
        CGroupMount n = {};
        bool root_is_slash = root_len == 1 && root[0] == '/';

        /* first one wins, unless only a later one shows the whole tree */
        if (m->path && (streq_ptr(m->root, "/") || !root_is_slash))
                return 0;
        n.root = unescape(root, root_len);
        n.path = unescape(path, path_len);
        if (!n.root || !n.path) {
                mount_done(&n);
                return -ENOMEM;
        }
        mount_done(m);
        *m = n;
        return 0;
}

/* Splits off the next space-separated field. */
static bool next_field(const char **p, const char *end, const char **ret, size_t *ret_len) {
        const char *s = *p, *e;

        while (s < end && *s == ' ')
                s++;
        if (s >= end)
                return false;
        e = memchr(s, ' ', (size_t) (end - s));
        if (!e)
                e = end;
        *ret = s;
        *ret_len = (size_t) (e - s);
        *p = e;
        return true;
}

static int parse_line(const char *line, const char *end, CGroupMounts *m, bool *found) {
        const char *p = line, *f[6], *fstype, *source, *opts, *sep;
        size_t fl[6], fstype_len, source_len, opts_len;

        /* id parent major:minor root mountpoint options [optional...] - fstype source superopts */
        for (int i = 0; i < 6; i++)
                if (!next_field(&p, end, &f[i], &fl[i]))
                        return 0;
        sep = NULL;
        for (const char *q = f[5] + fl[5]; q + 2 < end; q++)
                if (q[0] == ' ' && q[1] == '-' && q[2] == ' ') {
                        sep = q + 3;
                        break;
                }
        if (!sep)
                return 0;
        p = sep;
        if (!next_field(&p, end, &fstype, &fstype_len) || !next_field(&p, end, &source, &source_len))
                return 0;
        if (!next_field(&p, end, &opts, &opts_len)) {
                opts = "";
                opts_len = 0;
        }

        if (fstype_len == 7 && memcmp(fstype, "cgroup2", 7) == 0) {
                *found = true;
                return take_mount(&m->unified, f[3], fl[3], f[4], fl[4]);
        }
        if (fstype_len == 6 && memcmp(fstype, "cgroup", 6) == 0) {
                *found = true;
                if (list_has(opts, opts_len, "cpu"))
                        return take_mount(&m->cpu_v1, f[3], fl[3], f[4], fl[4]);
                if (list_has(opts, opts_len, "name=systemd"))
                        return take_mount(&m->systemd_v1, f[3], fl[3], f[4], fl[4]);
        }
        return 0;
}

int cgroup_mounts_find(const char *mountinfo_path, CGroupMounts *ret) {
        _cleanup_(freep) char *buf = NULL;
        CGroupMounts m = {};
        bool found = false;
        int r;

        r = read_full_file(AT_FDCWD, mountinfo_path, MOUNTINFO_MAX, &buf, NULL);
        if (r < 0)
                return r;
        for (const char *p = buf; *p;) {
                const char *nl = strchrnul(p, '\n');

                r = parse_line(p, nl, &m, &found);
                if (r < 0) {
                        cgroup_mounts_done(&m);
                        return r;
                }
                p = *nl ? nl + 1 : nl;
        }
        if (!found)
                return -ENOENT;
        *ret = m;
        return 0;
}

const CGroupMount *cgroup_mounts_get(const CGroupMounts *m, CGroupHierarchy h) {
        const CGroupMount *found = NULL;

        switch (h) {
        case CGROUP_HIER_UNIFIED:
                found = &m->unified;
                break;
        case CGROUP_HIER_CPU:
                found = m->cpu_v1.path ? &m->cpu_v1 : &m->unified;
                break;
        case CGROUP_HIER_SYSTEMD:
                found = m->unified.path ? &m->unified : &m->systemd_v1;
                break;
        default:
                return NULL;
        }
        return found->path ? found : NULL;
}

bool cgroup_hierarchy_is_v1(const CGroupMounts *m, CGroupHierarchy h) {
        const CGroupMount *mt = cgroup_mounts_get(m, h);

        return mt && mt != &m->unified;
}

bool cgroup_path_valid(const char *p) {
        if (!p || p[0] != '/')
                return false;
        for (p++; *p;) {
                size_t l = strcspn(p, "/");

                if (l == 0 || (l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.'))
                        return false;
                p += l;
                if (*p == '/')
                        p++; /* a trailing slash is fine */
        }
        return true;
}

int cgroup_path_to_dir(const CGroupMounts *m, CGroupHierarchy h, const char *cgroup_path, char **ret) {
        const CGroupMount *mt;
        const char *rel = cgroup_path;
        size_t rl;
        char *dir;

        if (!cgroup_path_valid(cgroup_path))
                return -EINVAL;
        mt = cgroup_mounts_get(m, h);
        if (!mt)
                return -ENXIO;
        /* The mount shows the tree from its root: strip that prefix. */
        rl = strlen(mt->root);
        while (rl > 0 && mt->root[rl - 1] == '/')
                rl--;
        if (rl > 0) {
                if (strncmp(cgroup_path, mt->root, rl) != 0 || (cgroup_path[rl] != '/' && cgroup_path[rl] != 0))
                        return -EXDEV;
                rel = cgroup_path + rl;
        }
        while (*rel == '/')
                rel++;
        if (*rel == 0)
                dir = strdup(mt->path);
        else
                dir = path_join(mt->path, rel);
        if (!dir)
                return -ENOMEM;
        /* no trailing slash, for messages */
        for (size_t l = strlen(dir); l > 1 && dir[l - 1] == '/'; l--)
                dir[l - 1] = 0;
        *ret = dir;
        return 0;
}

const char *cgroup_latency_knob(const CGroupMounts *m) {
        if (!cgroup_mounts_get(m, CGROUP_HIER_CPU))
                return NULL;
        return cgroup_hierarchy_is_v1(m, CGROUP_HIER_CPU) ? "cpu.latency" : "cpu.latency.nice";
}

/* Opens the cgroup's directory in the cpu hierarchy. */
static int open_cpu_dir(const CGroupMounts *m, const char *cgroup_path) {
        _cleanup_(freep) char *dir = NULL;
        int r, fd;

        r = cgroup_path_to_dir(m, CGROUP_HIER_CPU, cgroup_path, &dir);
        if (r < 0)
                return r;
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* Whether a cgroup v2 directory lists the cpu controller in cgroup.controllers (-errno: no such file). */
static int v2_has_cpu(int dir_fd) {
        _cleanup_(freep) char *buf = NULL;
        int r;

        r = read_full_file(dir_fd, "cgroup.controllers", 4096, &buf, NULL);
        if (r < 0)
                return r;
        for (char *save = NULL, *w = strtok_r(buf, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
                if (strcmp(w, "cpu") == 0)
                        return 1;
        return 0;
}

static int knob_errno(int dir_fd, const char *knob, int err) {
        struct stat st;

        /* Distinguish "no such knob in this kernel" from other ENOENTs. */
        if (err == -ENOENT && fstatat(dir_fd, knob, &st, 0) < 0 && errno == ENOENT) {
                /* On cgroup v2 the cpu controller's files exist only where the parent enables it
                 * (systemd does for units that need it): not there yet, unlike a kernel without
                 * the knob. ENOENT, as for a cgroup without a v1 cpu directory: ask systemd. */
                if (strcmp(knob, "cpu.latency.nice") == 0 && v2_has_cpu(dir_fd) == 0)
                        return -ENOENT;
                return -EOPNOTSUPP;
        }
        return err;
}

int cgroup_latency_nice_get(const CGroupMounts *m, const char *cgroup_path, int *ret) {
        _cleanup_(closep) int fd = -1;
        _cleanup_(freep) char *buf = NULL;
        const char *knob = cgroup_latency_knob(m);
        bool v1 = cgroup_hierarchy_is_v1(m, CGROUP_HIER_CPU);
        size_t l;
        int r, v;

        if (!knob)
                return -ENXIO;
        fd = open_cpu_dir(m, cgroup_path);
        if (fd < 0)
                return fd;
        r = read_full_file(fd, knob, 64, &buf, NULL);
        if (r < 0)
                return knob_errno(fd, knob, r);
        l = strlen(buf);
        while (l > 0 && (buf[l - 1] == '\n' || buf[l - 1] == ' '))
                buf[--l] = 0;
        if (safe_atoi(buf, &v) < 0)
                return -EBADMSG;
        if (v1)
                v = LATNICE_FROM_PRIO(v);
        if (v < LATNICE_MIN || v > LATNICE_MAX)
                return -EBADMSG;
        *ret = v;
        return 0;
}

int cgroup_latency_nice_set(const CGroupMounts *m, const char *cgroup_path, int latency_nice) {
        _cleanup_(closep) int fd = -1, kfd = -1;
        const char *knob = cgroup_latency_knob(m);
        char buf[16];
        ssize_t n;
        int len;

        if (latency_nice < LATNICE_MIN || latency_nice > LATNICE_MAX)
                return -EINVAL;
        if (!knob)
                return -ENXIO;
        fd = open_cpu_dir(m, cgroup_path);
        if (fd < 0)
                return fd;
        kfd = openat(fd, knob, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY);
        if (kfd < 0)
                return knob_errno(fd, knob, -errno);
        len = snprintf(buf, sizeof(buf), "%d\n",
                       cgroup_hierarchy_is_v1(m, CGROUP_HIER_CPU) ? LATNICE_TO_PRIO(latency_nice) : latency_nice);
        n = write(kfd, buf, (size_t) len);
        if (n < 0)
                return -errno;
        return n == len ? 0 : -EIO;
}

typedef struct PidList {
        pid_t *pids;
        size_t n, alloc;
} PidList;

static int read_procs(int dir_fd, PidList *l) {
        _cleanup_(freep) char *buf = NULL;
        int r;

        r = read_full_file(dir_fd, "cgroup.procs", PROCS_MAX, &buf, NULL);
        if (r < 0)
                return r;
        for (char *p = buf; *p;) {
                char *nl = strchrnul(p, '\n');
                bool last = *nl == 0;
                pid_t pid;

                *nl = 0;
                /* 0: a process in another pid namespace; skip it and garbage */
                if (parse_pid(p, &pid) >= 0) {
                        if (array_grow((void **) &l->pids, &l->alloc, l->n, sizeof(pid_t)) < 0)
                                return -ENOMEM;
                        l->pids[l->n++] = pid;
                }
                p = last ? nl : nl + 1;
        }
        return 0;
}

static int walk_subtree(int dir_fd, PidList *l, unsigned depth) {
        struct dirent *de;
        DIR *d;
        int r, fd;

        if (depth > SUBTREE_MAX_DEPTH)
                return -ELOOP;
        r = read_procs(dir_fd, l);
        if (r < 0)
                return r;
        fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                r = -errno;
                close(fd);
                return r;
        }
        r = 0;
        while ((de = readdir(d))) {
                _cleanup_(closep) int cfd = -1;

                if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                cfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (cfd < 0) {
                        if (errno == ENOENT)
                                continue; /* removed while we walked */
                        r = -errno;
                        break;
                }
                r = walk_subtree(cfd, l, depth + 1);
                if (r == -ENOENT || r == -ENODEV)
                        r = 0; /* removed while we read it */
                if (r < 0)
                        break;
        }
        closedir(d);
        return r;
}

int cgroup_list_pids(const CGroupMounts *m, CGroupHierarchy h, const char *cgroup_path, pid_t **ret) {
        _cleanup_(freep) char *dir = NULL;
        _cleanup_(closep) int fd = -1;
        PidList l = {};
        int r;

        r = cgroup_path_to_dir(m, h, cgroup_path, &dir);
        if (r < 0)
                return r;
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = walk_subtree(fd, &l, 0);
        if (r < 0) {
                free(l.pids);
                return r;
        }
        if (l.n > INT_MAX) {
                free(l.pids);
                return -E2BIG;
        }
        *ret = l.pids;
        return (int) l.n;
}
