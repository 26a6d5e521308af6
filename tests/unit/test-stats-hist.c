/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* stats-hist.c: bucket bounds, percentiles estimated in log2 buckets, and runqlat-style drawing. */

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "stats-hist.h"
#include "tests.h"

static bool near(double a, double b) {
        return fabs(a - b) < 1e-6;
}

static unsigned count_lines(const char *s) {
        unsigned n = 0;

        for (; *s; s++)
                n += *s == '\n';
        return n;
}

TEST(buckets_percentiles_drawing) {
        struct latnice_stats_hist h = {};
        uint64_t lo, hi;
        char *s, *line;

        /* Bounds: 0 and 1 in bucket 0, then powers of two; the last one is open. */
        stats_bucket_bounds(0, &lo, &hi);
        ASSERT_TRUE(lo == 0 && hi == 1);
        stats_bucket_bounds(1, &lo, &hi);
        ASSERT_TRUE(lo == 2 && hi == 3);
        stats_bucket_bounds(10, &lo, &hi);
        ASSERT_TRUE(lo == 1024 && hi == 2047);
        stats_bucket_bounds(LATNICE_STATS_SLOTS - 1, &lo, &hi);
        ASSERT_TRUE(lo == UINT64_C(1) << (LATNICE_STATS_SLOTS - 1) && hi == UINT64_MAX);

        /* Empty: no percentile, nothing drawn. */
        ASSERT_TRUE(near(stats_percentile(&h, 99), 0));
        s = stats_hist_draw(&h, 80);
        ASSERT_STREQ(s, "");
        free(s);

        /* 100 samples in [4, 8): every percentile inside it, interpolated. */
        h.slots[2] = 100;
        ASSERT_TRUE(near(stats_percentile(&h, 50), 4 + 4 * 0.5));
        ASSERT_TRUE(near(stats_percentile(&h, 100), 8));
        ASSERT_TRUE(stats_percentile(&h, 1) >= 4 && stats_percentile(&h, 1) < 8);

        /* 90 fast, 10 slow: p50 and p90 among the fast, p99 among the slow. */
        h = (struct latnice_stats_hist) {};
        h.slots[3] = 90;   /* 8..15 */
        h.slots[12] = 10;  /* 4096..8191 */
        ASSERT_TRUE(stats_percentile(&h, 50) >= 8 && stats_percentile(&h, 50) < 16);
        ASSERT_TRUE(near(stats_percentile(&h, 90), 16));
        ASSERT_TRUE(stats_percentile(&h, 99) >= 4096 && stats_percentile(&h, 99) < 8192);
        ASSERT_TRUE(stats_percentile(&h, 50) <= stats_percentile(&h, 90));
        /* Out-of-range p: clamped, never past the data. */
        ASSERT_TRUE(near(stats_percentile(&h, 0), 0));
        ASSERT_TRUE(near(stats_percentile(&h, 1000), 8192));

        /* The open last bucket reports its lower bound. */
        h = (struct latnice_stats_hist) {};
        h.slots[LATNICE_STATS_SLOTS - 1] = 3;
        ASSERT_TRUE(near(stats_percentile(&h, 99), (double) (UINT64_C(1) << (LATNICE_STATS_SLOTS - 1))));

        /* Drawing: a header and one line per bucket from 0 to the last non-empty, each as wide as asked. */
        h = (struct latnice_stats_hist) {};
        h.slots[3] = 90;
        h.slots[12] = 10;
        s = stats_hist_draw(&h, 100);
        ASSERT_TRUE(s != NULL);
        ASSERT_EQ(count_lines(s), 1u + 13u);
        ASSERT_TRUE(strstr(s, "usecs") && strstr(s, "count") && strstr(s, "distribution"));
        line = strstr(s, "         8 -> 15         : 90       |");
        ASSERT_TRUE(line != NULL);
        ASSERT_EQ((size_t) (strchr(line, '\n') - line), (size_t) 100);
        /* The biggest bucket fills the bar; 10 of 90 gets a ninth of it, rounded up. */
        ASSERT_TRUE(strstr(line, "|**************************************************************|") != NULL);
        line = strstr(s, "      4096 -> 8191       : 10       |*******       ");
        ASSERT_TRUE(line != NULL);
        ASSERT_TRUE(strstr(s, "         0 -> 1          : 0        |     ") != NULL);
        free(s);
        /* A narrow terminal still gets a readable bar. */
        s = stats_hist_draw(&h, 20);
        line = strstr(s, "         8 -> 15         : 90       |**********|");
        ASSERT_TRUE(line != NULL);
        free(s);
        /* The open bucket is drawn as "...". */
        h.slots[LATNICE_STATS_SLOTS - 1] = 1;
        s = stats_hist_draw(&h, 80);
        ASSERT_TRUE(strstr(s, " -> ...        : 1 ") != NULL);
        free(s);
}
