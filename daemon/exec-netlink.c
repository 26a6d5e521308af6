/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The proc connector: subscribe, read exec and exit events. */

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <sys/socket.h>

#include "exec-netlink.h"
#include "util.h"

int exec_netlink_open(int rcvbuf) {
        _cleanup_(closep) int fd = -1;
        struct sockaddr_nl addr = {
                .nl_family = AF_NETLINK,
                .nl_groups = CN_IDX_PROC,
                .nl_pid = 0,
        };
        struct {
                struct nlmsghdr hdr;
                struct cn_msg msg;
                enum proc_cn_mcast_op op;
        } __attribute__((packed)) req = {};

        fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
        if (fd < 0)
                return -errno;
        if (rcvbuf > 0)
                (void) setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
        if (bind(fd, (struct sockaddr *) &addr, sizeof(addr)) < 0)
                return -errno;

        req.hdr.nlmsg_len = sizeof(req);
        req.hdr.nlmsg_type = NLMSG_DONE;
        req.hdr.nlmsg_pid = 0;
        req.msg.id.idx = CN_IDX_PROC;
        req.msg.id.val = CN_VAL_PROC;
        req.msg.len = sizeof(enum proc_cn_mcast_op);
        req.op = PROC_CN_MCAST_LISTEN;
        if (send(fd, &req, sizeof(req), 0) < 0)
                return -errno;
        return TAKE_FD(fd);
}

int exec_netlink_read(int fd, unsigned budget, netlink_handler_t handler, void *userdata) {
        char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
        int lost = 0;

        for (unsigned k = 0;; k++) {
                ssize_t n;

                /* A flood must not keep the caller away from its other work. */
                if (k >= budget)
                        return lost < 0 ? lost : 1;
                n = recv(fd, buf, sizeof(buf), 0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                break;
                        if (errno == ENOBUFS) {
                                lost = -ENOBUFS;
                                continue;
                        }
                        return -errno;
                }
                for (struct nlmsghdr *h = (struct nlmsghdr *) buf; NLMSG_OK(h, (size_t) n); h = NLMSG_NEXT(h, n)) {
                        struct cn_msg *msg;
                        struct proc_event ev = {};

                        if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_NOOP)
                                continue;
                        msg = NLMSG_DATA(h);
                        if (msg->id.idx != CN_IDX_PROC || msg->id.val != CN_VAL_PROC)
                                continue;
                        /* cn_msg's payload is only 4-byte aligned; proc_event has 64-bit fields. */
                        memcpy(&ev, msg->data, msg->len < sizeof(ev) ? msg->len : sizeof(ev));
                        if (ev.what == PROC_EVENT_EXEC)
                                (void) handler(userdata, NETLINK_EVENT_EXEC, ev.event_data.exec.process_tgid,
                                               ev.event_data.exec.process_pid);
                        else if (ev.what == PROC_EVENT_EXIT &&
                                 ev.event_data.exit.process_pid == ev.event_data.exit.process_tgid)
                                (void) handler(userdata, NETLINK_EVENT_EXIT, ev.event_data.exit.process_tgid,
                                               ev.event_data.exit.process_pid);
                        else if (ev.what == PROC_EVENT_FORK &&
                                 ev.event_data.fork.child_pid == ev.event_data.fork.child_tgid)
                                (void) handler(userdata, NETLINK_EVENT_FORK, ev.event_data.fork.child_tgid,
                                               ev.event_data.fork.parent_tgid);
                        else if (ev.what == PROC_EVENT_COMM)
                                (void) handler(userdata,
                                               ev.event_data.comm.process_pid == ev.event_data.comm.process_tgid ?
                                               NETLINK_EVENT_RENAME : NETLINK_EVENT_THREAD_RENAME,
                                               ev.event_data.comm.process_tgid, ev.event_data.comm.process_pid);
                }
        }
        return lost;
}
