/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ratelimit.c: the token bucket behind the Applied signal, on made-up clocks. */

#include "ratelimit.h"
#include "tests.h"

static unsigned take_n(TokenBucket *b, uint64_t from, uint64_t step, unsigned n) {
        unsigned passed = 0;

        for (unsigned i = 0; i < n; i++)
                passed += token_bucket_take(b, from + i * step);
        return passed;
}

TEST(token_bucket) {
        TokenBucket b = TOKEN_BUCKET_INIT(50, 20);
        uint64_t t = 1000000;
        unsigned n;

        /* The burst at once, then nothing until time passes. */
        ASSERT_EQ(take_n(&b, t, 0, 60), 50u);
        ASSERT_EQ(b.refused, 10u);
        /* One second later: the rate's worth. */
        t += 1000000;
        ASSERT_EQ(take_n(&b, t, 0, 30), 20u);

        /* A storm of events 40 us apart (25,000 a second) for two seconds: the rate still passes,
         * although each gap is worth less than a thousandth of a token. */
        t += 10;
        n = take_n(&b, t, 40, 50000);
        ASSERT_TRUE(n >= 39 && n <= 41);
        t += 50000 * 40;

        /* A long quiet time refills to the burst and no more. */
        t += 3600ULL * 1000000;
        ASSERT_EQ(take_n(&b, t, 0, 100), 50u);

        /* A clock that goes back adds nothing, and time counts again from there. */
        ASSERT_EQ(take_n(&b, t - 500000, 0, 5), 0u);
        ASSERT_EQ(take_n(&b, t + 500000, 0, 30), 20u);

        /* A bucket that never refills. */
        b = (TokenBucket) TOKEN_BUCKET_INIT(3, 0);
        ASSERT_EQ(take_n(&b, 5, 1000000, 10), 3u);
}
