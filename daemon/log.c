/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Log sink: journal when we run under systemd with stderr connected to it, else stderr. */

#include <stdarg.h>
#include <stdio.h>
#include <sys/uio.h>
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

/* A field's "KEY=value" with the value made safe as a message is, into iov (the string kept in *ret_free). */
static int field_iov(struct iovec *iov, char **ret_free, const char *fmt, ...) _printf_(3, 4);
static int field_iov(struct iovec *iov, char **ret_free, const char *fmt, ...) {
        char *s, *e;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        if (message_needs_escape(s)) {
                e = utf8_escape_invalid(s, true);
                free(s);
                if (!e)
                        return -ENOMEM;
                s = e;
        }
        *ret_free = s;
        *iov = (struct iovec) { .iov_base = s, .iov_len = strlen(s) };
        return 0;
}

static void log_emit(int level, int error, const LogDecision *d, const char *func, const char *format, va_list ap) {
        _cleanup_(freep) char *escaped = NULL;
        char *fields[8] = {};
        struct iovec iov[8];
        const char *msg;
        char buf[2048];
        size_t n = 0;
        int saved = errno;

        /* %m in the format refers to error, as in systemd. */
        errno = error < 0 ? -error : error;
        vsnprintf(buf, sizeof(buf), format, ap);
        errno = saved;
        msg = buf;
        if (message_needs_escape(buf)) {
                escaped = utf8_escape_invalid(buf, true);
                msg = escaped ?: "(message dropped: out of memory)";
        }
        if (!use_journal) {
                fprintf(stderr, "%s\n", msg);
                return;
        }
        if (field_iov(&iov[n], &fields[n], "MESSAGE=%s", msg) >= 0)
                n++;
        if (field_iov(&iov[n], &fields[n], "PRIORITY=%i", level) >= 0)
                n++;
        if (field_iov(&iov[n], &fields[n], "CODE_FUNC=%s", func) >= 0)
                n++;
        if (error != 0 && field_iov(&iov[n], &fields[n], "ERRNO=%i", error < 0 ? -error : error) >= 0)
                n++;
        if (d && d->message_id && field_iov(&iov[n], &fields[n], "MESSAGE_ID=%s", d->message_id) >= 0)
                n++;
        if (d && d->target_pid > 0 && field_iov(&iov[n], &fields[n], "TARGET_PID=%d", (int) d->target_pid) >= 0)
                n++;
        if (d && field_iov(&iov[n], &fields[n], "LATENCY_NICE=%d", d->latency_nice) >= 0)
                n++;
        if (d && d->rule && field_iov(&iov[n], &fields[n], "RULE=%s", d->rule) >= 0)
                n++;
        (void) sd_journal_sendv(iov, (int) n);
        for (size_t i = 0; i < n; i++)
                free(fields[i]);
}

int log_internal(int level, int error, const char *func, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        log_emit(level, error, NULL, func, format, ap);
        va_end(ap);
        return error > 0 ? -error : error;
}

int log_internal_decision(int level, const LogDecision *d, const char *func, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        log_emit(level, 0, d, func, format, ap);
        va_end(ap);
        return 0;
}
