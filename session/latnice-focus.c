/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * latnice-focus: a user service that follows the focused window and tells
 * latniced (org.latnice1 SetForegroundByPIDFD) which process the user is
 * looking at. It picks its source itself (focus-source.h): Sway/i3 IPC when
 * SWAYSOCK is set, Hyprland's sockets when HYPRLAND_INSTANCE_SIGNATURE is,
 * niri's event stream when NIRI_SOCKET is, X11 (_NET_ACTIVE_WINDOW, a
 * PropertyNotify per change, no polling) otherwise, and always the session
 * bus name org.latnice1.Focus that the shipped KWin script and GNOME Shell
 * extension call. Every source ends in focus_set(): the pid becomes a pidfd
 * at once, so that a pid reused before the call reaches latniced boosts
 * nothing.
 *
 * Cheap under focus storms: at most one call is in flight; changes that
 * arrive meanwhile collapse into the latest, which is sent when the reply
 * is in. When latniced (re)appears on the bus, the current focus is sent
 * again; on exit the boost is dropped (latniced also drops it when this
 * connection goes away).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <systemd/sd-login.h>
#include <xcb/res.h>
#include <xcb/xcb.h>

#include "latnice/dbus.h"
#include "focus-source.h"

typedef struct Focus Focus;

/*
 * A name that a compositor which calls org.latnice1.Focus owns on the session bus, and what we know
 * of its owner: its unique name, and whether that connection is of our pid namespace (a pid it names
 * means the process we would boost). A call from the owner that comes before that answer waits for it
 * (one a name: a later one replaces it).
 */
typedef struct FocusOwner {
        Focus *focus;
        const char *name;     /* org.kde.KWin, org.gnome.Shell */
        char *owner;          /* its unique name now; NULL: none */
        bool checked, trusted;
        sd_bus_slot *query;   /* GetConnectionUnixProcessID of owner, in flight */
        sd_bus_message *held; /* a call from owner that came before the answer */
} FocusOwner;
#define FOCUS_OWNERS 2
static const char *const focus_owner_names[FOCUS_OWNERS] = { "org.kde.KWin", "org.gnome.Shell" };

struct Focus {
        sd_event *event;
        sd_bus *bus;          /* NULL with --print */
        sd_bus *user_bus;     /* org.latnice1.Focus, NULL without a session bus */
        bool print, debug;
        pid_t want;           /* the focused process, 0 for none */
        int want_pidfd;       /* its pidfd, taken when the focus changed */
        pid_t unknown_said;   /* the last pid said to be unknown (said once) */
        pid_t sent;           /* what latniced was told last (-1: nothing yet) */
        pid_t in_flight;      /* what the call in flight names */
        sd_bus_slot *call;    /* the call in flight */
        bool resend;          /* send the focus again once the call in flight is answered */
        sd_login_monitor *login; /* logind's sessions: the one latniced binds the boost to may change */
        sd_event_source *login_source;
        uint64_t calls, changes;
        char last_error[256]; /* said once, not at every focus change */

        xcb_connection_t *xcb;
        xcb_window_t root;
        xcb_atom_t atom_active, atom_pid, atom_client_list;
        bool have_xres;       /* the server says which pid a client has (X-Resource 1.2) */
        bool x11_unasked_said; /* an Xwayland window boosted nothing: no X server to ask (said once) */
        sd_event_source *xcb_source;

        FocusConn *source;    /* the compositor's: Sway, Hyprland or niri */

        /* Who may call org.latnice1.Focus: the connections that own these names. */
        FocusOwner owners[FOCUS_OWNERS];
        struct stat pid_ns;   /* our pid namespace (/proc/self/ns/pid) */
};

static int focus_send(Focus *f);

static int focus_on_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Focus *f = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        f->call = sd_bus_slot_unref(f->call);
        if (e) {
                /* Not fatal: the window may be another user's, the process gone, or
                 * latniced not running (it is sent again when latniced appears). */
                if (!sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER,
                                            LATNICE_ERROR_NO_SUCH_PROCESS) &&
                    strncmp(f->last_error, e->name, sizeof(f->last_error)) != 0) {
                        fprintf(stderr, "SetForeground(%d): %s\n", (int) f->in_flight, e->message ?: e->name);
                        snprintf(f->last_error, sizeof(f->last_error), "%s", e->name);
                }
        }
        f->sent = f->in_flight;
        if (f->resend) {
                f->resend = false;
                f->sent = -1;
        }
        return focus_send(f);
}

/* Sends the latest focus unless it is what latniced has, or a call is in flight. */
static int focus_send(Focus *f) {
        int r;

        if (f->call || f->want == f->sent)
                return 0;
        if (f->print) {
                f->sent = f->want;
                f->calls++;
                return 0;
        }
        /* The pidfd taken at the change, not a pid looked up now: a pid reused meanwhile is refused. */
        if (f->want > 0 && f->want_pidfd >= 0)
                r = sd_bus_call_method_async(f->bus, &f->call, LATNICE_BUS_NAME, LATNICE_BUS_PATH,
                                             LATNICE_BUS_INTERFACE, "SetForegroundByPIDFD", focus_on_reply, f,
                                             "h", f->want_pidfd);
        else
                r = sd_bus_call_method_async(f->bus, &f->call, LATNICE_BUS_NAME, LATNICE_BUS_PATH,
                                             LATNICE_BUS_INTERFACE, "SetForeground", focus_on_reply, f,
                                             "u", (uint32_t) 0);
        if (r < 0) {
                fprintf(stderr, "Failed to call SetForeground: %s\n", strerror(-r));
                return r;
        }
        f->in_flight = f->want;
        f->calls++;
        return 0;
}

static void focus_set(Focus *f, pid_t pid, const char *source) {
        int pidfd = -1;

        if (pid < 0)
                pid = 0;
        if (pid > 0) {
                /* Unknown here (gone, or a pid of another pid namespace): boosts nothing. */
                pidfd = pidfd_open(pid, 0);
                if (pidfd < 0) {
                        if (f->debug && f->unknown_said != pid)
                                fprintf(stderr, "<7>%s: focused pid %d is not a process here (%s), nothing boosted.\n",
                                        source, (int) pid, strerror(errno));
                        f->unknown_said = pid;
                        pid = 0;
                }
        }
        if (pid == f->want) {
                if (pidfd >= 0)
                        close(pidfd);
                return;
        }
        if (f->want_pidfd >= 0)
                close(f->want_pidfd);
        f->want = pid;
        f->want_pidfd = pidfd;
        f->changes++;
        if (f->print) {
                printf("focus %d %s\n", (int) pid, source);
                fflush(stdout);
        }
        (void) focus_send(f);
}

/* What the compositor sources (focus-sway.c, ...) call. */
static void focus_sink_on_set(void *userdata, pid_t pid, const char *source) {
        focus_set(userdata, pid, source);
}

static uint32_t x11_client_pid(Focus *f, xcb_window_t w);
static bool x11_has_xres(xcb_connection_t *c);
static xcb_atom_t x11_atom(xcb_connection_t *c, const char *name);
static uint32_t x11_get_u32(Focus *f, xcb_window_t w, xcb_atom_t prop, xcb_atom_t type);

/* A connection to the X server of $DISPLAY (under a Wayland compositor: its Xwayland) that asks
 * X-Resource only, made when first needed (Xwayland may start on demand) and again once it broke.
 * True if the server can say whose a window is. */
static bool x11_query_ready(Focus *f) {
        const char *display = getenv("DISPLAY");

        if (f->xcb && !xcb_connection_has_error(f->xcb))
                return f->have_xres;
        if (f->xcb)
                xcb_disconnect(f->xcb); /* Xwayland went away: a new one may be there */
        f->xcb = NULL;
        f->have_xres = false;
        if (!display || !*display)
                return false;
        f->xcb = xcb_connect(NULL, NULL);
        if (xcb_connection_has_error(f->xcb)) {
                xcb_disconnect(f->xcb);
                f->xcb = NULL;
                return false;
        }
        f->have_xres = x11_has_xres(f->xcb);
        f->root = xcb_setup_roots_iterator(xcb_get_setup(f->xcb)).data->root;
        f->atom_pid = x11_atom(f->xcb, "_NET_WM_PID");
        f->atom_client_list = x11_atom(f->xcb, "_NET_CLIENT_LIST");
        return f->have_xres;
}

#define X11_CLIENTS_MAX 4096 /* windows of _NET_CLIENT_LIST looked at; more are not */

/*
 * Does a window of the X server say it is pid's (_NET_WM_PID), where the server says it is another
 * client's? KWin 6 gives its scripts neither an X11 window's id nor whether a window is an X11 one,
 * and its pid for one is the window's _NET_WM_PID: a pid named on the session bus may be such a word.
 * The window manager's client list on the root window (_NET_CLIENT_LIST) has every managed X window;
 * a pid one of them claims against the server's word boosts nothing. False where the server has no
 * client list; without an X server to ask it cannot be checked at all (latnice-focus(1) says so).
 */
static bool x11_pid_contradicted(Focus *f, pid_t pid, xcb_window_t *ret_window) {
        xcb_get_property_reply_t *list;
        const xcb_window_t *w;
        bool found = false;
        int n;

        if (f->atom_client_list == XCB_ATOM_NONE || f->atom_pid == XCB_ATOM_NONE)
                return false;
        list = xcb_get_property_reply(f->xcb, xcb_get_property(f->xcb, 0, f->root, f->atom_client_list,
                                                               XCB_ATOM_WINDOW, 0, X11_CLIENTS_MAX), NULL);
        if (!list)
                return false;
        if (list->type == XCB_ATOM_WINDOW && list->format == 32) {
                w = xcb_get_property_value(list);
                n = xcb_get_property_value_length(list) / 4;
                for (int i = 0; i < n && !found; i++)
                        if (x11_get_u32(f, w[i], f->atom_pid, XCB_ATOM_CARDINAL) == (uint32_t) pid &&
                            x11_client_pid(f, w[i]) != (uint32_t) pid) {
                                *ret_window = w[i];
                                found = true;
                        }
        }
        free(list);
        return found;
}

/* An Xwayland window that a compositor named by its X window id (Sway, the KWin script): whose it is,
 * the X server says, as for the X11 source. The pid the compositor gives for it may be the window's
 * _NET_WM_PID, which the client chooses; where the server cannot be asked, nothing is boosted. */
static void focus_set_x11(Focus *f, uint32_t window, const char *source) {
        uint32_t pid = 0;

        if (x11_query_ready(f)) {
                pid = x11_client_pid(f, window);
                if (f->debug && pid == 0)
                        fprintf(stderr, "<7>%s: the X server cannot say whose window 0x%" PRIx32 " is, nothing "
                                "boosted.\n", source, window);
        } else if (!f->x11_unasked_said) {
                fprintf(stderr, "%s: the focused window is an Xwayland one and no X server (DISPLAY=%s) with "
                        "X-Resource can say whose it is: nothing is boosted for it (its _NET_WM_PID is the "
                        "client's own word).\n", source, getenv("DISPLAY") ?: "");
                f->x11_unasked_said = true;
        }
        focus_set(f, pid <= (uint32_t) INT32_MAX ? (pid_t) pid : 0, source);
}

static void focus_sink_on_set_x11(void *userdata, uint32_t window, const char *source) {
        focus_set_x11(userdata, window, source);
}

static int focus_on_latniced_owner(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Focus *f = userdata;
        const char *name, *old, *new;

        if (sd_bus_message_read(m, "sss", &name, &old, &new) < 0)
                return 0;
        if (!name || strcmp(name, LATNICE_BUS_NAME) != 0 || !new || !*new)
                return 0;
        /* A new latniced knows nothing of us: tell it again. */
        f->sent = -1;
        return focus_send(f);
}

/* A session changed (came to the front, went to the back, began, ended): latniced binds the boost to the
 * user's active session, drops it when that one goes to the back and refuses it meanwhile. Back in front,
 * the focus has not changed, so nothing would ask again: the focus is sent again at each change, which
 * latniced answers at once where the boost stands already. */
static int focus_on_login(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Focus *f = userdata;

        (void) sd_login_monitor_flush(f->login);
        if (f->call) {
                f->resend = true;
                return 0;
        }
        f->sent = -1;
        return focus_send(f);
}

static void login_setup(Focus *f) {
        int r;

        r = sd_login_monitor_new("session", &f->login);
        if (r >= 0)
                r = sd_event_add_io(f->event, &f->login_source, sd_login_monitor_get_fd(f->login),
                                    (uint32_t) sd_login_monitor_get_events(f->login), focus_on_login, f);
        if (r < 0) {
                fprintf(stderr, "Cannot watch logind's sessions, a boost ended by a session switch comes back at "
                        "the next focus change only: %s\n", strerror(-r));
                f->login = sd_login_monitor_unref(f->login);
        }
}

/* One 32-bit value of a property, 0 if it is not there or not of that type. */
static uint32_t x11_get_u32(Focus *f, xcb_window_t w, xcb_atom_t prop, xcb_atom_t type) {
        xcb_get_property_reply_t *reply;
        uint32_t v = 0;

        reply = xcb_get_property_reply(f->xcb, xcb_get_property(f->xcb, 0, w, prop, type, 0, 1), NULL);
        if (!reply)
                return 0;
        if (reply->type == type && reply->format == 32 && xcb_get_property_value_length(reply) >= 4)
                memcpy(&v, xcb_get_property_value(reply), sizeof(v));
        free(reply);
        return v;
}

/* The pid of the client that made window w, as the X server knows it from the client's socket
 * (X-Resource's LocalClientPID): a pid of the server's pid namespace. 0 if the server cannot tell (a
 * client over TCP, or one gone). */
static uint32_t x11_client_pid(Focus *f, xcb_window_t w) {
        xcb_res_client_id_spec_t spec = { .client = w, .mask = XCB_RES_CLIENT_ID_MASK_LOCAL_CLIENT_PID };
        xcb_res_query_client_ids_reply_t *reply;
        xcb_res_client_id_value_iterator_t it;
        uint32_t pid = 0;

        reply = xcb_res_query_client_ids_reply(f->xcb, xcb_res_query_client_ids(f->xcb, 1, &spec), NULL);
        if (!reply)
                return 0;
        for (it = xcb_res_query_client_ids_ids_iterator(reply); it.rem > 0; xcb_res_client_id_value_next(&it))
                if ((it.data->spec.mask & XCB_RES_CLIENT_ID_MASK_LOCAL_CLIENT_PID) &&
                    xcb_res_client_id_value_value_length(it.data) >= 1) {
                        pid = xcb_res_client_id_value_value(it.data)[0];
                        break;
                }
        free(reply);
        return pid;
}

static void x11_update(Focus *f) {
        xcb_window_t w;
        uint32_t pid = 0, said;

        w = x11_get_u32(f, f->root, f->atom_active, XCB_ATOM_WINDOW);
        if (w != XCB_WINDOW_NONE && f->have_xres) {
                /* _NET_WM_PID is the client's word, and a sandboxed client's is a pid of its own pid
                 * namespace (Flatpak): the server's word on the client's socket counts, and nothing
                 * else, also where it cannot tell. */
                pid = x11_client_pid(f, w);
                said = x11_get_u32(f, w, f->atom_pid, XCB_ATOM_CARDINAL);
                if (f->debug && said != 0 && said != pid)
                        fprintf(stderr, "<7>x11: window 0x%" PRIx32 " says _NET_WM_PID %" PRIu32 ", its client is "
                                "pid %" PRIu32 " (X-Resource): that one counts.\n", w, said, pid);
        } else if (w != XCB_WINDOW_NONE)
                /* No X-Resource: the client's word; latniced checks it names one of our own processes. */
                pid = x11_get_u32(f, w, f->atom_pid, XCB_ATOM_CARDINAL);
        focus_set(f, pid <= (uint32_t) INT32_MAX ? (pid_t) pid : 0, "x11");
}

/* Does the server answer X-Resource's QueryClientIds (version 1.2)? */
static bool x11_has_xres(xcb_connection_t *c) {
        const xcb_query_extension_reply_t *ext = xcb_get_extension_data(c, &xcb_res_id);
        xcb_res_query_version_reply_t *v;
        bool ok;

        if (!ext || !ext->present)
                return false;
        v = xcb_res_query_version_reply(c, xcb_res_query_version(c, 1, 2), NULL);
        ok = v && (v->server_major > 1 || (v->server_major == 1 && v->server_minor >= 2));
        free(v);
        return ok;
}

static int x11_on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Focus *f = userdata;
        xcb_generic_event_t *ev;
        bool changed = false;

        /* Drain everything first: a storm of changes costs one lookup. */
        while ((ev = xcb_poll_for_event(f->xcb))) {
                if ((ev->response_type & 0x7f) == XCB_PROPERTY_NOTIFY) {
                        xcb_property_notify_event_t *p = (xcb_property_notify_event_t *) ev;
                        if (p->window == f->root && p->atom == f->atom_active)
                                changed = true;
                }
                free(ev);
        }
        if (xcb_connection_has_error(f->xcb)) {
                fprintf(stderr, "The X server went away.\n");
                return sd_event_exit(sd_event_source_get_event(s), 0);
        }
        if (changed)
                x11_update(f);
        xcb_flush(f->xcb);
        return 0;
}

static int x11_on_prepare(sd_event_source *s, void *userdata) {
        Focus *f = userdata;
        xcb_generic_event_t *ev;

        /* Replies read while updating may have queued events behind them. */
        while ((ev = xcb_poll_for_queued_event(f->xcb))) {
                bool ours = (ev->response_type & 0x7f) == XCB_PROPERTY_NOTIFY &&
                            ((xcb_property_notify_event_t *) ev)->window == f->root &&
                            ((xcb_property_notify_event_t *) ev)->atom == f->atom_active;
                free(ev);
                if (ours)
                        x11_update(f);
        }
        xcb_flush(f->xcb);
        return 0;
}

static xcb_atom_t x11_atom(xcb_connection_t *c, const char *name) {
        xcb_intern_atom_reply_t *reply;
        xcb_atom_t a = XCB_ATOM_NONE;

        reply = xcb_intern_atom_reply(c, xcb_intern_atom(c, 0, (uint16_t) strlen(name), name), NULL);
        if (reply) {
                a = reply->atom;
                free(reply);
        }
        return a;
}

static int x11_setup(Focus *f) {
        const xcb_setup_t *setup;
        xcb_screen_iterator_t it;
        xcb_generic_error_t *err;
        uint32_t mask = XCB_EVENT_MASK_PROPERTY_CHANGE;
        int screen = 0, r;

        f->xcb = xcb_connect(NULL, &screen);
        if (xcb_connection_has_error(f->xcb)) {
                fprintf(stderr, "Cannot connect to the X server (DISPLAY=%s).\n", getenv("DISPLAY") ?: "");
                return -ENOTCONN;
        }
        setup = xcb_get_setup(f->xcb);
        for (it = xcb_setup_roots_iterator(setup); it.rem > 0 && screen > 0; xcb_screen_next(&it))
                screen--;
        if (it.rem <= 0)
                return -ENODEV;
        f->root = it.data->root;
        f->atom_active = x11_atom(f->xcb, "_NET_ACTIVE_WINDOW");
        f->atom_pid = x11_atom(f->xcb, "_NET_WM_PID");
        f->atom_client_list = x11_atom(f->xcb, "_NET_CLIENT_LIST");
        if (f->atom_active == XCB_ATOM_NONE || f->atom_pid == XCB_ATOM_NONE)
                return -EIO;
        f->have_xres = x11_has_xres(f->xcb);
        if (!f->have_xres)
                fprintf(stderr, "The X server has no X-Resource extension: a window's _NET_WM_PID is taken at its "
                        "word, and a sandboxed application's names nothing here.\n");
        err = xcb_request_check(f->xcb,
                                xcb_change_window_attributes_checked(f->xcb, f->root, XCB_CW_EVENT_MASK, &mask));
        if (err) {
                free(err);
                return -EIO;
        }
        r = sd_event_add_io(f->event, &f->xcb_source, xcb_get_file_descriptor(f->xcb), EPOLLIN, x11_on_io, f);
        if (r < 0)
                return r;
        r = sd_event_source_set_prepare(f->xcb_source, x11_on_prepare);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(f->xcb_source, "x11");
        x11_update(f);
        return 0;
}

static int bus_setup(Focus *f) {
        int r;

        r = sd_bus_open_system(&f->bus);
        if (r < 0) {
                fprintf(stderr, "Cannot connect to the system bus: %s\n", strerror(-r));
                return r;
        }
        /* arg0: latniced's name only. Every connection to the system bus, by any user, is a NameOwnerChanged. */
        r = sd_bus_add_match_async(f->bus, NULL,
                                   "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                                   "interface='org.freedesktop.DBus',member='NameOwnerChanged',"
                                   "arg0='" LATNICE_BUS_NAME "'",
                                   focus_on_latniced_owner, NULL, f);
        if (r >= 0)
                r = sd_bus_attach_event(f->bus, f->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                fprintf(stderr, "Cannot watch the system bus: %s\n", strerror(-r));
        return r;
}

/* A decimal number of at most max, from the whole of text; 0 for anything else. */
static unsigned long focus_parse_decimal(const char *text, unsigned long max) {
        unsigned long v;
        char *end;

        if (!(text[0] >= '0' && text[0] <= '9'))
                return 0;
        errno = 0;
        v = strtoul(text, &end, 10);
        return errno != 0 || *end != '\0' || v > max ? 0 : v;
}

/* What a Focus (u) or FocusText (s) call names: a pid (0 for none, or for text that is no pid), or
 * with FocusText "x11:WINDOW" an Xwayland window by its X id (*ret_x11, the pid then 0). */
static int focus_call_pid(sd_bus_message *m, pid_t *ret_pid, uint32_t *ret_x11) {
        const char *text;
        uint32_t pid;
        int r;

        *ret_x11 = 0;
        if (sd_bus_message_has_signature(m, "u")) {
                r = sd_bus_message_read(m, "u", &pid);
                if (r < 0)
                        return r;
                *ret_pid = pid <= (uint32_t) INT32_MAX ? (pid_t) pid : 0;
                return 0;
        }
        /* FocusText: KWin's callDBus() sends JavaScript numbers as doubles. */
        r = sd_bus_message_read(m, "s", &text);
        if (r < 0)
                return r;
        if (strncmp(text, "x11:", 4) == 0) {
                *ret_pid = 0;
                *ret_x11 = (uint32_t) focus_parse_decimal(text + 4, UINT32_MAX);
                return 0;
        }
        /* Not a pid: nothing has focus that we can name. */
        *ret_pid = (pid_t) focus_parse_decimal(text, INT32_MAX);
        return 0;
}

/* A call from a compositor we trust: the focus it names, then the answer (after the change is made). */
static int focus_call_apply(Focus *f, sd_bus_message *m) {
        xcb_window_t liar;
        uint32_t x11;
        pid_t pid;
        int r;

        r = focus_call_pid(m, &pid, &x11);
        if (r < 0)
                return sd_bus_reply_method_errorf(m, SD_BUS_ERROR_INVALID_ARGS, "Not a pid: %s", strerror(-r));
        if (x11 != 0)
                focus_set_x11(f, x11, "session-bus");
        else if (pid > 0 && x11_query_ready(f) && x11_pid_contradicted(f, pid, &liar)) {
                if (f->debug)
                        fprintf(stderr, "<7>session-bus: pid %d is what X window 0x%" PRIx32 " says it is "
                                "(_NET_WM_PID) and the X server says it is not: nothing boosted.\n", (int) pid,
                                (uint32_t) liar);
                focus_set(f, 0, "session-bus");
        } else
                focus_set(f, pid, "session-bus");
        return sd_bus_reply_method_return(m, NULL);
}

static int focus_call_refuse(sd_bus_message *m, const char *why) {
        return sd_bus_reply_method_errorf(m, SD_BUS_ERROR_ACCESS_DENIED, "%s", why);
}

#define FOCUS_NOT_COMPOSITOR "Only the compositor's own connection (the owner of org.kde.KWin or org.gnome.Shell) " \
        "names the focus here."
#define FOCUS_OTHER_PID_NS "The owner of %s is not of latnice-focus's pid namespace: the pids it names are not ours."

/*
 * org.latnice1.Focus on the session bus: what the KWin script and the GNOME Shell extension call. The
 * session bus is our user's, and sd-bus lets every peer on it call (a user bus is trusted: it checks no
 * uid); but any of our user's processes is a peer there, a sandboxed one too, and the pid a peer of
 * another pid namespace names is another process here (its 1 is our init). So only the compositor's
 * connection is heard, the one that owns its well-known name, and only where it is of our pid
 * namespace.
 */
static int method_focus(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Focus *f = userdata;
        const char *sender = sd_bus_message_get_sender(m);

        for (size_t i = 0; i < FOCUS_OWNERS; i++) {
                FocusOwner *o = &f->owners[i];
                char why[256];

                if (!sender || !o->owner || strcmp(o->owner, sender) != 0)
                        continue;
                if (!o->checked) {
                        /* The answer on the owner is on its way: this call waits for it. */
                        if (o->held)
                                (void) sd_bus_reply_method_return(o->held, NULL); /* superseded */
                        sd_bus_message_unref(o->held);
                        o->held = sd_bus_message_ref(m);
                        return 1;
                }
                if (!o->trusted) {
                        snprintf(why, sizeof(why), FOCUS_OTHER_PID_NS, o->name);
                        return focus_call_refuse(m, why);
                }
                return focus_call_apply(f, m);
        }
        if (f->debug)
                fprintf(stderr, "<7>org.latnice1.Focus: %s is no compositor's connection, refused.\n", sender ?: "?");
        return focus_call_refuse(m, FOCUS_NOT_COMPOSITOR);
}

/* Is pid, as the bus daemon names it, a process of our pid namespace? A peer of a child namespace has
 * a pid here too, its /proc entry says which namespace it is in; one of a parent namespace has none (0). */
static bool focus_pid_ns_is_ours(Focus *f, pid_t pid) {
        char path[64];
        struct stat st;

        if (pid <= 0 || f->pid_ns.st_ino == 0)
                return false;
        snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int) pid);
        if (stat(path, &st) < 0)
                return false;
        return st.st_dev == f->pid_ns.st_dev && st.st_ino == f->pid_ns.st_ino;
}

static int focus_owner_on_pid(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        FocusOwner *o = userdata;
        Focus *f = o->focus;
        uint32_t pid = 0;
        sd_bus_message *held;

        o->query = sd_bus_slot_unref(o->query);
        if (sd_bus_message_is_method_error(reply, NULL) || sd_bus_message_read(reply, "u", &pid) < 0)
                pid = 0; /* gone, or the bus cannot tell: not trusted */
        o->checked = true;
        o->trusted = pid <= (uint32_t) INT32_MAX && focus_pid_ns_is_ours(f, (pid_t) pid);
        if (!o->trusted)
                fprintf(stderr, "The owner of %s on the session bus (%s, pid %" PRIu32 ") is not of our pid "
                        "namespace: its calls are refused.\n", o->name, o->owner, pid);
        else if (f->debug)
                fprintf(stderr, "<7>%s is owned by %s (pid %" PRIu32 "): its calls name the focus.\n", o->name,
                        o->owner, pid);
        held = o->held;
        o->held = NULL;
        if (held) {
                char why[256];

                if (o->trusted)
                        (void) focus_call_apply(f, held);
                else {
                        snprintf(why, sizeof(why), FOCUS_OTHER_PID_NS, o->name);
                        (void) focus_call_refuse(held, why);
                }
                sd_bus_message_unref(held);
        }
        return 0;
}

/* The name has a new owner (NULL or "": none): nothing its former owner sent or sends counts any more. */
static void focus_owner_set(FocusOwner *o, const char *owner) {
        Focus *f = o->focus;
        int r;

        if (o->owner && owner && strcmp(o->owner, owner) == 0)
                return;
        if (o->held) {
                (void) focus_call_refuse(o->held, FOCUS_NOT_COMPOSITOR);
                o->held = sd_bus_message_unref(o->held);
        }
        o->query = sd_bus_slot_unref(o->query);
        free(o->owner);
        o->owner = NULL;
        o->checked = o->trusted = false;
        if (!owner || !*owner)
                return;
        o->owner = strdup(owner);
        if (!o->owner)
                return; /* refused: no owner we know of */
        r = sd_bus_call_method_async(f->user_bus, &o->query, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                     "org.freedesktop.DBus", "GetConnectionUnixProcessID", focus_owner_on_pid, o,
                                     "s", o->owner);
        if (r < 0) {
                fprintf(stderr, "Cannot ask for the pid of %s's owner, its calls are refused: %s\n", o->name,
                        strerror(-r));
                o->checked = true;
        }
}

static int focus_owner_on_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        FocusOwner *o = userdata;
        const char *name, *old, *new;

        if (sd_bus_message_read(m, "sss", &name, &old, &new) < 0 || strcmp(name, o->name) != 0)
                return 0;
        focus_owner_set(o, new);
        return 0;
}

static int focus_owner_on_get(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        FocusOwner *o = userdata;
        const char *owner = NULL;

        /* NameHasNoOwner: nobody; the signal tells when that changes. */
        if (!sd_bus_message_is_method_error(reply, NULL) && sd_bus_message_read(reply, "s", &owner) < 0)
                owner = NULL;
        focus_owner_set(o, owner);
        return 0;
}

/* Follows the compositors' names: the match first, then who owns each now. Both are asked before our
 * own name, so the bus answers them before anybody can call us. */
static int focus_owners_setup(Focus *f) {
        int r;

        if (stat("/proc/self/ns/pid", &f->pid_ns) < 0) {
                fprintf(stderr, "Cannot tell our pid namespace, no compositor is heard on the session bus: %m\n");
                f->pid_ns = (struct stat) {};
        }
        for (size_t i = 0; i < FOCUS_OWNERS; i++) {
                FocusOwner *o = &f->owners[i];
                char match[256];

                o->focus = f;
                o->name = focus_owner_names[i];
                snprintf(match, sizeof(match),
                         "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                         "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='%s'", o->name);
                r = sd_bus_add_match_async(f->user_bus, NULL, match, focus_owner_on_changed, NULL, o);
                if (r < 0)
                        return r;
                r = sd_bus_call_method_async(f->user_bus, NULL, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                             "org.freedesktop.DBus", "GetNameOwner", focus_owner_on_get, o, "s",
                                             o->name);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void focus_owners_done(Focus *f) {
        for (size_t i = 0; i < FOCUS_OWNERS; i++) {
                FocusOwner *o = &f->owners[i];

                o->held = sd_bus_message_unref(o->held);
                o->query = sd_bus_slot_unref(o->query);
                free(o->owner);
                o->owner = NULL;
        }
}

static const sd_bus_vtable focus_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_ARGS("Focus", SD_BUS_ARGS("u", pid), SD_BUS_NO_RESULT, method_focus, 0),
        SD_BUS_METHOD_WITH_ARGS("FocusText", SD_BUS_ARGS("s", pid), SD_BUS_NO_RESULT, method_focus, 0),
        SD_BUS_VTABLE_END
};

/* KWin runs a script when it starts or when the script is enabled, and the script sends the active
 * window then and at each activation. A latnice-focus that comes later (restarted, upgraded) would
 * wait for the next activation: so once it owns its name it asks KWin, if our script is loaded there,
 * to unload it and load the enabled scripts again, which sends the active window at once. Where no
 * KWin is on the bus (no auto-start: another desktop) or our script is not loaded (disabled), the
 * first call fails or says false and nothing else happens. */
#define KWIN_SCRIPT "latnice-focus"

static int kwin_call(Focus *f, const char *method, sd_bus_message_handler_t callback, const char *script) {
        sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(f->user_bus, &m, "org.kde.KWin", "/Scripting", "org.kde.kwin.Scripting",
                                           method);
        if (r >= 0)
                r = sd_bus_message_set_auto_start(m, false);
        if (r >= 0 && script)
                r = sd_bus_message_append(m, "s", script);
        if (r >= 0)
                r = sd_bus_call_async(f->user_bus, NULL, m, callback, f, 5 * 1000 * 1000);
        sd_bus_message_unref(m);
        return r;
}

static int kwin_debug_error(Focus *f, sd_bus_message *reply, const char *what) {
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        if (!e)
                return 0;
        if (f->debug && !sd_bus_error_has_name(e, "org.freedesktop.DBus.Error.ServiceUnknown"))
                fprintf(stderr, "<7>KWin's %s: %s\n", what, e->message ?: e->name);
        return -1;
}

static int kwin_on_started(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Focus *f = userdata;

        if (kwin_debug_error(f, reply, "start") == 0 && f->debug)
                fprintf(stderr, "<7>KWin runs the " KWIN_SCRIPT " script again: it sends the active window.\n");
        return 0;
}

static int kwin_on_unloaded(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Focus *f = userdata;

        if (kwin_debug_error(f, reply, "unloadScript") == 0)
                (void) kwin_call(f, "start", kwin_on_started, NULL);
        return 0;
}

static int kwin_on_loaded(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Focus *f = userdata;
        int loaded = 0;

        if (kwin_debug_error(f, reply, "isScriptLoaded") < 0 || sd_bus_message_read(reply, "b", &loaded) < 0 || !loaded)
                return 0;
        (void) kwin_call(f, "unloadScript", kwin_on_unloaded, KWIN_SCRIPT);
        return 0;
}

static int user_bus_on_name(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Focus *f = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        if (e) {
                fprintf(stderr, "Cannot own org.latnice1.Focus on the session bus: %s\n", e->message ?: e->name);
                return 0;
        }
        (void) kwin_call(f, "isScriptLoaded", kwin_on_loaded, KWIN_SCRIPT);
        return 0;
}

static int user_bus_setup(Focus *f) {
        int r;

        r = sd_bus_open_user(&f->user_bus);
        if (r < 0)
                return r;
        r = focus_owners_setup(f);
        if (r >= 0)
                r = sd_bus_add_object_vtable(f->user_bus, NULL, "/org/latnice1/Focus", "org.latnice1.Focus",
                                             focus_vtable, f);
        if (r >= 0)
                r = sd_bus_request_name_async(f->user_bus, NULL, "org.latnice1.Focus", 0, user_bus_on_name, f);
        if (r >= 0)
                r = sd_bus_attach_event(f->user_bus, f->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                f->user_bus = sd_bus_flush_close_unref(f->user_bus);
        return r;
}

static void help(void) {
        printf("latnice-focus [OPTIONS]\n\n"
               "Tells latniced which process owns the focused window: Sway/i3 IPC (SWAYSOCK), Hyprland\n"
               "(HYPRLAND_INSTANCE_SIGNATURE), niri (NIRI_SOCKET), X11 (_NET_ACTIVE_WINDOW), or the\n"
               "KWin script / GNOME Shell extension calling the session bus name org.latnice1.Focus.\n\n"
               "  -h --help       this text\n"
               "     --print      print \"focus PID SOURCE\" on each change instead of calling latniced\n"
               "     --debug      say why a focused window boosts nothing\n");
}

/* 1: go on with what argv set in f; 0: done (--help); negative: a usage error, said already. */
static int parse_argv(int argc, char *argv[], Focus *f) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "print", no_argument, NULL, 'p' },
                { "debug", no_argument, NULL, 'd' },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case 'p':
                        f->print = true;
                        break;
                case 'd':
                        f->debug = true;
                        break;
                default:
                        return -EINVAL; /* getopt_long() said what */
                }
        if (optind < argc) {
                fprintf(stderr, "Unexpected argument '%s'.\n", argv[optind]);
                return -EINVAL;
        }
        return 1;
}

int main(int argc, char *argv[]) {
        Focus f = { .sent = -1, .want_pidfd = -1 };
        const char *sway, *hyprland, *niri;
        FocusSink sink;
        bool have_source = false;
        sigset_t ss;
        int r;

        r = parse_argv(argc, argv, &f);
        if (r <= 0)
                return r < 0 ? 2 : 0;

        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigprocmask(SIG_BLOCK, &ss, NULL);

        r = sd_event_default(&f.event);
        if (r < 0)
                return 1;
        (void) sd_event_add_signal(f.event, NULL, SIGTERM, NULL, NULL);
        (void) sd_event_add_signal(f.event, NULL, SIGINT, NULL, NULL);

        if (!f.print && bus_setup(&f) < 0)
                return 1;
        if (!f.print)
                login_setup(&f);
        /* The compositor's own IPC first: under Sway, X11 is XWayland and sees X clients only. */
        sway = getenv("SWAYSOCK");
        hyprland = getenv("HYPRLAND_INSTANCE_SIGNATURE");
        niri = getenv("NIRI_SOCKET");
        sink = (FocusSink) { .event = f.event, .set = focus_sink_on_set, .set_x11 = focus_sink_on_set_x11,
                             .userdata = &f };
        if (sway && *sway) {
                r = focus_conn_new(&sway_source, &sink, sway, &f.source);
                if (r < 0) {
                        fprintf(stderr, "Cannot follow Sway's focus: %s\n", strerror(-r));
                        return 1;
                }
                have_source = true;
        } else if (hyprland && *hyprland) {
                r = hypr_ipc_new(&sink, hyprland, getenv("XDG_RUNTIME_DIR"), &f.source);
                if (r < 0) {
                        fprintf(stderr, "Cannot follow Hyprland's focus: %s\n", strerror(-r));
                        return 1;
                }
                have_source = true;
        } else if (niri && *niri) {
                r = focus_conn_new(&niri_source, &sink, niri, &f.source);
                if (r < 0) {
                        fprintf(stderr, "Cannot follow niri's focus: %s\n", strerror(-r));
                        return 1;
                }
                have_source = true;
        } else if (getenv("DISPLAY") && !getenv("WAYLAND_DISPLAY")) {
                r = x11_setup(&f);
                if (r < 0) {
                        if (r != -ENOTCONN)
                                fprintf(stderr, "Cannot follow the X server's active window: %s\n", strerror(-r));
                        return 1;
                }
                have_source = true;
        }
        r = user_bus_setup(&f);
        if (r < 0 && !have_source) {
                fprintf(stderr, "No focus source: no SWAYSOCK, HYPRLAND_INSTANCE_SIGNATURE or NIRI_SOCKET, no X11 "
                        "display, and no session bus for org.latnice1.Focus (%s).\n", strerror(-r));
                return 1;
        }
        if (r < 0)
                fprintf(stderr, "No session bus, org.latnice1.Focus not offered: %s\n", strerror(-r));
        (void) sd_notify(0, "READY=1");
        r = sd_event_loop(f.event);

        /* Drop the boost now rather than when the connection closes. */
        if (f.bus && f.sent > 0) {
                f.call = sd_bus_slot_unref(f.call);
                (void) sd_bus_call_method(f.bus, LATNICE_BUS_NAME, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE,
                                          "SetForeground", NULL, NULL, "u", (uint32_t) 0);
        }
        if (f.print)
                fprintf(stderr, "%llu changes, %llu sent\n", (unsigned long long) f.changes,
                        (unsigned long long) f.calls);
        f.source = focus_conn_free(f.source);
        focus_owners_done(&f);
        f.user_bus = sd_bus_flush_close_unref(f.user_bus);
        if (f.want_pidfd >= 0)
                close(f.want_pidfd);
        f.xcb_source = sd_event_source_unref(f.xcb_source);
        f.login_source = sd_event_source_unref(f.login_source);
        f.login = sd_login_monitor_unref(f.login);
        if (f.xcb)
                xcb_disconnect(f.xcb);
        f.bus = sd_bus_flush_close_unref(f.bus);
        f.event = sd_event_unref(f.event);
        return r < 0 ? 1 : 0;
}
