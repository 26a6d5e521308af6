/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* latnicectl's output helpers (see ctl-output.h). */

#include <inttypes.h>
#include <stdio.h>

#include "ctl-output.h"
#include "util.h"

void json_str(const char *s) {
        putchar('"');
        for (const unsigned char *p = (const unsigned char *) (s ?: ""); *p; p++) {
                if (*p >= 0x80) {
                        size_t n = utf8_char_len((const char *) p);

                        if (n == 0)
                                fputs("\\ufffd", stdout);
                        else {
                                fwrite(p, 1, n, stdout);
                                p += n - 1;
                        }
                        continue;
                }
                switch (*p) {
                case '"':
                        fputs("\\\"", stdout);
                        break;
                case '\\':
                        fputs("\\\\", stdout);
                        break;
                case '\n':
                        fputs("\\n", stdout);
                        break;
                case '\t':
                        fputs("\\t", stdout);
                        break;
                default:
                        if (*p < 0x20 || *p == 0x7f)
                                printf("\\u%04x", *p);
                        else
                                putchar(*p);
                }
        }
        putchar('"');
}

void json_key(const char *k, bool first) {
        if (!first)
                putchar(',');
        json_str(k);
        putchar(':');
}

void json_kv_str(const char *k, const char *v, bool first) {
        json_key(k, first);
        json_str(v);
}

void json_kv_int(const char *k, long long v, bool first) {
        json_key(k, first);
        printf("%lld", v);
}

void json_kv_bool(const char *k, bool v, bool first) {
        json_key(k, first);
        fputs(v ? "true" : "false", stdout);
}

void json_kv_strv(const char *k, char **l, bool first) {
        json_key(k, first);
        putchar('[');
        for (char **i = l; i && *i; i++) {
                json_sep(i - l);
                json_str(*i);
        }
        putchar(']');
}

void json_sep(size_t i) {
        if (i > 0)
                putchar(',');
}

void format_ms(uint64_t ns, char *buf, size_t size) {
        snprintf(buf, size, "%" PRIu64 ".%03" PRIu64 " ms", ns / 1000000, ns / 1000 % 1000);
}

void comm_printable(char *s) {
        for (unsigned char *c = (unsigned char *) s; *c;) {
                size_t n = *c >= 0x80 ? utf8_char_len((const char *) c) : 1;

                if (n == 0 || *c < 0x20 || *c == 0x7f) {
                        *c++ = '?';
                        continue;
                }
                c += n;
        }
}
