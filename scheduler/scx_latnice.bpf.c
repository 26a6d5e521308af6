/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_latnice: latency nice on any kernel with sched_ext (>= 6.12), as a BPF
 * scheduler. It honours only values somebody entitled to them gave:
 *  - mainline: the value latniced granted the task, from the map latniced
 *    keeps equal to its applied table (include/latnice/granted.h); a task
 *    without an entry runs at 0. Not the task's own custom slice: any user
 *    may set one on their own tasks (sched_setattr's sched_runtime), which
 *    the fair class bounds but a -20 here would turn into preempting every
 *    other user's tasks;
 *  - the project's patched kernels: task_struct.latency_prio, where BTF has
 *    it (lowering it needs CAP_SYS_NICE there).
 *
 * Scheduling is weighted virtual time, like EEVDF: every task has a vruntime
 * that advances by the time it ran divided by its weight (nice, nothing
 * else), so CPU shares stay those of nice and latency nice never buys CPU
 * time. The shared queue is ordered by a virtual deadline,
 *     deadline = vruntime + slice(ln) * 100 / weight,
 * so a low value queues ahead and a high value behind. On wakeup a task
 * preempts (SCX_KICK_PREEMPT) the CPU running the task of the highest value
 * above its own; a task never preempts one of its own value or lower, so 19
 * never preempts anybody. The time a task may run before the next one is
 * looked at is its slice(ln) too, capped at run_slice_max_ns: high values
 * run longer at a time. A sleeper's vruntime is clamped to at most
 * run_slice_max_ns behind the clock (bounded credit, as in EEVDF's lag), so
 * nothing that slept long jumps ahead of everybody for long, and nothing
 * starves: a 19 task's deadline is at most 100 ms of virtual time away.
 */
#include <scx/common.bpf.h>

#include "latnice/granted.h"
#include "latnice/slice-map.h"
#include "scx_latnice.h"

char _license[] SEC("license") = "GPL";

#define SHARED_DSQ 0
/* XXX: wakeup preemption looks at the first MAX_CPUS CPUs only (the loader says so where there are more). */
#define MAX_CPUS 512
/* What a CPU runs when it runs none of our tasks: never a preemption victim. */
#define LN_NONE (-128)

/* Set by the loader before load. slice_of[ln + 20] = slice(ln), slice_of[20] the default slice. */
const volatile u64 slice_of[LATNICE_WIDTH];
const volatile u64 run_slice_max_ns = 20ULL * 1000 * 1000;
const volatile u32 nr_cpus = 1;
/* Nanoseconds per clock tick (USER_HZ): the map's start times are /proc's, in ticks. */
const volatile u64 ns_per_tick = 10ULL * 1000 * 1000;

/* The clock: the largest vruntime of a task that started running. */
u64 vtime_now;

/* For the loader's report and the tests. */
u64 nr_wakeup_kicks, nr_idle_kicks, nr_direct, nr_queued, nr_hotplug;

/* Why the kernel disabled us (the loader prints it). */
struct latnice_exit_info exit_info;

struct task_ctx {
        u64 vruntime;
        u64 started;
};

struct {
        __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, int);
        __type(value, struct task_ctx);
} task_ctxs SEC(".maps");

/* The values latniced granted (include/latnice/granted.h): pinned, so latniced can write it and a restart of
 * the scheduler finds what latniced wrote. */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __uint(max_entries, LATNICE_GRANTED_MAX);
        __type(key, struct latnice_granted_key);
        __type(value, struct latnice_granted_value);
        __uint(pinning, LIBBPF_PIN_BY_NAME);
} granted SEC(".maps");

/* The latency nice of the task each CPU runs (LN_NONE: none of ours); read by other CPUs as a hint. */
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, MAX_CPUS);
        __type(key, u32);
        __type(value, s32);
} cpu_ln SEC(".maps");

/* The patched kernels' field (kernel/README.md): latency nice + 20. */
struct task_struct___latnice {
        int latency_prio;
} __attribute__((preserve_access_index));

static __always_inline bool vtime_before(u64 a, u64 b) {
        return (s64) (a - b) < 0;
}

/* /proc/PID/stat's start time (field 22): nsec_to_clock_t(start_boottime), a truncating division. */
static u64 ticks_of(u64 boottime_ns) {
        return ns_per_tick ? boottime_ns / ns_per_tick : 0;
}

/* The value latniced granted the thread (a Thread= rule's entry, or its process's for the main thread), else
 * its process's; 0 without an entry. */
static s32 granted_ln(struct task_struct *p) {
        struct latnice_granted_key k = {
                .pid = BPF_CORE_READ(p, pid),
                .start_time = ticks_of(BPF_CORE_READ(p, start_boottime)),
        };
        struct latnice_granted_value *v = bpf_map_lookup_elem(&granted, &k);

        if (!v) {
                k.pid = BPF_CORE_READ(p, tgid);
                k.start_time = ticks_of(BPF_CORE_READ(p, group_leader, start_boottime));
                v = bpf_map_lookup_elem(&granted, &k);
                if (v && (v->flags & LATNICE_GRANTED_F_THREAD))
                        v = NULL; /* another thread's (cannot be: the main thread's key is its process's) */
        }
        if (!v || v->latency_nice < LATNICE_MIN || v->latency_nice > LATNICE_MAX)
                return 0;
        return v->latency_nice;
}

static s32 task_ln(struct task_struct *p) {
        struct task_struct___latnice *t = (void *) p;

        if (bpf_core_field_exists(t->latency_prio)) {
                int prio = BPF_CORE_READ(t, latency_prio);

                if (prio >= 0 && prio < LATNICE_WIDTH)
                        return LATNICE_FROM_PRIO(prio);
                return 0;
        }
        return granted_ln(p);
}

static u64 request_of(s32 ln) {
        u32 i = LATNICE_TO_PRIO(ln);

        return i < LATNICE_WIDTH ? slice_of[i] : slice_of[20];
}

static u64 run_slice_of(s32 ln) {
        u64 s = request_of(ln);

        return s > run_slice_max_ns ? run_slice_max_ns : s;
}

static u64 weight_of(struct task_struct *p) {
        return p->scx.weight ? p->scx.weight : 1;
}

static void set_cpu_ln(s32 cpu, s32 ln) {
        u32 key = cpu;
        s32 *v = bpf_map_lookup_elem(&cpu_ln, &key);

        if (v)
                *v = ln;
}

static s32 get_cpu_ln(u32 cpu) {
        s32 *v = bpf_map_lookup_elem(&cpu_ln, &cpu);

        return v ? *v : LN_NONE;
}

/* On wakeup: preempt the allowed CPU running the highest value above ln (its previous CPU on a tie). */
static void preempt_for(struct task_struct *p, s32 ln) {
        s32 prev = scx_bpf_task_cpu(p), best = -1, best_ln = ln;

        if (ln >= LATNICE_MAX)
                return;
        if (prev >= 0 && prev < MAX_CPUS && bpf_cpumask_test_cpu(prev, p->cpus_ptr) && get_cpu_ln(prev) > best_ln) {
                best = prev;
                best_ln = get_cpu_ln(prev);
        }
        for (u32 cpu = 0; cpu < MAX_CPUS; cpu++) {
                s32 v;

                if (cpu >= nr_cpus)
                        break;
                if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
                        continue;
                v = get_cpu_ln(cpu);
                if (v > best_ln) {
                        best = cpu;
                        best_ln = v;
                }
        }
        if (best >= 0) {
                __sync_fetch_and_add(&nr_wakeup_kicks, 1);
                scx_bpf_kick_cpu(best, SCX_KICK_PREEMPT);
        }
}

s32 BPF_STRUCT_OPS(latnice_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags) {
        bool idle = false;
        s32 cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &idle);

        if (idle) {
                __sync_fetch_and_add(&nr_direct, 1);
                scx_bpf_dispatch(p, SCX_DSQ_LOCAL, run_slice_of(task_ln(p)), 0);
        }
        return cpu;
}

void BPF_STRUCT_OPS(latnice_enqueue, struct task_struct *p, u64 enq_flags) {
        struct task_ctx *tctx = bpf_task_storage_get(&task_ctxs, p, 0, 0);
        s32 ln = task_ln(p), cpu;
        u64 deadline;

        deadline = (tctx ? tctx->vruntime : vtime_now) + request_of(ln) * 100 / weight_of(p);
        __sync_fetch_and_add(&nr_queued, 1);
        scx_bpf_dispatch_vtime(p, SHARED_DSQ, run_slice_of(ln), deadline, enq_flags);

        /* An idle CPU that may run it (select_cpu is skipped for pinned tasks, and a CPU may have gone
         * idle since): wake it. Otherwise, on wakeup, make room. */
        cpu = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
        if (cpu >= 0) {
                __sync_fetch_and_add(&nr_idle_kicks, 1);
                scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
        } else if (enq_flags & SCX_ENQ_WAKEUP)
                preempt_for(p, ln);
}

void BPF_STRUCT_OPS(latnice_dispatch, s32 cpu, struct task_struct *prev) {
        scx_bpf_consume(SHARED_DSQ);
}

void BPF_STRUCT_OPS(latnice_runnable, struct task_struct *p, u64 enq_flags) {
        struct task_ctx *tctx;
        u64 floor = vtime_now - run_slice_max_ns;

        if (!(enq_flags & SCX_ENQ_WAKEUP))
                return;
        tctx = bpf_task_storage_get(&task_ctxs, p, 0, 0);
        /* Bounded credit for a sleeper: at most run_slice_max_ns behind the clock. */
        if (tctx && vtime_before(tctx->vruntime, floor))
                tctx->vruntime = floor;
}

void BPF_STRUCT_OPS(latnice_running, struct task_struct *p) {
        struct task_ctx *tctx = bpf_task_storage_get(&task_ctxs, p, 0, 0);

        set_cpu_ln(scx_bpf_task_cpu(p), task_ln(p));
        if (!tctx)
                return;
        tctx->started = bpf_ktime_get_ns();
        if (vtime_before(vtime_now, tctx->vruntime))
                vtime_now = tctx->vruntime;
}

void BPF_STRUCT_OPS(latnice_stopping, struct task_struct *p, bool runnable) {
        struct task_ctx *tctx = bpf_task_storage_get(&task_ctxs, p, 0, 0);
        u64 now = bpf_ktime_get_ns();

        set_cpu_ln(scx_bpf_task_cpu(p), LN_NONE);
        if (!tctx || !tctx->started)
                return;
        /* The time it ran, in virtual time: weight 100 is nice 0. */
        if (now > tctx->started)
                tctx->vruntime += (now - tctx->started) * 100 / weight_of(p);
        tctx->started = 0;
}

void BPF_STRUCT_OPS(latnice_enable, struct task_struct *p) {
        struct task_ctx *tctx = bpf_task_storage_get(&task_ctxs, p, 0, 0);

        if (tctx)
                tctx->vruntime = vtime_now;
}

s32 BPF_STRUCT_OPS(latnice_init_task, struct task_struct *p, struct scx_init_task_args *args) {
        if (!bpf_task_storage_get(&task_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE))
                return -ENOMEM;
        return 0;
}

/* With these two, a CPU going on- or offline is an event, not a reason for the kernel to disable us. */
void BPF_STRUCT_OPS(latnice_cpu_online, s32 cpu) {
        __sync_fetch_and_add(&nr_hotplug, 1);
        set_cpu_ln(cpu, LN_NONE);
}

void BPF_STRUCT_OPS(latnice_cpu_offline, s32 cpu) {
        __sync_fetch_and_add(&nr_hotplug, 1);
        set_cpu_ln(cpu, LN_NONE);
}

/* Sleepable (scx_bpf_create_dsq allocates): the loader sets BPF_F_SLEEPABLE, as libbpf before 1.2 has no
 * "struct_ops.s" section. */
s32 BPF_STRUCT_OPS(latnice_init) {
        for (u32 cpu = 0; cpu < MAX_CPUS; cpu++)
                set_cpu_ln(cpu, LN_NONE);
        return scx_bpf_create_dsq(SHARED_DSQ, -1);
}

void BPF_STRUCT_OPS(latnice_exit, struct scx_exit_info *ei) {
        bpf_probe_read_kernel_str(exit_info.reason, sizeof(exit_info.reason), ei->reason);
        bpf_probe_read_kernel_str(exit_info.msg, sizeof(exit_info.msg), ei->msg);
        exit_info.exit_code = ei->exit_code;
        /* Written last, with a barrier: the loader reads the strings once it sees a kind. */
        __sync_val_compare_and_swap(&exit_info.kind, exit_info.kind, ei->kind);
}

SEC(".struct_ops")
struct sched_ext_ops latnice_ops = {
        .select_cpu = (void *) latnice_select_cpu,
        .enqueue = (void *) latnice_enqueue,
        .dispatch = (void *) latnice_dispatch,
        .runnable = (void *) latnice_runnable,
        .running = (void *) latnice_running,
        .stopping = (void *) latnice_stopping,
        .enable = (void *) latnice_enable,
        .init_task = (void *) latnice_init_task,
        .cpu_online = (void *) latnice_cpu_online,
        .cpu_offline = (void *) latnice_cpu_offline,
        .init = (void *) latnice_init,
        .exit = (void *) latnice_exit,
        .name = "latnice",
};
