/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The focus sources (focus-sway.c, focus-niri.c, focus-hyprland.c) and what they share. A
 * source knows nothing of latnice-focus.c: it gets a FocusSink, the loop to run on and where to
 * say, once per focus change, the pid the compositor named (0: none, or unknown) and the
 * source's name for --print.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

typedef struct FocusSink {
        sd_event *event;
        void (*set)(void *userdata, pid_t pid, const char *source);
        /* An Xwayland window, named by its X window id: the compositor's pid for it may be its
         * _NET_WM_PID, the client's own word, so the X server is asked whose it is. NULL: nobody. */
        void (*set_x11)(void *userdata, uint32_t window, const char *source);
        void *userdata;
} FocusSink;

static inline void focus_sink_set(const FocusSink *sink, pid_t pid, const char *source) {
        sink->set(sink->userdata, pid, source);
}

static inline void focus_sink_set_x11(const FocusSink *sink, uint32_t window, const char *source) {
        if (sink->set_x11 && window != 0)
                sink->set_x11(sink->userdata, window, source);
        else
                sink->set(sink->userdata, 0, source);
}

/*
 * Connecting again after a backoff (focus-socket.c): each failure doubles the wait from min_usec
 * to max_usec, focus_retry_works() starts it from the bottom again once the compositor said a
 * whole thing. The timer calls connect(userdata). A source never gives up on its compositor.
 */
typedef struct FocusRetry {
        sd_event_source *timer;
        uint64_t backoff, min_usec, max_usec;
        const char *description;
        int (*connect)(void *userdata);
        void *userdata;
} FocusRetry;
#define FOCUS_RETRY_MIN_USEC 100000ULL
#define FOCUS_RETRY_MAX_USEC 10000000ULL
void focus_retry_schedule(FocusRetry *retry, sd_event *event);
static inline void focus_retry_works(FocusRetry *retry) {
        retry->backoff = 0;
}
void focus_retry_done(FocusRetry *retry);

/* Newline-delimited streams (focus-lines.c, pure): whole lines of at most 'max' bytes go to
 * func (without the newline, not NUL-terminated); a longer line is dropped and counted. A
 * negative return of func stops the feed and is returned. */
typedef int (*LineFunc)(const char *line, size_t len, void *userdata);
typedef struct LineBuffer {
        char *buf;
        size_t len, cap, max;
        bool skipping;        /* inside a line that was too long, until its newline */
        uint64_t dropped;     /* lines dropped for their length */
} LineBuffer;
void line_buffer_init(LineBuffer *lb, size_t max);
void line_buffer_done(LineBuffer *lb);
int line_buffer_feed(LineBuffer *lb, const char *data, size_t n, LineFunc func, void *userdata);

/*
 * What every source keeps of its compositor (focus-socket.c), the first member of its struct: the
 * sink, the connection (fd and its io source), the socket's path (NULL where the source finds its
 * own), the retry, whose connect() gets the source, and for a line stream its line buffer.
 */
typedef struct FocusConn FocusConn;
typedef struct FocusSourceType {
        size_t size;          /* of the source's struct */
        const char *name;     /* "sway", "niri", "hyprland": for the sink, the io source, NAME-retry for the timer */
        int (*connect)(void *userdata);
        void (*close)(FocusConn *c); /* if set: drops the source's own state of the connection */
        void (*done)(FocusConn *c);  /* if set: frees what the source holds beyond it, at the end */
        /* A line stream (niri, Hyprland), read by focus_conn_on_lines(): whole lines of at most
         * line_max bytes go to on_line(line, len, source), at most reads reads a dispatch. */
        LineFunc on_line;
        size_t line_max;
        unsigned reads;
} FocusSourceType;
struct FocusConn {
        const FocusSourceType *type;
        FocusSink sink;
        char *path;
        int fd;
        sd_event_source *io;
        FocusRetry retry;
        char retry_description[32]; /* the retry timer's: the type's name and "-retry" */
        LineBuffer lines;
};
void focus_conn_init(FocusConn *c, const FocusSourceType *type, const FocusSink *sink);
/* A source of that type for the socket at path (zeroed but for its FocusConn), its first connection
 * made (a failure is not fatal: the compositor may still be starting). */
int focus_conn_new(const FocusSourceType *type, const FocusSink *sink, const char *path, FocusConn **ret);
/* focus_socket_open() of path (NULL: c->path) with on_io, and for a line stream a fresh line buffer:
 * 0, or negative (then the connection is lost, below, unless try_more: another path is to be tried). */
int focus_conn_open(FocusConn *c, const char *path, const void *request, size_t len, sd_event_io_handler_t on_io,
                    bool try_more);
/* The io handler of a line stream. */
int focus_conn_on_lines(sd_event_source *es, int fd, uint32_t revents, void *userdata);
void focus_conn_close(FocusConn *c);
/* Connection lost or refused: what the compositor said no longer holds; try again later, waiting longer. */
void focus_conn_lost(FocusConn *c);
/* Closes and frees the source c starts (NULL: nothing); NULL. */
FocusConn *focus_conn_free(FocusConn *c);

/* Sway and i3-compatible IPC: subscribe ["window"], change "focus", container.pid. */
extern const FocusSourceType sway_source; /* focus_conn_new() it for $SWAYSOCK */

/* Pure: the pid a Sway "window" event names, 0 if it names none, -EINVAL for anything else
 * than a focus change. For an Xwayland view ("shell": "xwayland") the pid is 0 and *ret_x11 its X
 * window ("window"; 0 if it names none): its pid may be the client's word. Otherwise *ret_x11 is 0.
 * Exposed for tests on recorded events. */
int sway_event_focus_pid(const char *json, size_t len, pid_t *ret_pid, uint32_t *ret_x11);
/* The same for a GET_TREE reply: the focused node's, 0 for none. */
int sway_tree_focus_pid(const char *json, size_t len, pid_t *ret_pid, uint32_t *ret_x11);

/* One whole JSON value on a line, at most max bytes and depth deep; NULL and *ret_error otherwise. */
struct json_object;
struct json_object *json_line_parse(const char *line, size_t len, size_t max, int depth, int *ret_error);

/* Connects to a compositor's Unix socket; -EPERM if the peer is not our own uid (focus-socket.c). */
int focus_socket_connect(const char *path, bool nonblock, int *ret_fd);
/* focus_socket_connect(), then request written whole (len 0: nothing to send) and the fd watched for
 * input with on_io (its source named description): 0, or negative with nothing left open. */
int focus_socket_open(sd_event *event, const char *path, const void *request, size_t len,
                      sd_event_io_handler_t on_io, void *userdata, const char *description, int *ret_fd,
                      sd_event_source **ret_io);
/* A copy of a socket path that fits a sockaddr_un: 0, -ENAMETOOLONG or -ENOMEM. */
int focus_socket_path(const char *path, char **ret);
/* Feeds what a line stream has to func, at most 'reads' reads of 64 KiB (then the loop's other
 * sources get their turn): 0, or negative when the connection is to be dropped (closed, an
 * error, or func's refusal). */
int focus_socket_read_lines(int fd, LineBuffer *lb, unsigned reads, LineFunc func, void *userdata);

/* niri (focus-niri.c): the "EventStream" request on $NIRI_SOCKET, windows by id, focus by id. */
#define NIRI_WINDOWS_MAX 4096 /* windows known by id; more are not kept (their focus names nobody) */
typedef struct NiriWindow {
        uint64_t id;
        pid_t pid;            /* 0: not known */
} NiriWindow;
typedef struct NiriState {
        NiriWindow *windows;
        size_t n_windows, n_allocated;
        bool focused;         /* a window has the focus */
        uint64_t focus_id;
        pid_t focus_pid;
        uint64_t over_cap;    /* windows not kept because NIRI_WINDOWS_MAX was reached */
} NiriState;
void niri_state_done(NiriState *st);
/* Pure: one line of the event stream. 1: the focus is now *ret_pid (0: none or unknown);
 * 0: nothing about the focus (another event, the reply to the request); -EPROTO: niri refused
 * the request; -EINVAL, -E2BIG: not a line we can read (the state is unchanged). */
int niri_state_line(NiriState *st, const char *line, size_t len, pid_t *ret_pid);
extern const FocusSourceType niri_source; /* focus_conn_new() it for $NIRI_SOCKET */

/* Hyprland (focus-hyprland.c): events on .socket2.sock, the focused window's pid asked of
 * .socket.sock ("j/activewindow"). Windows are named by address (0: none). */
enum {
        HYPR_EVENT_OTHER,     /* any other event: ignored */
        HYPR_EVENT_FOCUS,     /* activewindowv2>>ADDRESS, or empty: nothing focused */
        HYPR_EVENT_OPEN,      /* openwindow>>ADDRESS,... */
        HYPR_EVENT_CLOSE,     /* closewindow>>ADDRESS */
};
/* Pure: one line of .socket2.sock, the kind above and the address it names; -EINVAL for a line
 * that is no event, or whose address is not one. */
int hypr_event_parse(const char *line, size_t len, uint64_t *ret_address);
/* Pure: a j/activewindow reply: its "address" (0 for {}, nothing focused) and "pid" (0 if none, and
 * for an Xwayland window: its pid may be the client's word, and the reply names no X window). */
int hypr_reply_parse(const char *json, size_t len, uint64_t *ret_address, pid_t *ret_pid);
/* signature: $HYPRLAND_INSTANCE_SIGNATURE; runtime_dir: $XDG_RUNTIME_DIR or NULL. Freed by focus_conn_free(). */
int hypr_ipc_new(const FocusSink *sink, const char *signature, const char *runtime_dir, FocusConn **ret);
