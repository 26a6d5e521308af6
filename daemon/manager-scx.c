/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sched_ext: a BPF scheduler (scx_lavd, scx_bpfland, ...) may take over
 * every normal task at any time and give them back at any time. While it
 * runs them, latency nice and custom slices are ignored: latniced says so
 * (the Backend property, its log), keeps matching and keeps its table, as
 * the values stay on the tasks and mean something again once the fair class
 * is back. Then it writes its value again to every task that lost it.
 *
 * How we are told: the state file cannot be watched (sysfs attributes do
 * not send inotify events, and sched_ext's do not call sysfs_notify(), so
 * poll() on them never wakes). But the kernel sends a uevent for the
 * sched_ext "root" kobject: KOBJ_ADD once a scheduler is enabled (after its
 * state reads "enabled"), and KOBJ_REMOVE from the kobject_del() that every
 * disable path runs, whatever the reason (its loader exited, it was killed,
 * the kernel's watchdog or an error ejected it, sysrq-S). A switch from one
 * scheduler to another is a remove and an add. The kernel's uevent netlink
 * group needs no privilege to read, and reaches a private network namespace
 * (PrivateNetwork=) too: untagged uevents go to every network namespace of
 * the initial user namespace. So one socket, woken only by uevents; on each
 * sched_ext one (or a lost message: ENOBUFS) the files are read again, and
 * while the state is changing ("enabling", "disabling": the remove comes
 * before "disabled") re-read on a short backoff until it settles. Only if
 * the socket cannot be had are the files polled, every few seconds, and
 * only on a kernel that has sched_ext; a kernel without it has no
 * /sys/kernel/sched_ext and cannot grow one: nothing is opened at all.
 */

#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "event-util.h"
#include "log.h"
#include "manager-granted.h"
#include "manager-scx.h"
#include "manager.h"
#include "util.h"

#define SCX_DIR "/sys/kernel/sched_ext"
#define SYSFS_ATTR_MAX 4096 /* PAGE_SIZE: what a sysfs attribute can hold and says it holds */
#define SCX_POLL_USEC (5 * 1000 * 1000)     /* without uevents */
#define SCX_SETTLE_MIN_USEC (50 * 1000)     /* a changing state: first re-read */
#define SCX_SETTLE_MAX_USEC (1000 * 1000)

typedef struct ReapplyItem {
        pid_t pid;
        uint64_t start_time;
} ReapplyItem;

typedef struct ManagerScx {
        ScxStatus status;
        int uevent_fd;
        sd_event_source *uevent_source;
        sd_event_source *timer;     /* a changing state is read again, or (no uevents) the poll */
        uint64_t settle_usec;
        bool poll;
        char backend[128];
        char reason[512];
        uint64_t changes;

        /* Writing the values again, SCAN_CHUNK processes per dispatch. */
        ReapplyItem *todo;
        size_t n_todo, i_todo;
        sd_event_source *reapply_defer;
        ReapplyResult sum;
        unsigned n_processes, n_gone;
} ManagerScx;

bool manager_scx_in_charge(Manager *m) {
        return m->scx_state && scx_in_charge(&m->scx_state->status);
}

uint64_t manager_backend_changes(Manager *m) {
        return m->scx_state ? m->scx_state->changes : 0;
}

/* ---- reading the files -------------------------------------------------- */

static void scx_read(ScxStatus *ret) {
        _cleanup_(freep) char *buf = NULL;
        size_t n = 0;
        int r;

        *ret = (ScxStatus) { .state = SCX_UNKNOWN };
        /* A sysfs attribute's stat size is a page whatever it holds: a smaller limit refuses every read
         * (and made "disabled" read as unknown, in charge). What is in it is checked by the parsers. */
        r = read_full_file(AT_FDCWD, SCX_DIR "/state", SYSFS_ATTR_MAX, &buf, &n);
        if (r == -ENOENT) {
                ret->state = SCX_ABSENT;
                return;
        }
        if (r >= 0)
                ret->state = scx_state_parse(buf, n);
        buf = mfree(buf);
        /* root/ exists while a scheduler is loaded. */
        if (read_full_file(AT_FDCWD, SCX_DIR "/root/ops", SYSFS_ATTR_MAX, &buf, &n) >= 0)
                scx_ops_name_parse(buf, n, ret->name);
        buf = mfree(buf);
        if (ret->state == SCX_ENABLED &&
            read_full_file(AT_FDCWD, SCX_DIR "/switch_all", SYSFS_ATTR_MAX, &buf, &n) >= 0)
                ret->partial = n > 0 && buf[0] == '0';
}

static void scx_describe(Manager *m, ManagerScx *s) {
        const char *base = backend_to_string(m->probe.backend);

        scx_backend_string(&s->status, base, s->backend, sizeof(s->backend));
        if (sched_ext_note(s->backend, s->reason, sizeof(s->reason)))
                return;
        if (s->status.state == SCX_ENABLED && s->status.partial)
                snprintf(s->reason, sizeof(s->reason),
                         "%s; a BPF scheduler (sched_ext: %s) runs only the tasks that chose SCHED_EXT, the fair "
                         "class all others",
                         m->probe.reason, s->status.name[0] ? s->status.name : "unnamed");
        else
                snprintf(s->reason, sizeof(s->reason), "%s", m->probe.reason);
}

/* ---- writing the values again ------------------------------------------- */

static void reapply_done(Manager *m, ManagerScx *s) {
        s->todo = mfree(s->todo);
        s->n_todo = s->i_todo = 0;
        if (s->reapply_defer)
                (void) sd_event_source_set_enabled(s->reapply_defer, SD_EVENT_OFF);
}

static int reapply_on_defer(sd_event_source *es, void *userdata) {
        Manager *m = userdata;
        ManagerScx *s = m->scx_state;

        manager_leave_realtime(m);
        for (size_t end = s->i_todo + SCAN_CHUNK; s->i_todo < s->n_todo && s->i_todo < end; s->i_todo++) {
                const ReapplyItem *it = &s->todo[s->i_todo];
                AppliedProcess *e = applied_table_get(m->applied, it->pid);
                ReapplyResult res = {};

                /* Forgotten meanwhile, or the pid is another process now. */
                if (!e || e->start_time != it->start_time)
                        continue;
                if (applied_reapply(&m->probe, m->proc_fd, e, &res) < 0) {
                        s->n_gone++;
                        continue;
                }
                s->n_processes++;
                s->sum.n_kept += res.n_kept;
                s->sum.n_written += res.n_written;
                s->sum.n_foreign += res.n_foreign;
        }
        if (s->i_todo < s->n_todo)
                return 0;
        log_notice("Wrote latniced's values again after the BPF scheduler: %u processes looked at, %u threads "
                   "had kept their value, %u had lost it and carry it again, %u left alone (somebody else set "
                   "their value); %u processes had exited.",
                   s->n_processes, s->sum.n_kept, s->sum.n_written, s->sum.n_foreign, s->n_gone);
        reapply_done(m, s);
        return 0;
}

static void reapply_start(Manager *m, ManagerScx *s) {
        size_t n = applied_table_size(m->applied), i = 0, k = 0;
        AppliedProcess *e;
        int r;

        reapply_done(m, s);
        s->sum = (ReapplyResult) {};
        s->n_processes = s->n_gone = 0;
        if (m->probe.backend == BACKEND_NONE || m->options.dry_run || n == 0) {
                log_notice("Nothing to write again: latniced holds no values.");
                return;
        }
        /* A snapshot: the table changes between dispatches. */
        s->todo = calloc(n, sizeof(ReapplyItem));
        if (!s->todo) {
                log_oom();
                return;
        }
        while ((e = applied_table_next(m->applied, &i)) && k < n)
                s->todo[k++] = (ReapplyItem) { .pid = e->pid, .start_time = e->start_time };
        s->n_todo = k;
        if (!s->reapply_defer) {
                r = sd_event_add_defer(m->event, &s->reapply_defer, reapply_on_defer, m);
                if (r < 0) {
                        log_warning_errno(r, "Failed to write latniced's values again: %m");
                        reapply_done(m, s);
                        return;
                }
                (void) sd_event_source_set_description(s->reapply_defer, "scx-reapply");
        }
        (void) sd_event_source_set_enabled(s->reapply_defer, SD_EVENT_ON);
}

/* ---- following the state ------------------------------------------------ */

static int scx_on_timer(sd_event_source *es, uint64_t usec, void *userdata);

static void scx_arm(Manager *m, ManagerScx *s, uint64_t usec) {
        int r = event_reset_time_relative(m->event, &s->timer, CLOCK_MONOTONIC, usec, usec / 10, scx_on_timer, m,
                                          "scx-read", true);

        if (r < 0)
                log_warning_errno(r, "Failed to arm the timer that reads sched_ext's state: %m");
}

static void scx_refresh(Manager *m) {
        ManagerScx *s = m->scx_state;
        ScxStatus now;
        bool was, is;
        char old[sizeof(s->backend)];

        scx_read(&now);
        /* root/ops goes before the state reads "disabled": the scheduler keeps its name meanwhile. */
        if (now.state == SCX_DISABLING && !now.name[0])
                memcpy(now.name, s->status.name, sizeof(now.name));
        was = scx_in_charge(&s->status);
        is = scx_in_charge(&now);
        memcpy(old, s->backend, sizeof(old));
        if (now.state != s->status.state || strcmp(now.name, s->status.name) != 0 || now.partial != s->status.partial)
                log_debug("sched_ext: %s%s%s%s.", scx_state_to_string(now.state), now.name[0] ? ", scheduler " : "",
                          now.name, now.partial ? " (partial)" : "");
        s->status = now;
        scx_describe(m, s);
        /* A scheduler that may have pinned a new map (its restart reuses the old one: then nothing happens).
         * Also while the backend string did not change: a restart between two reads looks like no change. */
        if (now.state == SCX_ENABLED)
                manager_granted_refresh(m);

        if (now.state == SCX_ENABLING || now.state == SCX_DISABLING || now.state == SCX_UNKNOWN) {
                /* Settling: read again soon, then less often. */
                s->settle_usec = s->settle_usec ? s->settle_usec * 2 : SCX_SETTLE_MIN_USEC;
                if (s->settle_usec > SCX_SETTLE_MAX_USEC)
                        s->settle_usec = SCX_SETTLE_MAX_USEC;
                scx_arm(m, s, s->settle_usec);
        } else {
                s->settle_usec = 0;
                if (s->poll)
                        scx_arm(m, s, SCX_POLL_USEC);
                else if (s->timer)
                        (void) sd_event_source_set_enabled(s->timer, SD_EVENT_OFF);
        }

        if (strcmp(old, s->backend) == 0)
                return;
        s->changes++;
        if (!was && is)
                log_notice("Backend %s: %s Matching goes on and the applied table is kept.", s->backend, s->reason);
        else if (was && !is) {
                log_notice("The fair class is back (sched_ext %s): backend %s. Writing latniced's values again "
                           "where a task lost them.",
                           scx_state_to_string(now.state), s->backend);
                reapply_start(m, s);
        } else
                log_info("Backend %s.", s->backend);
        if (m->hooks.backend_changed)
                m->hooks.backend_changed(m);
        manager_notify_status(m);
}

static int scx_on_timer(sd_event_source *es, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        manager_leave_realtime(m);
        scx_refresh(m);
        return 0;
}

/* Is this uevent about sched_ext? "ACTION@DEVPATH\0KEY=VALUE\0..." from the kernel. */
static bool uevent_is_scx(const char *buf, size_t n) {
        const char *at = memchr(buf, '@', strnlen(buf, n));
        static const char path[] = "/kernel/sched_ext";

        return at && (size_t) (buf + n - at - 1) >= strlen(path) && memcmp(at + 1, path, strlen(path)) == 0;
}

static int scx_on_uevent(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        bool changed = false;
        char buf[8192];

        manager_leave_realtime(m);
        for (unsigned i = 0; i < 256; i++) {
                struct sockaddr_nl src = {};
                struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
                struct msghdr mh = { .msg_name = &src, .msg_namelen = sizeof(src), .msg_iov = &iov, .msg_iovlen = 1 };
                ssize_t k = recvmsg(fd, &mh, MSG_DONTWAIT);

                if (k < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                break;
                        /* ENOBUFS: a burst of uevents overran the socket; ours may be among them. */
                        if (errno == ENOBUFS) {
                                changed = true;
                                continue;
                        }
                        log_warning_errno(errno, "Failed to read kernel uevents, reading sched_ext's state every "
                                          "%d s instead: %m", SCX_POLL_USEC / 1000000);
                        m->scx_state->uevent_source = sd_event_source_disable_unref(m->scx_state->uevent_source);
                        m->scx_state->poll = true;
                        changed = true;
                        break;
                }
                /* Only the kernel (port 0) speaks for the kernel; udev's rebroadcasts are another group. */
                if (src.nl_pid != 0 || (mh.msg_flags & MSG_TRUNC))
                        continue;
                if (uevent_is_scx(buf, (size_t) k)) {
                        log_debug("Kernel uevent: %.*s.", (int) strnlen(buf, (size_t) k), buf);
                        changed = true;
                }
        }
        if (changed)
                scx_refresh(m);
        return 0;
}

static int scx_open_uevents(Manager *m, ManagerScx *s) {
        struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = 1 };
        int r;

        s->uevent_fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
        if (s->uevent_fd < 0)
                return -errno;
        if (bind(s->uevent_fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        r = sd_event_add_io(m->event, &s->uevent_source, s->uevent_fd, EPOLLIN, scx_on_uevent, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(s->uevent_source, "scx-uevent");
        return 0;
}

int manager_scx_start(Manager *m) {
        ManagerScx *s;
        struct stat st;
        int r;

        if (stat(SCX_DIR, &st) < 0) {
                log_debug("No %s: this kernel has no sched_ext, nothing to follow.", SCX_DIR);
                return 0;
        }
        s = calloc(1, sizeof(ManagerScx));
        if (!s)
                return log_oom();
        s->uevent_fd = -1;
        m->scx_state = s;
        m->backend = s->backend;
        m->backend_reason = s->reason;

        r = scx_open_uevents(m, s);
        if (r < 0) {
                log_notice_errno(r, "Failed to listen to kernel uevents, reading sched_ext's state every %d s "
                                 "instead: %m", SCX_POLL_USEC / 1000000);
                s->uevent_source = sd_event_source_disable_unref(s->uevent_source);
                s->poll = true;
        }
        /* After the socket is open: a change from now on is not missed. */
        scx_read(&s->status);
        scx_describe(m, s);
        if (scx_in_charge(&s->status))
                log_notice("Backend %s: %s Matching goes on and the applied table is kept.", s->backend, s->reason);
        else
                log_info("sched_ext: %s%s%s; following it through %s.", scx_state_to_string(s->status.state),
                         s->status.name[0] ? ", scheduler " : "", s->status.name,
                         s->poll ? "a read every few seconds" : "kernel uevents");
        if (s->status.state == SCX_ENABLING || s->status.state == SCX_DISABLING || s->status.state == SCX_UNKNOWN)
                scx_arm(m, s, s->settle_usec = SCX_SETTLE_MIN_USEC);
        else if (s->poll)
                scx_arm(m, s, SCX_POLL_USEC);
        return 0;
}

void manager_scx_free(Manager *m) {
        ManagerScx *s = m->scx_state;

        if (!s)
                return;
        sd_event_source_disable_unref(s->uevent_source);
        sd_event_source_disable_unref(s->timer);
        sd_event_source_disable_unref(s->reapply_defer);
        if (s->uevent_fd >= 0)
                close(s->uevent_fd);
        free(s->todo);
        free(s);
        m->scx_state = NULL;
        m->backend = m->backend_reason = NULL;
}
