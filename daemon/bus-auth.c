/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The caller's identity and polkit (see bus-auth.h).
 *
 * sd_bus_query_sender_creds() on a bus connection is a synchronous
 * GetConnectionCredentials round trip: a slow bus driver would stall exec
 * handling. So we ask asynchronously, once per unique name (unique names
 * are never reused while the bus runs, so what we learnt stays true), and
 * queue the calls of that sender meanwhile. Everything is bounded: cached
 * names, waiting lookups, calls queued per lookup, polkit checks per uid.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bus-auth.h"
#include "latnice/dbus.h"
#include "util.h"

/* The lookups and the polkit checks are doubly linked lists (prev, next) with a head in BusAuth. */
#define LIST_PREPEND(head, item)                         \
        do {                                             \
                (item)->prev = NULL;                     \
                (item)->next = (head);                   \
                if (head)                                \
                        (head)->prev = (item);           \
                (head) = (item);                         \
        } while (0)
#define LIST_REMOVE(head, item)                          \
        do {                                             \
                if ((item)->prev)                        \
                        (item)->prev->next = (item)->next; \
                else if ((head) == (item))               \
                        (head) = (item)->next;           \
                if ((item)->next)                        \
                        (item)->next->prev = (item)->prev; \
        } while (0)

#define CACHE_SIZE 128
#define LOOKUPS_MAX 256          /* identity lookups in flight */
#define CALLS_PER_LOOKUP_MAX 32  /* calls of one sender waiting for its identity */
#define POLKIT_PER_UID_MAX 16    /* polkit checks in flight for one uid */
#define POLKIT_MAX 1024          /* ... and for everybody */

typedef struct CachedCaller {
        char *name;
        BusCaller caller;
} CachedCaller;

typedef struct WaitingCall {
        sd_bus_message *call;
        BusCallerHandler handler;
        void *userdata;
        struct WaitingCall *next;
} WaitingCall;

typedef struct Lookup {
        BusAuth *auth;
        char *name;
        sd_bus_slot *slot;
        WaitingCall *calls, **tail;
        unsigned n_calls;
        struct Lookup *next, *prev;
} Lookup;

typedef struct PolkitCheck {
        BusAuth *auth;
        sd_bus_message *call;
        sd_bus_slot *slot;
        char *action;
        uid_t uid;
        BusAuthContinuation cont;
        void *data;
        void (*free_data)(void *);
        struct PolkitCheck *next, *prev;
} PolkitCheck;

struct BusAuth {
        sd_bus *bus;
        CachedCaller cache[CACHE_SIZE];
        unsigned cache_next;
        Lookup *lookups;
        unsigned n_lookups;
        PolkitCheck *checks;
        unsigned n_checks;
};

/* ---- replies to calls that waited ---------------------------------------- */

static void reply_late(sd_bus_message *call, int r, sd_bus_error *error) {
        if (r < 0 || sd_bus_error_is_set(error))
                (void) sd_bus_reply_method_errno(call, r < 0 ? r : -EIO, error);
}

/*
 * Zeroed memory for one more entry of a bounded queue in *ret. A full queue
 * refuses with LimitsExceeded and refusal, which names the bound.
 */
static int queue_entry_new(bool full, size_t size, const char *refusal, sd_bus_error *error, void **ret) {
        void *p;

        if (full)
                return sd_bus_error_set(error, SD_BUS_ERROR_LIMITS_EXCEEDED, refusal);
        p = calloc(1, size);
        if (!p)
                return -ENOMEM;
        *ret = p;
        return 0;
}

/* ---- identity ------------------------------------------------------------- */

static const BusCaller *cache_find(BusAuth *a, const char *name) {
        for (size_t i = 0; i < CACHE_SIZE; i++)
                if (a->cache[i].name && strcmp(a->cache[i].name, name) == 0)
                        return &a->cache[i].caller;
        return NULL;
}

static void cache_put(BusAuth *a, const char *name, const BusCaller *c) {
        CachedCaller *slot = &a->cache[a->cache_next++ % CACHE_SIZE];
        char *n = strdup(name);

        if (!n)
                return; /* not cached: asked again next time */
        free(slot->name);
        slot->name = n;
        slot->caller = *c;
}

static void lookup_free(Lookup *l, int r, const char *why) {
        BusAuth *a = l->auth;

        LIST_REMOVE(a->lookups, l);
        a->n_lookups--;
        while (l->calls) {
                WaitingCall *w = l->calls;

                l->calls = w->next;
                if (r < 0) {
                        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;

                        (void) sd_bus_error_setf(&e, LATNICE_ERROR_ACCESS_DENIED, "Cannot identify the caller: %s",
                                                 why ?: strerror(-r));
                        reply_late(w->call, r, &e);
                }
                sd_bus_message_unref(w->call);
                free(w);
        }
        sd_bus_slot_unref(l->slot);
        free(l->name);
        free(l);
}

static int lookup_on_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Lookup *l = userdata;
        BusAuth *a = l->auth;
        BusCaller c = { .uid = (uid_t) -1 };
        bool have_uid = false;
        const sd_bus_error *e;
        int r;

        e = sd_bus_message_get_error(reply);
        if (e) {
                lookup_free(l, -sd_bus_message_get_errno(reply) ?: -EIO, e->message ?: e->name);
                return 0;
        }
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        while (r > 0) {
                const char *key;
                uint32_t v;

                r = sd_bus_message_enter_container(reply, 'e', "sv");
                if (r <= 0)
                        break;
                r = sd_bus_message_read(reply, "s", &key);
                if (r >= 0 && (strcmp(key, "UnixUserID") == 0 || strcmp(key, "ProcessID") == 0)) {
                        r = sd_bus_message_read(reply, "v", "u", &v);
                        if (r >= 0 && key[0] == 'U') {
                                c.uid = (uid_t) v;
                                have_uid = true;
                        } else if (r >= 0)
                                c.pid = (pid_t) v;
                } else if (r >= 0)
                        r = sd_bus_message_skip(reply, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        if (r < 0 || !have_uid) {
                lookup_free(l, r < 0 ? r : -ENODATA, "the bus did not say who it is");
                return 0;
        }
        cache_put(a, l->name, &c);
        /* Run the calls in the order they came, then forget the lookup. */
        for (WaitingCall *w = l->calls; w; w = w->next) {
                _cleanup_(sd_bus_error_free) sd_bus_error err = SD_BUS_ERROR_NULL;

                r = w->handler(w->call, &c, w->userdata, &err);
                reply_late(w->call, r, &err);
        }
        lookup_free(l, 0, NULL);
        return 0;
}

static Lookup *lookup_find(BusAuth *a, const char *name) {
        for (Lookup *l = a->lookups; l; l = l->next)
                if (strcmp(l->name, name) == 0)
                        return l;
        return NULL;
}

static int direct_caller(sd_bus_message *call, BusCaller *ret) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *c = NULL;
        int r;

        /* A direct connection (tests): the peer's credentials are local, no round trip. */
        r = sd_bus_query_sender_creds(call, SD_BUS_CREDS_EUID | SD_BUS_CREDS_PID, &c);
        if (r < 0)
                return r;
        r = sd_bus_creds_get_euid(c, &ret->uid);
        if (r < 0)
                return r;
        if (sd_bus_creds_get_pid(c, &ret->pid) < 0)
                ret->pid = 0;
        return 0;
}

int bus_auth_with_caller(BusAuth *a, sd_bus_message *call, BusCallerHandler handler, void *userdata,
                         sd_bus_error *error) {
        const char *sender = sd_bus_message_get_sender(call);
        const BusCaller *known;
        WaitingCall *w = NULL;
        Lookup *l;
        int r;

        if (!sender || sd_bus_message_get_bus(call) != a->bus) {
                BusCaller c = {};

                r = direct_caller(call, &c);
                if (r < 0)
                        return sd_bus_error_setf(error, LATNICE_ERROR_ACCESS_DENIED, "Cannot identify the caller: %s",
                                                 strerror(-r));
                r = handler(call, &c, userdata, error);
                return r < 0 ? r : 1;
        }
        known = cache_find(a, sender);
        if (known) {
                BusCaller c = *known;

                r = handler(call, &c, userdata, error);
                return r < 0 ? r : 1;
        }

        l = lookup_find(a, sender);
        if (!l) {
                r = queue_entry_new(a->n_lookups >= LOOKUPS_MAX, sizeof(Lookup),
                                    "Too many callers are being identified at once, try again.", error, (void **) &l);
                if (r < 0)
                        return r;
                l->auth = a;
                l->tail = &l->calls;
                l->name = strdup(sender);
                if (!l->name) {
                        free(l);
                        return -ENOMEM;
                }
                r = sd_bus_call_method_async(a->bus, &l->slot, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                             "org.freedesktop.DBus", "GetConnectionCredentials", lookup_on_reply, l,
                                             "s", sender);
                if (r < 0) {
                        free(l->name);
                        free(l);
                        return r;
                }
                LIST_PREPEND(a->lookups, l);
                a->n_lookups++;
        }
        r = queue_entry_new(l->n_calls >= CALLS_PER_LOOKUP_MAX, sizeof(WaitingCall),
                            "Too many calls waiting for this caller to be identified, try again.", error,
                            (void **) &w);
        if (r < 0)
                return r;
        w->call = sd_bus_message_ref(call);
        w->handler = handler;
        w->userdata = userdata;
        *l->tail = w;
        l->tail = &w->next;
        l->n_calls++;
        return 1;
}

/* ---- polkit ------------------------------------------------------------------ */

static unsigned checks_of(const BusAuth *a, uid_t uid) {
        unsigned n = 0;

        for (const PolkitCheck *q = a->checks; q; q = q->next)
                n += q->uid == uid;
        return n;
}

static PolkitCheck *check_free(PolkitCheck *q) {
        BusAuth *a;

        if (!q)
                return NULL;
        a = q->auth;
        if (a) {
                LIST_REMOVE(a->checks, q);
                a->n_checks--;
        }
        sd_bus_slot_unref(q->slot);
        sd_bus_message_unref(q->call);
        if (q->free_data)
                q->free_data(q->data);
        free(q->action);
        free(q);
        return NULL;
}

static int check_on_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        _cleanup_(sd_bus_error_free) sd_bus_error why = SD_BUS_ERROR_NULL;
        PolkitCheck *q = userdata;
        const sd_bus_error *e;
        int authorized = 0, challenge = 0, r;

        e = sd_bus_message_get_error(reply);
        if (e) {
                /* Not installed, not activatable, or its unit masked/failed: polkit is missing. */
                if (sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER) ||
                    strncmp(e->name, "org.freedesktop.DBus.Error.Spawn.", 32) == 0 ||
                    strncmp(e->name, "org.freedesktop.systemd1.", 25) == 0)
                        (void) sd_bus_error_setf(&why, LATNICE_ERROR_ACCESS_DENIED,
                                                 "Only root may do this here: polkit is not available to authorize "
                                                 "%s (%s).", q->action, e->message ?: e->name);
                else
                        (void) sd_bus_error_setf(&why, LATNICE_ERROR_ACCESS_DENIED,
                                                 "Authorization of %s failed: %s", q->action, e->message ?: e->name);
        } else {
                r = sd_bus_message_enter_container(reply, 'r', "bba{ss}");
                if (r >= 0)
                        r = sd_bus_message_read(reply, "bb", &authorized, &challenge);
                if (r < 0) {
                        authorized = 0;
                        (void) sd_bus_error_setf(&why, LATNICE_ERROR_ACCESS_DENIED, "Cannot parse polkit's answer.");
                } else if (!authorized && challenge)
                        (void) sd_bus_error_setf(&why, LATNICE_ERROR_INTERACTIVE_AUTH_REQUIRED,
                                                 "%s needs authentication: call with interactive authorization "
                                                 "allowed (e.g. run latnicectl on a terminal) or as root.",
                                                 q->action);
                else if (!authorized)
                        (void) sd_bus_error_setf(&why, LATNICE_ERROR_ACCESS_DENIED,
                                                 "Not authorized: polkit refused %s.", q->action);
        }
        if (authorized) {
                _cleanup_(sd_bus_error_free) sd_bus_error err = SD_BUS_ERROR_NULL;

                r = q->cont(q->call, q->data, &err);
                reply_late(q->call, r, &err);
        } else
                (void) sd_bus_reply_method_error(q->call, &why);
        check_free(q);
        return 0;
}

int bus_auth_polkit(BusAuth *a, sd_bus_message *call, const BusCaller *caller, const char *action,
                    const char *const *details, BusAuthContinuation cont, void *data, void (*free_data)(void *),
                    sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *req = NULL;
        const char *sender = sd_bus_message_get_sender(call);
        int interactive = sd_bus_message_get_allow_interactive_authorization(call) > 0;
        PolkitCheck *q = NULL;
        int r;

        if (caller->uid == 0) {
                r = cont(call, data, error);
                if (free_data)
                        free_data(data);
                return r < 0 ? r : 1;
        }
        if (!sender || sd_bus_message_get_bus(call) != a->bus) {
                /* A direct connection (tests) has no polkit and no bus name to check. */
                if (free_data)
                        free_data(data);
                return sd_bus_error_setf(error, LATNICE_ERROR_ACCESS_DENIED, "%s needs root.", action);
        }
        r = queue_entry_new(checks_of(a, caller->uid) >= POLKIT_PER_UID_MAX || a->n_checks >= POLKIT_MAX,
                            sizeof(PolkitCheck), "Too many of your authorization checks are waiting, try again.",
                            error, (void **) &q);
        if (r < 0) {
                if (free_data)
                        free_data(data);
                return r;
        }
        *q = (PolkitCheck) {
                .call = sd_bus_message_ref(call),
                .action = strdup(action),
                .uid = caller->uid,
                .cont = cont,
                .data = data,
                .free_data = free_data,
        };
        if (!q->action) {
                check_free(q);
                return -ENOMEM;
        }
        r = sd_bus_message_new_method_call(a->bus, &req, "org.freedesktop.PolicyKit1",
                                           "/org/freedesktop/PolicyKit1/Authority",
                                           "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization");
        if (r >= 0)
                /* subject: the caller's bus name; polkit resolves it to a process and a user itself */
                r = sd_bus_message_append(req, "(sa{sv})s", "system-bus-name", 1, "name", "s", sender, action);
        if (r >= 0)
                r = sd_bus_message_open_container(req, 'a', "{ss}");
        for (size_t i = 0; r >= 0 && details && details[i] && details[i + 1]; i += 2)
                r = sd_bus_message_append(req, "{ss}", details[i], details[i + 1]);
        if (r >= 0)
                r = sd_bus_message_close_container(req);
        if (r >= 0)
                r = sd_bus_message_append(req, "us", (uint32_t) interactive, "");
        if (r >= 0)
                /* interactive: a human types a password; polkit allows it some minutes */
                r = sd_bus_call_async(a->bus, &q->slot, req, check_on_reply, q,
                                      interactive ? (uint64_t) 300 * 1000000 : 0);
        if (r < 0) {
                check_free(q);
                return r;
        }
        q->auth = a;
        LIST_PREPEND(a->checks, q);
        a->n_checks++;
        return 1;
}

/* ---- lifecycle ----------------------------------------------------------------- */

BusAuth *bus_auth_new(sd_bus *bus) {
        BusAuth *a = calloc(1, sizeof(BusAuth));

        if (a)
                a->bus = bus;
        return a;
}

BusAuth *bus_auth_free(BusAuth *a) {
        if (!a)
                return NULL;
        while (a->checks)
                check_free(a->checks);
        while (a->lookups)
                lookup_free(a->lookups, -ECONNRESET, "latniced lost its bus connection");
        for (size_t i = 0; i < CACHE_SIZE; i++)
                free(a->cache[i].name);
        free(a);
        return NULL;
}

unsigned bus_auth_n_pending(const BusAuth *a) {
        return a ? a->n_checks + a->n_lookups : 0;
}
