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

/*
 * The uAPI as latniced declares it (include/latnice/uapi.h): the VM checks
 * the kernel against the very definitions the daemon uses.
 */
#include "latnice/uapi.h"

#define SCHED_FLAG_RESET_ON_FORK	LATNICE_SCHED_FLAG_RESET_ON_FORK
#define SCHED_FLAG_KEEP_POLICY		LATNICE_SCHED_FLAG_KEEP_POLICY
#define SCHED_FLAG_KEEP_PARAMS		LATNICE_SCHED_FLAG_KEEP_PARAMS
#define SCHED_FLAG_KEEP_ALL		(SCHED_FLAG_KEEP_POLICY | SCHED_FLAG_KEEP_PARAMS)
#define SCHED_FLAG_LATENCY_NICE		LATNICE_SCHED_FLAG_LATENCY_NICE

#define SCHED_ATTR_SIZE_VER0	LATNICE_SCHED_ATTR_SIZE_VER0
#define SCHED_ATTR_SIZE_VER1	LATNICE_SCHED_ATTR_SIZE_VER1
#define SCHED_ATTR_SIZE_VER2	LATNICE_SCHED_ATTR_SIZE_VER2

#define ln_sched_attr latnice_sched_attr

static inline int ln_setattr(pid_t pid, struct ln_sched_attr *a, unsigned int flags)
{
	return latnice_sched_setattr(pid, a, flags);
}

static inline int ln_getattr(pid_t pid, struct ln_sched_attr *a, unsigned int size)
{
	return latnice_sched_getattr(pid, a, size, 0);
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
