/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Skeleton lifecycle and map access for daemon/bpf/stats.bpf.c. */

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf-reason.h"
#include "stats-bpf.h"
#include "stats.skel.h"
#include "util.h"

struct StatsBpf {
        struct stats_bpf *skel;
        const char *hook;
        int n_cpus;
        uint32_t n_classes;
};

StatsBpf *stats_bpf_free(StatsBpf *b) {
        if (!b)
                return NULL;
        stats_bpf__destroy(b->skel); /* detaches every program */
        free(b);
        return NULL;
}

static int try_load(StatsBpf *b, const StatsBpfOptions *o, bool btf) {
        uint32_t max_processes = o->max_processes < 64 ? 64 : o->max_processes > (1U << 20) ? 1U << 20
                                                                              : (uint32_t) o->max_processes;
        struct stats_bpf *s;
        int r;

        s = b->skel = stats_bpf__open();
        if (!s)
                return -errno;
        s->rodata->n_classes = b->n_classes;
        s->rodata->ns_translate = o->ns_translate;
        s->rodata->pidns_dev = o->pidns_dev;
        s->rodata->pidns_ino = o->pidns_ino;
        r = bpf_map__set_max_entries(s->maps.hist, b->n_classes);
        if (r >= 0)
                r = bpf_map__set_max_entries(s->maps.tgid_class, max_processes);
        if (r < 0)
                return r;
        bpf_program__set_autoload(s->progs.wakeup_btf, btf);
        bpf_program__set_autoload(s->progs.wakeup_new_btf, btf);
        bpf_program__set_autoload(s->progs.switch_btf, btf);
        bpf_program__set_autoload(s->progs.wakeup_tp, !btf);
        bpf_program__set_autoload(s->progs.wakeup_new_tp, !btf);
        bpf_program__set_autoload(s->progs.switch_tp, !btf);
        /* Each variant creates only its own tables: a kernel without task storage still gets the fallback. */
        (void) bpf_map__set_autocreate(s->maps.task_class, btf);
        (void) bpf_map__set_autocreate(s->maps.task_woken, btf);
        (void) bpf_map__set_autocreate(s->maps.tgid_class, !btf);
        (void) bpf_map__set_autocreate(s->maps.tid_class, !btf);
        (void) bpf_map__set_autocreate(s->maps.tid_woken, !btf);
        r = stats_bpf__load(s);
        if (r < 0)
                return r;
        r = stats_bpf__attach(s);
        if (r < 0)
                return r;
        b->hook = btf ? "tp_btf" : "tracepoint";
        return 0;
}

int stats_bpf_new(const StatsBpfOptions *o, StatsBpf **ret, char **ret_reason) {
        _cleanup_(stats_bpf_freep) StatsBpf *b = NULL;
        int r, r_btf = 0, n_cpus;

        *ret_reason = NULL;
        if (o->n_classes < 2 || o->n_classes > LATNICE_STATS_MAX_CLASSES)
                return -EINVAL;
        n_cpus = libbpf_num_possible_cpus();
        if (n_cpus <= 0)
                return n_cpus < 0 ? n_cpus : -EIO;
        b = calloc(1, sizeof(StatsBpf));
        if (!b)
                return -ENOMEM;
        b->n_classes = o->n_classes;
        b->n_cpus = n_cpus;

        if (!o->force_tracepoint) {
                r_btf = try_load(b, o, true);
                if (r_btf >= 0) {
                        *ret = TAKE_PTR(b);
                        return 0;
                }
                stats_bpf__destroy(b->skel);
                b->skel = NULL;
        }
        r = try_load(b, o, false);
        if (r < 0) {
                bpf_load_reason("its BPF programs do not attach", r_btf, r, ret_reason);
                return r;
        }
        *ret = TAKE_PTR(b);
        return 0;
}

const char *stats_bpf_hook(const StatsBpf *b) {
        return b->hook;
}

int stats_bpf_set_class(StatsBpf *b, pid_t pid, int pidfd, uint32_t cls) {
        bool btf = b->hook[0] == 't' && b->hook[1] == 'p' && b->hook[2] == '_';
        uint32_t old, tgid = (uint32_t) pid;
        const void *key;
        int fd, r;

        if (cls >= b->n_classes)
                return -EINVAL;
        /* Task storage (tp_btf) is keyed by a pidfd: the very process, whatever happens to its pid; else the tgid. */
        fd = bpf_map__fd(btf ? b->skel->maps.task_class : b->skel->maps.tgid_class);
        key = btf ? (const void *) &pidfd : (const void *) &tgid;
        if (cls == LATNICE_STATS_CLASS_OTHER)
                r = bpf_map_delete_elem(fd, key);
        else if (bpf_map_lookup_elem(fd, key, &old) == 0 && old == cls)
                return 0;
        else
                r = bpf_map_update_elem(fd, key, &cls, BPF_ANY);
        if (r < 0 && errno == ENOENT && cls == LATNICE_STATS_CLASS_OTHER)
                return 0; /* was not in a class */
        return r < 0 ? -errno : 1;
}

int stats_bpf_read(StatsBpf *b, uint32_t cls, struct latnice_stats_hist *ret) {
        _cleanup_(freep) struct latnice_stats_hist *v = NULL;

        if (cls >= b->n_classes)
                return -EINVAL;
        v = calloc((size_t) b->n_cpus, sizeof(*v));
        if (!v)
                return -ENOMEM;
        if (bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.hist), &cls, v) < 0)
                return -errno;
        *ret = (struct latnice_stats_hist) {};
        for (int c = 0; c < b->n_cpus; c++) {
                for (int i = 0; i < LATNICE_STATS_SLOTS; i++)
                        ret->slots[i] += v[c].slots[i];
                ret->wakeups += v[c].wakeups;
                ret->total_ns += v[c].total_ns;
                ret->preemptions += v[c].preemptions;
                if (v[c].max_ns > ret->max_ns)
                        ret->max_ns = v[c].max_ns;
        }
        return 0;
}

uint64_t stats_bpf_missed(StatsBpf *b) {
        return __atomic_load_n(&b->skel->bss->missed, __ATOMIC_RELAXED);
}
