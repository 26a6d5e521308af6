/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A token bucket (see ratelimit.h). */

#include "ratelimit.h"

bool token_bucket_take(TokenBucket *b, uint64_t now_usec) {
        uint64_t full = (uint64_t) b->burst * 1000;

        if (b->since_usec == 0 || now_usec < b->since_usec || b->milli >= full)
                b->since_usec = now_usec; /* nothing to add: a full bucket does not save up */
        else if (b->per_sec > 0) {
                uint64_t add = (now_usec - b->since_usec) * b->per_sec / 1000;

                /* Only the time that became tokens is used up, so events closer together than one
                 * thousandth of a token still refill the bucket between them. */
                b->since_usec += add * 1000 / b->per_sec;
                b->milli += add;
                if (b->milli >= full) {
                        b->milli = full;
                        b->since_usec = now_usec;
                }
        }
        if (b->milli < 1000) {
                b->refused++;
                return false;
        }
        b->milli -= 1000;
        return true;
}
