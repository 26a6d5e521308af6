/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Log sink: journal when we run under systemd with stderr connected to it, else stderr. */

#include <stdarg.h>
#include <sys/stat.h>
#include <systemd/sd-journal.h>

#include "log.h"

static int max_level = LOG_INFO;
static int use_journal = 0;

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

int log_level_from_string(const char *s) {
        static const char * const names[] = {
                [LOG_EMERG] = "emerg", [LOG_ALERT] = "alert", [LOG_CRIT] = "crit", [LOG_ERR] = "err",
                [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice", [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
        };
        int v;

        for (int i = 0; i < (int) ELEMENTSOF(names); i++)
                if (strcmp(s, names[i]) == 0)
                        return i;
        if (strcmp(s, "error") == 0)
                return LOG_ERR;
        if (safe_atoi(s, &v) >= 0 && v >= 0 && v <= LOG_DEBUG)
                return v;
        return -EINVAL;
}

void log_open(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        use_journal = 0;
        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
                return;
        if (fstat(STDERR_FILENO, &st) < 0)
                return;
        use_journal = st.st_dev == dev && st.st_ino == ino;
}

/* Anything a process controls may be in a message: no invalid UTF-8, no control characters. */
static bool message_needs_escape(const char *s) {
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p < 0x20 || *p == 0x7f)
                        return true;
        return !utf8_is_valid(s);
}

int log_internal(int level, int error, const char *func, const char *format, ...) {
        _cleanup_(freep) char *escaped = NULL;
        const char *msg;
        char buf[2048];
        va_list ap;
        int saved = errno;

        /* %m in the format refers to error, as in systemd. */
        errno = error < 0 ? -error : error;
        va_start(ap, format);
        vsnprintf(buf, sizeof(buf), format, ap);
        va_end(ap);
        errno = saved;
        msg = buf;
        if (message_needs_escape(buf)) {
                escaped = utf8_escape_invalid(buf, true);
                msg = escaped ?: "(message dropped: out of memory)";
        }

        if (use_journal)
                sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%i", level, "CODE_FUNC=%s", func,
                                error != 0 ? "ERRNO=%i" : NULL, error < 0 ? -error : error, NULL);
        else
                fprintf(stderr, "%s\n", msg);
        return error > 0 ? -error : error;
}
