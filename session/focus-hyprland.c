/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Hyprland source. Hyprland has two sockets in $XDG_RUNTIME_DIR/hypr/$SIGNATURE/ (before
 * 0.40: /tmp/hypr/$SIGNATURE/): .socket2.sock writes one event a line, EVENT>>DATA, and
 * .socket.sock answers one request per connection (we write "j/activewindow", it writes JSON
 * and closes). "activewindowv2>>ADDRESS" (hex, no 0x; empty, or "," in older ones: nothing)
 * says the focus moved but not to which process, so each change asks .socket.sock for the
 * active window and takes its "pid" if its "address" ("0x...") is the one the event named.
 *
 * Hyprland serves .socket.sock synchronously: a client that keeps it open stalls the
 * compositor. So the request is made without blocking, in the event loop, at most one at a
 * time (changes meanwhile collapse into the latest), read to EOF within HYPR_REPLY_MAX and
 * HYPR_REQUEST_TIMEOUT_USEC, and closed then whatever came. The pid of the last window asked
 * is kept until that address opens or closes a window again, so a focused terminal that
 * retitles itself (each retitle repeats activewindowv2) costs no request.
 *
 * Everything read is the compositor's word: event lines are bounded (HYPR_LINE_MAX, longer
 * ones are dropped: they carry titles), addresses must be hex, the reply goes through json-c
 * with a depth limit. A focus we cannot name (no reply, a bad one, another window's) names
 * nobody. When the event connection fails or closes, the boost ends and the connection is made
 * again after a backoff (0.1 s doubling to 10 s), as the Sway source does. Followed as
 * Hyprland's wiki (IPC page) and its hyprctl code (activeWindowRequest, the window JSON with
 * "address": "0x%x" and "pid") describe it; not run against a real Hyprland here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/un.h>
#include <unistd.h>
#include <json-c/json.h>

#include "focus-source.h"

#define HYPR_LINE_MAX (64 * 1024)           /* an event names at most a window's class and title */
#define HYPR_REPLY_MAX (1024 * 1024)        /* one window's JSON: far below this */
#define HYPR_JSON_DEPTH 16
#define HYPR_REQUEST "j/activewindow"
#define HYPR_REQUEST_TIMEOUT_USEC 1000000ULL /* Hyprland answers at once or is stuck */
#define HYPR_READS_PER_DISPATCH 16

typedef struct HyprIpc {
        FocusConn conn;       /* first: the source is its FocusConn (its path unused: two dirs to try) */
        char *dirs[2];        /* $XDG_RUNTIME_DIR/hypr/SIG, /tmp/hypr/SIG: tried in that order */
        const char *dir;      /* the one the event socket is connected in */

        /* What the events said last: a window (want), or anything active (want_any, at connect). */
        uint64_t want;
        bool want_any;
        /* The request in flight, and what was wanted when it was made. */
        int req_fd;
        sd_event_source *req_io, *req_timer;
        char *reply;
        size_t reply_len;
        uint64_t asked;
        bool asked_any;
        /* The last window resolved. */
        bool known;
        uint64_t known_address;
        pid_t known_pid;
} HyprIpc;

/* Exactly 1 to 16 hex digits; 0 is no window. */
static int hypr_parse_address(const char *s, size_t len, uint64_t *ret) {
        uint64_t v = 0;

        if (len == 0 || len > 16)
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                unsigned d;

                if (c >= '0' && c <= '9')
                        d = (unsigned) (c - '0');
                else if (c >= 'a' && c <= 'f')
                        d = (unsigned) (c - 'a' + 10);
                else if (c >= 'A' && c <= 'F')
                        d = (unsigned) (c - 'A' + 10);
                else
                        return -EINVAL;
                v = v << 4 | d;
        }
        *ret = v;
        return 0;
}

int hypr_event_parse(const char *line, size_t len, uint64_t *ret_address) {
        const char *sep, *data;
        size_t name_len, data_len;

        if (memchr(line, '\0', len))
                return -EINVAL;
        sep = memmem(line, len, ">>", 2);
        if (!sep)
                return -EINVAL;
        name_len = (size_t) (sep - line);
        data = sep + 2;
        data_len = len - name_len - 2;
#define IS(n) (name_len == sizeof(n) - 1 && memcmp(line, n, sizeof(n) - 1) == 0)
        if (IS("activewindowv2")) {
                if (data_len == 0 || (data_len == 1 && data[0] == ',')) {
                        *ret_address = 0;
                        return HYPR_EVENT_FOCUS;
                }
                return hypr_parse_address(data, data_len, ret_address) < 0 ? -EINVAL : HYPR_EVENT_FOCUS;
        }
        if (IS("openwindow")) {
                const char *comma = memchr(data, ',', data_len);

                return hypr_parse_address(data, comma ? (size_t) (comma - data) : data_len, ret_address) < 0 ?
                               -EINVAL : HYPR_EVENT_OPEN;
        }
        if (IS("closewindow"))
                return hypr_parse_address(data, data_len, ret_address) < 0 ? -EINVAL : HYPR_EVENT_CLOSE;
#undef IS
        return HYPR_EVENT_OTHER;
}

int hypr_reply_parse(const char *json, size_t len, uint64_t *ret_address, pid_t *ret_pid) {
        json_object *root, *v;
        uint64_t address = 0;
        int64_t pid = 0;
        int r;

        root = json_line_parse(json, len, HYPR_REPLY_MAX, HYPR_JSON_DEPTH, &r);
        if (!root)
                return r;
        r = 0;
        if (!json_object_is_type(root, json_type_object))
                r = -EINVAL;
        else if (json_object_object_get_ex(root, "address", &v)) {
                /* "0x" and hex, as hyprctl writes it; anything else is not an address. */
                const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
                size_t n = strlen(s);

                if (n < 3 || s[0] != '0' || s[1] != 'x' || hypr_parse_address(s + 2, n - 2, &address) < 0)
                        r = -EINVAL;
                else if (json_object_object_get_ex(root, "xwayland", &v) &&
                         !(json_object_is_type(v, json_type_boolean) && !json_object_get_boolean(v)))
                        /* An Xwayland window (or a reply that does not say it is none): its pid may be
                         * its _NET_WM_PID, the client's word, and the reply names no X window for the X
                         * server to say whose it is. XXX: nothing is boosted for it. */
                        pid = 0;
                else if (json_object_object_get_ex(root, "pid", &v) && json_object_is_type(v, json_type_int))
                        pid = json_object_get_int64(v);
        }
        /* {} (no address): nothing is focused. */
        json_object_put(root);
        if (r < 0)
                return r;
        *ret_address = address;
        *ret_pid = address != 0 && pid > 0 && pid <= INT32_MAX ? (pid_t) pid : 0;
        return 0;
}

static int hypr_connect(void *userdata);
static void hypr_request(HyprIpc *h);

static void hypr_request_close(HyprIpc *h) {
        h->req_io = sd_event_source_disable_unref(h->req_io);
        h->req_timer = sd_event_source_disable_unref(h->req_timer);
        if (h->req_fd >= 0)
                close(h->req_fd);
        h->req_fd = -1;
        free(h->reply);
        h->reply = NULL;
        h->reply_len = 0;
}

/* The request is over (ok: a reply parsed into address and pid). */
static void hypr_request_done(HyprIpc *h, bool ok, uint64_t address, pid_t pid) {
        bool newer = h->want_any != h->asked_any || h->want != h->asked;

        hypr_request_close(h);
        if (ok && (h->want_any || address == h->want)) {
                h->want_any = false;
                h->want = address;
                h->known = address != 0;
                h->known_address = address;
                h->known_pid = pid;
                focus_sink_set(&h->conn.sink, pid, "hyprland");
        } else if (newer && (h->want_any || h->want != 0))
                hypr_request(h); /* the focus moved on while we asked: ask again, once per event */
        else
                focus_sink_set(&h->conn.sink, 0, "hyprland"); /* a focus we cannot name */
}

static int hypr_on_request_timeout(sd_event_source *es, uint64_t usec, void *userdata) {
        hypr_request_done(userdata, false, 0, 0);
        return 0;
}

static int hypr_on_request_io(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        HyprIpc *h = userdata;

        for (unsigned i = 0; i < HYPR_READS_PER_DISPATCH; i++) {
                char buf[65536];
                ssize_t n = read(h->req_fd, buf, sizeof(buf));
                uint64_t address;
                pid_t pid;
                char *p;

                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return 0;
                if (n < 0) {
                        hypr_request_done(h, false, 0, 0);
                        return 0;
                }
                if (n == 0) {
                        bool ok = h->reply_len > 0 && hypr_reply_parse(h->reply, h->reply_len, &address, &pid) == 0;

                        hypr_request_done(h, ok, ok ? address : 0, ok ? pid : 0);
                        return 0;
                }
                if ((size_t) n > HYPR_REPLY_MAX - h->reply_len) {
                        hypr_request_done(h, false, 0, 0); /* more than one window's worth */
                        return 0;
                }
                p = realloc(h->reply, h->reply_len + (size_t) n);
                if (!p) {
                        hypr_request_done(h, false, 0, 0);
                        return 0;
                }
                h->reply = p;
                memcpy(h->reply + h->reply_len, buf, (size_t) n);
                h->reply_len += (size_t) n;
        }
        return 0;
}

/* Asks .socket.sock for the active window, unless a request is in flight (its end looks again). */
static void hypr_request(HyprIpc *h) {
        char path[sizeof(((struct sockaddr_un) {}).sun_path)];
        int r;

        if (h->req_fd >= 0)
                return;
        h->asked = h->want;
        h->asked_any = h->want_any;
        if ((size_t) snprintf(path, sizeof(path), "%s/.socket.sock", h->dir) >= sizeof(path)) {
                hypr_request_done(h, false, 0, 0);
                return;
        }
        r = focus_socket_open(h->conn.sink.event, path, HYPR_REQUEST, sizeof(HYPR_REQUEST) - 1, hypr_on_request_io,
                              h, "hyprland-request", &h->req_fd, &h->req_io);
        if (r < 0 || sd_event_add_time_relative(h->conn.sink.event, &h->req_timer, CLOCK_MONOTONIC,
                                                HYPR_REQUEST_TIMEOUT_USEC, 0, hypr_on_request_timeout, h) < 0) {
                hypr_request_done(h, false, 0, 0);
                return;
        }
        (void) sd_event_source_set_description(h->req_timer, "hyprland-request-timeout");
}

static void hypr_close(FocusConn *c) {
        HyprIpc *h = (HyprIpc *) c;

        hypr_request_close(h);
        h->known = false; /* addresses are pointers: a new Hyprland reuses them */
}

static int hypr_on_line(const char *line, size_t len, void *userdata) {
        HyprIpc *h = userdata;
        uint64_t address;
        int kind;

        focus_retry_works(&h->conn.retry); /* a whole line: the connection works */
        kind = hypr_event_parse(line, len, &address);
        if (kind == HYPR_EVENT_OPEN || kind == HYPR_EVENT_CLOSE) {
                if (h->known && h->known_address == address)
                        h->known = false;
                return 0;
        }
        if (kind != HYPR_EVENT_FOCUS)
                return 0;
        h->want_any = false;
        h->want = address;
        if (address == 0)
                focus_sink_set(&h->conn.sink, 0, "hyprland");
        else if (h->known && h->known_address == address && h->req_fd < 0)
                focus_sink_set(&h->conn.sink, h->known_pid, "hyprland");
        else
                hypr_request(h);
        return 0;
}

static int hypr_connect(void *userdata) {
        HyprIpc *h = userdata;
        int r = -ENOENT;

        h->conn.fd = -1;
        for (size_t i = 0; i < 2 && h->conn.fd < 0; i++) {
                char path[sizeof(((struct sockaddr_un) {}).sun_path)];

                if (!h->dirs[i] ||
                    (size_t) snprintf(path, sizeof(path), "%s/.socket2.sock", h->dirs[i]) >= sizeof(path))
                        continue;
                r = focus_conn_open(&h->conn, path, NULL, 0, focus_conn_on_lines, true);
                if (r >= 0)
                        h->dir = h->dirs[i];
        }
        if (h->conn.fd < 0) {
                focus_conn_lost(&h->conn);
                return r;
        }
        /* What has the focus now: the window focused before we (re)connected. Events that come
         * meanwhile are read first where they name another window. */
        h->want_any = true;
        h->want = 0;
        hypr_request(h);
        return 0;
}

/* The socket directories, kept across connections. */
static void hypr_done(FocusConn *c) {
        HyprIpc *h = (HyprIpc *) c;

        free(h->dirs[0]);
        free(h->dirs[1]);
}

static const FocusSourceType hypr_type = {
        .size = sizeof(HyprIpc),
        .name = "hyprland",
        .connect = hypr_connect,
        .close = hypr_close,
        .done = hypr_done,
        .on_line = hypr_on_line,
        .line_max = HYPR_LINE_MAX,
        .reads = HYPR_READS_PER_DISPATCH,
};

int hypr_ipc_new(const FocusSink *sink, const char *signature, const char *runtime_dir, FocusConn **ret) {
        HyprIpc *h;

        /* The signature names a directory: one path component, nothing else. */
        if (!*signature || strchr(signature, '/') || strcmp(signature, ".") == 0 || strcmp(signature, "..") == 0 ||
            strlen(signature) > 128)
                return -EINVAL;
        h = calloc(1, sizeof(HyprIpc));
        if (!h)
                return -ENOMEM;
        focus_conn_init(&h->conn, &hypr_type, sink);
        h->req_fd = -1;
        if (runtime_dir && *runtime_dir && asprintf(&h->dirs[0], "%s/hypr/%s", runtime_dir, signature) < 0)
                h->dirs[0] = NULL;
        if (asprintf(&h->dirs[1], "/tmp/hypr/%s", signature) < 0)
                h->dirs[1] = NULL;
        if ((runtime_dir && *runtime_dir && !h->dirs[0]) || !h->dirs[1]) {
                focus_conn_free(&h->conn);
                return -ENOMEM;
        }
        /* A first failure is not fatal either: Hyprland may still be starting. */
        (void) hypr_connect(h);
        *ret = &h->conn;
        return 0;
}
