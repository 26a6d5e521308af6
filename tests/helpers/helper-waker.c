/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A load for the statistics tests: "wake US" sleeps US microseconds and
 * wakes again, forever (a latency-sensitive task); "burn" spins (what it
 * has to preempt). Copied under the names the test's rules match on.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv) {
        if (argc == 3 && strcmp(argv[1], "wake") == 0) {
                long us = atol(argv[2]);
                struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };

                if (us <= 0)
                        return 2;
                for (;;)
                        (void) nanosleep(&ts, NULL);
        }
        if (argc == 2 && strcmp(argv[1], "burn") == 0) {
                volatile unsigned long n = 0;

                for (;;)
                        n++;
        }
        return 2;
}
