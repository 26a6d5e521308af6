/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The niri source: one connection to $NIRI_SOCKET that sends the request "EventStream" and then
 * reads one JSON event per line. Followed as niri-ipc 25.11 defines it (niri v25.11; the window
 * events exist since v0.1.9, Window.pid since v25.01): serde's externally tagged enums, so an
 * event is {"Name":{...}}; the first line is the reply {"Ok":"Handled"} (or {"Err":"..."}), then
 * the full state (WindowsChanged) and the changes:
 *   WindowsChanged {windows: [Window]}        replaces every window
 *   WindowOpenedOrChanged {window: Window}     one window; if it is focused, no other is
 *   WindowClosed {id}                          WindowFocusChanged {id | null}
 * with Window {id: u64, pid: i32 | null, is_focused: bool, ...}. Other events are ignored.
 *
 * niri names the focus by window id, so the source keeps id -> pid for at most NIRI_WINDOWS_MAX
 * windows; the focus of a window not kept names nobody. Everything read is the compositor's
 * word: lines are bounded (NIRI_LINE_MAX, longer ones dropped), JSON goes through json-c with a
 * depth limit, a line that does not parse changes nothing. When the connection fails or closes,
 * the focus is dropped (nothing is known to have it) and the connection is made again after a
 * backoff (0.1 s doubling to 10 s), as the Sway source does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/un.h>
#include <unistd.h>
#include <json-c/json.h>

#include "focus-source.h"

#define NIRI_LINE_MAX (4 * 1024 * 1024) /* a WindowsChanged of NIRI_WINDOWS_MAX windows of ~1 KiB */
#define NIRI_JSON_DEPTH 16               /* event, body, windows, window, layout, its arrays */
#define NIRI_READS_PER_DISPATCH 16       /* then other sources get their turn (level-triggered) */

typedef struct NiriIpc {
        FocusConn conn;       /* first: the source is its FocusConn */
        NiriState state;
} NiriIpc;

void niri_state_done(NiriState *st) {
        free(st->windows);
        *st = (NiriState) {};
}

/* A Window object: its id (required), its pid (0 when null, absent or out of range). */
static bool niri_window_parse(json_object *w, NiriWindow *ret, bool *ret_focused) {
        json_object *v;
        int64_t pid = 0;

        if (!json_object_is_type(w, json_type_object) || !json_object_object_get_ex(w, "id", &v) ||
            !json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
                return false;
        ret->id = json_object_get_uint64(v);
        if (json_object_object_get_ex(w, "pid", &v) && json_object_is_type(v, json_type_int))
                pid = json_object_get_int64(v);
        ret->pid = pid > 0 && pid <= INT32_MAX ? (pid_t) pid : 0;
        *ret_focused = json_object_object_get_ex(w, "is_focused", &v) && json_object_is_type(v, json_type_boolean) &&
                       json_object_get_boolean(v);
        return true;
}

static NiriWindow *niri_state_find(NiriState *st, uint64_t id) {
        for (size_t i = 0; i < st->n_windows; i++)
                if (st->windows[i].id == id)
                        return &st->windows[i];
        return NULL;
}

static void niri_state_focus(NiriState *st, bool focused, uint64_t id, pid_t pid) {
        st->focused = focused;
        st->focus_id = focused ? id : 0;
        st->focus_pid = focused ? pid : 0;
}

static int niri_windows_changed(NiriState *st, json_object *body) {
        json_object *list;
        NiriWindow *windows = NULL, focus = {};
        size_t n = 0, len, m;
        bool any_focused = false;

        if (!json_object_is_type(body, json_type_object) || !json_object_object_get_ex(body, "windows", &list) ||
            !json_object_is_type(list, json_type_array))
                return -EINVAL;
        len = json_object_array_length(list);
        m = len < NIRI_WINDOWS_MAX ? len : NIRI_WINDOWS_MAX;
        if (m > 0) {
                windows = calloc(m, sizeof(NiriWindow));
                if (!windows)
                        return -ENOMEM;
        }
        st->over_cap = 0;
        for (size_t i = 0; i < len; i++) {
                NiriWindow w;
                bool focused;

                if (!niri_window_parse(json_object_array_get_idx(list, i), &w, &focused))
                        continue;
                /* The focused window is taken from the list even beyond the cap. */
                if (focused) {
                        any_focused = true;
                        focus = w;
                }
                if (n < NIRI_WINDOWS_MAX)
                        windows[n++] = w;
                else
                        st->over_cap++;
        }
        free(st->windows);
        st->windows = windows;
        st->n_windows = n;
        st->n_allocated = m;
        niri_state_focus(st, any_focused, focus.id, focus.pid);
        return 1;
}

static int niri_window_opened_or_changed(NiriState *st, json_object *body) {
        json_object *v;
        NiriWindow w, *known;
        bool focused;

        if (!json_object_is_type(body, json_type_object) || !json_object_object_get_ex(body, "window", &v) ||
            !niri_window_parse(v, &w, &focused))
                return -EINVAL;
        known = niri_state_find(st, w.id);
        if (known)
                known->pid = w.pid;
        else if (st->n_windows < NIRI_WINDOWS_MAX) {
                if (st->n_windows == st->n_allocated) {
                        size_t m = st->n_allocated + 64 < NIRI_WINDOWS_MAX ? st->n_allocated + 64 : NIRI_WINDOWS_MAX;
                        NiriWindow *p = realloc(st->windows, m * sizeof(NiriWindow));

                        if (!p)
                                return -ENOMEM;
                        st->windows = p;
                        st->n_allocated = m;
                }
                st->windows[st->n_windows++] = w;
        } else
                st->over_cap++;
        if (focused)
                niri_state_focus(st, true, w.id, w.pid);
        else if (st->focused && st->focus_id == w.id)
                niri_state_focus(st, false, 0, 0); /* it says itself it lost the focus */
        else
                return 0;
        return 1;
}

static int niri_window_closed(NiriState *st, json_object *body) {
        json_object *v;
        uint64_t id;

        if (!json_object_is_type(body, json_type_object) || !json_object_object_get_ex(body, "id", &v) ||
            !json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
                return -EINVAL;
        id = json_object_get_uint64(v);
        for (size_t i = 0; i < st->n_windows;)
                if (st->windows[i].id == id)
                        st->windows[i] = st->windows[--st->n_windows];
                else
                        i++;
        if (!st->focused || st->focus_id != id)
                return 0;
        /* The focused window went: nobody has the focus until niri says who does. */
        niri_state_focus(st, false, 0, 0);
        return 1;
}

static int niri_window_focus_changed(NiriState *st, json_object *body) {
        json_object *v;
        NiriWindow *w;
        uint64_t id;

        if (!json_object_is_type(body, json_type_object) || !json_object_object_get_ex(body, "id", &v))
                return -EINVAL;
        if (json_object_is_type(v, json_type_null)) {
                niri_state_focus(st, false, 0, 0);
                return 1;
        }
        if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
                return -EINVAL;
        id = json_object_get_uint64(v);
        w = niri_state_find(st, id);
        niri_state_focus(st, true, id, w ? w->pid : 0);
        return 1;
}

int niri_state_line(NiriState *st, const char *line, size_t len, pid_t *ret_pid) {
        static const struct {
                const char *name;
                int (*func)(NiriState *st, json_object *body);
        } events[] = {
                { "WindowsChanged", niri_windows_changed },
                { "WindowOpenedOrChanged", niri_window_opened_or_changed },
                { "WindowClosed", niri_window_closed },
                { "WindowFocusChanged", niri_window_focus_changed },
        };
        json_object *root, *body;
        int r;

        root = json_line_parse(line, len, NIRI_LINE_MAX, NIRI_JSON_DEPTH, &r);
        if (!root)
                return r;
        r = 0;
        if (!json_object_is_type(root, json_type_object) || json_object_object_length(root) != 1)
                r = -EINVAL;
        else if (json_object_object_get_ex(root, "Err", NULL))
                r = -EPROTO;
        else
                for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
                        if (json_object_object_get_ex(root, events[i].name, &body)) {
                                /* Each handler reads everything before it changes anything. */
                                r = events[i].func(st, body);
                                break;
                        }
        json_object_put(root);
        if (r == 1)
                *ret_pid = st->focus_pid;
        return r;
}

static int niri_connect(void *userdata);

static void niri_close(FocusConn *c) {
        NiriIpc *n = (NiriIpc *) c;

        niri_state_done(&n->state);
}

static int niri_on_line(const char *line, size_t len, void *userdata) {
        NiriIpc *n = userdata;
        pid_t pid;
        int r;

        r = niri_state_line(&n->state, line, len, &pid);
        if (r == -EPROTO || r == -ENOMEM)
                return r; /* niri refused the event stream, or we cannot keep up: start again */
        if (r == 1)
                focus_sink_set(&n->conn.sink, pid, "niri");
        focus_retry_works(&n->conn.retry); /* a whole line: the connection works */
        return 0;
}

static int niri_connect(void *userdata) {
        static const char request[] = "\"EventStream\"\n";
        NiriIpc *n = userdata;

        return focus_conn_open(&n->conn, NULL, request, sizeof(request) - 1, focus_conn_on_lines, false);
}

const FocusSourceType niri_source = {
        .size = sizeof(NiriIpc),
        .name = "niri",
        .connect = niri_connect,
        .close = niri_close,
        .on_line = niri_on_line,
        .line_max = NIRI_LINE_MAX,
        .reads = NIRI_READS_PER_DISPATCH,
};
