/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * /proc readers. Everything is relative to an open proc directory fd, so the
 * same code reads the real /proc, a namespace's /proc and a test's fake tree.
 */

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "latnice/event.h"
#include "proc.h"
#include "util.h"

int proc_stat_parse(const char *line, ProcStat *ret) {
        const char *open, *close, *p;
        ProcStat st = {};
        size_t len;
        int field;

        /* comm may contain spaces and parentheses: it ends at the last ')'. */
        open = strchr(line, '(');
        close = strrchr(line, ')');
        if (!open || !close || close < open)
                return -EINVAL;
        len = (size_t) (close - open - 1);
        if (len >= sizeof(st.comm))
                len = sizeof(st.comm) - 1;
        memcpy(st.comm, open + 1, len);
        st.comm[len] = 0;

        p = close + 1;
        /* Fields after comm, numbered as in proc(5): 3 = state. */
        for (field = 3; *p; field++) {
                char *end;
                unsigned long long v;

                p += strspn(p, " ");
                if (!*p)
                        break;
                if (field == 3) {
                        st.state = *p;
                        p += strcspn(p, " ");
                        continue;
                }
                errno = 0;
                v = strtoull(p, &end, 10);
                if (end == p && *p != '-')
                        return -EINVAL;
                if (*p == '-') {
                        (void) strtoll(p, &end, 10);
                        v = 0;
                }
                switch (field) {
                case 4:
                        st.ppid = (pid_t) v;
                        break;
                case 9:
                        st.flags = (unsigned) v;
                        break;
                case 20:
                        st.num_threads = (long) v;
                        break;
                case 22:
                        st.start_time = v;
                        *ret = st;
                        return 0;
                }
                p = end;
        }
        return -EINVAL;
}

int proc_stat_read(int proc_fd, const char *path, ProcStat *ret) {
        _cleanup_(closep) int fd = -1;
        char buf[1024];
        ssize_t n;

        fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        n = read(fd, buf, sizeof(buf) - 1);
        if (n < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        if (n == 0)
                return -ESRCH; /* reaped between open and read */
        buf[n] = 0;
        return proc_stat_parse(buf, ret);
}

int proc_cgroup_parse(const char *contents, char **ret) {
        const char *unified = NULL, *named = NULL, *p = contents;
        size_t unified_len = 0, named_len = 0;

        while (p && *p) {
                const char *nl = strchrnul(p, '\n'), *c1, *c2;

                c1 = memchr(p, ':', (size_t) (nl - p));
                c2 = c1 ? memchr(c1 + 1, ':', (size_t) (nl - c1 - 1)) : NULL;
                if (c2) {
                        if (c1 - p == 1 && p[0] == '0' && c2 == c1 + 1) {
                                unified = c2 + 1;
                                unified_len = (size_t) (nl - unified);
                        } else if ((size_t) (c2 - c1 - 1) == strlen("name=systemd") &&
                                   memcmp(c1 + 1, "name=systemd", strlen("name=systemd")) == 0) {
                                named = c2 + 1;
                                named_len = (size_t) (nl - named);
                        }
                }
                p = *nl ? nl + 1 : nl;
        }
        /* On a hybrid host a process outside systemd may sit at the unified root. */
        if (unified && !(unified_len == 1 && named)) {
                *ret = strndup(unified, unified_len);
        } else if (named) {
                *ret = strndup(named, named_len);
        } else
                return -ENODATA;
        return *ret ? 0 : -ENOMEM;
}

static int read_small(int proc_fd, pid_t pid, const char *what, size_t max, char **ret, size_t *ret_size) {
        char path[64];
        int r;

        snprintf(path, sizeof(path), "%d/%s", (int) pid, what);
        r = read_full_file(proc_fd, path, max, ret, ret_size);
        return r == -ENOENT ? -ESRCH : r;
}

static int read_argv(int proc_fd, pid_t pid, char ***ret) {
        _cleanup_(freep) char *buf = NULL;
        _cleanup_(strv_freep) char **l = NULL;
        size_t size;
        int r;

        r = read_small(proc_fd, pid, "cmdline", 64 * 1024, &buf, &size);
        if (r < 0)
                return r;
        for (size_t i = 0; i < size;) {
                size_t k = strnlen(buf + i, size - i);

                r = strv_consume(&l, strndup(buf + i, k));
                if (r < 0)
                        return r;
                i += k + 1;
        }
        if (!l) {
                l = calloc(1, sizeof(char *));
                if (!l)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int proc_ids_read(int proc_fd, pid_t pid, ProcIds *ret) {
        _cleanup_(freep) char *buf = NULL;
        unsigned ru, eu, rg;
        int tgid = pid;
        char *p;
        int r;

        r = read_small(proc_fd, pid, "status", 64 * 1024, &buf, NULL);
        if (r < 0)
                return r;
        /* Name: comes first, escaped by the kernel: no line of a process's making is before these. */
        p = strstr(buf, "\nTgid:");
        if (p && sscanf(p + 6, "%d", &tgid) != 1)
                return -EINVAL;
        p = strstr(buf, "\nUid:");
        if (!p || sscanf(p + 5, "%u %u", &ru, &eu) != 2)
                return -EINVAL;
        p = strstr(buf, "\nGid:");
        if (!p || sscanf(p + 5, "%u", &rg) != 1)
                return -EINVAL;
        *ret = (ProcIds) { .tgid = tgid, .ruid = ru, .euid = eu, .rgid = rg };
        return 0;
}

int proc_stat_read_pid(int proc_fd, pid_t pid, pid_t tid, ProcStat *ret) {
        char path[64];

        if (tid > 0)
                snprintf(path, sizeof(path), "%d/task/%d/stat", (int) pid, (int) tid);
        else
                snprintf(path, sizeof(path), "%d/stat", (int) pid);
        return proc_stat_read(proc_fd, path, ret);
}

bool proc_pid_is(int proc_fd, pid_t pid, uint64_t start_time) {
        ProcStat st;

        return proc_stat_read_pid(proc_fd, pid, 0, &st) >= 0 && st.start_time == start_time;
}

/* NSS answers in a caller's buffer; a group with many members needs a big one (ERANGE: try bigger). */
#define NSS_BUFFER_MAX (4 * 1024 * 1024)

/* One NSS lookup into buf: 0 with *ret_name (NULL: no such id), or the error number getpwuid_r() and
 * getgrgid_r() return (ERANGE: buf is too small). */
typedef int (*NssLookup)(unsigned id, char *buf, size_t size, const char **ret_name);

static int nss_lookup_user(unsigned id, char *buf, size_t size, const char **ret_name) {
        struct passwd pw, *res = NULL;
        int r;

        r = getpwuid_r((uid_t) id, &pw, buf, size, &res);
        *ret_name = r == 0 && res ? res->pw_name : NULL;
        return r;
}

static int nss_lookup_group(unsigned id, char *buf, size_t size, const char **ret_name) {
        struct group gr, *res = NULL;
        int r;

        r = getgrgid_r((gid_t) id, &gr, buf, size, &res);
        *ret_name = r == 0 && res ? res->gr_name : NULL;
        return r;
}

/* A copy of the name lookup gives id, the buffer grown from size as long as NSS says ERANGE. */
static char *nss_name(NssLookup lookup, unsigned id, size_t size) {
        for (; size <= NSS_BUFFER_MAX; size *= 4) {
                _cleanup_(freep) char *buf = malloc(size);
                const char *name;
                int r;

                if (!buf)
                        return NULL;
                r = lookup(id, buf, size, &name);
                if (r == 0)
                        return name ? strdup(name) : NULL;
                if (r != ERANGE)
                        return NULL;
        }
        return NULL;
}

char *uid_to_name(uid_t uid) {
        return nss_name(nss_lookup_user, uid, 1024);
}

char *gid_to_name(gid_t gid) {
        return nss_name(nss_lookup_group, gid, 4096);
}

static ProcExeFallback exe_fallback;
static void *exe_fallback_userdata;

void proc_set_exe_fallback(ProcExeFallback f, void *userdata) {
        exe_fallback = f;
        exe_fallback_userdata = userdata;
}

/*
 * The process's exe link into buf: its length, or -errno (-ENOENT: none, a kernel thread or a
 * zombie). Where /proc refuses (EACCES), the fallback, if any, answers: then ino/dev too.
 */
static ssize_t read_exe(int proc_fd, pid_t pid, uint64_t start_time, char *buf, size_t size, uint64_t *ret_ino,
                        uint64_t *ret_dev) {
        char path[32];
        ssize_t n;

        *ret_ino = *ret_dev = 0;
        snprintf(path, sizeof(path), "%d/exe", (int) pid);
        n = readlinkat(proc_fd, path, buf, size - 1);
        if (n >= 0) {
                buf[n] = 0;
                return n;
        }
        if (errno != EACCES || !exe_fallback)
                return -errno;
        if (exe_fallback(pid, start_time, buf, size, ret_ino, ret_dev, exe_fallback_userdata) < 0 || !buf[0])
                return -EACCES;
        return (ssize_t) strlen(buf);
}

void task_ancestors_free(TaskAncestor *a, size_t n) {
        for (size_t i = 0; i < n && a; i++)
                free(a[i].exe);
        free(a);
}

int proc_ancestors_read(int proc_fd, pid_t ppid, uint64_t start_time, size_t max, TaskAncestor **ret,
                        size_t *ret_n) {
        TaskAncestor *v;
        size_t n = 0;

        v = calloc(max + 1, sizeof(TaskAncestor));
        if (!v)
                return -ENOMEM;
        while (n < max && ppid > 0) {
                char buf[4096];
                bool loop = false;
                uint64_t ino, dev;
                ProcStat st;
                ssize_t l;

                for (size_t i = 0; i < n; i++)
                        loop = loop || v[i].pid == ppid;
                if (loop || proc_stat_read_pid(proc_fd, ppid, 0, &st) < 0 || st.start_time > start_time)
                        break;
                v[n].pid = ppid;
                v[n].start_time = st.start_time;
                memcpy(v[n].comm, st.comm, sizeof(v[n].comm));
                v[n].comm[sizeof(v[n].comm) - 1] = 0;
                l = read_exe(proc_fd, ppid, st.start_time, buf, sizeof(buf), &ino, &dev);
                if (l > 0) {
                        v[n].exe = strdup(buf);
                        if (!v[n].exe) {
                                task_ancestors_free(v, n);
                                return -ENOMEM;
                        }
                }
                n++;
                /* Read after the exe: had the pid been reused meanwhile, its start time tells the next round. */
                start_time = st.start_time;
                ppid = st.ppid;
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

void proc_task_done(ProcTask *t) {
        task_ancestors_free(t->ancestors, t->n_ancestors);
        free(t->exe);
        strv_free(t->argv);
        free(t->cgroup);
        free(t->user);
        free(t->group);
        *t = (ProcTask) {};
}

int proc_task_read(int proc_fd, pid_t pid, ProcWhat what, ProcTask *ret) {
        ProcTask t = { .pid = pid };
        int r;

        r = proc_stat_read_pid(proc_fd, pid, what & PROC_MAIN_STAT ? pid : 0, &t.stat);
        if (r < 0)
                return r;

        if (what & PROC_EXE) {
                char buf[4096];
                ssize_t n;

                n = read_exe(proc_fd, pid, t.stat.start_time, buf, sizeof(buf), &t.exe_ino, &t.exe_dev);
                /* Kernel threads have no exe; an EACCES is not fatal either. */
                if (n >= 0) {
                        t.exe = strdup(buf);
                        if (!t.exe) {
                                r = -ENOMEM;
                                goto fail;
                        }
                } else if (n == -ENOENT && !(t.stat.flags & PROC_PF_KTHREAD)) {
                        /* exe vanishes only with the process (or for zombies) */
                        if (t.stat.state != 'Z') {
                                r = -ESRCH;
                                goto fail;
                        }
                }
        }
        if (what & PROC_CMDLINE) {
                r = read_argv(proc_fd, pid, &t.argv);
                if (r == -ENOMEM || r == -ESRCH)
                        goto fail;
        }
        if (what & (PROC_IDS | PROC_NAMES)) {
                ProcIds ids;

                r = proc_ids_read(proc_fd, pid, &ids);
                if (r < 0)
                        goto fail;
                /* Real ids: what ps shows in its USER column. */
                t.uid = ids.ruid;
                t.gid = ids.rgid;
                if (what & PROC_NAMES) {
                        t.user = uid_to_name(t.uid);
                        t.group = gid_to_name(t.gid);
                }
        }
        if ((what & PROC_PARENT) && t.stat.ppid > 0) {
                ProcStat ps;

                if (proc_stat_read_pid(proc_fd, t.stat.ppid, 0, &ps) >= 0)
                        memcpy(t.parent_comm, ps.comm, sizeof(t.parent_comm));
        }
        if ((what & PROC_ANCESTORS) && t.stat.ppid > 0) {
                r = proc_ancestors_read(proc_fd, t.stat.ppid, t.stat.start_time, LATNICE_ANCESTORS_MAX, &t.ancestors,
                                        &t.n_ancestors);
                if (r < 0)
                        goto fail;
        }
        if (what & PROC_CGROUP) {
                _cleanup_(freep) char *buf = NULL;

                r = read_small(proc_fd, pid, "cgroup", 64 * 1024, &buf, NULL);
                if (r == -ENOMEM || r == -ESRCH)
                        goto fail;
                if (r >= 0)
                        (void) proc_cgroup_parse(buf, &t.cgroup);
        }
        *ret = t;
        return 0;
fail:
        proc_task_done(&t);
        return r;
}

void proc_task_to_info(const ProcTask *p, TaskInfo *ret) {
        *ret = (TaskInfo) {
                .pid = p->pid,
                .ppid = p->stat.ppid,
                .uid = p->uid,
                .gid = p->gid,
                .comm = p->stat.comm,
                .exe = p->exe,
                .exe_ino = p->exe_ino,
                .exe_dev = p->exe_dev,
                .argv = p->argv,
                .parent_comm = p->parent_comm[0] ? p->parent_comm : NULL,
                .user = p->user,
                .group = p->group,
                .cgroup = p->cgroup,
                .ancestors = p->ancestors,
                .n_ancestors = p->n_ancestors,
        };
}

static int list_numeric(int dir_fd, const char *path, pid_t **ret) {
        _cleanup_(freep) pid_t *v = NULL;
        size_t n = 0, alloc = 0;
        struct dirent *de;
        DIR *d;
        int fd;

        fd = openat(dir_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return -errno;
        }
        while ((de = readdir(d))) {
                pid_t pid;

                if (parse_pid(de->d_name, &pid) < 0)
                        continue;
                if (array_grow((void **) &v, &alloc, n, sizeof(pid_t)) < 0) {
                        closedir(d);
                        return -ENOMEM;
                }
                v[n++] = pid;
        }
        closedir(d);
        *ret = TAKE_PTR(v);
        return (int) n;
}

int proc_list_tasks(int proc_fd, pid_t pid, pid_t **ret) {
        char path[64];

        snprintf(path, sizeof(path), "%d/task", (int) pid);
        return list_numeric(proc_fd, path, ret);
}

int proc_list_pids(int proc_fd, pid_t **ret) {
        return list_numeric(proc_fd, ".", ret);
}

/*
 * Is the file at path the executable t runs? The kernel told us its inode
 * (BPF record), or /proc/PID/exe leads to it. An executable that was
 * replaced while it ran (an upgrade: "/usr/bin/x (deleted)") still counts
 * for its old path if root owns it and only root could write it.
 */
static bool proc_exe_is(const TaskInfo *t, const char *path, void *userdata) {
        const int *proc_fd = userdata;
        struct stat want, have;
        bool have_want;
        char link[32];
        size_t l;

        have_want = stat(path, &want) >= 0;
        if (have_want && t->exe_ino != 0) {
                if (want.st_ino != t->exe_ino)
                        return false;
                if (want.st_dev == makedev(t->exe_dev >> 20, t->exe_dev & 0xfffff))
                        return true;
                /* Same inode number, another device number (btrfs subvolumes report their own): ask /proc. */
        }
        snprintf(link, sizeof(link), "%d/exe", (int) t->pid);
        if (fstatat(*proc_fd, link, &have, 0) < 0)
                return false;
        if (have_want && want.st_dev == have.st_dev && want.st_ino == have.st_ino)
                return true;
        l = strlen(path);
        return t->exe && strncmp(t->exe, path, l) == 0 && strcmp(t->exe + l, " (deleted)") == 0 &&
               have.st_nlink == 0 && have.st_uid == 0 && !(have.st_mode & (S_IWGRP | S_IWOTH));
}

void proc_task_set_exe_check(TaskInfo *t, const int *proc_fd) {
        t->exe_is = proc_exe_is;
        t->exe_userdata = (void *) proc_fd;
}

bool proc_pidfd_exited(int pidfd) {
        struct pollfd pfd = { .fd = pidfd, .events = POLLIN };

        /* A pidfd polls readable once its process has exited. */
        return poll(&pfd, 1, 0) != 0;
}

bool proc_pidfd_is(int proc_fd, int pidfd, pid_t pid, uint64_t start_time) {
        return !proc_pidfd_exited(pidfd) && proc_pid_is(proc_fd, pid, start_time);
}
