/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * latniced's state, shared by the manager's files: manager.c (what the
 * parts share: sd_notify, the Backend strings, its own realtime policy),
 * manager-decide.c (deciding and applying), manager-sources.c (exec events
 * and /proc walks), manager-rules.c (rules, profile, prefilter, watches),
 * manager-threads.c (Thread= rules, per thread), manager-scx.c, manager-stats.c and bus-link.c (the system bus
 * connection); manager-lifecycle.c above them all sets them up, runs the
 * loop and tears them down. The layers above (manager-bus.c,
 * manager-units.c) use these headers; the manager reaches them only
 * through ManagerHooks.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "applied.h"
#include "exec-bpf.h"
#include "filter.h"
#include "kernel-preempt.h"
#include "match.h"
#include "rules.h"
#include "sched.h"

typedef enum SourceKind {
        SOURCE_BPF,
        SOURCE_NETLINK,
        SOURCE_SCAN,
        _SOURCE_MAX,
        SOURCE_AUTO = -1,
        _SOURCE_INVALID = -EINVAL,
} SourceKind;

const char *source_kind_to_string(SourceKind k);
SourceKind source_kind_from_string(const char *s);

typedef struct ManagerOptions {
        char *root;          /* rule tree prefix, NULL for / */
        char *profile;       /* --profile: overrides latniced.conf */
        char *profile_dir;   /* searched first */
        char *state_dir;     /* what we set, across restarts (default /run/latnice) */
        bool no_profile;
        bool dry_run;
        bool keep_on_exit;
        SourceKind source;
        size_t ringbuf_size;
        uint64_t scan_interval_usec;
        bool force_tracepoint;
        bool no_bus;
        bool no_realtime;
        bool stats_fail;     /* --test-stats-fail: the stats program never attaches */
        char *scx_latnice;   /* --scx-latnice: the loader Scheduler=latnice runs (default LATNICE_SCX_LATNICE) */
} ManagerOptions;

typedef struct ScanEntry {
        pid_t pid;
        uint64_t start_time;
        char comm[16];       /* a process that renamed itself since the last walk is decided again */
} ScanEntry;

typedef struct NameCacheEntry {
        bool used;
        uint32_t id;
        char *name;          /* NULL: no such user/group (until miss_until) */
        uint64_t miss_until;
} NameCacheEntry;

#define NAME_CACHE_SIZE 256

struct ManagerBus;
struct ManagerUnits;
struct ManagerForeground;
struct ManagerStats;
struct ManagerScx;
struct StatsResult;
typedef struct Manager Manager;

/*
 * What the layers above the manager do for it: the D-Bus API
 * (manager-bus.c), [Unit] rules (manager-units.c) and the foreground boost
 * (manager-foreground.c). latniced.c fills
 * this in, so the manager never includes those layers; any hook may be
 * NULL (no bus API, no unit rules).
 */
typedef struct ManagerHooks {
        /* The system bus came (publish the API, follow systemd) or went. */
        int (*bus_api_connected)(Manager *m);
        void (*bus_api_disconnected)(Manager *m);
        int (*units_connected)(Manager *m);
        void (*units_disconnected)(Manager *m);
        /* A value was applied (the Applied signal); the rules were reloaded. */
        void (*applied)(Manager *m, pid_t pid, const char *comm, int value, const char *rule);
        void (*reloaded)(Manager *m);
        /* [Unit] rules: see manager-units.h. */
        int (*units_decide)(Manager *m, const TaskInfo *t, const Rule *rule, uint64_t start_time,
                            bool fresh_exec);
        int (*units_filter_ids)(Manager *m, uint64_t **ret_ids, size_t *ret_n);
        void (*units_rules_changed)(Manager *m);
        void (*units_free)(Manager *m);
        /* The foreground boost: see manager-foreground.h. latniced.conf was read (start-up too); a
         * state record of an earlier run was a boost; latniced stops. */
        void (*foreground_reload)(Manager *m);
        void (*foreground_drop_adopted)(Manager *m, const AppliedProcess *e);
        void (*foreground_free)(Manager *m);
        /* A statistics collection ended: its result, or NULL and why not (manager-stats.h). */
        void (*stats_done)(Manager *m, const struct StatsResult *result, int error);
        /* The Backend property changed (a BPF scheduler came or went: manager-scx.h). */
        void (*backend_changed)(Manager *m);
} ManagerHooks;

struct Manager {
        sd_event *event;
        sd_bus *bus;               /* the system bus, NULL while disconnected */
        sd_event_source *bus_io_source, *bus_time_source;
        sd_event_source *bus_retry_timer;
        uint64_t bus_retry_usec;
        struct ManagerBus *bus_state;     /* manager-bus.c */
        struct ManagerUnits *units_state; /* manager-units.c */
        struct ManagerForeground *foreground_state; /* manager-foreground.c */
        struct ManagerStats *stats_state; /* manager-stats.c */
        struct ManagerScx *scx_state;     /* manager-scx.c, NULL on a kernel without sched_ext */
        /* What Backend and BackendReason read; NULL: the probe's (manager-scx.c points them at its own). */
        const char *backend, *backend_reason;
        struct ManagerScheduler *scheduler_state; /* manager-scheduler.c, NULL unless Scheduler=latnice */
        struct ManagerGranted *granted_state;     /* manager-granted.c, NULL while no map is held */
        ManagerOptions options;
        ManagerHooks hooks;

        char *profile;       /* active profile name, NULL for none */
        char *profile_path;
        RuleSet *rules;
        MatchIndex *index;   /* over rules: what decides an exec */
        FilterSpec filter;   /* its name lists are dropped once in the kernel */
        char *prefilter;     /* "on: ..." or "off: why", for the bus */
        uint64_t prefilter_memory; /* bytes of kernel memory its maps take */
        bool needs_cgroup;   /* some rule matches on cgroup or unit */
        bool needs_names;    /* some rule matches User=/Group= by name */
        bool needs_exe;      /* some rule matches Exe=: resolve the executable's path */
        bool needs_parent;
        bool needs_ancestors; /* some rule has Ancestor=: read the chain of parents */
        const Rule **thread_rules; /* the process rules with Thread=, in order (into rules) */
        size_t n_thread_rules;
        size_t n_thread_entries;   /* entries of the applied table about one thread (AppliedProcess.tgid) */
        struct ManagerThreads *threads_state; /* walks over the threads of processes (manager-threads.c) */

        SchedProbe probe;
        KernelPreempt preempt; /* the kernel's preemption model and HZ, read at start */
        AppliedTable *applied;
        struct StateFile *state; /* the applied table on disk (state.c), NULL with --dry-run */
        int proc_fd;
        int cgroup2_fd;      /* for cgroup id -> path */
        char *cgroup2_path;
        uint64_t ns_per_tick;

        SourceKind source;
        char *source_reason;
        ExecBpf *bpf;
        sd_event_source *bpf_event_source;
        uint64_t inherited_full_usec; /* when the inherited map was last found full (manager-inherited.c) */
        uint64_t inherited_share_usec; /* when a user's share of it last refused a fork */
        /* Boosts of an earlier latniced, ended at start: what their forks inherited goes too, once the
         * source (the kept record) is up. */
        struct Inherited *dropped_origins;
        size_t n_dropped_origins;
        struct InheritedTable *inherited_nl; /* the same record, kept from the proc connector's forks */
        uint64_t inherited_unrecorded;       /* forks it could not take */
        struct TaskExe *task_exe; /* what other users' processes execute (manager-lifecycle.c), loaded on first need */
        int task_exe_error;       /* it did not load: not tried again */
        sd_event_source *rename_sweep; /* decides coalesced renames, a few times a second (manager-sources.c) */
        struct RenameGate *rename_gate; /* the proc connector's renames, coalesced in user space */
        int netlink_fd;
        sd_event_source *netlink_event_source;
        sd_event_source *scan_timer;
        ScanEntry *scan_prev;
        size_t n_scan_prev;
        sd_event_source *scan_defer;   /* runs the walk below, a chunk per dispatch */
        struct ScanJob *scan_job;      /* the walk under way, NULL if none */
        bool scan_pending;             /* a walk was asked for since the current one began */
        bool scan_want_all;
        sd_event_source *prune_defer;

        struct DirWatch *dir_watch; /* the files we read (dir-watch.c) */
        sd_event_source *inotify_event_source;
        sd_event_source *name_retry_timer; /* a User=/Group= name did not resolve: ask again */
        sd_event_source *reload_timer;
        sd_event_source *trim_timer; /* start-up's freed heap back to the kernel (manager.c) */

        NameCacheEntry user_cache[NAME_CACHE_SIZE], group_cache[NAME_CACHE_SIZE];

        /* counters, exported on D-Bus */
        uint64_t events_seen;
        uint64_t events_lost;
        uint64_t tasks_applied;
        uint64_t apply_errors;
        uint64_t rescans;
        uint64_t unit_walks;        /* cgroup subtrees of units walked (unit rules without the knob) */
        uint64_t cmdline_truncated; /* execs whose Cmdline= words were cut (record full, process gone) */
        uint64_t reloads;
        size_t prune_at;     /* table size at which dead entries are dropped next */
        bool ready;
        bool realtime;       /* exec sources are handled at SCHED_FIFO (it was granted) */
        bool rt_on;          /* at SCHED_FIFO right now */
        bool exec_behind;    /* the exec source used up its budget: it catches up as a normal task */
        int self_nice;

        /* exec -> value set, in ns, for the last LATENCY_RING matched execs (BPF source) */
        uint32_t *latency_ring;
        size_t latency_n;
};

#define LATENCY_RING 4096
/* Exec records handled per dispatch; then the bus, signals and timers get a turn. */
#define EXEC_BUDGET 64
/* Processes decided per dispatch of a /proc walk. */
#define SCAN_CHUNK 256

/* The Backend and BackendReason properties: the probe's unless a BPF scheduler is in charge. */
const char *manager_backend(const Manager *m);
const char *manager_backend_reason(const Manager *m);

/* READY=1 once: the event source is live, the startup scan done and the bus name owned (or no bus). */
void manager_notify_ready(Manager *m);
/* After start-up or a reload: drop the pages only they needed from the resident set, a few seconds later. */
void manager_trim_soon(Manager *m);
/* STATUS= for systemctl status, once ready. */
void manager_notify_status(Manager *m);

/* At start: latniced's own slice, and whether SCHED_FIFO is granted (said in the log). */
void manager_setup_realtime(Manager *m);

/* Every event source except the exec sources calls this first: latniced runs
 * at SCHED_FIFO only while it sleeps and handles exec events. */
void manager_leave_realtime(Manager *m);
/* The exec sources' prepare callback: back to SCHED_FIFO before the loop sleeps. */
int manager_on_exec_source_prepare(sd_event_source *s, void *userdata);
