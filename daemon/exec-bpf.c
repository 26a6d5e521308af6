/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Skeleton lifecycle and map updates for daemon/bpf/exec.bpf.c. */

#include <inttypes.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf-reason.h"
#include "exec-bpf.h"
#include "exec.skel.h"
#include "util.h"

/* The prefilter's maps (see exec.bpf.c): one slot each. */
enum {
        SLOT_COMM,
        SLOT_COMM_PREFIX,
        SLOT_EXE,
        SLOT_EXE_PREFIX,
        SLOT_PARENT,
        SLOT_PARENT_PREFIX,
        SLOT_UID,
        SLOT_GID,
        SLOT_CGROUP,
        SLOT_ANCESTOR,
        _SLOT_MAX,
};

typedef struct FilterSlot {
        int fd;          /* the map in the slot, -1 if none */
        uint64_t digest; /* of its contents: an unchanged map is not rebuilt */
        size_t entries;
        uint64_t memory; /* bytes, as the kernel accounts them */
} FilterSlot;

struct ExecBpf {
        struct exec_bpf *skel;
        FilterSlot slots[_SLOT_MAX];
        struct ring_buffer *rb;
        exec_bpf_handler_t handler;
        void *userdata;
        const char *hook;
        unsigned budget; /* records left in this consume() */
        bool inherited_reused;
};

ExecBpf *exec_bpf_free(ExecBpf *b) {
        if (!b)
                return NULL;
        for (size_t i = 0; i < _SLOT_MAX; i++)
                if (b->slots[i].fd >= 0)
                        close(b->slots[i].fd);
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

/* Is fd a map that can stand in for map (same type, sizes, flags)? */
static bool map_fits(int fd, const struct bpf_map *map) {
        struct bpf_map_info info = {};
        uint32_t len = sizeof(info);

        if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) < 0)
                return false;
        return info.type == bpf_map__type(map) && info.key_size == bpf_map__key_size(map) &&
               info.value_size == bpf_map__value_size(map) && info.max_entries == bpf_map__max_entries(map) &&
               info.map_flags == bpf_map__map_flags(map);
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
        bpf_program__set_autoload(b->skel->progs.rename_btf, btf);
        bpf_program__set_autoload(b->skel->progs.rename_tp, !btf);
        bpf_program__set_autoload(b->skel->progs.fork_btf, btf);
        bpf_program__set_autoload(b->skel->progs.fork_raw, !btf);
        /* Both or neither: a share is about the entries of its record. */
        b->inherited_reused = map_fits(o->inherited_fd, b->skel->maps.inherited) &&
                              map_fits(o->inherited_users_fd, b->skel->maps.inherited_users);
        if (b->inherited_reused) {
                r = bpf_map__reuse_fd(b->skel->maps.inherited, o->inherited_fd);
                if (r >= 0)
                        r = bpf_map__reuse_fd(b->skel->maps.inherited_users, o->inherited_users_fd);
                if (r < 0)
                        return r;
        }
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
        for (size_t i = 0; i < _SLOT_MAX; i++)
                b->slots[i].fd = -1;

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
                        bpf_load_reason("cannot load the BPF exec watcher", r_btf, r, ret_reason);
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

bool exec_bpf_inherited_reused(const ExecBpf *b) {
        return b->inherited_reused;
}

int exec_bpf_inherited_fd(ExecBpf *b) {
        return bpf_map__fd(b->skel->maps.inherited);
}

int exec_bpf_inherited_users_fd(ExecBpf *b) {
        return bpf_map__fd(b->skel->maps.inherited_users);
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

bool exec_bpf_take_renames_lost(ExecBpf *b) {
        if (!__atomic_load_n(&b->skel->bss->renames_lost_pending, __ATOMIC_ACQUIRE))
                return false;
        __atomic_store_n(&b->skel->bss->renames_lost_pending, false, __ATOMIC_RELEASE);
        return true;
}

size_t exec_bpf_sweep_renames(ExecBpf *b, RenameSwept *out, size_t max, bool *ret_more) {
        int fd = bpf_map__fd(b->skel->maps.renames_pending);
        uint32_t keys[EXEC_BPF_SWEEP_MAX];
        size_t n_keys = 0, n = 0;
        uint32_t key;
        int r;

        if (max > ELEMENTSOF(keys))
                max = ELEMENTSOF(keys);
        /* Keys first, then the deletes: a walk resumed from a deleted key starts over. */
        r = bpf_map_get_next_key(fd, NULL, &key);
        while (r == 0 && n_keys < max) {
                keys[n_keys++] = key;
                r = bpf_map_get_next_key(fd, &keys[n_keys - 1], &key);
        }
        *ret_more = r == 0;
        for (size_t i = 0; i < n_keys; i++) {
                struct latnice_rename_pending v;

                if (bpf_map_lookup_and_delete_elem(fd, &keys[i], &v) == 0) {
                        if (v.unsent > 0)
                                out[n++] = rename_swept_from_pending((pid_t) keys[i], &v);
                        continue;
                }
                if (errno == ENOENT)
                        continue; /* evicted meanwhile */
                /* Before Linux 5.14 a hash map cannot do both at once: a rename between the two is not
                 * counted, so decide the process in any case. */
                if (bpf_map_delete_elem(fd, &keys[i]) == 0)
                        out[n++] = (RenameSwept) { .pid = (pid_t) keys[i], .leader = true, .threads = true };
        }
        return n;
}

/* The kernel's own account of a map's memory (fdinfo "memlock", the map's real usage since Linux 6.4). */
static uint64_t map_memory(int fd) {
        char path[64], line[128];
        _cleanup_(fclosep) FILE *f = NULL;
        uint64_t v = 0;

        snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
        f = fopen(path, "re");
        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "memlock: %" SCNu64, &v) == 1)
                        break;
        return v;
}

static uint64_t digest_of(const void *keys, size_t n, size_t key_size) {
        const uint8_t *p = keys;
        uint64_t h = 0xcbf29ce484222325ULL ^ n;

        for (size_t i = 0; i < n * key_size; i++)
                h = (h ^ p[i]) * 0x100000001b3ULL;
        return h;
}

typedef struct SlotBuild {
        void *outer;     /* struct bpf_map * of the slot */
        enum bpf_map_type type;
        uint32_t key_size;
        uint32_t map_flags;
        void *keys;
        size_t n;
        /* result */
        uint64_t digest;
        bool changed;
        int fd;
} SlotBuild;

static int fill_map(int fd, const void *keys, size_t n, size_t key_size) {
        _cleanup_(freep) uint8_t *values = calloc(n, 1);
        struct bpf_map_batch_opts opts = { .sz = sizeof(opts), .elem_flags = BPF_ANY };
        uint32_t count = (uint32_t) n;

        if (!values)
                return -ENOMEM;
        memset(values, 1, n);
        /* One system call for the whole set; tries without batch support (older kernels) take them one by one. */
        if (bpf_map_update_batch(fd, keys, values, &count, &opts) == 0 && count == n)
                return 0;
        for (size_t i = 0; i < n; i++)
                if (bpf_map_update_elem(fd, (const uint8_t *) keys + i * key_size, &values[i], BPF_ANY) < 0)
                        return -errno;
        return 0;
}

/* A new map for the slot, sized to its entries, unless they are what the slot holds already. */
static int slot_prepare(ExecBpf *b, size_t i, SlotBuild *sb) {
        uint64_t digest = digest_of(sb->keys, sb->n, sb->key_size);
        struct bpf_map_create_opts opts = { .sz = sizeof(opts), .map_flags = sb->map_flags };
        int fd, r;

        sb->fd = -1;
        sb->digest = digest;
        sb->changed = digest != b->slots[i].digest || sb->n != b->slots[i].entries ||
                      (sb->n > 0) != (b->slots[i].fd >= 0);
        if (!sb->changed || sb->n == 0)
                return 0;
        fd = bpf_map_create(sb->type, "latnice_filter", sb->key_size, 1, (uint32_t) sb->n, &opts);
        if (fd < 0)
                return -errno;
        r = fill_map(fd, sb->keys, sb->n, sb->key_size);
        if (r < 0) {
                close(fd);
                return r;
        }
        sb->fd = fd;
        return 0;
}

static void *name_keys(const FilterName *names, size_t n, bool exact, size_t width, bool lpm, size_t *ret_n,
                       size_t *ret_key_size) {
        size_t key_size = (lpm ? sizeof(uint32_t) : 0) + width, k = 0;
        uint8_t *keys = calloc(n + 1, key_size);

        if (!keys)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                uint8_t *key = keys + k * key_size;

                if (names[i].exact != exact)
                        continue;
                if (lpm) {
                        uint32_t prefixlen = names[i].len * 8;

                        memcpy(key, &prefixlen, sizeof(prefixlen));
                        key += sizeof(prefixlen);
                }
                /* exact: the whole NUL-padded name; prefix: just its bytes */
                memcpy(key, names[i].name, names[i].len);
                k++;
        }
        *ret_n = k;
        *ret_key_size = key_size;
        return keys;
}

int exec_bpf_set_filter(ExecBpf *b, const FilterSpec *f, const uint32_t *uids, size_t n_uids,
                        const uint32_t *gids, size_t n_gids, const uint64_t *cgroup_ids, size_t n_cgroup_ids) {
        static const uint32_t flag_of[_SLOT_MAX] = {
                [SLOT_COMM] = LATNICE_FILTER_F_COMM,
                [SLOT_COMM_PREFIX] = LATNICE_FILTER_F_COMM_PREFIX,
                [SLOT_EXE] = LATNICE_FILTER_F_EXE,
                [SLOT_EXE_PREFIX] = LATNICE_FILTER_F_EXE_PREFIX,
                [SLOT_PARENT] = LATNICE_FILTER_F_PARENT,
                [SLOT_PARENT_PREFIX] = LATNICE_FILTER_F_PARENT_PREFIX,
                [SLOT_UID] = LATNICE_FILTER_F_UID,
                [SLOT_GID] = LATNICE_FILTER_F_GID,
                [SLOT_CGROUP] = LATNICE_FILTER_F_CGROUP,
                [SLOT_ANCESTOR] = LATNICE_FILTER_F_ANCESTOR,
        };
        struct exec_bpf *s = b->skel;
        SlotBuild sb[_SLOT_MAX] = {
                [SLOT_COMM] = { s->maps.filter_comm, BPF_MAP_TYPE_HASH },
                [SLOT_COMM_PREFIX] = { s->maps.filter_comm_prefix, BPF_MAP_TYPE_LPM_TRIE,
                                       .map_flags = BPF_F_NO_PREALLOC },
                [SLOT_EXE] = { s->maps.filter_exe, BPF_MAP_TYPE_HASH },
                [SLOT_EXE_PREFIX] = { s->maps.filter_exe_prefix, BPF_MAP_TYPE_LPM_TRIE,
                                      .map_flags = BPF_F_NO_PREALLOC },
                [SLOT_PARENT] = { s->maps.filter_parent, BPF_MAP_TYPE_HASH },
                [SLOT_PARENT_PREFIX] = { s->maps.filter_parent_prefix, BPF_MAP_TYPE_LPM_TRIE,
                                         .map_flags = BPF_F_NO_PREALLOC },
                [SLOT_UID] = { s->maps.filter_uid, BPF_MAP_TYPE_HASH, sizeof(uint32_t) },
                [SLOT_GID] = { s->maps.filter_gid, BPF_MAP_TYPE_HASH, sizeof(uint32_t) },
                [SLOT_CGROUP] = { s->maps.filter_cgroup, BPF_MAP_TYPE_HASH, sizeof(uint64_t) },
                [SLOT_ANCESTOR] = { s->maps.filter_ancestor, BPF_MAP_TYPE_HASH },
        };
        static const FilterSpec none = {};
        const FilterSpec *g = f->pass_all ? &none : f;
        uint32_t flags = 0, zero = 0;
        int r = 0;

        {
                const struct {
                        const FilterName *names;
                        size_t n, width;
                } kinds[3] = {
                        { g->comm, g->n_comm, LATNICE_COMM_LEN },
                        { g->exe, g->n_exe, LATNICE_EXE_BASE_LEN },
                        { g->parent, g->n_parent, LATNICE_COMM_LEN },
                };

                if (r >= 0) {
                        size_t key_size = 0;

                        sb[SLOT_ANCESTOR].keys = name_keys(g->ancestor, g->n_ancestor, true, LATNICE_EXE_BASE_LEN,
                                                           false, &sb[SLOT_ANCESTOR].n, &key_size);
                        sb[SLOT_ANCESTOR].key_size = (uint32_t) key_size;
                        if (!sb[SLOT_ANCESTOR].keys)
                                r = -ENOMEM;
                }
                for (size_t k = 0; k < 3 && r >= 0; k++)
                        for (size_t lpm = 0; lpm < 2 && r >= 0; lpm++) {
                                SlotBuild *x = &sb[2 * k + lpm];
                                size_t key_size = 0;

                                x->keys = name_keys(kinds[k].names, kinds[k].n, !lpm, kinds[k].width, lpm, &x->n,
                                                    &key_size);
                                x->key_size = (uint32_t) key_size;
                                if (!x->keys)
                                        r = -ENOMEM;
                        }
        }
        if (!f->pass_all) {
                sb[SLOT_UID].keys = (void *) uids;
                sb[SLOT_UID].n = n_uids;
                sb[SLOT_GID].keys = (void *) gids;
                sb[SLOT_GID].n = n_gids;
                sb[SLOT_CGROUP].keys = (void *) cgroup_ids;
                sb[SLOT_CGROUP].n = n_cgroup_ids;
        }
        /* Build the new maps while the old ones still filter: nothing is open during the build. */
        for (size_t i = 0; i < _SLOT_MAX && r >= 0; i++)
                r = slot_prepare(b, i, &sb[i]);
        for (size_t i = 0; i < 6; i++)
                free(sb[i].keys);
        free(sb[SLOT_ANCESTOR].keys);
        if (r < 0) {
                for (size_t i = 0; i < _SLOT_MAX; i++)
                        if (sb[i].fd >= 0)
                                close(sb[i].fd);
                /* The running filter may not cover the new rules: everything passes, renames too. */
                s->bss->filter_active = false;
                s->bss->want_renames = s->bss->want_renames || f->want_renames;
                s->bss->want_thread_renames = s->bss->want_thread_renames || f->want_thread_renames;
                return r;
        }

        /* The swap: a few updates of one-slot arrays, with everything passing meanwhile. */
        s->bss->filter_active = false;
        s->bss->want_renames = f->want_renames;
        s->bss->renames_all = f->renames_all;
        s->bss->want_thread_renames = f->want_thread_renames;
        s->bss->thread_renames_all = f->thread_renames_all;
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        for (size_t i = 0; i < _SLOT_MAX; i++) {
                int outer = bpf_map__fd(sb[i].outer);

                if (!sb[i].changed)
                        continue;
                if (sb[i].fd >= 0) {
                        if (bpf_map_update_elem(outer, &zero, &sb[i].fd, BPF_ANY) < 0 && r >= 0)
                                r = -errno;
                } else if (bpf_map_delete_elem(outer, &zero) < 0 && errno != ENOENT && r >= 0)
                        r = -errno;
                if (b->slots[i].fd >= 0)
                        close(b->slots[i].fd);
                b->slots[i] = (FilterSlot) {
                        .fd = sb[i].fd,
                        .digest = sb[i].digest,
                        .entries = sb[i].n,
                        .memory = sb[i].fd >= 0 ? map_memory(sb[i].fd) : 0,
                };
        }
        if (r < 0)
                return r; /* stays pass-all: safe */
        for (size_t i = 0; i < _SLOT_MAX; i++)
                if (b->slots[i].fd >= 0)
                        flags |= flag_of[i];
        s->bss->filter_flags = flags;
        s->bss->want_args = f->want_args;
        if (f->pass_all)
                return 0;
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        s->bss->filter_active = true;
        return 0;
}

uint64_t exec_bpf_filter_memory(ExecBpf *b) {
        uint64_t sum = 0;

        for (size_t i = 0; i < _SLOT_MAX; i++)
                sum += b->slots[i].memory;
        return sum;
}

uint64_t exec_bpf_memory(ExecBpf *b) {
        const struct bpf_map *map;
        uint64_t sum = exec_bpf_filter_memory(b);

        bpf_object__for_each_map(map, b->skel->obj)
                sum += map_memory(bpf_map__fd(map));
        return sum;
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

static void inherited_from_value(uint32_t key, const struct latnice_inherited *v, ExecBpfInherited *ret) {
        *ret = (ExecBpfInherited) {
                .pid = (pid_t) key,
                .origin = (pid_t) v->origin,
                .origin_start_boottime = v->origin_start_boottime,
                .start_boottime = v->start_boottime,
        };
}

int exec_bpf_inherited_list(ExecBpf *b, ExecBpfInherited **ret) {
        int fd = bpf_map__fd(b->skel->maps.inherited);
        _cleanup_(freep) ExecBpfInherited *v = NULL;
        size_t n = 0, alloc = 0;
        uint32_t key, next;
        int r;

        /* Two system calls an entry; a key deleted meanwhile (an exit) restarts the walk: bounded. */
        r = bpf_map_get_next_key(fd, NULL, &next);
        for (size_t k = 0; r == 0 && k < LATNICE_INHERITED_MAX; k++) {
                struct latnice_inherited value;

                key = next;
                r = bpf_map_get_next_key(fd, &key, &next);
                if (bpf_map_lookup_elem(fd, &key, &value) < 0)
                        continue;
                if (array_grow((void **) &v, &alloc, n, sizeof(ExecBpfInherited)) < 0)
                        return -ENOMEM;
                inherited_from_value(key, &value, &v[n++]);
        }
        if (r < 0 && errno != ENOENT)
                return -errno;
        *ret = TAKE_PTR(v);
        return (int) n;
}

int exec_bpf_inherited_get(ExecBpf *b, pid_t pid, ExecBpfInherited *ret) {
        struct latnice_inherited value;
        uint32_t key = (uint32_t) pid;

        if (bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.inherited), &key, &value) < 0)
                return -errno;
        inherited_from_value(key, &value, ret);
        return 0;
}

int exec_bpf_inherited_forget(ExecBpf *b, pid_t pid) {
        struct latnice_inherited_forget_args args = { .pid = (uint32_t) pid };
        struct bpf_test_run_opts opts = { .sz = sizeof(opts), .ctx_in = &args, .ctx_size_in = sizeof(args) };

        if (bpf_prog_test_run_opts(bpf_program__fd(b->skel->progs.inherited_forget), &opts) < 0)
                return -errno;
        return 0;
}

bool exec_bpf_take_inherited_share(ExecBpf *b, uid_t *ret_uid) {
        if (!__atomic_load_n(&b->skel->bss->inherited_share_pending, __ATOMIC_ACQUIRE))
                return false;
        __atomic_store_n(&b->skel->bss->inherited_share_pending, false, __ATOMIC_RELEASE);
        *ret_uid = (uid_t) __atomic_load_n(&b->skel->bss->inherited_share_uid, __ATOMIC_RELAXED);
        return true;
}

int exec_bpf_inherited_user(ExecBpf *b, uid_t uid, uint64_t *ret_held, uint64_t *ret_refused) {
        struct latnice_inherited_user u;
        uint32_t key = (uint32_t) uid;

        if (bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.inherited_users), &key, &u) < 0)
                return -errno;
        *ret_held = u.held > 0 ? (uint64_t) u.held : 0;
        *ret_refused = u.refused;
        return 0;
}

size_t exec_bpf_inherited_users_prune(ExecBpf *b) {
        int fd = bpf_map__fd(b->skel->maps.inherited_users);
        size_t gone = 0;
        uint32_t key, next;
        int r;

        /*
         * XXX: a fork that found the entry just before it goes counts into the entry that went: that
         * user's next entries are counted in a new one, so the share is a little larger for a while.
         */
        r = bpf_map_get_next_key(fd, NULL, &next);
        for (size_t k = 0; r == 0 && k < LATNICE_INHERITED_USERS_MAX; k++) {
                struct latnice_inherited_user u;

                key = next;
                r = bpf_map_get_next_key(fd, &key, &next);
                if (bpf_map_lookup_elem(fd, &key, &u) < 0 || u.held > 0)
                        continue;
                if (bpf_map_delete_elem(fd, &key) == 0)
                        gone++;
        }
        return gone;
}

bool exec_bpf_take_inherited_full(ExecBpf *b) {
        if (!__atomic_load_n(&b->skel->bss->inherited_full_pending, __ATOMIC_ACQUIRE))
                return false;
        __atomic_store_n(&b->skel->bss->inherited_full_pending, false, __ATOMIC_RELEASE);
        return true;
}

int exec_bpf_counters(ExecBpf *b, ExecBpfCounters *ret) {
        int fd = bpf_map__fd(b->skel->maps.counters), ncpu = libbpf_num_possible_cpus();
        uint64_t sums[9] = {};

        if (ncpu <= 0)
                return ncpu < 0 ? ncpu : -EINVAL;
        {
                _cleanup_(freep) uint64_t *v = calloc((size_t) ncpu, sizeof(uint64_t));

                if (!v)
                        return -ENOMEM;
                for (uint32_t k = 0; k < ELEMENTSOF(sums); k++) {
                        if (bpf_map_lookup_elem(fd, &k, v) < 0)
                                return -errno;
                        for (int c = 0; c < ncpu; c++)
                                sums[k] += v[c];
                }
        }
        *ret = (ExecBpfCounters) {
                .execs = sums[0],
                .events = sums[1],
                .dropped = sums[2],
                .renames = sums[3],
                .rename_events = sums[4],
                .renames_dropped = sums[5],
                .forks_inherited = sums[6],
                .forks_unrecorded = sums[7],
                .forks_over_share = sums[8],
        };
        return 0;
}
