/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The user-space ABI of the latency-nice scheduler series (kernel/), and the
 * parts of the mainline sched_setattr() ABI that latnice uses. glibc in
 * Debian 12 has no sched_setattr() wrapper and no struct sched_attr, so both
 * are defined here, guarded against the kernel headers' own definitions.
 */
#pragma once

#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

/* LATNICE_MIN..MAX, LATNICE_TO_PRIO(), the slice limits and the weight table. */
#include "slice-map.h"

#define LATNICE_SCHED_FLAG_RESET_ON_FORK 0x01
#define LATNICE_SCHED_FLAG_RECLAIM 0x02
#define LATNICE_SCHED_FLAG_DL_OVERRUN 0x04
#define LATNICE_SCHED_FLAG_KEEP_POLICY 0x08
#define LATNICE_SCHED_FLAG_KEEP_PARAMS 0x10
#define LATNICE_SCHED_FLAG_UTIL_CLAMP_MIN 0x20
#define LATNICE_SCHED_FLAG_UTIL_CLAMP_MAX 0x40
/* The latency-nice series' flag. Another out-of-tree series (sched-qos)
 * reuses this bit and offset 56 with another meaning: never probe with it. */
#define LATNICE_SCHED_FLAG_LATENCY_NICE 0x80

#define LATNICE_SCHED_ATTR_SIZE_VER0 48
#define LATNICE_SCHED_ATTR_SIZE_VER1 56
#define LATNICE_SCHED_ATTR_SIZE_VER2 60

#define LATNICE_SCHED_OTHER 0
#define LATNICE_SCHED_FIFO 1
#define LATNICE_SCHED_RR 2
#define LATNICE_SCHED_BATCH 3
#define LATNICE_SCHED_IDLE 5
#define LATNICE_SCHED_DEADLINE 6
#define LATNICE_SCHED_EXT 7
#define LATNICE_SCHED_RESET_ON_FORK 0x40000000

struct latnice_sched_attr {
        uint32_t size;
        uint32_t sched_policy;
        uint64_t sched_flags;
        int32_t sched_nice;
        uint32_t sched_priority;
        uint64_t sched_runtime;
        uint64_t sched_deadline;
        uint64_t sched_period;
        uint32_t sched_util_min;
        uint32_t sched_util_max;
        int32_t sched_latency_nice;
};

_Static_assert(__builtin_offsetof(struct latnice_sched_attr, sched_util_min) == 48, "VER1 layout");
_Static_assert(__builtin_offsetof(struct latnice_sched_attr, sched_latency_nice) == 56, "VER2 layout");
/* The struct is padded to 64 by alignment; the ABI size is 60. */
_Static_assert(sizeof(struct latnice_sched_attr) == 64, "padding");

static inline int latnice_sched_setattr(pid_t tid, struct latnice_sched_attr *attr, unsigned flags) {
        return (int) syscall(SYS_sched_setattr, tid, attr, flags);
}

static inline int latnice_sched_getattr(pid_t tid, struct latnice_sched_attr *attr, unsigned size, unsigned flags) {
        return (int) syscall(SYS_sched_getattr, tid, attr, size, flags);
}
