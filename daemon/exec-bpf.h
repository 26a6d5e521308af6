/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The BPF exec watcher as an owned object: skeleton lifecycle, the ring
 * buffer, the prefilter maps and the tracked-process map. No logging:
 * failures come back as errno plus a sentence in *ret_reason.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "exec-event.h"
#include "filter.h"
#include "latnice/event.h"

typedef struct ExecBpf ExecBpf;

/* ~160 exec records without argv; a loss costs a /proc rescan, not a missed process. */
#define EXEC_BPF_RINGBUF_DEFAULT (64 * 1024)
/* Processes taken out of the set of coalesced renames per sweep. */
#define EXEC_BPF_SWEEP_MAX 256

typedef int (*exec_bpf_handler_t)(void *userdata, const void *data, size_t size);

typedef struct ExecBpfOptions {
        bool ns_translate;   /* latniced runs in a child pid namespace */
        uint64_t pidns_dev;
        uint64_t pidns_ino;
        size_t ringbuf_size; /* bytes, power of two >= page size; 0 = default */
        bool force_tracepoint; /* skip tp_btf (testing the fallback) */
        /*
         * The record of inherited values and its per-user shares of an earlier latniced (kept for us by
         * systemd's file descriptor store across a crash or Restart=), to go on with; -1: new ones.
         * Taken only if they are maps of the expected kind; *ret_reused says whether they were.
         */
        int inherited_fd;
        int inherited_users_fd;
} ExecBpfOptions;

int exec_bpf_new(const ExecBpfOptions *o, exec_bpf_handler_t handler, void *userdata, ExecBpf **ret,
                 char **ret_reason);
/* Whether exec_bpf_new() went on with the maps of ExecBpfOptions. */
bool exec_bpf_inherited_reused(const ExecBpf *b);
/* The maps to keep for a next latniced (not ours to close): the record, and the per-user shares. */
int exec_bpf_inherited_fd(ExecBpf *b);
int exec_bpf_inherited_users_fd(ExecBpf *b);
ExecBpf *exec_bpf_free(ExecBpf *b);
static inline void exec_bpf_freep(ExecBpf **b) {
        exec_bpf_free(*b);
}

/* "tp_btf" or "tracepoint": which exec hook is attached. */
const char *exec_bpf_hook(const ExecBpf *b);
int exec_bpf_epoll_fd(ExecBpf *b);
/* Handles up to budget records: 0 when the ring buffer is empty, 1 when the
 * budget ran out first (more may be queued), or a negative errno. */
int exec_bpf_consume(ExecBpf *b, unsigned budget);

/* True once after the kernel side could not queue an event (ring buffer full): rescan. */
bool exec_bpf_take_lost(ExecBpf *b);

/*
 * The sweep of coalesced renames (exec.bpf.c's renames_pending): takes up to
 * max processes out of the kernel's set, so that their next rename sends a
 * record again, and returns in out those renamed again after their record
 * (or whose record did not fit): the caller decides them from /proc, once
 * the ring buffer is empty (a record still queued is older than /proc).
 * *ret_more: entries are left (or arrived meanwhile); sweep again later.
 */
size_t exec_bpf_sweep_renames(ExecBpf *b, RenameSwept *out, size_t max, bool *ret_more);
/* True once after a rename record did not fit: only a sweep decides that process. */
bool exec_bpf_take_renames_lost(ExecBpf *b);

/*
 * Loads the prefilter: maps created for this rule set, sized to it, filled,
 * then swapped in (an unchanged map is kept). uids/gids: resolved ids (the
 * caller resolves names). On failure everything passes.
 */
int exec_bpf_set_filter(ExecBpf *b, const FilterSpec *f, const uint32_t *uids, size_t n_uids,
                        const uint32_t *gids, size_t n_gids, const uint64_t *cgroup_ids, size_t n_cgroup_ids);

/* Kernel memory of the prefilter's maps, and of all of the watcher's maps, in bytes. */
uint64_t exec_bpf_filter_memory(ExecBpf *b);
uint64_t exec_bpf_memory(ExecBpf *b);

/* Report this process's exit (on) or stop (off). */
int exec_bpf_track(ExecBpf *b, pid_t pid, bool on);

/* A process that carries a value through fork from one we set (exec.bpf.c's inherited map). */
typedef struct ExecBpfInherited {
        pid_t pid;
        pid_t origin;                   /* the process we set */
        uint64_t origin_start_boottime; /* ns since boot */
        uint64_t start_boottime;
} ExecBpfInherited;

/* Every entry (at most LATNICE_INHERITED_MAX) into *ret, which the caller frees: how many, or < 0. */
int exec_bpf_inherited_list(ExecBpf *b, ExecBpfInherited **ret);
/* pid's entry: 0, or -ENOENT. */
int exec_bpf_inherited_get(ExecBpf *b, pid_t pid, ExecBpfInherited *ret);
/* Drops pid's entry, giving its user's share back (exec.bpf.c's inherited_forget): 0, or < 0. */
int exec_bpf_inherited_forget(ExecBpf *b, pid_t pid);
/* True once after a fork did not fit into the map (full): drop what is stale. */
bool exec_bpf_take_inherited_full(ExecBpf *b);
/* True once after a user's fork was refused for their share (LATNICE_INHERITED_PER_USER): whose, last. */
bool exec_bpf_take_inherited_share(ExecBpf *b, uid_t *ret_uid);
/* A user's share: entries held, forks refused; -ENOENT if it never had an entry. */
int exec_bpf_inherited_user(ExecBpf *b, uid_t uid, uint64_t *ret_held, uint64_t *ret_refused);
/* Drops the shares of users who hold no entry any more: how many went. */
size_t exec_bpf_inherited_users_prune(ExecBpf *b);

typedef struct ExecBpfCounters {
        uint64_t execs;   /* every exec seen by the kernel side */
        uint64_t events;  /* exec events sent to us */
        uint64_t dropped; /* lost: ring buffer full */
        uint64_t renames; /* renames of a process after exec seen by the kernel side */
        uint64_t rename_events; /* of these, sent to us (the prefilter let them through) */
        uint64_t renames_dropped; /* records that did not fit: the process was decided from /proc instead */
        uint64_t forks_inherited; /* new processes that inherited a value of ours (in the inherited map) */
        uint64_t forks_unrecorded; /* of these, not recorded: the map was full */
        uint64_t forks_over_share; /* of these, not recorded: their user held LATNICE_INHERITED_PER_USER */
} ExecBpfCounters;

int exec_bpf_counters(ExecBpf *b, ExecBpfCounters *ret);
