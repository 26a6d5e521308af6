/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The pure half of the scheduler layer: the backends' and policies' names
 * and the one latency-nice <-> slice mapping every backend shares. No I/O,
 * no logging, no globals (tests/unit/test-sched.c checks the mapping).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "latnice/uapi.h"

typedef enum Backend {
        BACKEND_NONE,         /* nothing to apply: keep running, report what would apply */
        BACKEND_LATENCY_NICE, /* patched kernel (kernel/): sched_attr.sched_latency_nice */
        BACKEND_EEVDF_SLICE,  /* mainline >= 6.12: custom slice in sched_attr.sched_runtime */
        _BACKEND_MAX,
        _BACKEND_INVALID = -EINVAL,
} Backend;

const char *backend_to_string(Backend b); /* "none", "latency-nice", "eevdf-slice" */
Backend backend_from_string(const char *s); /* _BACKEND_INVALID if unknown */

static inline bool latnice_valid(int ln) {
        return ln >= LATNICE_MIN && ln <= LATNICE_MAX;
}

/* slice(ln) = clamp(base * 1024 / weight(ln), 0.1 ms, 100 ms); 0 for ln 0 ("no custom slice"). */
uint64_t latnice_to_slice_ns(int latency_nice, uint64_t base_slice_ns);
/* The inverse, to the nearest value; 0 for slice 0. Where clamping maps
 * several values to one slice, the one closest to 0. */
int latnice_from_slice_ns(uint64_t slice_ns, uint64_t base_slice_ns);
/* All values that map to this slice (lo == hi unless clamped), for display. */
void latnice_range_from_slice_ns(uint64_t slice_ns, uint64_t base_slice_ns, int *ret_lo, int *ret_hi);

/* "other", "fifo", "rr", "batch", "idle", "deadline", "ext", "unknown". */
const char *sched_policy_to_string(unsigned policy);
