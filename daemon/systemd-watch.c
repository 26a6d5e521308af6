/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The systemd1 client behind [Unit] rules. Everything is asynchronous on the
 * manager's bus connection:
 *
 *   GetNameOwner / NameOwnerChanged(org.freedesktop.systemd1)
 *     -> Subscribe, ListUnits, Get(ControlGroup) of each wanted unit -> ONLINE
 *   UnitNew / UnitRemoved / JobRemoved / per-unit PropertiesChanged
 *     -> Get(ControlGroup) again -> unit_changed
 *   Reloading(false), a new owner of the name (daemon-reexec), refresh()
 *     -> the list again (SYNCING -> ONLINE)
 *
 * The bus connection itself going away (dbus restarted) is the manager's
 * business: it frees this object and makes a new one on the new connection.
 * Object paths always come from systemd (ListUnits, UnitNew, GetUnit).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "match.h"
#include "systemd-watch.h"
#include "util.h"

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
#define SD_UNIT "org.freedesktop.systemd1.Unit"

typedef struct WatchedUnit {
        SystemdUnit pub;
        SystemdWatch *watch;
        sd_bus_slot *get_slot;        /* pending Get(ControlGroup) */
        bool get_again;               /* something changed while the Get was in flight */
        bool notify;                  /* report the next fetch even if the cgroup did not change */
        unsigned generation;          /* last sync that listed it */
} WatchedUnit;

typedef struct PendingCall {
        SystemdWatch *watch;
        sd_bus_slot *slot;
        bool verify_removed; /* GetUnit after UnitRemoved: forget the unit only on NoSuchUnit */
        SystemdCgroupCallback cgroup_done; /* systemd_watch_query_cgroup(): GetUnit, then Get(ControlGroup) */
        void *cgroup_userdata;
        struct PendingCall *next;
        char name[];
} PendingCall;

struct SystemdWatch {
        sd_bus *bus;
        SystemdWatchOps ops;
        void *userdata;
        SystemdWatchState state;

        sd_bus_slot *owner_match, *unit_new_match, *unit_removed_match, *job_removed_match, *reloading_match;
        sd_bus_slot *properties_match; /* one for every unit: path_namespace of systemd's unit objects */
        sd_bus_slot *owner_call, *subscribe_call, *list_call;
        char *owner; /* unique name of systemd on the bus, NULL when it is not there */

        WatchedUnit **units;
        size_t n_units;
        struct PendingCall *calls;
        unsigned generation;
        bool list_pending; /* a ListUnits reply is outstanding */
};

/* ---- units ------------------------------------------------------------- */

static void unit_free(WatchedUnit *u) {
        if (!u)
                return;
        sd_bus_slot_unref(u->get_slot);
        free(u->pub.name);
        free(u->pub.object_path);
        free(u->pub.control_group);
        free(u);
}

static WatchedUnit *watch_find(SystemdWatch *w, const char *name, size_t *ret_index) {
        for (size_t i = 0; i < w->n_units; i++)
                if (strcmp(w->units[i]->pub.name, name) == 0) {
                        if (ret_index)
                                *ret_index = i;
                        return w->units[i];
                }
        return NULL;
}

static void watch_remove_at(SystemdWatch *w, size_t i, bool notify) {
        WatchedUnit *u = w->units[i];

        w->units[i] = w->units[--w->n_units];
        if (notify && w->ops.unit_changed)
                w->ops.unit_changed(w, &u->pub, true, w->userdata);
        unit_free(u);
}

/* The interface that carries ControlGroup, from the unit type; NULL for types without a cgroup. */
static const char *cgroup_interface(const char *name) {
        const UnitType *t = unit_type_from_name(name, strlen(name));

        return t ? t->interface : NULL;
}

static bool watch_synced(SystemdWatch *w) {
        if (w->list_pending)
                return false;
        for (size_t i = 0; i < w->n_units; i++)
                if (w->units[i]->get_slot)
                        return false;
        return true;
}

static void watch_set_state(SystemdWatch *w, SystemdWatchState s, int error, const char *message) {
        w->state = s;
        if (w->ops.state_changed)
                w->ops.state_changed(w, s, error, message, w->userdata);
}

static void watch_maybe_online(SystemdWatch *w) {
        if (w->state == SYSTEMD_WATCH_SYNCING && watch_synced(w))
                watch_set_state(w, SYSTEMD_WATCH_ONLINE, 0, NULL);
}

static int unit_fetch(WatchedUnit *u);

static int unit_on_get(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        WatchedUnit *u = userdata;
        SystemdWatch *w = u->watch;
        const char *cg = NULL;
        bool changed;
        int r;

        u->get_slot = sd_bus_slot_unref(u->get_slot);
        if (sd_bus_message_is_method_error(reply, NULL)) {
                /* The unit vanished meanwhile (UnitRemoved follows), or systemd is reexecuting (relist follows). */
                cg = NULL;
        } else {
                r = sd_bus_message_read(reply, "v", "s", &cg);
                if (r < 0)
                        cg = NULL;
        }
        if (isempty(cg))
                cg = NULL;
        changed = !u->pub.fetched || !streq_ptr(cg, u->pub.control_group) || u->notify;
        if (!streq_ptr(cg, u->pub.control_group)) {
                char *n = cg ? strdup(cg) : NULL;

                if (cg && !n)
                        changed = false; /* out of memory: keep the old value, the next change retries */
                else {
                        free(u->pub.control_group);
                        u->pub.control_group = n;
                }
        }
        u->pub.fetched = true;
        if (u->get_again) {
                u->get_again = false;
                /* Report once the newest value is in, and report this change then too. */
                if (changed)
                        u->notify = true;
                if (unit_fetch(u) >= 0)
                        return 0;
        }
        if (w->state == SYSTEMD_WATCH_ONLINE) {
                if (changed && w->ops.unit_changed) {
                        u->notify = false;
                        w->ops.unit_changed(w, &u->pub, false, w->userdata);
                }
        } else
                watch_maybe_online(w);
        return 0;
}

/* Reads the unit's ControlGroup (again). */
static int unit_fetch(WatchedUnit *u) {
        const char *iface = cgroup_interface(u->pub.name);

        if (u->get_slot) {
                u->get_again = true;
                return 0;
        }
        if (!iface) {
                u->pub.fetched = true;
                return 0;
        }
        return sd_bus_call_method_async(u->watch->bus, &u->get_slot, SD_DEST, u->pub.object_path,
                                        "org.freedesktop.DBus.Properties", "Get", unit_on_get, u, "ss", iface,
                                        "ControlGroup");
}

static int watch_on_properties_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        SystemdWatch *w = userdata;
        const char *iface, *path = sd_bus_message_get_path(m);

        /* ControlGroup itself does not emit changes; ActiveState (on .Unit) moves with it. */
        if (!path || sd_bus_message_read(m, "s", &iface) < 0 || strcmp(iface, SD_UNIT) != 0)
                return 0;
        for (size_t i = 0; i < w->n_units; i++)
                if (streq_ptr(w->units[i]->pub.object_path, path)) {
                        (void) unit_fetch(w->units[i]);
                        break;
                }
        return 0;
}

/* A failed AddMatch must not take the shared connection down (the default handler would), nor go unsaid. */
static int match_installed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        SystemdWatch *w = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);

        if (e && w->ops.match_failed)
                w->ops.match_failed(w, e->message ?: e->name, w->userdata);
        return 0;
}

/* Starts following a unit, or refreshes what is known about it. */
static int watch_track(SystemdWatch *w, const char *name, const char *object_path) {
        WatchedUnit *u = watch_find(w, name, NULL);

        if (u) {
                u->generation = w->generation;
                if (!streq_ptr(u->pub.object_path, object_path)) {
                        char *p = strdup(object_path);

                        if (!p)
                                return -ENOMEM;
                        free(u->pub.object_path);
                        u->pub.object_path = p;
                }
        } else {
                WatchedUnit **nu = reallocarray(w->units, w->n_units + 1, sizeof(WatchedUnit *));

                if (!nu)
                        return -ENOMEM;
                w->units = nu;
                u = calloc(1, sizeof(WatchedUnit));
                if (!u)
                        return -ENOMEM;
                u->watch = w;
                u->generation = w->generation;
                u->pub.name = strdup(name);
                u->pub.object_path = strdup(object_path);
                if (!u->pub.name || !u->pub.object_path) {
                        unit_free(u);
                        return -ENOMEM;
                }
                w->units[w->n_units++] = u;
        }
        return unit_fetch(u);
}

/* ---- the unit list ------------------------------------------------------ */

static int watch_on_list(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        SystemdWatch *w = userdata;
        const char *name, *path;
        int r;

        w->list_call = sd_bus_slot_unref(w->list_call);
        w->list_pending = false;
        if (sd_bus_message_is_method_error(reply, NULL)) {
                const sd_bus_error *e = sd_bus_message_get_error(reply);

                /* Most likely systemd left the bus meanwhile; NameOwnerChanged brings us back. */
                watch_set_state(w, SYSTEMD_WATCH_OFFLINE, -sd_bus_message_get_errno(reply), e ? e->message : NULL);
                return 0;
        }
        r = sd_bus_message_enter_container(reply, 'a', "(ssssssouso)");
        if (r < 0)
                goto fail;
        while ((r = sd_bus_message_read(reply, "(ssssssouso)", &name, NULL, NULL, NULL, NULL, NULL, &path, NULL,
                                        NULL, NULL)) > 0)
                if (w->ops.want_unit && w->ops.want_unit(name, w->userdata)) {
                        r = watch_track(w, name, path);
                        if (r < 0)
                                goto fail;
                }
        if (r < 0)
                goto fail;
        /* Followed units that systemd no longer lists (or that are no longer wanted) are gone. */
        for (size_t i = w->n_units; i > 0; i--) {
                WatchedUnit *u = w->units[i - 1];

                if (u->generation != w->generation)
                        watch_remove_at(w, i - 1, true);
        }
        watch_maybe_online(w);
        return 0;
fail:
        watch_set_state(w, SYSTEMD_WATCH_OFFLINE, r, "cannot parse systemd's unit list");
        return 0;
}

static int watch_sync(SystemdWatch *w) {
        int r;

        w->list_call = sd_bus_slot_unref(w->list_call);
        w->generation++;
        r = sd_bus_call_method_async(w->bus, &w->list_call, SD_DEST, SD_PATH, SD_MANAGER, "ListUnits", watch_on_list,
                                     w, NULL);
        if (r < 0)
                return r;
        w->list_pending = true;
        if (w->state != SYSTEMD_WATCH_SYNCING)
                watch_set_state(w, SYSTEMD_WATCH_SYNCING, 0, NULL);
        return 0;
}

static int watch_on_subscribe(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        SystemdWatch *w = userdata;

        w->subscribe_call = sd_bus_slot_unref(w->subscribe_call);
        /* Already subscribed (systemd kept us across a reexec) is fine; other errors show in the list call. */
        return 0;
}

/* systemd is (again) on the bus: subscribe, then take the full picture. */
static int watch_start(SystemdWatch *w) {
        int r;

        w->subscribe_call = sd_bus_slot_unref(w->subscribe_call);
        r = sd_bus_call_method_async(w->bus, &w->subscribe_call, SD_DEST, SD_PATH, SD_MANAGER, "Subscribe",
                                     watch_on_subscribe, w, NULL);
        if (r < 0)
                return r;
        return watch_sync(w);
}

static int watch_set_owner(SystemdWatch *w, const char *owner) {
        char *o = NULL;

        if (streq_ptr(owner, w->owner))
                return 0;
        if (!isempty(owner)) {
                o = strdup(owner);
                if (!o)
                        return -ENOMEM;
        }
        free(w->owner);
        w->owner = o;
        if (!o) {
                /* Pending calls went to the old owner; their replies are errors or stale. */
                w->list_call = sd_bus_slot_unref(w->list_call);
                w->list_pending = false;
                for (size_t i = 0; i < w->n_units; i++) {
                        w->units[i]->get_slot = sd_bus_slot_unref(w->units[i]->get_slot);
                        w->units[i]->get_again = false;
                }
                watch_set_state(w, SYSTEMD_WATCH_OFFLINE, 0, NULL);
                return 0;
        }
        return watch_start(w);
}

/* What GetNameOwner or NameOwnerChanged said: followed, or offline with the reason. */
static void watch_take_owner(SystemdWatch *w, const char *owner) {
        int r = watch_set_owner(w, owner);

        if (r < 0)
                watch_set_state(w, SYSTEMD_WATCH_OFFLINE, r, "cannot talk to systemd");
}

static int watch_on_get_owner(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        SystemdWatch *w = userdata;
        const char *owner;
        int r;

        w->owner_call = sd_bus_slot_unref(w->owner_call);
        if (sd_bus_message_is_method_error(reply, NULL)) {
                const sd_bus_error *e = sd_bus_message_get_error(reply);

                /* Not an error if a NameOwnerChanged already told us more. */
                if (!w->owner)
                        watch_set_state(w, SYSTEMD_WATCH_OFFLINE, -sd_bus_message_get_errno(reply),
                                        e ? e->message : NULL);
                return 0;
        }
        r = sd_bus_message_read(reply, "s", &owner);
        if (r < 0) {
                watch_set_state(w, SYSTEMD_WATCH_OFFLINE, r, "cannot parse GetNameOwner's reply");
                return 0;
        }
        watch_take_owner(w, owner);
        return 0;
}

/* ---- signals ------------------------------------------------------------ */

static int watch_on_name_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        SystemdWatch *w = userdata;
        const char *name, *old, *new;

        if (sd_bus_message_read(m, "sss", &name, &old, &new) < 0 || strcmp(name, SD_DEST) != 0)
                return 0;
        /* A reexec shows as old -> "" -> new; systemd may also hand over directly. */
        if (!isempty(new) && streq_ptr(new, w->owner))
                return 0;
        if (!isempty(new) && w->owner)
                (void) watch_set_owner(w, NULL);
        watch_take_owner(w, new);
        return 0;
}

static int watch_on_unit_new(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        SystemdWatch *w = userdata;
        const char *name, *path;

        if (sd_bus_message_read(m, "so", &name, &path) < 0)
                return 0;
        if (!w->ops.want_unit || !w->ops.want_unit(name, w->userdata))
                return 0;
        (void) watch_track(w, name, path);
        return 0;
}

static int watch_get_unit(SystemdWatch *w, const char *name, bool verify_removed);

static int watch_on_unit_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        SystemdWatch *w = userdata;
        const char *name, *path;

        if (sd_bus_message_read(m, "so", &name, &path) < 0)
                return 0;
        /*
         * "Removed" means unloaded. daemon-reload and daemon-reexec unload
         * every unit and load them again: ask before forgetting a unit (the
         * question is answered after the reload), so that its subtree stays
         * in the prefilter meanwhile.
         */
        if (watch_find(w, name, NULL))
                (void) watch_get_unit(w, name, true);
        return 0;
}

/* A call about one unit by name (GetUnit, SetUnitProperties): the reply needs the name. */
static int call_new(SystemdWatch *w, const char *name, PendingCall **ret) {
        size_t l = strlen(name);
        PendingCall *c = calloc(1, sizeof(PendingCall) + l + 1);

        if (!c)
                return -ENOMEM;
        memcpy(c->name, name, l + 1);
        c->watch = w;
        c->next = w->calls;
        w->calls = c;
        *ret = c;
        return 0;
}

static void call_free(PendingCall *c) {
        SystemdWatch *w = c->watch;

        for (PendingCall **p = &w->calls; *p; p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        break;
                }
        sd_bus_slot_unref(c->slot);
        free(c);
}

/* r from starting c's method call: 0 once it did, else c goes and r is returned. */
static int call_started(PendingCall *c, int r) {
        if (r < 0) {
                call_free(c);
                return r;
        }
        return 0;
}

/* A call for the watch's users: only while systemd is on the bus. */
static int call_new_connected(SystemdWatch *w, const char *name, PendingCall **ret) {
        if (!w || !w->owner)
                return -ENOTCONN;
        return call_new(w, name, ret);
}

static int watch_on_get_unit(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        PendingCall *c = userdata;
        SystemdWatch *w = c->watch;
        const char *path;
        size_t i;

        if (!sd_bus_message_is_method_error(reply, NULL)) {
                if (sd_bus_message_read(reply, "o", &path) > 0 &&
                    (!c->verify_removed || watch_find(w, c->name, NULL)))
                        (void) watch_track(w, c->name, path);
        } else if (c->verify_removed &&
                   sd_bus_message_is_method_error(reply, "org.freedesktop.systemd1.NoSuchUnit") &&
                   watch_find(w, c->name, &i))
                /* Gone for real. Other errors (systemd away): the next list decides. */
                watch_remove_at(w, i, w->state == SYSTEMD_WATCH_ONLINE);
        call_free(c);
        return 0;
}

static int watch_get_unit(SystemdWatch *w, const char *name, bool verify_removed) {
        PendingCall *c;
        int r;

        for (c = w->calls; c; c = c->next)
                if (strcmp(c->name, name) == 0 && c->verify_removed == verify_removed)
                        return 0;
        r = call_new(w, name, &c);
        if (r < 0)
                return r;
        c->verify_removed = verify_removed;
        r = sd_bus_call_method_async(w->bus, &c->slot, SD_DEST, SD_PATH, SD_MANAGER, "GetUnit", watch_on_get_unit,
                                     c, "s", name);
        return call_started(c, r);
}

static int watch_on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        SystemdWatch *w = userdata;
        const char *job, *unit, *result;
        WatchedUnit *u;
        uint32_t id;

        if (sd_bus_message_read(m, "uoss", &id, &job, &unit, &result) < 0)
                return 0;
        u = watch_find(w, unit, NULL);
        if (u)
                (void) unit_fetch(u);
        else if (w->ops.want_unit && w->ops.want_unit(unit, w->userdata))
                /* We missed its UnitNew (it came while we were syncing): ask for its path. */
                (void) watch_get_unit(w, unit, false);
        if (w->ops.job_removed && w->state == SYSTEMD_WATCH_ONLINE)
                w->ops.job_removed(w, unit, result, w->userdata);
        return 0;
}

static int watch_on_reloading(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        SystemdWatch *w = userdata;
        int active;

        if (sd_bus_message_read(m, "b", &active) < 0)
                return 0;
        /* After a daemon-reload units may be new, gone or moved: take the full picture again. */
        if (!active && w->owner)
                (void) watch_sync(w);
        return 0;
}

/* ---- public ------------------------------------------------------------- */

SystemdWatch *systemd_watch_free(SystemdWatch *w) {
        if (!w)
                return NULL;
        while (w->calls)
                call_free(w->calls);
        for (size_t i = 0; i < w->n_units; i++)
                unit_free(w->units[i]);
        free(w->units);
        sd_bus_slot_unref(w->list_call);
        sd_bus_slot_unref(w->subscribe_call);
        sd_bus_slot_unref(w->owner_call);
        sd_bus_slot_unref(w->reloading_match);
        sd_bus_slot_unref(w->properties_match);
        sd_bus_slot_unref(w->job_removed_match);
        sd_bus_slot_unref(w->unit_removed_match);
        sd_bus_slot_unref(w->unit_new_match);
        sd_bus_slot_unref(w->owner_match);
        free(w->owner);
        sd_bus_unref(w->bus);
        free(w);
        return NULL;
}

int systemd_watch_new(sd_bus *bus, const SystemdWatchOps *ops, void *userdata, SystemdWatch **ret) {
        _cleanup_(systemd_watch_freep) SystemdWatch *w = NULL;
        int r;

        w = calloc(1, sizeof(SystemdWatch));
        if (!w)
                return -ENOMEM;
        w->bus = sd_bus_ref(bus);
        w->ops = *ops;
        w->userdata = userdata;
        w->state = SYSTEMD_WATCH_OFFLINE;

        /* Matches first: the bus delivers in order, so nothing between them and the list is lost. */
        r = sd_bus_add_match_async(bus, &w->owner_match,
                                   "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                                   "interface='org.freedesktop.DBus',member='NameOwnerChanged',"
                                   "arg0='" SD_DEST "'",
                                   watch_on_name_owner_changed, match_installed, w);
        if (r < 0)
                return r;
        {
                const struct {
                        sd_bus_slot **slot;
                        const char *member;
                        sd_bus_message_handler_t handler;
                } signals[] = {
                        { &w->unit_new_match, "UnitNew", watch_on_unit_new },
                        { &w->unit_removed_match, "UnitRemoved", watch_on_unit_removed },
                        { &w->job_removed_match, "JobRemoved", watch_on_job_removed },
                        { &w->reloading_match, "Reloading", watch_on_reloading },
                };

                for (size_t i = 0; i < ELEMENTSOF(signals); i++) {
                        r = sd_bus_match_signal_async(bus, signals[i].slot, SD_DEST, SD_PATH, SD_MANAGER,
                                                      signals[i].member, signals[i].handler, match_installed, w);
                        if (r < 0)
                                return r;
                }
        }
        /*
         * One match for the changes of every unit: a match per followed unit
         * would run into the bus's limit on matches per connection
         * (dbus-daemon 512, dbus-broker 256) with enough units.
         */
        r = sd_bus_add_match_async(bus, &w->properties_match,
                                   "type='signal',sender='" SD_DEST "',interface='org.freedesktop.DBus.Properties',"
                                   "member='PropertiesChanged',path_namespace='/org/freedesktop/systemd1/unit'",
                                   watch_on_properties_changed, match_installed, w);
        if (r < 0)
                return r;
        r = sd_bus_call_method_async(bus, &w->owner_call, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                     "org.freedesktop.DBus", "GetNameOwner", watch_on_get_owner, w, "s", SD_DEST);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(w);
        return 0;
}

int systemd_watch_refresh(SystemdWatch *w) {
        if (!w->owner)
                return 0; /* the list follows when systemd appears */
        return watch_sync(w);
}

SystemdWatchState systemd_watch_state(const SystemdWatch *w) {
        return w ? w->state : SYSTEMD_WATCH_OFFLINE;
}

size_t systemd_watch_n_units(const SystemdWatch *w) {
        return w ? w->n_units : 0;
}

const SystemdUnit *systemd_watch_next(const SystemdWatch *w, size_t *i) {
        if (!w || *i >= w->n_units)
                return NULL;
        return &w->units[(*i)++]->pub;
}

static int query_on_cgroup(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        PendingCall *c = userdata;
        const char *cg = NULL;

        if (!sd_bus_message_is_method_error(reply, NULL) && sd_bus_message_read(reply, "v", "s", &cg) < 0)
                cg = NULL;
        c->cgroup_done(c->watch, c->name, isempty(cg) ? NULL : cg, c->cgroup_userdata);
        call_free(c);
        return 0;
}

static int query_on_unit(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        PendingCall *c = userdata;
        const char *path, *iface = cgroup_interface(c->name);

        c->slot = sd_bus_slot_unref(c->slot);
        if (!iface || sd_bus_message_is_method_error(reply, NULL) || sd_bus_message_read(reply, "o", &path) <= 0 ||
            sd_bus_call_method_async(c->watch->bus, &c->slot, SD_DEST, path, "org.freedesktop.DBus.Properties", "Get",
                                     query_on_cgroup, c, "ss", iface, "ControlGroup") < 0) {
                c->cgroup_done(c->watch, c->name, NULL, c->cgroup_userdata);
                call_free(c);
        }
        return 0;
}

int systemd_watch_query_cgroup(SystemdWatch *w, const char *name, SystemdCgroupCallback done, void *userdata) {
        PendingCall *c;
        int r;

        r = call_new_connected(w, name, &c);
        if (r < 0)
                return r;
        c->cgroup_done = done;
        c->cgroup_userdata = userdata;
        r = sd_bus_call_method_async(w->bus, &c->slot, SD_DEST, SD_PATH, SD_MANAGER, "GetUnit", query_on_unit, c, "s",
                                     name);
        return call_started(c, r);
}

static int watch_on_set_properties(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        PendingCall *c = userdata;
        WatchedUnit *u = watch_find(c->watch, c->name, NULL);

        /* Success or not, read the cgroup again and report it: the owner decides what next. */
        if (u) {
                u->notify = true;
                (void) unit_fetch(u);
        }
        call_free(c);
        return 0;
}

int systemd_cpu_controller_call(sd_bus *bus, sd_bus_slot **slot, const char *name, bool on, bool unified,
                                sd_bus_message_handler_t cb, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_MANAGER, "SetUnitProperties");
        if (r < 0)
                return r;
        if (unified) /* UINT64_MAX: CGROUP_WEIGHT_INVALID, i.e. CPUWeight= unset */
                r = sd_bus_message_append(m, "sba(sv)", name, 1, 1, "CPUWeight", "t",
                                          on ? (uint64_t) 100 : UINT64_MAX);
        else
                r = sd_bus_message_append(m, "sba(sv)", name, 1, 1, "CPUAccounting", "b", (int) on);
        if (r < 0)
                return r;
        return sd_bus_call_async(bus, slot, m, cb, userdata, 0);
}

int systemd_watch_set_cpu_accounting(SystemdWatch *w, const char *name, bool on, bool unified) {
        PendingCall *c;
        int r;

        r = call_new_connected(w, name, &c);
        if (r < 0)
                return r;
        r = systemd_cpu_controller_call(w->bus, &c->slot, name, on, unified, watch_on_set_properties, c);
        return call_started(c, r);
}
