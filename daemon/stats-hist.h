/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The arithmetic and the drawing of latnice's log2 wakeup-latency
 * histograms (include/latnice/stats.h): percentiles estimated from the
 * buckets, and the runqlat-style text form. Pure: no I/O, no logging.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "latnice/stats.h"

/* Bucket i's bounds in us: [lo, hi]; the last bucket is open (hi = UINT64_MAX). */
void stats_bucket_bounds(unsigned i, uint64_t *ret_lo, uint64_t *ret_hi);

/*
 * The p-th percentile (0 < p <= 100) in us, estimated by linear
 * interpolation inside the bucket where it falls; 0 without samples.
 */
double stats_percentile(const struct latnice_stats_hist *h, double p);

/*
 * The histogram as runqlat draws it: one line per bucket from 0 us to the
 * last non-empty one, "lo -> hi : count |****|", the bars scaled so that the
 * whole line fits in width columns (at least a few stars wide). A string to
 * free; "" for an empty histogram.
 */
char *stats_hist_draw(const struct latnice_stats_hist *h, unsigned width);
