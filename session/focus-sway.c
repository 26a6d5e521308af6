/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Sway (i3-compatible) IPC source: one connection to $SWAYSOCK, subscribed to "window"
 * events; each "focus" change names container.pid. Everything read is the compositor's word
 * and treated as hostile: a message header states its length, anything above SWAY_MSG_MAX
 * drops the connection, and the JSON goes through json-c with a depth limit. An Xwayland view is
 * named by its X window ("window"), for latnice-focus to ask the X server whose it is: the pid Sway
 * gives for it is the client's _NET_WM_PID where wlroots does not ask X-Resource itself. A socket of
 * another uid is refused (focus_socket_connect). When the connection fails or closes, the
 * focus Sway named is over, and the connection is made again after a backoff (0.1 s doubling
 * to 10 s): latnice-focus never gives up on its source.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/un.h>
#include <unistd.h>
#include <json-c/json.h>

#include "focus-source.h"

#define SWAY_MAGIC "i3-ipc"
#define SWAY_HEADER (6 + 4 + 4)
#define SWAY_MSG_MAX (1024 * 1024) /* a window event carries one container: far below this */
#define SWAY_SUBSCRIBE 2u
#define SWAY_GET_TREE 4u
#define SWAY_JSON_DEPTH 64 /* root, outputs, workspaces, nested containers */
#define SWAY_EVENT_WINDOW 0x80000003u

typedef struct SwayIpc {
        FocusConn conn;       /* first: the source is its FocusConn */
        uint8_t header[SWAY_HEADER];
        size_t have;          /* bytes of header + body read so far */
        uint32_t len, type;
        char *body;           /* len + 1 bytes once the header is in */
} SwayIpc;

/* One whole message as JSON, nested at most SWAY_JSON_DEPTH deep; NULL with *ret_error set otherwise. */
static json_object *sway_parse(const char *json, size_t len, int *ret_error) {
        json_tokener *tok;
        json_object *root;

        *ret_error = -EINVAL;
        if (len > SWAY_MSG_MAX) {
                *ret_error = -E2BIG;
                return NULL;
        }
        tok = json_tokener_new_ex(SWAY_JSON_DEPTH);
        if (!tok) {
                *ret_error = -ENOMEM;
                return NULL;
        }
        root = json_tokener_parse_ex(tok, json, (int) len);
        if (root && json_tokener_get_error(tok) != json_tokener_success) {
                json_object_put(root);
                root = NULL;
        }
        json_tokener_free(tok);
        return root;
}

/* What a view (container) names: its pid, or for an Xwayland view its X window (Sway's pid for it may
 * be the client's _NET_WM_PID, where wlroots does not ask X-Resource: only the X server's word counts). */
static void sway_view_focus(json_object *node, pid_t *ret_pid, uint32_t *ret_x11) {
        json_object *v;
        int64_t n = 0;

        *ret_pid = 0;
        *ret_x11 = 0;
        if (!json_object_is_type(node, json_type_object))
                return; /* no container: nothing we can name */
        if (json_object_object_get_ex(node, "shell", &v) && json_object_is_type(v, json_type_string) &&
            strcmp(json_object_get_string(v), "xwayland") == 0) {
                if (json_object_object_get_ex(node, "window", &v) && json_object_is_type(v, json_type_int))
                        n = json_object_get_int64(v);
                *ret_x11 = n > 0 && n <= UINT32_MAX ? (uint32_t) n : 0;
                return;
        }
        /* No pid (a view without a client pid): nothing we can name. */
        if (json_object_object_get_ex(node, "pid", &v) && json_object_is_type(v, json_type_int))
                n = json_object_get_int64(v);
        *ret_pid = n > 0 && n <= INT32_MAX ? (pid_t) n : 0;
}

int sway_event_focus_pid(const char *json, size_t len, pid_t *ret_pid, uint32_t *ret_x11) {
        json_object *root, *change, *container = NULL;
        int r;

        root = sway_parse(json, len, &r);
        if (!root)
                return r;
        if (json_object_object_get_ex(root, "change", &change) && json_object_is_type(change, json_type_string) &&
            strcmp(json_object_get_string(change), "focus") == 0) {
                (void) json_object_object_get_ex(root, "container", &container);
                sway_view_focus(container, ret_pid, ret_x11);
                r = 0;
        }
        json_object_put(root);
        return r;
}

static int sway_connect(void *userdata);

/* The focused view in a GET_TREE node, walked to a bounded depth. */
static bool sway_tree_focused(json_object *node, unsigned depth, pid_t *ret_pid, uint32_t *ret_x11) {
        static const char *const kids[] = { "nodes", "floating_nodes" };
        json_object *v;

        if (depth > SWAY_JSON_DEPTH || !json_object_is_type(node, json_type_object))
                return false;
        if (json_object_object_get_ex(node, "focused", &v) && json_object_get_boolean(v)) {
                sway_view_focus(node, ret_pid, ret_x11);
                return true;
        }
        for (size_t k = 0; k < 2; k++) {
                if (!json_object_object_get_ex(node, kids[k], &v) || !json_object_is_type(v, json_type_array))
                        continue;
                for (size_t i = 0; i < json_object_array_length(v); i++)
                        if (sway_tree_focused(json_object_array_get_idx(v, i), depth + 1, ret_pid, ret_x11))
                                return true;
        }
        return false;
}

int sway_tree_focus_pid(const char *json, size_t len, pid_t *ret_pid, uint32_t *ret_x11) {
        json_object *root;
        int r;

        root = sway_parse(json, len, &r);
        if (!root)
                return r;
        *ret_pid = 0; /* nothing focused (an empty workspace) */
        *ret_x11 = 0;
        (void) sway_tree_focused(root, 0, ret_pid, ret_x11);
        json_object_put(root);
        return 0;
}

static void sway_close(FocusConn *c) {
        SwayIpc *s = (SwayIpc *) c;

        free(s->body);
        s->body = NULL;
        s->have = 0;
}

static void sway_on_message(SwayIpc *s) {
        uint32_t x11;
        pid_t pid;
        int r;

        if (s->type == SWAY_GET_TREE)
                /* What has focus at connect: the window focused before we (re)connected. */
                r = sway_tree_focus_pid(s->body, s->len, &pid, &x11);
        else if (s->type == SWAY_EVENT_WINDOW)
                r = sway_event_focus_pid(s->body, s->len, &pid, &x11);
        else
                return; /* the subscribe reply, or an event we did not ask for */
        if (r < 0)
                return;
        if (x11 != 0 || pid == 0)
                focus_sink_set_x11(&s->conn.sink, x11, "sway"); /* an Xwayland view (or nobody) */
        else
                focus_sink_set(&s->conn.sink, pid, "sway");
}

static int sway_on_io(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        SwayIpc *s = userdata;

        for (;;) {
                ssize_t n;

                if (s->have < SWAY_HEADER)
                        n = read(s->conn.fd, s->header + s->have, SWAY_HEADER - s->have);
                else
                        n = read(s->conn.fd, s->body + (s->have - SWAY_HEADER), s->len - (s->have - SWAY_HEADER));
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return 0;
                if (n <= 0) {
                        focus_conn_lost(&s->conn);
                        return 0;
                }
                s->have += (size_t) n;
                if (s->have == SWAY_HEADER) {
                        if (memcmp(s->header, SWAY_MAGIC, 6) != 0) {
                                focus_conn_lost(&s->conn);
                                return 0;
                        }
                        memcpy(&s->len, s->header + 6, 4);
                        memcpy(&s->type, s->header + 10, 4);
                        if (s->len > SWAY_MSG_MAX) {
                                focus_conn_lost(&s->conn);
                                return 0;
                        }
                        s->body = malloc((size_t) s->len + 1);
                        if (!s->body) {
                                focus_conn_lost(&s->conn);
                                return 0;
                        }
                }
                if (s->have >= SWAY_HEADER && s->have - SWAY_HEADER == s->len) {
                        s->body[s->len] = '\0';
                        focus_retry_works(&s->conn.retry); /* a whole message: the connection works */
                        sway_on_message(s);
                        free(s->body);
                        s->body = NULL;
                        s->have = 0;
                }
        }
}

static int sway_connect(void *userdata) {
        static const char payload[] = "[\"window\"]";
        uint8_t msg[SWAY_HEADER + sizeof(payload) - 1 + SWAY_HEADER];
        uint32_t len = sizeof(payload) - 1, type = SWAY_SUBSCRIBE, zero = 0, tree = SWAY_GET_TREE;
        SwayIpc *s = userdata;

        memcpy(msg, SWAY_MAGIC, 6);
        memcpy(msg + 6, &len, 4);
        memcpy(msg + 10, &type, 4);
        memcpy(msg + SWAY_HEADER, payload, len);
        /* Subscribe first, then ask for the tree: no change falls between the two. */
        memcpy(msg + SWAY_HEADER + len, SWAY_MAGIC, 6);
        memcpy(msg + SWAY_HEADER + len + 6, &zero, 4);
        memcpy(msg + SWAY_HEADER + len + 10, &tree, 4);
        return focus_conn_open(&s->conn, NULL, msg, sizeof(msg), sway_on_io, false);
}

const FocusSourceType sway_source = {
        .size = sizeof(SwayIpc),
        .name = "sway",
        .connect = sway_connect,
        .close = sway_close,
};
