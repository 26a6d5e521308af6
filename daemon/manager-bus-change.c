/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * org.latnice1's methods that change things (Reload, SetProfile,
 * SetLatencyNice, SetForeground, CollectStats): bad input gets its named
 * error first, then authorization (authz.c decides, bus-auth.c asks
 * polkit), then the manager acts (manager-rules.c, manager-decide.c,
 * manager-foreground.c, manager-stats.c) and its outcome becomes a reply
 * or a named error.
 */

#include <inttypes.h>
#include <limits.h>

#include "authz.h"
#include "bus-reply.h"
#include "bus-target.h"
#include "latnice/dbus.h"
#include "log.h"
#include "login-session.h"
#include "manager-bus.h"
#include "manager-bus-internal.h"
#include "manager-decide.h"
#include "manager-foreground.h"
#include "manager-rules.h"
#include "manager-stats.h"
#include "profile.h"
#include "util.h"

static int reply_reloaded(Manager *m, sd_bus_message *call) {
        return sd_bus_reply_method_return(call, "uu", (uint32_t) (m->rules ? m->rules->n_rules : 0),
                                          (uint32_t) (m->rules ? m->rules->n_errors : 0));
}

static int reload_now(sd_bus_message *call, void *data, sd_bus_error *error) {
        Manager *m = data;
        int r;

        log_info("Reload requested on the bus.");
        r = manager_reload(m, false);
        if (r == -EINVAL)
                return sd_bus_error_setf(error, LATNICE_ERROR_RELOAD_FAILED,
                                         "The new rules have errors (see the journal or 'latnicectl check'); "
                                         "keeping the %zu rules that were running.",
                                         m->rules ? m->rules->n_rules : 0);
        if (r < 0)
                return sd_bus_error_setf(error, LATNICE_ERROR_RELOAD_FAILED, "Reload failed: %s", strerror(-r));
        return reply_reloaded(m, call);
}

static int reload(Manager *m, sd_bus_message *call, const BusCaller *c, bool unused, sd_bus_error *error) {
        return bus_auth_polkit(m->bus_state->auth, call, c, LATNICE_POLKIT_RELOAD, NULL, reload_now, m, NULL, error);
}
CALLER_METHOD(method_reload, reload, false)

typedef struct ProfileRequest {
        Manager *manager;
        char name[];
} ProfileRequest;

static int set_profile_now(sd_bus_message *call, void *data, sd_bus_error *error) {
        ProfileRequest *q = data;
        Manager *m = q->manager;
        int r;

        log_info("Switch to profile %s requested on the bus.", q->name);
        r = manager_set_profile(m, q->name);
        if (r == -ENOENT)
                return sd_bus_error_setf(error, LATNICE_ERROR_NO_SUCH_PROFILE, "No profile '%s'.", q->name);
        if (r == -EINVAL)
                return sd_bus_error_setf(error, LATNICE_ERROR_RELOAD_FAILED,
                                         "Profile '%s' has errors (see the journal or 'latnicectl check'); "
                                         "keeping profile %s.", q->name, m->profile ?: "none");
        if (r < 0)
                return sd_bus_error_setf(error, LATNICE_ERROR_RELOAD_FAILED, "Cannot switch to profile '%s': %s",
                                         q->name, strerror(-r));
        return sd_bus_reply_method_return(call, NULL);
}

static int set_profile(Manager *m, sd_bus_message *call, const BusCaller *c, bool unused, sd_bus_error *error) {
        _cleanup_(freep) char *path = NULL;
        ProfileRequest *q;
        const char *name;
        int r;

        r = sd_bus_message_read(call, "s", &name);
        if (r < 0)
                return r;
        /* Bad input gets its named error before authorization: asking is not doing. */
        if (!profile_name_valid(name)) {
                _cleanup_(freep) char *shown = utf8_escape_invalid(name, true);

                /* Cut by characters, not bytes: an error message that is not UTF-8 is never sent. */
                return sd_bus_error_setf(error, LATNICE_ERROR_INVALID_PROFILE_NAME,
                                         "Invalid profile name '%.*s': use letters, digits, '_', '.', '-'.",
                                         (int) utf8_prefix_len(shown ?: "?", 64), shown ?: "?");
        }
        r = profile_find(m->options.root, m->options.profile_dir, name, &path);
        if (r == -ENOENT)
                return sd_bus_error_setf(error, LATNICE_ERROR_NO_SUCH_PROFILE,
                                         "No profile '%s' (see ListProfiles).", name);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Cannot look up profile '%s': %s", name,
                                         strerror(-r));
        q = calloc(1, sizeof(ProfileRequest) + strlen(name) + 1);
        if (!q)
                return -ENOMEM;
        q->manager = m;
        strcpy(q->name, name);
        /* The name is valid (letters, digits, '_', '.', '-'): a rule may allow some profiles only
         * (GameMode's, conf/gamemode/). */
        return bus_auth_polkit(m->bus_state->auth, call, c, LATNICE_POLKIT_SET_PROFILE,
                               (const char *const[]) { "profile", q->name, NULL }, set_profile_now, q, free, error);
}
CALLER_METHOD(method_set_profile, set_profile, false)

typedef struct SetRequest {
        Manager *manager;
        Target target;
        int latency_nice;
        uid_t caller;
        bool may_lower; /* authorized to lower (root or polkit): else raise only, thread by thread */
        char *session;  /* SetForeground: the login session the boost is bound to (NULL: none, root's) */
} SetRequest;

static SetRequest *set_request_free(SetRequest *s) {
        if (!s)
                return NULL;
        target_done(&s->target);
        free(s->session);
        return mfree(s);
}

static void set_request_freep(SetRequest **s) {
        set_request_free(*s);
}

static void set_request_destroy(void *p) {
        set_request_free(p);
}

/* Pins and reads the process a SetLatencyNice or SetForeground is about; never a kernel thread. */
static int set_request_new(Manager *m, const BusCaller *c, bool by_pidfd, int fd, uint32_t upid, int latency_nice,
                           SetRequest **ret, sd_bus_error *error) {
        _cleanup_(set_request_freep) SetRequest *s = NULL;
        int r;

        s = calloc(1, sizeof(SetRequest));
        if (!s)
                return -ENOMEM;
        *s = (SetRequest) { .manager = m, .target.pidfd = -1, .latency_nice = latency_nice, .caller = c->uid };
        r = by_pidfd ? target_from_pidfd(m->proc_fd, fd, &s->target, error)
                     : target_from_pid(m->proc_fd, c, upid, &s->target, error);
        if (r < 0)
                return r;
        if (s->target.st.flags & PROC_PF_KTHREAD)
                return sd_bus_error_setf(error, LATNICE_ERROR_KERNEL_THREAD,
                                         "%d is a kernel thread; latniced never changes kernel threads.",
                                         (int) s->target.pid);
        *ret = TAKE_PTR(s);
        return 0;
}

static int set_latency_nice_now(sd_bus_message *call, void *data, sd_bus_error *error) {
        SetRequest *s = data;
        Manager *m = s->manager;
        ManualResult res;
        int r;

        /* The pidfd pins the process we checked; the start time catches a reused pid. */
        if (!target_still_there(m->proc_fd, &s->target))
                return sd_bus_error_setf(error, LATNICE_ERROR_PROCESS_CHANGED,
                                         "Process %d exited or its PID was reused; nothing applied.",
                                         (int) s->target.pid);
        r = manager_set_manual(m, &(ManualRequest) {
                                       .pid = s->target.pid,
                                       .pidfd = s->target.pidfd,
                                       .start_time = s->target.st.start_time,
                                       .uid = s->target.ruid,
                                       .comm = s->target.st.comm,
                                       .latency_nice = s->latency_nice,
                                       .may_lower = s->may_lower,
                                       .by = s->caller,
                               }, &res);
        if (r < 0)
                return no_such_process(error, s->target.pid, r);
        if (res.exited)
                return sd_bus_error_setf(error, LATNICE_ERROR_PROCESS_CHANGED,
                                         "Process %d exited while its value was set.", (int) s->target.pid);
        switch (res.outcome) {
        case AUTHZ_SET_APPLIED:
                break;
        case AUTHZ_SET_DENIED:
                return sd_bus_error_setf(error, LATNICE_ERROR_ACCESS_DENIED,
                                         "Lowering the latency nice of %d needs authorization; nothing applied.",
                                         (int) s->target.pid);
        case AUTHZ_SET_FAILED:
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Cannot set latency nice %d on %d: %s",
                                         s->latency_nice, (int) s->target.pid, strerror(-res.set.first_error));
        case AUTHZ_SET_ALL_REALTIME:
                return sd_bus_error_setf(error, LATNICE_ERROR_NOT_SUPPORTED,
                                         "All %u threads of %d are realtime or idle; left alone.", res.set.n_threads,
                                         (int) s->target.pid);
        }
        return sd_bus_reply_method_return(call, "uu", res.set.n_applied, res.set.n_threads);
}

static int set_latency_nice(Manager *m, sd_bus_message *call, const BusCaller *c, bool by_pidfd,
                            sd_bus_error *error) {
        _cleanup_(set_request_freep) SetRequest *s = NULL;
        _cleanup_(freep) int *values = NULL;
        size_t n_values = 0;
        int32_t value;
        int r, fd = -1;
        uint32_t upid = 0;
        AuthzSet need;

        /* The value first: bad input gets its named error before anything else. */
        r = by_pidfd ? sd_bus_message_read(call, "hi", &fd, &value) : sd_bus_message_read(call, "ui", &upid, &value);
        if (r < 0)
                return r;
        switch (authz_set_check_args(value, by_pidfd, upid, m->probe.backend != BACKEND_NONE)) {
        case AUTHZ_SET_ARGS_OK:
                break;
        case AUTHZ_SET_ARGS_INVALID_VALUE:
                return sd_bus_error_setf(error, LATNICE_ERROR_INVALID_VALUE,
                                         "Invalid latency nice %" PRIi32 ": must be in %d..%d.", value, LATNICE_MIN,
                                         LATNICE_MAX);
        case AUTHZ_SET_ARGS_INVALID_PID:
                return sd_bus_error_setf(error, LATNICE_ERROR_INVALID_PID, "Invalid PID %" PRIu32 ".", upid);
        case AUTHZ_SET_ARGS_NOT_SUPPORTED:
                return sd_bus_error_setf(error, LATNICE_ERROR_NOT_SUPPORTED, "This kernel cannot apply latency "
                                         "nice: %s", m->probe.reason);
        }

        r = set_request_new(m, c, by_pidfd, fd, upid, value, &s, error);
        if (r < 0)
                return r;
        r = sched_thread_values(&m->probe, m->proc_fd, s->target.pid, &values, &n_values);
        if (r < 0)
                return no_such_process(error, s->target.pid, r);
        need = authz_set_latency_nice(c->uid, s->target.ruid, s->target.euid, values, n_values, value);
        if (need == AUTHZ_SET_FREE) {
                /* Root may lower; anybody else raises thread by thread (a thread may change meanwhile). */
                s->may_lower = authz_may_lower_unasked(c->uid);
                r = set_latency_nice_now(call, s, error);
                return r < 0 ? r : 1;
        }
        s->may_lower = true; /* once polkit said yes */
        /* bus_auth_polkit() owns the request from here on, whatever it answers. */
        return bus_auth_polkit(m->bus_state->auth, call, c,
                               need == AUTHZ_SET_ANY ? LATNICE_POLKIT_ANY : LATNICE_POLKIT_LOWER, NULL,
                               set_latency_nice_now, TAKE_PTR(s), set_request_destroy, error);
}
CALLER_METHOD(method_set_latency_nice, set_latency_nice, false)
CALLER_METHOD(method_set_latency_nice_by_pidfd, set_latency_nice, true)

/* SetForeground: the boost itself is manager-foreground.c's; here who may name which process, and
 * which login session the boost belongs to (latniced(8)): it lives while that session is active. */
static int session_inactive(sd_bus_error *error, const SetRequest *s) {
        return sd_bus_error_setf(error, LATNICE_ERROR_ACCESS_DENIED,
                                 "Cannot boost %d: session %s of uid %u is not active, or is remote.",
                                 (int) s->target.pid, s->session, (unsigned) s->target.ruid);
}

static int set_foreground_now(sd_bus_message *call, void *data, sd_bus_error *error) {
        SetRequest *s = data;
        Manager *m = s->manager;
        int r;

        if (!target_still_there(m->proc_fd, &s->target))
                return sd_bus_error_setf(error, LATNICE_ERROR_PROCESS_CHANGED,
                                         "Process %d exited or its PID was reused; nothing boosted.",
                                         (int) s->target.pid);
        /* polkit may have taken a while: the session may have gone to the background meanwhile. */
        if (s->session && !login_session_usable(s->session))
                return session_inactive(error, s);
        r = manager_foreground_set(m, s->caller, s->target.pid, s->target.st.start_time, s->target.ruid, s->session,
                                   call);
        if (r == -EBUSY)
                return sd_bus_error_set(error, LATNICE_ERROR_BUSY, "Too many users have a foreground boost.");
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Cannot boost %d: %s", (int) s->target.pid,
                                         strerror(-r));
        return sd_bus_reply_method_return(call, "u", (uint32_t) r);
}

/* Nothing of the caller's has focus: its own boost ends; nothing to authorize. */
static int end_foreground(Manager *m, sd_bus_message *call, const BusCaller *c, bool unused, sd_bus_error *error) {
        int r;

        r = manager_foreground_set(m, c->uid, 0, 0, c->uid, NULL, NULL);
        return r < 0 ? r : sd_bus_reply_method_return(call, "u", (uint32_t) 0);
}
CALLER_METHOD(method_end_foreground, end_foreground, false)

static int set_foreground(Manager *m, sd_bus_message *call, const BusCaller *c, bool by_pidfd,
                          sd_bus_error *error) {
        _cleanup_(set_request_freep) SetRequest *s = NULL;
        uint32_t upid = 0;
        AuthzSession where;
        int r, fd = -1;

        r = by_pidfd ? sd_bus_message_read(call, "h", &fd) : sd_bus_message_read(call, "u", &upid);
        if (r < 0)
                return r;
        if (!by_pidfd && upid == 0)
                /* 0: what EndForeground says (kept: latnice-focus of earlier versions calls it so). */
                return end_foreground(m, call, c, false, error);
        if (!by_pidfd && upid > INT_MAX)
                return sd_bus_error_setf(error, LATNICE_ERROR_INVALID_PID, "Invalid PID %" PRIu32 ".", upid);
        if (!manager_foreground_enabled(m))
                /* Off ([Foreground] LatencyNice= unset): cheap, and nothing to ask polkit. */
                return sd_bus_reply_method_return(call, "u", (uint32_t) 0);

        r = set_request_new(m, c, by_pidfd, fd, upid, 0, &s, error);
        if (r < 0)
                return r;
        where = target_bound_session(&s->target, c, &s->session);
        switch (authz_set_foreground(c->uid, s->target.ruid, where)) {
        case AUTHZ_FOREGROUND_NOT_YOURS:
                return sd_bus_error_setf(error, LATNICE_ERROR_NOT_YOUR_PROCESS,
                                         "Process %d belongs to another user: only root may boost it.",
                                         (int) s->target.pid);
        case AUTHZ_FOREGROUND_NO_SESSION:
                return sd_bus_error_setf(error, LATNICE_ERROR_ACCESS_DENIED,
                                         "Cannot boost %d: uid %u has no active session, and a foreground boost "
                                         "belongs to one.", (int) s->target.pid, (unsigned) s->target.ruid);
        case AUTHZ_FOREGROUND_INACTIVE:
                return session_inactive(error, s);
        case AUTHZ_FOREGROUND_FREE:
                /* Root's boost is bound to the user's session where it is active, else to nothing. */
                if (where != AUTHZ_SESSION_ACTIVE_LOCAL)
                        s->session = mfree(s->session);
                r = set_foreground_now(call, s, error);
                return r < 0 ? r : 1;
        case AUTHZ_FOREGROUND_ASK:
                break;
        }
        /* The same window again (focus services repeat themselves): polkit said yes to this very boost, whose
         * target was checked above to be the caller's, bound to the same session, active now. */
        r = manager_foreground_current(m, c->uid, s->target.pid, s->target.st.start_time, s->session, call);
        if (r >= 0)
                return sd_bus_reply_method_return(call, "u", (uint32_t) r);
        return bus_auth_polkit(m->bus_state->auth, call, c, LATNICE_POLKIT_FOREGROUND, NULL, set_foreground_now,
                               TAKE_PTR(s), set_request_destroy, error);
}
CALLER_METHOD(method_set_foreground, set_foreground, false)
CALLER_METHOD(method_set_foreground_by_pidfd, set_foreground, true)

/* CollectStats: the collection is the manager's (manager-stats.c); here who may ask and who waits. */
static void stats_waiter_done(StatsWaiter *w) {
        w->check = sd_bus_slot_unref(w->check);
        w->track = sd_bus_track_unref(w->track);
        w->call = sd_bus_message_unref(w->call);
}

void manager_bus_stats_waiters_free(ManagerBus *b) {
        for (unsigned i = 0; i < b->n_stats_waiters; i++)
                stats_waiter_done(&b->stats_waiters[i]);
        b->n_stats_waiters = 0;
}

/* The waiter of track hung up: its slot is free; with nobody left waiting, the collection ends. */
static void stats_waiter_gone(Manager *m, sd_bus_track *track) {
        ManagerBus *b = m->bus_state;

        if (!b)
                return;
        for (unsigned i = 0; i < b->n_stats_waiters; i++) {
                if (b->stats_waiters[i].track != track)
                        continue;
                stats_waiter_done(&b->stats_waiters[i]);
                memmove(&b->stats_waiters[i], &b->stats_waiters[i + 1],
                        (b->n_stats_waiters - i - 1) * sizeof(StatsWaiter));
                b->stats_waiters[--b->n_stats_waiters] = (StatsWaiter) {};
                break;
        }
        if (b->n_stats_waiters == 0)
                manager_stats_cancel(m);
}

static int stats_waiter_on_gone(sd_bus_track *track, void *userdata) {
        stats_waiter_gone(userdata, track);
        return 0;
}

static int stats_waiter_on_check(sd_bus_message *reply, void *userdata, sd_bus_error *unused) {
        sd_bus_track *track = userdata;
        int has_owner = 0;

        /* An error (the bus refused the question) keeps the waiter: its slot is freed when the collection ends. */
        if (sd_bus_message_is_method_error(reply, NULL) || sd_bus_message_read(reply, "b", &has_owner) < 0 ||
            has_owner)
                return 0;
        stats_waiter_gone(sd_bus_track_get_userdata(track), track);
        return 0;
}

/* Takes a slot for call, tracking its caller's connection. */
static int stats_waiter_add(Manager *m, sd_bus_message *call) {
        ManagerBus *b = m->bus_state;
        StatsWaiter w = { .call = sd_bus_message_ref(call) };
        const char *sender = sd_bus_message_get_sender(call);
        sd_bus *bus = sd_bus_message_get_bus(call);
        int r;

        if (sender) {
                r = sd_bus_track_new(bus, &w.track, stats_waiter_on_gone, m);
                if (r >= 0)
                        r = sd_bus_track_add_sender(w.track, call);
                /* Sent after the track's AddMatch: the bus answers in order, so a caller gone before the match
                 * was in place is known gone here. */
                if (r >= 0)
                        r = sd_bus_call_method_async(bus, &w.check, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                     "org.freedesktop.DBus", "NameHasOwner", stats_waiter_on_check,
                                                     w.track, "s", sender);
                if (r < 0) {
                        stats_waiter_done(&w);
                        return r;
                }
        }
        b->stats_waiters[b->n_stats_waiters++] = w;
        return 0;
}

static int collect_stats_now(sd_bus_message *call, void *data, sd_bus_error *error) {
        Manager *m = data;
        ManagerBus *b = m->bus_state;
        bool started = false;
        uint32_t seconds;
        int r;

        r = sd_bus_message_rewind(call, true);
        if (r >= 0)
                r = sd_bus_message_read(call, "u", &seconds);
        if (r < 0)
                return r;
        if (!b)
                return sd_bus_error_set(error, SD_BUS_ERROR_FAILED, "Not ready.");
        if (b->n_stats_waiters >= STATS_WAITERS_MAX)
                return sd_bus_error_setf(error, LATNICE_ERROR_BUSY,
                                         "A collection is under way and %u callers wait for it already; "
                                         "try again in %" PRIu64 " s.", b->n_stats_waiters,
                                         (manager_stats_deadline(m) - monotonic_usec()) / 1000000 + 1);
        if (!manager_stats_running(m)) {
                _cleanup_(freep) char *reason = NULL;

                r = manager_stats_start(m, (uint64_t) seconds * 1000000, &reason);
                if (r < 0) {
                        log_warning("Cannot collect scheduler statistics: %s",
                                    reason ?: strerror(-r));
                        return sd_bus_error_setf(error, LATNICE_ERROR_NOT_SUPPORTED,
                                                 "Cannot collect scheduler statistics here: %s.",
                                                 reason ?: strerror(-r));
                }
                started = true;
        }
        /* A caller that comes while one runs gets the same result, when it ends. */
        r = stats_waiter_add(m, call);
        if (r < 0) {
                if (started && b->n_stats_waiters == 0)
                        manager_stats_cancel(m);
                return r;
        }
        return 1;
}

static int collect_stats(Manager *m, sd_bus_message *call, const BusCaller *c, bool unused, sd_bus_error *error) {
        uint32_t seconds;
        int r;

        r = sd_bus_message_read(call, "u", &seconds);
        if (r < 0)
                return r;
        if (seconds < LATNICE_STATS_MIN_SEC || seconds > LATNICE_STATS_MAX_SEC)
                return sd_bus_error_setf(error, LATNICE_ERROR_INVALID_DURATION,
                                         "Invalid duration %" PRIu32 " s: collect for %d..%d s.", seconds,
                                         LATNICE_STATS_MIN_SEC, LATNICE_STATS_MAX_SEC);
        return bus_auth_polkit(m->bus_state->auth, call, c, LATNICE_POLKIT_STATS, NULL, collect_stats_now, m, NULL,
                               error);
}
CALLER_METHOD(method_collect_stats, collect_stats, false)

/* GetLastStats: the last result names rules and counts their processes: who may collect may read it. */
static int get_last_stats_now(sd_bus_message *call, void *data, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Manager *m = data;
        int r;

        r = sd_bus_message_new_method_return(call, &reply);
        if (r >= 0)
                r = bus_append_stats_result(reply, manager_stats_last(m));
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        return r < 0 ? r : 1;
}

static int get_last_stats(Manager *m, sd_bus_message *call, const BusCaller *c, bool unused, sd_bus_error *error) {
        return bus_auth_polkit(m->bus_state->auth, call, c, LATNICE_POLKIT_STATS, NULL, get_last_stats_now, m, NULL,
                               error);
}
CALLER_METHOD(method_get_last_stats, get_last_stats, false)

void manager_bus_stats_done(Manager *m, const StatsResult *result, int error) {
        ManagerBus *b = m->bus_state;

        if (!b)
                return;
        for (unsigned i = 0; i < b->n_stats_waiters; i++) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = TAKE_PTR(b->stats_waiters[i].call),
                                                                 *reply = NULL;
                int r;

                stats_waiter_done(&b->stats_waiters[i]);
                if (!result) {
                        if (error == -ECANCELED)
                                (void) sd_bus_reply_method_errorf(call, SD_BUS_ERROR_FAILED,
                                                                  "latniced stopped; the collection was dropped.");
                        else
                                (void) sd_bus_reply_method_errnof(call, error,
                                                                  "Cannot read the scheduler statistics: %m");
                        continue;
                }
                r = sd_bus_message_new_method_return(call, &reply);
                if (r >= 0)
                        r = bus_append_stats_result(reply, result);
                if (r >= 0)
                        r = sd_bus_send(NULL, reply, NULL);
                if (r < 0)
                        (void) sd_bus_reply_method_errnof(call, r, "Cannot send the scheduler statistics: %m");
        }
        b->n_stats_waiters = 0;
}
