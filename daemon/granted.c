/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The map of granted values (see granted.h). */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "granted.h"

/* The kernel's PID_MAX_LIMIT on 64-bit machines: no pid is larger. */
#define GRANTED_PID_MAX (4 * 1024 * 1024)

void granted_entry(const AppliedProcess *e, struct latnice_granted_key *ret_key,
                   struct latnice_granted_value *ret_value) {
        *ret_key = (struct latnice_granted_key) { .pid = (__u32) e->pid, .start_time = e->start_time };
        *ret_value = (struct latnice_granted_value) {
                .latency_nice = e->latency_nice,
                .flags = e->tgid > 0 ? LATNICE_GRANTED_F_THREAD : 0,
        };
}

int granted_map_open(const char *path, int *ret_fd, uint32_t *ret_id) {
        struct bpf_map_info info = {};
        __u32 len = sizeof(info);
        struct stat st;
        int fd;

        if (lstat(path, &st) < 0)
                return -errno;
        /* bpffs is mode 1777 where it is mounted without mode=: only root's pin is scx_latnice's. */
        if (st.st_uid != 0 || (st.st_mode & 022))
                return -EPERM;
        fd = bpf_obj_get(path);
        if (fd < 0)
                return -errno;
        if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0) {
                int r = -errno;

                close(fd);
                return r;
        }
        if (info.type != BPF_MAP_TYPE_HASH || info.key_size != sizeof(struct latnice_granted_key) ||
            info.value_size != sizeof(struct latnice_granted_value)) {
                close(fd);
                return -EPROTO;
        }
        *ret_fd = fd;
        *ret_id = info.id;
        return 0;
}

int granted_map_put(int fd, const AppliedProcess *e) {
        struct latnice_granted_key k;
        struct latnice_granted_value v;

        granted_entry(e, &k, &v);
        return bpf_map_update_elem(fd, &k, &v, BPF_ANY) < 0 ? -errno : 0;
}

int granted_map_remove(int fd, const AppliedProcess *e) {
        struct latnice_granted_key k;
        struct latnice_granted_value v;

        granted_entry(e, &k, &v);
        if (bpf_map_delete_elem(fd, &k) < 0)
                return errno == ENOENT ? 0 : -errno;
        return 0;
}

/* Does the table have this key (the same pid and start time)? */
static bool table_has(AppliedTable *t, const struct latnice_granted_key *k) {
        const AppliedProcess *e;

        if (k->zero != 0 || k->pid == 0 || k->pid > GRANTED_PID_MAX)
                return false;
        e = applied_table_get(t, (pid_t) k->pid);
        return e && e->start_time == k->start_time;
}

int granted_map_sync(int fd, AppliedTable *t, GrantedSync *ret) {
        struct latnice_granted_key k, next;
        GrantedSync s = {};
        AppliedProcess *e;
        size_t i = 0;
        bool first = true;
        int r = 0;

        /* New values first, stale keys after: a task of the table never reads as not granted. */
        while ((e = applied_table_next(t, &i))) {
                int q = granted_map_put(fd, e);

                if (q < 0) {
                        s.n_failed++;
                        if (r == 0)
                                r = q;
                } else
                        s.n_written++;
        }
        /* Deleting the current key restarts a hash map's walk from the start (get_next_key of a missing
         * key): so the key after it is taken first. Bounded by the map's size plus what is deleted. */
        for (;;) {
                if (bpf_map_get_next_key(fd, first ? NULL : &k, &next) < 0)
                        break;
                if (!first && !table_has(t, &k)) {
                        if (bpf_map_delete_elem(fd, &k) == 0)
                                s.n_stale++;
                }
                k = next;
                first = false;
        }
        if (!first && !table_has(t, &k) && bpf_map_delete_elem(fd, &k) == 0)
                s.n_stale++;
        if (ret)
                *ret = s;
        return r;
}
