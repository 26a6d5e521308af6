/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A token bucket: at most `burst` events at once, `per_sec` a second after
 * that. Pure: the caller hands in the time (tests/unit/test-ratelimit.c).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

typedef struct TokenBucket {
        unsigned burst;      /* tokens it holds at most, and starts with */
        unsigned per_sec;    /* tokens added a second */
        uint64_t milli;      /* tokens held, in thousandths */
        uint64_t since_usec; /* time counted into milli so far; 0: not yet */
        uint64_t refused;    /* events it said no to */
} TokenBucket;

#define TOKEN_BUCKET_INIT(b, rate) { .burst = (b), .per_sec = (rate), .milli = (uint64_t) (b) * 1000 }

/* Whether an event at now_usec (CLOCK_MONOTONIC) may pass; takes its token if so. */
bool token_bucket_take(TokenBucket *b, uint64_t now_usec);
