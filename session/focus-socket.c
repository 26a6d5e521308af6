/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Unix socket a compositor source connects to, and whose it is. A path taken from the
 * environment or under /tmp (older Hyprland) may be another user's socket: what it says would
 * then decide which of our processes is boosted, so a peer of another uid is refused. Also what
 * the sources share once connected: reading a line stream, and connecting again after a backoff.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "focus-source.h"

int focus_socket_connect(const char *path, bool nonblock, int *ret_fd) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct ucred cred;
        socklen_t n = sizeof(cred);
        int fd, r;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, strlen(path));
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
        if (fd < 0)
                return -errno;
        /* A local socket: connect() completes at once or fails (EAGAIN when its backlog is full). */
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                r = -errno;
                close(fd);
                return r;
        }
        r = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &n) < 0 ? -errno : n != sizeof(cred) ? -EIO : 0;
        if (r < 0) {
                close(fd);
                return r;
        }
        if (cred.uid != getuid()) {
                close(fd);
                return -EPERM;
        }
        *ret_fd = fd;
        return 0;
}

int focus_socket_open(sd_event *event, const char *path, const void *request, size_t len,
                      sd_event_io_handler_t on_io, void *userdata, const char *description, int *ret_fd,
                      sd_event_source **ret_io) {
        sd_event_source *io = NULL;
        int fd, r;

        r = focus_socket_connect(path, true, &fd);
        if (r < 0)
                return r;
        /* One small write to a fresh local socket: its buffer takes it whole, or the peer is broken. */
        if (len > 0 && write(fd, request, len) != (ssize_t) len) {
                close(fd);
                return -EIO;
        }
        r = sd_event_add_io(event, &io, fd, EPOLLIN, on_io, userdata);
        if (r < 0) {
                close(fd);
                return r;
        }
        (void) sd_event_source_set_description(io, description);
        *ret_fd = fd;
        *ret_io = io;
        return 0;
}

int focus_socket_path(const char *path, char **ret) {
        char *copy;

        if (strlen(path) >= sizeof(((struct sockaddr_un) {}).sun_path))
                return -ENAMETOOLONG;
        copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        *ret = copy;
        return 0;
}

int focus_socket_read_lines(int fd, LineBuffer *lb, unsigned reads, LineFunc func, void *userdata) {
        char buf[65536];

        for (unsigned i = 0; i < reads; i++) {
                ssize_t n = read(fd, buf, sizeof(buf));

                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return 0;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -ECONNRESET;
                int r = line_buffer_feed(lb, buf, (size_t) n, func, userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int focus_retry_on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        FocusRetry *retry = userdata;

        retry->timer = sd_event_source_unref(retry->timer);
        (void) retry->connect(retry->userdata);
        return 0;
}

void focus_retry_schedule(FocusRetry *retry, sd_event *event) {
        retry->backoff = retry->backoff ? retry->backoff * 2 : retry->min_usec;
        if (retry->backoff > retry->max_usec)
                retry->backoff = retry->max_usec;
        if (retry->timer)
                return; /* one is on its way */
        /* Accuracy a tenth of the wait: sd-event's default of 250 ms would outgrow the first waits. */
        if (sd_event_add_time_relative(event, &retry->timer, CLOCK_MONOTONIC, retry->backoff, retry->backoff / 10 + 1,
                                       focus_retry_on_timer, retry) < 0)
                return;
        (void) sd_event_source_set_description(retry->timer, retry->description);
}

void focus_retry_done(FocusRetry *retry) {
        retry->timer = sd_event_source_unref(retry->timer);
}

void focus_conn_init(FocusConn *c, const FocusSourceType *type, const FocusSink *sink) {
        *c = (FocusConn) {
                .type = type,
                .sink = *sink,
                .fd = -1,
                .retry = { .min_usec = FOCUS_RETRY_MIN_USEC, .max_usec = FOCUS_RETRY_MAX_USEC,
                           .description = c->retry_description, .connect = type->connect, .userdata = c },
        };
        (void) snprintf(c->retry_description, sizeof(c->retry_description), "%s-retry", type->name);
}

int focus_conn_new(const FocusSourceType *type, const FocusSink *sink, const char *path, FocusConn **ret) {
        FocusConn *c;
        int r;

        assert(type->size >= sizeof(FocusConn));
        c = calloc(1, type->size);
        if (!c)
                return -ENOMEM;
        focus_conn_init(c, type, sink);
        r = focus_socket_path(path, &c->path);
        if (r < 0) {
                free(c);
                return r;
        }
        (void) type->connect(c);
        *ret = c;
        return 0;
}

int focus_conn_open(FocusConn *c, const char *path, const void *request, size_t len, sd_event_io_handler_t on_io,
                    bool try_more) {
        int r = focus_socket_open(c->sink.event, path ?: c->path, request, len, on_io, c, c->type->name, &c->fd,
                                  &c->io);

        if (r < 0) {
                c->fd = -1;
                if (!try_more)
                        focus_conn_lost(c);
                return r;
        }
        if (c->type->on_line)
                line_buffer_init(&c->lines, c->type->line_max);
        return 0;
}

int focus_conn_on_lines(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        FocusConn *c = userdata;

        if (focus_socket_read_lines(c->fd, &c->lines, c->type->reads, c->type->on_line, c) < 0)
                focus_conn_lost(c);
        return 0;
}

void focus_conn_close(FocusConn *c) {
        c->io = sd_event_source_disable_unref(c->io);
        if (c->fd >= 0)
                close(c->fd);
        c->fd = -1;
        line_buffer_done(&c->lines);
        if (c->type->close)
                c->type->close(c);
}

void focus_conn_lost(FocusConn *c) {
        focus_conn_close(c);
        focus_sink_set(&c->sink, 0, c->type->name);
        focus_retry_schedule(&c->retry, c->sink.event);
}

FocusConn *focus_conn_free(FocusConn *c) {
        if (!c)
                return NULL;
        focus_conn_close(c);
        focus_retry_done(&c->retry);
        if (c->type->done)
                c->type->done(c);
        free(c->path);
        free(c);
        return NULL;
}
