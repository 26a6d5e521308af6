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

/*
 * TEST(name) { ... } defines a test that runs because it exists: tests.c's main() runs every TEST of
 * the program in the order of the file (TEST_SETUP, if the file has one, first: it returns 0, or
 * TEST_SKIP with the reason printed). `test-x NAME...` runs only those. A file with its own main()
 * is the old form: its tests run only if main() calls them.
 */
typedef struct TestCase {
        const char *name;
        void (*run)(void);
        unsigned line;
} TestCase;

#define TEST(n)                                                                                  \
        static void test_##n(void);                                                              \
        __attribute__((used, section("latnice_tests"), aligned(__alignof__(TestCase))))          \
        static const TestCase test_case_##n = { #n, test_##n, __LINE__ };                         \
        static void test_##n(void)

int test_setup(void);
#define TEST_SETUP() int test_setup(void)

/* ok/not-ok checks that go on after a failure (the parsers' tests); test_failed: one failed. */
extern int test_failed;
void test_check(const char *what, int ok);
/* A file of the source tree (LATNICE_SOURCE_ROOT, else "."), NUL-terminated; exits 1 if it cannot be read. */
char *test_read_source(const char *rel, size_t *ret_len);

/* A case of a table-driven parser test: one input line (len 0: strlen(line)), the return it must give,
 * the value it must name where that return names one (a pid, an address), and what the case checks. */
typedef struct TestLineCase {
        const char *line;
        size_t len;
        int r;
        unsigned long long value;
        const char *what;
} TestLineCase;
static inline size_t test_line_len(const TestLineCase *c) {
        return c->len ?: strlen(c->line);
}

/* n '[' then n ']': JSON nested n deep, for the parsers' depth bounds; free() it. Aborts without memory. */
char *test_nested_brackets(size_t n);

/* A fresh temporary directory, removed at exit. */
const char *test_tmpdir(void);
/* Writes (creating parent directories) dir/rel with the given contents. */
void test_write(const char *dir, const char *rel, const char *contents);
/* Joins into a string that lives until exit. */
char *test_path(const char *dir, const char *rel);
