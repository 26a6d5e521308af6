/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Unix socket a compositor source connects to, and whose it is. A path taken from the
 * environment or under /tmp (older Hyprland) may be another user's socket: what it says would
 * then decide which of our processes is boosted, so a peer of another uid is refused.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
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
