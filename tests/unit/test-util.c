/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* util.c: UTF-8 validation and escaping, the helpers every string from a process goes through. */

#include "tests.h"
#include "util.h"

TEST(utf8_valid) {
        ASSERT_TRUE(utf8_is_valid(""));
        ASSERT_TRUE(utf8_is_valid("pipewire"));
        ASSERT_TRUE(utf8_is_valid("h\xc3\xa9llo"));              /* é */
        ASSERT_TRUE(utf8_is_valid("\xe2\x82\xac"));             /* € */
        ASSERT_TRUE(utf8_is_valid("\xf0\x9f\x8e\xae"));         /* 🎮 */
        ASSERT_TRUE(!utf8_is_valid("ibus-engine-\xff"));
        ASSERT_TRUE(!utf8_is_valid("abc\xc3"));                 /* cut in the middle (comm at 15 bytes) */
        ASSERT_TRUE(!utf8_is_valid("\xe2\x82"));
        ASSERT_TRUE(!utf8_is_valid("\xc0\xaf"));                /* overlong '/' */
        ASSERT_TRUE(!utf8_is_valid("\xe0\x80\xaf"));            /* overlong */
        ASSERT_TRUE(!utf8_is_valid("\xed\xa0\x80"));            /* surrogate U+D800 */
        ASSERT_TRUE(!utf8_is_valid("\xf4\x90\x80\x80"));        /* > U+10FFFF */
        ASSERT_TRUE(!utf8_is_valid("\x80"));
        ASSERT_EQ(utf8_char_len("\xc3\xa9"), 2);
        ASSERT_EQ(utf8_char_len("\xf0\x9f\x8e\xae"), 4);
        ASSERT_EQ(utf8_char_len(""), 0);
}

TEST(utf8_escape) {
        char *e, *buf;

        e = utf8_escape_invalid("ibus-engine-\xff", false);
        ASSERT_STREQ(e, "ibus-engine-\xef\xbf\xbd");
        ASSERT_TRUE(utf8_is_valid(e));
        free(e);
        e = utf8_escape_invalid("lnt-\xc3\xa9\xc3", false);
        ASSERT_STREQ(e, "lnt-\xc3\xa9\xef\xbf\xbd");
        free(e);
        /* a process name must not start a line of its own in a log */
        e = utf8_escape_invalid("evil\nFAKE\x7f", true);
        ASSERT_STREQ(e, "evil\\x0aFAKE\\x7f");
        free(e);
        e = utf8_escape_invalid("tab\there", false);
        ASSERT_STREQ(e, "tab\there");
        free(e);

        ASSERT_STREQ(utf8_safe("fine", &buf), "fine");
        ASSERT_TRUE(!buf);
        ASSERT_STREQ(utf8_safe("\xff\xfe", &buf), "\xef\xbf\xbd\xef\xbf\xbd");
        ASSERT_TRUE(buf);
        free(buf);
        ASSERT_TRUE(!utf8_safe(NULL, &buf));
}

TEST(utf8_prefix) {
        ASSERT_EQ(utf8_prefix_len("abc", 2), 2);
        ASSERT_EQ(utf8_prefix_len("abc", 10), 3);
        ASSERT_EQ(utf8_prefix_len("\xe4\xb8\xad\xe4\xb8\xad", 4), 3); /* never inside a character */
        ASSERT_EQ(utf8_prefix_len("\xe4\xb8\xad\xe4\xb8\xad", 6), 6);
        ASSERT_EQ(utf8_prefix_len("a\xff" "b", 10), 1);
        ASSERT_EQ(utf8_prefix_len("", 10), 0);
}

/* All of the string is one number: no sign for the unsigned one, no blanks, no wrap-around. */
TEST(safe_ato) {
        uint64_t u;
        int i;

        ASSERT_EQ(safe_atou64("4096", &u), 0);
        ASSERT_EQ(u, 4096);
        ASSERT_EQ(safe_atou64("18446744073709551615", &u), 0);
        ASSERT_EQ(safe_atou64("18446744073709551616", &u), -ERANGE);
        for (size_t k = 0; k < 8; k++) {
                static const char *const bad[] = { "", "-1", "+1", " -1", "\t-1", " 1", "1 ", "0x10" };

                ASSERT_EQ(safe_atou64(bad[k], &u), -EINVAL);
        }
        ASSERT_EQ(safe_atoi("-20", &i), 0);
        ASSERT_EQ(i, -20);
        ASSERT_EQ(safe_atoi("2147483648", &i), -ERANGE);
        ASSERT_EQ(safe_atoi(" 5", &i), -EINVAL);
        ASSERT_EQ(safe_atoi("5\n", &i), -EINVAL);
        ASSERT_EQ(safe_atoi("", &i), -EINVAL);
}
