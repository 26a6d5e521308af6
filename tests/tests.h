/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A minimal test harness: assertions that abort with file:line, temp trees. */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ASSERT_TRUE(expr)                                                             \
        do {                                                                          \
                if (!(expr)) {                                                        \
                        fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__,   \
                                __LINE__, #expr);                                     \
                        abort();                                                      \
                }                                                                     \
        } while (0)

#define ASSERT_EQ(a, b)                                                               \
        do {                                                                          \
                long long _a = (long long) (a), _b = (long long) (b);                 \
                if (_a != _b) {                                                       \
                        fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n",     \
                                __FILE__, __LINE__, #a, #b, _a, _b);                  \
                        abort();                                                      \
                }                                                                     \
        } while (0)

#define ASSERT_STREQ(a, b)                                                            \
        do {                                                                          \
                const char *_a = (a), *_b = (b);                                      \
                if (!_a || !_b || strcmp(_a, _b) != 0) {                              \
                        fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", \
                                __FILE__, __LINE__, #a, #b, _a ? _a : "(null)",       \
                                _b ? _b : "(null)");                                  \
                        abort();                                                      \
                }                                                                     \
        } while (0)

#define TEST_SKIP 77

/* A fresh temporary directory, removed at exit. */
const char *test_tmpdir(void);
/* Writes (creating parent directories) dir/rel with the given contents. */
void test_write(const char *dir, const char *rel, const char *contents);
/* Joins into a string that lives until exit. */
char *test_path(const char *dir, const char *rel);
