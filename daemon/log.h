/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Logging for the top layers (latniced.c, manager*.c). To the journal with
 * structured fields when stderr is the journal's stream (JOURNAL_STREAM), to
 * stderr otherwise. Lower layers never log: they return errors.
 */
#pragma once

#include <errno.h>
#include <syslog.h>
#include <sys/types.h>

#include "util.h"

void log_set_max_level(int level);
int log_get_max_level(void);
int log_level_from_string(const char *s);
/* Decides journal or stderr; call once at start. */
void log_open(void);

_printf_(4, 5) int log_internal(int level, int error, const char *func, const char *format, ...);

#define log_full_errno(level, error, ...) \
        ({ int _l = (level), _e = (error); \
           _l <= log_get_max_level() ? log_internal(_l, _e, __func__, __VA_ARGS__) : -abs(_e); })

#define log_debug(...) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_ERR, 0, __VA_ARGS__)
#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, e, __VA_ARGS__)
#define log_info_errno(e, ...) log_full_errno(LOG_INFO, e, __VA_ARGS__)
#define log_notice_errno(e, ...) log_full_errno(LOG_NOTICE, e, __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, e, __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, e, __VA_ARGS__)
#define log_oom() log_error_errno(-ENOMEM, "Out of memory.")

/* The journal fields of a decision (include/latnice/journal.h); on stderr the message alone. */
typedef struct LogDecision {
        const char *message_id; /* LATNICE_MESSAGE_* */
        pid_t target_pid;
        const char *rule;       /* NULL: no rule decided */
        int latency_nice;
} LogDecision;

_printf_(4, 5) int log_internal_decision(int level, const LogDecision *d, const char *func, const char *format, ...);

#define log_decision(level, message_id, pid, rule, value, ...)                                               \
        ({ int _l = (level);                                                                                  \
           _l <= log_get_max_level() ?                                                                        \
                   log_internal_decision(_l, &(LogDecision) { (message_id), (pid), (rule), (value) }, __func__, \
                                         __VA_ARGS__) : 0; })
