// SPDX-License-Identifier: (LGPL-2.1-or-later OR BSD-2-Clause)
/*
 * latniced's scheduler statistics, loaded only while latnicectl stats
 * collects. For every task it measures the wakeup latency (sched_wakeup or
 * sched_wakeup_new -> sched_switch onto a CPU, as runqlat does) and counts
 * involuntary preemptions (switched out while still runnable), aggregated
 * here per class in per-CPU log2 histograms: no ring buffer, no work in user
 * space per event. The daemon names the classes: it puts the class of each
 * process it gave a value on the process (its thread group leader).
 *
 * tp_btf is the preferred hook: task pointers, task-local storage for the
 * class and the wakeup time (no table to fill up at 100,000 tasks). The plain
 * tracepoints are the fallback: they name tasks only by host TID, so the class
 * is kept by thread group (tgid_class, filled by the daemon with its own pid
 * namespace's numbers) and learnt per thread when the thread switches out
 * (current is then the task, and its namespace TGID is known); bounded LRU
 * tables hold the rest.
 */
#include "kernel-types.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "latnice/stats.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set before load. */
const volatile __u32 n_classes = LATNICE_STATS_MAX_CLASSES;
const volatile bool ns_translate = false;
const volatile __u64 pidns_dev = 0;
const volatile __u64 pidns_ino = 0;

/* Wakeups whose time could not be kept (storage or table full): not in any histogram. */
__u64 missed = 0;

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, LATNICE_STATS_MAX_CLASSES);
        __type(key, __u32);
        __type(value, struct latnice_stats_hist);
} hist SEC(".maps");

/* tp_btf: the class on the thread group leader, the wakeup time on each thread. */
struct {
        __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, int);
        __type(value, __u32);
} task_class SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, int);
        __type(value, __u64);
} task_woken SEC(".maps");

/* Plain tracepoints: the class by the daemon's TGID, learnt per host TID; wakeup times per host TID. */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, 16384); /* set by user space */
        __type(key, __u32);
        __type(value, __u32);
} tgid_class SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, 65536);
        __type(key, __u32);
        __type(value, __u32);
} tid_class SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, 65536);
        __type(key, __u32);
        __type(value, __u64);
} tid_woken SEC(".maps");

static __always_inline __u32 log2_slot(__u64 us) {
        __u32 slot = 0;

        /* A bounded loop the verifier accepts everywhere: at most LATNICE_STATS_SLOTS - 1 steps. */
        for (int i = 0; i < LATNICE_STATS_SLOTS - 1; i++) {
                if (us < 2)
                        break;
                us >>= 1;
                slot++;
        }
        return slot;
}

static __always_inline struct latnice_stats_hist *class_hist(__u32 cls) {
        if (cls >= n_classes)
                cls = LATNICE_STATS_CLASS_OTHER;
        return bpf_map_lookup_elem(&hist, &cls);
}

static __always_inline void record_latency(__u32 cls, __u64 delta_ns) {
        struct latnice_stats_hist *h = class_hist(cls);
        __u32 slot;

        if (!h)
                return;
        slot = log2_slot(delta_ns / 1000);
        if (slot < LATNICE_STATS_SLOTS)
                h->slots[slot]++;
        h->wakeups++;
        h->total_ns += delta_ns;
        if (delta_ns > h->max_ns)
                h->max_ns = delta_ns;
}

static __always_inline void record_preemption(__u32 cls) {
        struct latnice_stats_hist *h = class_hist(cls);

        if (h)
                h->preemptions++;
}

/* ---- tp_btf ---------------------------------------------------------------- */

static __always_inline __u32 task_class_of(struct task_struct *p) {
        __u32 *cls = bpf_task_storage_get(&task_class, p->group_leader, 0, 0);

        return cls ? *cls : LATNICE_STATS_CLASS_OTHER;
}

static __always_inline int on_wakeup(struct task_struct *p) {
        __u64 *ts = bpf_task_storage_get(&task_woken, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

        if (ts)
                *ts = bpf_ktime_get_ns();
        else
                __sync_fetch_and_add(&missed, 1);
        return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(wakeup_btf, struct task_struct *p) {
        return on_wakeup(p);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(wakeup_new_btf, struct task_struct *p) {
        return on_wakeup(p);
}

/* Linux 5.14 renamed task_struct's state to __state. */
struct task_struct___o {
        volatile long int state;
} __attribute__((preserve_access_index));

static __always_inline long task_state(struct task_struct *t) {
        struct task_struct___o *o = (void *) t;

        if (bpf_core_field_exists(t->__state))
                return BPF_CORE_READ(t, __state);
        return BPF_CORE_READ(o, state);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next) {
        __u64 *ts;

        /* Preempted (or yielding): still runnable. A task that sleeps drops a stale wakeup time. */
        ts = bpf_task_storage_get(&task_woken, prev, 0, 0);
        if (ts)
                *ts = 0;
        if (preempt || task_state(prev) == 0)
                if (prev->pid != 0)
                        record_preemption(task_class_of(prev));

        ts = bpf_task_storage_get(&task_woken, next, 0, 0);
        if (ts && *ts) {
                __u64 now = bpf_ktime_get_ns();

                if (now > *ts)
                        record_latency(task_class_of(next), now - *ts);
                *ts = 0;
        }
        return 0;
}

/* ---- plain tracepoints ------------------------------------------------------ */

/* The daemon's TGID of current (it may run in a child pid namespace), 0 if none there. */
static __always_inline __u32 current_tgid(void) {
        if (ns_translate) {
                struct bpf_pidns_info ns = {};

                if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)))
                        return 0;
                return ns.tgid;
        }
        return bpf_get_current_pid_tgid() >> 32;
}

/* Stable since 2.6 in the tracepoint's format; our own layout, so the fallback needs no CO-RE. */
struct lnstats_wakeup_ctx {
        __u64 common;
        char comm[16];
        __s32 pid;
        __s32 prio;
};

struct lnstats_switch_ctx {
        __u64 common;
        char prev_comm[16];
        __s32 prev_pid;
        __s32 prev_prio;
        long prev_state;
        char next_comm[16];
        __s32 next_pid;
        __s32 next_prio;
};

static __always_inline int on_wakeup_tid(__u32 tid) {
        __u64 now = bpf_ktime_get_ns();

        if (bpf_map_update_elem(&tid_woken, &tid, &now, BPF_ANY))
                __sync_fetch_and_add(&missed, 1);
        return 0;
}

SEC("tracepoint/sched/sched_wakeup")
int wakeup_tp(struct lnstats_wakeup_ctx *ctx) {
        return on_wakeup_tid(ctx->pid);
}

SEC("tracepoint/sched/sched_wakeup_new")
int wakeup_new_tp(struct lnstats_wakeup_ctx *ctx) {
        return on_wakeup_tid(ctx->pid);
}

/* The low byte is the task state; TASK_REPORT_MAX above it marks a preemption ("R+"). */
#define LNSTATS_TASK_REPORT_MASK 0xff

SEC("tracepoint/sched/sched_switch")
int switch_tp(struct lnstats_switch_ctx *ctx) {
        __u32 prev = ctx->prev_pid, next = ctx->next_pid, tgid, cls = LATNICE_STATS_CLASS_OTHER, *c;
        __u64 *ts;

        /* current is prev: learn its class by thread group, so that next_pid can be classed later. */
        tgid = prev ? current_tgid() : 0;
        c = tgid ? bpf_map_lookup_elem(&tgid_class, &tgid) : 0;
        if (c) {
                cls = *c;
                bpf_map_update_elem(&tid_class, &prev, &cls, BPF_ANY);
        } else if (prev)
                bpf_map_delete_elem(&tid_class, &prev);
        bpf_map_delete_elem(&tid_woken, &prev);
        if (prev && (ctx->prev_state & LNSTATS_TASK_REPORT_MASK) == 0)
                record_preemption(cls);

        ts = bpf_map_lookup_elem(&tid_woken, &next);
        if (ts) {
                __u64 now = bpf_ktime_get_ns(), then = *ts;

                bpf_map_delete_elem(&tid_woken, &next);
                c = bpf_map_lookup_elem(&tid_class, &next);
                if (now > then)
                        record_latency(c ? *c : LATNICE_STATS_CLASS_OTHER, now - then);
        }
        return 0;
}
