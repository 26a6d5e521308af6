/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared bits of the in-VM test programs: the latency-nice sched_attr
 * layout (declared here because the build host's headers predate it) and
 * the result lines vmtest.py parses from the serial console.
 */
#ifndef LNTEST_H
#define LNTEST_H

#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/syscall.h>

#define SCHED_FLAG_RESET_ON_FORK	0x01
#define SCHED_FLAG_KEEP_POLICY		0x08
#define SCHED_FLAG_KEEP_PARAMS		0x10
#define SCHED_FLAG_KEEP_ALL		(SCHED_FLAG_KEEP_POLICY | SCHED_FLAG_KEEP_PARAMS)
#define SCHED_FLAG_LATENCY_NICE		0x80

#define SCHED_ATTR_SIZE_VER0	48
#define SCHED_ATTR_SIZE_VER1	56
#define SCHED_ATTR_SIZE_VER2	60

struct ln_sched_attr {
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
	int32_t sched_latency_nice;	/* offset 56 */
	uint32_t pad;			/* sizeof() is 64, the uAPI size 60 */
};

_Static_assert(__builtin_offsetof(struct ln_sched_attr, sched_latency_nice) == 56,
	       "sched_latency_nice must be at offset 56");

static inline int ln_setattr(pid_t pid, struct ln_sched_attr *a, unsigned int flags)
{
	return syscall(SYS_sched_setattr, pid, a, flags);
}

static inline int ln_getattr(pid_t pid, struct ln_sched_attr *a, unsigned int size)
{
	return syscall(SYS_sched_getattr, pid, a, size, 0);
}

/* Set only the latency nice (keep policy and parameters). */
static inline int ln_set(pid_t pid, int ln)
{
	struct ln_sched_attr a = {
		.size = SCHED_ATTR_SIZE_VER2,
		.sched_flags = SCHED_FLAG_KEEP_ALL | SCHED_FLAG_LATENCY_NICE,
		.sched_latency_nice = ln,
	};
	return ln_setattr(pid, &a, 0);
}

/* Latency nice of pid, or -1000 on error. */
static inline int ln_get(pid_t pid)
{
	struct ln_sched_attr a = { 0 };

	if (ln_getattr(pid, &a, SCHED_ATTR_SIZE_VER2) < 0)
		return -1000;
	return a.sched_latency_nice;
}

#define LN_PASS(name) \
	do { printf("LNTEST PASS %s\n", name); fflush(stdout); } while (0)
#define LN_SKIP(name, ...) \
	do { printf("LNTEST SKIP %s: ", name); printf(__VA_ARGS__); \
	     printf("\n"); fflush(stdout); } while (0)

#endif
