/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* latnicectl's output helpers (see ctl-output.h). */

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "ctl-output.h"
#include "util.h"

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

int strextendf(char **s, const char *fmt, ...) {
        _cleanup_(freep) char *more = NULL;
        char *n;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&more, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        if (asprintf(&n, "%s%s", *s ?: "", more) < 0)
                return -ENOMEM;
        free(*s);
        *s = n;
        return 0;
}
