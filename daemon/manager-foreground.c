/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The foreground boost (see manager-foreground.h): SetForeground lands
 * here once the bus side has checked who calls and for what.
 *
 * A boost is an entry of the applied table like a rule's, marked
 * foreground, so `latnicectl list`, GetTask and the state file know it;
 * the state file's mark makes a restarted latniced put the value back
 * instead of adopting it (the focus service sends the focus again when
 * latniced reappears). Moving a boost touches only the processes that
 * change sides: flapping between two windows of one application costs
 * nothing, between two applications a few sched_setattr() calls.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <sys/epoll.h>
#include <systemd/sd-login.h>

#include "foreground-util.h"
#include "foreground.h"
#include "log.h"
#include "login-session.h"
#include "manager-decide.h"
#include "manager-foreground.h"
#include "manager-inherited.h"
#include "proc.h"
#include "util.h"

/* Users with a boost at once: one per user that is logged in graphically. */
#define FOREGROUND_MAX_OWNERS 32

typedef struct Member {
        pid_t pid;
        uint64_t start_time;
} Member;

typedef struct Boost {
        struct ManagerForeground *fg;
        uid_t owner;
        uid_t uid;            /* whose processes it covers */
        pid_t root;
        uint64_t root_start;
        Member *members;
        size_t n_members;
        sd_bus_track *track;
        char *session;        /* the login session it is bound to; NULL: none (root's, without one) */
} Boost;

typedef struct ManagerForeground {
        Manager *manager;
        bool enabled;
        int value;
        ForegroundCover cover;
        Boost *boosts[FOREGROUND_MAX_OWNERS];
        uint64_t moves;
        sd_login_monitor *login; /* logind's sessions, watched from the first bound boost on */
        sd_event_source *login_source;
} ManagerForeground;

static ManagerForeground *fg_state(Manager *m) {
        if (!m->foreground_state) {
                m->foreground_state = calloc(1, sizeof(ManagerForeground));
                if (m->foreground_state)
                        m->foreground_state->manager = m;
        }
        return m->foreground_state;
}

bool manager_foreground_enabled(const Manager *m) {
        return m->foreground_state && m->foreground_state->enabled && m->probe.backend != BACKEND_NONE &&
               !m->options.dry_run;
}

static AppliedProcess *boosted_entry(Manager *m, const Member *p) {
        AppliedProcess *e = applied_table_get(m->applied, p->pid);

        return e && e->start_time == p->start_time && e->foreground ? e : NULL;
}

/* A forked child of a boosted process that no exec reset carries the boost untracked: give it its parent's value. */
static void unboost_untracked(Manager *m, ManagerForeground *fg, uid_t uid, const pid_t *pids, size_t n) {
        uint64_t boost_raw = sched_raw_value(&m->probe, fg->value);

        for (size_t i = 0; i < n; i++) {
                ThreadSched cur, parent = {};
                ApplyResult res = {};
                ProcStat st;

                _cleanup_(proc_task_done) ProcTask p = {};

                if (applied_table_get(m->applied, pids[i]))
                        continue;
                if (proc_task_read(m->proc_fd, pids[i], PROC_IDS, &p) < 0 || (p.stat.flags & PROC_PF_KTHREAD) ||
                    p.uid != uid)
                        continue;
                st = p.stat;
                if (sched_thread_get(&m->probe, pids[i], &cur) < 0 || cur.realtime ||
                    sched_thread_raw(&m->probe, &cur) != boost_raw)
                        continue;
                if (st.ppid > 0)
                        (void) sched_thread_get(&m->probe, st.ppid, &parent);
                if (sched_thread_raw(&m->probe, &parent) == boost_raw)
                        parent.latency_nice = 0;
                (void) sched_apply_process(&m->probe, m->proc_fd, pids[i], st.start_time, parent.latency_nice,
                                           THREADS_ALL, false, &res);
        }
}

/* What root stands for: its user unit, or its process tree. */
static int boost_list(Manager *m, ManagerForeground *fg, pid_t root, uid_t uid, pid_t *ret, size_t max) {
        if (fg->cover == FOREGROUND_COVER_UNIT && m->cgroup2_fd >= 0) {
                _cleanup_(proc_task_done) ProcTask p = {};
                char unit[4096];

                if (proc_task_read(m->proc_fd, root, PROC_CGROUP, &p) >= 0 &&
                    foreground_user_unit(p.cgroup, uid, unit, sizeof(unit)))
                        return foreground_list_cgroup(m->cgroup2_fd, unit, ret, max);
        }
        return foreground_list_tree(m->proc_fd, root, ret, max);
}

static void member_unboost(Manager *m, const Member *p) {
        AppliedProcess *e = boosted_entry(m, p);
        pid_t pid = p->pid;
        int r;

        if (!e)
                return; /* gone, or an exec or SetLatencyNice replaced the boost */
        r = applied_is_ours(&m->probe, m->proc_fd, e);
        if (r > 0) {
                r = applied_restore(&m->probe, m->proc_fd, e);
                log_info("%s[%d]: foreground boost ended%s.", e->comm, (int) pid,
                         r > 0 ? "" : r == 0 ? ", its value was changed meanwhile: left alone" : ", gone");
        } else if (r == 0)
                log_info("%s[%d]: foreground boost ended, its value was changed meanwhile: left alone.", e->comm,
                         (int) pid);
        manager_forget(m, pid);
        /* The rules give back what they gave before the boost. */
        if (r > 0)
                (void) manager_decide_pids(m, &pid, 1, true);
}

static bool members_have(const Member *v, size_t n, pid_t pid, uint64_t start) {
        for (size_t i = 0; i < n; i++)
                if (v[i].pid == pid && v[i].start_time == start)
                        return true;
        return false;
}

/*
 * What the members (origins: some, or all, also those that exited since) handed down through fork and
 * that no walk of the tree finds any more, as the sleep of "(exec sleep 1000 &)" once the subshell is
 * gone: back to the default unless its value changed since, then the rules decide it. The pids reset
 * go to ret (up to max), so that the caller can boost those the new window stands for in their own
 * right. How many were reset.
 */
static size_t unboost_inherited(Manager *m, ManagerForeground *fg, const Member *origins, size_t n_origins,
                                pid_t *ret, size_t max) {
        _cleanup_(freep) Inherited *v = NULL;
        uint64_t raw = sched_raw_value(&m->probe, fg->value), def = sched_raw_value(&m->probe, LATNICE_DEFAULT);
        size_t k = 0;
        int n;

        if (n_origins == 0)
                return 0;
        n = manager_inherited_list(m, &v);
        for (int i = 0; i < n; i++) {
                pid_t pid = v[i].pid;

                if (!members_have(origins, n_origins, v[i].origin, v[i].origin_start) ||
                    manager_inherited_restore(m, &v[i], raw, def) <= 0)
                        continue;
                log_info("PID %d: foreground boost ended (inherited through fork from PID %d).", (int) pid,
                         (int) v[i].origin);
                (void) manager_decide_pids(m, &pid, 1, true);
                if (ret && k < max)
                        ret[k++] = pid;
        }
        return k;
}

/* boost_end: every member gets its value back; the boost's slot is freed. */
static void boost_free(Manager *m, Boost *b) {
        pid_t *pids;
        int n = -1;

        if (!b)
                return;
        for (size_t i = 0; i < b->n_members; i++)
                member_unboost(m, &b->members[i]);
        (void) unboost_inherited(m, b->fg, b->members, b->n_members, NULL, 0);
        pids = calloc(FOREGROUND_MAX_PROCESSES, sizeof(pid_t));
        if (pids && b->root > 0)
                n = boost_list(m, b->fg, b->root, b->uid, pids, FOREGROUND_MAX_PROCESSES);
        if (n > 0)
                unboost_untracked(m, b->fg, b->uid, pids, (size_t) n);
        free(pids);
        for (size_t i = 0; i < FOREGROUND_MAX_OWNERS; i++)
                if (b->fg->boosts[i] == b)
                        b->fg->boosts[i] = NULL;
        sd_bus_track_unref(b->track);
        free(b->session);
        free(b->members);
        free(b);
}

static int boost_on_track(sd_bus_track *t, void *userdata) {
        Boost *b = userdata;
        Manager *m = b->fg->manager;

        log_info("The bus names that set uid %u's foreground boost are gone: ending it.", (unsigned) b->owner);
        boost_free(m, b);
        return 0;
}

/* logind changed a session: a boost whose session is no longer active (another user's in front on the seat,
 * a switch to a VT, the session ended) ends here, whoever still holds it on the bus. */
static int fg_on_login(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ManagerForeground *fg = userdata;

        (void) sd_login_monitor_flush(fg->login);
        for (size_t i = 0; i < FOREGROUND_MAX_OWNERS; i++) {
                Boost *b = fg->boosts[i];

                if (!b || !b->session || login_session_usable(b->session))
                        continue;
                log_info("Session %s of uid %u is no longer active: ending its foreground boost.", b->session,
                         (unsigned) b->owner);
                boost_free(fg->manager, b);
        }
        return 0;
}

static int fg_watch_logins(ManagerForeground *fg) {
        int r;

        if (fg->login)
                return 0;
        r = sd_login_monitor_new("session", &fg->login);
        if (r < 0)
                return r;
        r = sd_event_add_io(fg->manager->event, &fg->login_source, sd_login_monitor_get_fd(fg->login),
                            (uint32_t) sd_login_monitor_get_events(fg->login), fg_on_login, fg);
        if (r < 0) {
                fg->login = sd_login_monitor_unref(fg->login);
                return r;
        }
        (void) sd_event_source_set_description(fg->login_source, "foreground-logins");
        return 0;
}

/* b belongs to session from now on (the target, or its caller's user, may have moved to another one). */
static int boost_bind(ManagerForeground *fg, Boost *b, const char *session) {
        char *copy = NULL;
        int r;

        if (streq_ptr(b->session, session))
                return 0;
        if (session) {
                r = fg_watch_logins(fg);
                if (r < 0)
                        return r;
                copy = strdup(session);
                if (!copy)
                        return -ENOMEM;
        }
        free(b->session);
        b->session = copy;
        return 0;
}

static Boost *boost_find(ManagerForeground *fg, uid_t owner, bool create) {
        Boost **slot = NULL;

        for (size_t i = 0; i < FOREGROUND_MAX_OWNERS; i++) {
                if (fg->boosts[i] && fg->boosts[i]->owner == owner)
                        return fg->boosts[i];
                if (!fg->boosts[i] && !slot)
                        slot = &fg->boosts[i];
        }
        if (!create || !slot)
                return NULL;
        *slot = calloc(1, sizeof(Boost));
        if (*slot)
                **slot = (Boost) { .fg = fg, .owner = owner };
        return *slot;
}

/* Boosts one process (focused: the focused one itself) if foreground_decide() says so; true if it carries
 * the boost now. */
static bool member_boost(Manager *m, ManagerForeground *fg, pid_t pid, bool focused, uid_t uid, uint64_t *ret_start) {
        _cleanup_(proc_task_done) ProcTask p = {};
        ThreadSched cur;
        AppliedProcess *e;
        ForegroundView v = {};
        ForegroundAction a;
        TaskInfo t;
        char ref[96];
        int r;

        if (proc_task_read(m->proc_fd, pid, PROC_IDS, &p) < 0)
                return false;
        if ((p.stat.flags & PROC_PF_KTHREAD) || p.stat.state == 'Z' || p.uid != uid)
                return false; /* another user's process below the focused one (sudo): not the caller's to boost */
        if (sched_thread_get(&m->probe, pid, &cur) < 0)
                return false;
        e = applied_table_get(m->applied, pid);
        if (e && e->start_time != p.stat.start_time)
                e = NULL;
        v = (ForegroundView) {
                .realtime = cur.realtime,
                .has_value = sched_thread_has_value(&m->probe, &cur),
                .value = cur.latency_nice,
                .ours = e && applied_is_ours(&m->probe, m->proc_fd, e) > 0,
                .manual = e && e->manual,
        };
        v.boosted = v.ours && e->foreground;
        v.rule = v.ours && !e->foreground && !e->manual;
        v.focused = focused;
        *ret_start = p.stat.start_time;
        a = foreground_decide(&v, fg->value);
        if (a == FOREGROUND_KEEP)
                return true;
        if (a != FOREGROUND_BOOST) {
                log_debug("%s[%d]: no foreground boost (%s).", p.stat.comm, (int) pid,
                          a == FOREGROUND_LEAVE_REALTIME ? "realtime"
                          : a == FOREGROUND_LEAVE_FOREIGN ? "a value somebody else set"
                          : a == FOREGROUND_LEAVE_MANUAL  ? "set with SetLatencyNice"
                          : a == FOREGROUND_LEAVE_RULE    ? "its own rule's value"
                                                          : "its value is as low already");
                return false;
        }
        proc_task_to_info(&p, &t);
        snprintf(ref, sizeof(ref), "[Foreground] LatencyNice=%d, focused (uid %u)", fg->value, (unsigned) uid);
        r = manager_apply(m, &t, p.stat.start_time,
                          &(ApplyRequest) {
                                  .latency_nice = fg->value,
                                  .threads = THREADS_ALL,
                                  .ref = ref,
                                  .rule_name = "foreground",
                                  .foreground = true,
                          },
                          false);
        return r > 0;
}

static bool pids_have(const pid_t *v, size_t n, pid_t pid) {
        for (size_t i = 0; i < n; i++)
                if (v[i] == pid)
                        return true;
        return false;
}

int manager_foreground_set(Manager *m, uid_t owner, pid_t pid, uint64_t start_time, uid_t uid, const char *session,
                           sd_bus_message *call) {
        ManagerForeground *fg = fg_state(m);
        _cleanup_(freep) pid_t *pids = NULL;
        _cleanup_(freep) Member *next = NULL, *departed = NULL;
        _cleanup_(freep) pid_t *reset = NULL;
        size_t n_next = 0, n_departed = 0, n_reset;
        Boost *b;
        int n, r;

        if (!fg)
                return -ENOMEM;
        if (pid <= 0) {
                boost_free(m, boost_find(fg, owner, false));
                return 0;
        }
        if (!manager_foreground_enabled(m))
                return 0;
        b = boost_find(fg, owner, true);
        if (!b)
                return -EBUSY;
        if (call) {
                if (!b->track) {
                        r = sd_bus_track_new(sd_bus_message_get_bus(call), &b->track, boost_on_track, b);
                        if (r < 0)
                                return r;
                }
                r = sd_bus_track_add_sender(b->track, call);
                if (r < 0)
                        return r;
        }
        r = boost_bind(fg, b, session);
        if (r < 0)
                return r;
        if (b->root == pid && b->root_start == start_time)
                return (int) b->n_members; /* the same window again, or another of the same process */
        fg->moves++;

        pids = calloc(FOREGROUND_MAX_PROCESSES, sizeof(pid_t));
        next = calloc(FOREGROUND_MAX_PROCESSES, sizeof(Member));
        departed = calloc(b->n_members + 1, sizeof(Member));
        reset = calloc(FOREGROUND_MAX_PROCESSES, sizeof(pid_t));
        if (!pids || !next || !departed || !reset)
                return -ENOMEM;
        n = boost_list(m, fg, pid, uid, pids, FOREGROUND_MAX_PROCESSES);
        if (n <= 0) {
                pids[0] = pid;
                n = 1;
        }
        /* Those that change sides only: the ones that stay keep their boost untouched. */
        for (int i = 0; i < n; i++) {
                uint64_t st = 0;

                if (member_boost(m, fg, pids[i], pids[i] == pid, uid, &st))
                        next[n_next++] = (Member) { .pid = pids[i], .start_time = st };
        }
        for (size_t i = 0; i < b->n_members; i++)
                if (!members_have(next, n_next, b->members[i].pid, b->members[i].start_time)) {
                        member_unboost(m, &b->members[i]);
                        departed[n_departed++] = b->members[i];
                }
        /* What those handed down through fork goes with them; where the new window stands for it too, it
         * gets the boost as a member of its own, so that its end finds it. */
        n_reset = unboost_inherited(m, fg, departed, n_departed, reset, FOREGROUND_MAX_PROCESSES);
        for (size_t i = 0; i < n_reset; i++) {
                uint64_t st = 0;

                if (n_next < FOREGROUND_MAX_PROCESSES && pids_have(pids, (size_t) n, reset[i]) &&
                    member_boost(m, fg, reset[i], reset[i] == pid, uid, &st))
                        next[n_next++] = (Member) { .pid = reset[i], .start_time = st };
        }
        free(b->members);
        b->members = TAKE_PTR(next);
        b->n_members = n_next;
        b->root = pid;
        b->root_start = start_time;
        b->uid = uid;
        log_info("Foreground of uid %u: PID %d, %zu process%s boosted to LatencyNice=%d%s%s.", (unsigned) owner,
                 (int) pid, n_next, n_next == 1 ? "" : "es", fg->value, b->session ? ", while session " : "",
                 b->session ?: "");
        return (int) n_next;
}

int manager_foreground_current(Manager *m, uid_t owner, pid_t pid, uint64_t start_time, const char *session,
                               sd_bus_message *call) {
        ManagerForeground *fg = m->foreground_state;
        Boost *b = fg ? boost_find(fg, owner, false) : NULL;
        int r;

        if (!b || b->root != pid || b->root_start != start_time || !streq_ptr(b->session, session))
                return -ENOENT;
        if (call && b->track) {
                /* A new connection of the same user (latnice-focus restarted) keeps the boost alive too. */
                r = sd_bus_track_add_sender(b->track, call);
                if (r < 0)
                        return r;
        }
        return (int) b->n_members;
}

void manager_foreground_drop_adopted(Manager *m, const AppliedProcess *e) {
        int r;

        /* Its forks that carry the boost (alive or not, the boosted process): from the kept record, later. */
        manager_inherited_note_dropped(m, e);
        if (applied_is_ours(&m->probe, m->proc_fd, e) <= 0)
                return;
        r = applied_restore(&m->probe, m->proc_fd, e);
        if (r > 0)
                log_info("%s[%d]: foreground boost of an earlier latniced ended (LatencyNice=%d again).", e->comm,
                         (int) e->pid, e->before);
}

static void foreground_drop_all(Manager *m) {
        ManagerForeground *fg = m->foreground_state;

        for (size_t i = 0; fg && i < FOREGROUND_MAX_OWNERS; i++)
                boost_free(m, fg->boosts[i]);
}

void manager_foreground_reload(Manager *m) {
        ManagerForeground *fg = fg_state(m);
        _cleanup_(freep) char *conf = NULL;
        DaemonConfig dc = {};

        if (!fg)
                return;
        conf = path_join(m->options.root, LATNICE_DAEMON_CONF);
        if (!conf || daemon_config_load(conf, &dc) < 0) {
                daemon_config_done(&dc);
                return;
        }
        if (dc.foreground != fg->enabled || dc.foreground_latency_nice != fg->value ||
            (ForegroundCover) dc.foreground_cover != fg->cover) {
                foreground_drop_all(m);
                fg->enabled = dc.foreground;
                fg->value = dc.foreground_latency_nice;
                fg->cover = dc.foreground_cover;
                if (fg->enabled)
                        log_info("Foreground boost: LatencyNice=%d for the focused window's %s.", fg->value,
                                 fg->cover == FOREGROUND_COVER_UNIT ? "unit (or process tree)" : "process tree");
        }
        daemon_config_done(&dc);
}

char *manager_foreground_describe(const Manager *m) {
        const ManagerForeground *fg = m->foreground_state;
        unsigned boosts = 0, processes = 0;
        char *s;

        if (!fg || !fg->enabled)
                return strdup("off");
        for (size_t i = 0; i < FOREGROUND_MAX_OWNERS; i++)
                if (fg->boosts[i]) {
                        boosts++;
                        processes += (unsigned) fg->boosts[i]->n_members;
                }
        if (asprintf(&s, "LatencyNice=%d Cover=%s%s: %u boost%s, %u process%s, %" PRIu64 " moves", fg->value,
                     foreground_cover_to_string(fg->cover), manager_foreground_enabled(m) ? "" : " (no backend)",
                     boosts, boosts == 1 ? "" : "s", processes, processes == 1 ? "" : "es", fg->moves) < 0)
                return NULL;
        return s;
}

void manager_foreground_free(Manager *m) {
        ManagerForeground *fg = m->foreground_state;

        if (!fg)
                return;
        /* Values are restored on stop with the rest of the table (or kept, and dropped at the next start). */
        for (size_t i = 0; i < FOREGROUND_MAX_OWNERS; i++)
                if (fg->boosts[i]) {
                        sd_bus_track_unref(fg->boosts[i]->track);
                        free(fg->boosts[i]->session);
                        free(fg->boosts[i]->members);
                        free(fg->boosts[i]);
                }
        sd_event_source_disable_unref(fg->login_source);
        sd_login_monitor_unref(fg->login);
        m->foreground_state = mfree(fg);
}
