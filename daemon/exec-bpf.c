/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Skeleton lifecycle and map updates for daemon/bpf/exec.bpf.c. */

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "exec-bpf.h"
#include "exec.skel.h"
#include "util.h"

struct ExecBpf {
        struct exec_bpf *skel;
        struct ring_buffer *rb;
        exec_bpf_handler_t handler;
        void *userdata;
        const char *hook;
        unsigned budget; /* records left in this consume() */
};

ExecBpf *exec_bpf_free(ExecBpf *b) {
        if (!b)
                return NULL;
        ring_buffer__free(b->rb);
        exec_bpf__destroy(b->skel);
        free(b);
        return NULL;
}

/* Stops ring_buffer__consume() after the record that used up the budget. */
#define BUDGET_SPENT (-ECANCELED)

static int on_ringbuf(void *ctx, void *data, size_t size) {
        ExecBpf *b = ctx;

        (void) b->handler(b->userdata, data, size);
        return --b->budget == 0 ? BUDGET_SPENT : 0;
}

static int try_load(ExecBpf *b, const ExecBpfOptions *o, bool btf) {
        int r;

        b->skel = exec_bpf__open();
        if (!b->skel)
                return -errno;
        b->skel->rodata->ns_translate = o->ns_translate;
        b->skel->rodata->pidns_dev = o->pidns_dev;
        b->skel->rodata->pidns_ino = o->pidns_ino;
        r = bpf_map__set_max_entries(b->skel->maps.events,
                                     (uint32_t) (o->ringbuf_size > 0 ? o->ringbuf_size : EXEC_BPF_RINGBUF_DEFAULT));
        if (r < 0)
                return r;
        bpf_program__set_autoload(b->skel->progs.exec_btf, btf);
        bpf_program__set_autoload(b->skel->progs.exit_btf, btf);
        bpf_program__set_autoload(b->skel->progs.exec_tp, !btf);
        bpf_program__set_autoload(b->skel->progs.exit_tp, !btf);
        r = exec_bpf__load(b->skel);
        if (r < 0)
                return r;
        r = exec_bpf__attach(b->skel);
        if (r < 0)
                return r;
        b->hook = btf ? "tp_btf" : "tracepoint";
        return 0;
}

int exec_bpf_new(const ExecBpfOptions *o, exec_bpf_handler_t handler, void *userdata, ExecBpf **ret,
                 char **ret_reason) {
        _cleanup_(exec_bpf_freep) ExecBpf *b = NULL;
        int r, r_btf = 0;

        *ret_reason = NULL;
        b = calloc(1, sizeof(ExecBpf));
        if (!b)
                return -ENOMEM;
        b->handler = handler;
        b->userdata = userdata;

        if (!o->force_tracepoint) {
                r_btf = try_load(b, o, true);
                if (r_btf < 0) {
                        exec_bpf__destroy(b->skel);
                        b->skel = NULL;
                }
        }
        if (o->force_tracepoint || r_btf < 0) {
                r = try_load(b, o, false);
                if (r < 0) {
                        /* libbpf finds a tracepoint's id in tracefs: say so when that is what is missing. */
                        bool no_tracefs = r == -ENOENT && access("/sys/kernel/tracing/events", F_OK) < 0 &&
                                          access("/sys/kernel/debug/tracing/events", F_OK) < 0;

                        if (asprintf(ret_reason, "cannot load the BPF exec watcher (tp_btf: %s; tracepoint: %s%s)",
                                     r_btf < 0 ? strerror(-r_btf) : "not tried", strerror(-r),
                                     no_tracefs ? ", tracefs is not mounted at /sys/kernel/tracing" : "") < 0)
                                *ret_reason = NULL;
                        return r;
                }
                if (r_btf < 0 && asprintf(ret_reason, "tp_btf unavailable (%s), using the plain tracepoint",
                                          strerror(-r_btf)) < 0)
                        *ret_reason = NULL;
        }

        b->rb = ring_buffer__new(bpf_map__fd(b->skel->maps.events), on_ringbuf, b, NULL);
        if (!b->rb) {
                r = -errno;
                if (asprintf(ret_reason, "cannot set up the BPF ring buffer: %s", strerror(-r)) < 0)
                        *ret_reason = NULL;
                return r;
        }
        *ret = TAKE_PTR(b);
        return 0;
}

const char *exec_bpf_hook(const ExecBpf *b) {
        return b->hook;
}

int exec_bpf_epoll_fd(ExecBpf *b) {
        return ring_buffer__epoll_fd(b->rb);
}

int exec_bpf_consume(ExecBpf *b, unsigned budget) {
        int r;

        if (budget == 0)
                return 1;
        b->budget = budget;
        r = ring_buffer__consume(b->rb);
        if (r == BUDGET_SPENT)
                return 1;
        return r < 0 ? r : 0;
}

bool exec_bpf_take_lost(ExecBpf *b) {
        if (!__atomic_load_n(&b->skel->bss->lost_pending, __ATOMIC_ACQUIRE))
                return false;
        __atomic_store_n(&b->skel->bss->lost_pending, false, __ATOMIC_RELEASE);
        return true;
}

static int map_clear(int fd, size_t key_size) {
        uint8_t key[64], next[64];
        void *prev = NULL;

        if (key_size > sizeof(key))
                return -EINVAL;
        /* Always restart from the first key: we delete what we iterate. */
        while (bpf_map_get_next_key(fd, prev, next) == 0) {
                memcpy(key, next, key_size);
                if (bpf_map_delete_elem(fd, key) < 0)
                        return -errno;
        }
        return 0;
}

static int fill_names(int fd, const FilterName *names, size_t n, size_t width) {
        uint8_t one = 1;

        for (size_t i = 0; i < n; i++) {
                struct {
                        uint32_t prefixlen;
                        char name[LATNICE_EXE_BASE_LEN];
                } key = {};

                memcpy(key.name, names[i].name, names[i].len);
                /* exact: the whole NUL-padded name; prefix: just its bytes */
                key.prefixlen = (uint32_t) (names[i].exact ? width * 8 : names[i].len * 8);
                if (bpf_map_update_elem(fd, &key, &one, BPF_ANY) < 0)
                        return -errno;
        }
        return 0;
}

int exec_bpf_set_filter(ExecBpf *b, const FilterSpec *f, const uint32_t *uids, size_t n_uids,
                        const uint32_t *gids, size_t n_gids, const uint64_t *cgroup_ids, size_t n_cgroup_ids) {
        struct exec_bpf *s = b->skel;
        uint32_t flags = 0;
        uint8_t one = 1;
        int r;

        /* Everything passes while the maps are rebuilt: a reload must not lose execs. */
        s->bss->filter_active = false;
        __atomic_thread_fence(__ATOMIC_SEQ_CST);

        r = map_clear(bpf_map__fd(s->maps.filter_comm), sizeof(struct latnice_comm_key));
        if (r >= 0)
                r = map_clear(bpf_map__fd(s->maps.filter_exe), sizeof(struct latnice_exe_key));
        if (r >= 0)
                r = map_clear(bpf_map__fd(s->maps.filter_parent), sizeof(struct latnice_comm_key));
        if (r >= 0)
                r = map_clear(bpf_map__fd(s->maps.filter_uid), sizeof(uint32_t));
        if (r >= 0)
                r = map_clear(bpf_map__fd(s->maps.filter_gid), sizeof(uint32_t));
        if (r >= 0)
                r = map_clear(bpf_map__fd(s->maps.filter_cgroup), sizeof(uint64_t));
        if (r < 0)
                return r;

        if (f->pass_all) {
                s->bss->want_args = f->want_args;
                return 0;
        }

        r = fill_names(bpf_map__fd(s->maps.filter_comm), f->comm, f->n_comm, LATNICE_COMM_LEN);
        if (r >= 0)
                r = fill_names(bpf_map__fd(s->maps.filter_exe), f->exe, f->n_exe, LATNICE_EXE_BASE_LEN);
        if (r >= 0)
                r = fill_names(bpf_map__fd(s->maps.filter_parent), f->parent, f->n_parent, LATNICE_COMM_LEN);
        for (size_t i = 0; r >= 0 && i < n_uids; i++)
                if (bpf_map_update_elem(bpf_map__fd(s->maps.filter_uid), &uids[i], &one, BPF_ANY) < 0)
                        r = -errno;
        for (size_t i = 0; r >= 0 && i < n_gids; i++)
                if (bpf_map_update_elem(bpf_map__fd(s->maps.filter_gid), &gids[i], &one, BPF_ANY) < 0)
                        r = -errno;
        for (size_t i = 0; r >= 0 && i < n_cgroup_ids; i++)
                if (bpf_map_update_elem(bpf_map__fd(s->maps.filter_cgroup), &cgroup_ids[i], &one, BPF_ANY) < 0)
                        r = -errno;
        if (r < 0)
                return r; /* stays pass-all: safe */

        if (f->n_comm > 0)
                flags |= LATNICE_FILTER_F_COMM;
        if (f->n_exe > 0)
                flags |= LATNICE_FILTER_F_EXE;
        if (f->n_parent > 0)
                flags |= LATNICE_FILTER_F_PARENT;
        if (n_uids > 0)
                flags |= LATNICE_FILTER_F_UID;
        if (n_gids > 0)
                flags |= LATNICE_FILTER_F_GID;
        if (n_cgroup_ids > 0)
                flags |= LATNICE_FILTER_F_CGROUP;
        s->bss->filter_flags = flags;
        s->bss->want_args = f->want_args;
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        s->bss->filter_active = true;
        return 0;
}

int exec_bpf_track(ExecBpf *b, pid_t pid, bool on) {
        int fd = bpf_map__fd(b->skel->maps.tracked);
        uint32_t key = (uint32_t) pid;
        uint64_t one = 1;

        if (on)
                return bpf_map_update_elem(fd, &key, &one, BPF_ANY) < 0 ? -errno : 0;
        if (bpf_map_delete_elem(fd, &key) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

int exec_bpf_counters(ExecBpf *b, ExecBpfCounters *ret) {
        int fd = bpf_map__fd(b->skel->maps.counters), ncpu = libbpf_num_possible_cpus();
        uint64_t sums[3] = {};

        if (ncpu <= 0)
                return ncpu < 0 ? ncpu : -EINVAL;
        {
                _cleanup_(freep) uint64_t *v = calloc((size_t) ncpu, sizeof(uint64_t));

                if (!v)
                        return -ENOMEM;
                for (uint32_t k = 0; k < 3; k++) {
                        if (bpf_map_lookup_elem(fd, &k, v) < 0)
                                return -errno;
                        for (int c = 0; c < ncpu; c++)
                                sums[k] += v[c];
                }
        }
        *ret = (ExecBpfCounters) { .execs = sums[0], .events = sums[1], .dropped = sums[2] };
        return 0;
}
