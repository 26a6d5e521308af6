/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The running kernel's preemption model and HZ (kernel-preempt.h), and the
 * sentence that says what they mean for a wakeup. What the sentences claim
 * is the kernel's (kernel/sched/core.c, fair.c, kernel/entry/common.c of
 * 6.12 and of the lazy model from 6.13 on):
 *  - a fair-class wakeup preemption is resched_curr_lazy(): under lazy it sets
 *    TIF_NEED_RESCHED_LAZY and sends no IPI, and the flag is acted on at the
 *    next return to user space or promoted at the next tick (sched_tick()), so a
 *    task busy in user space keeps the CPU up to 1/HZ; the other classes
 *    (real-time, deadline, sched_ext) set TIF_NEED_RESCHED and preempt at once
 *    ("Lazy preemption will delay preemption for fair class but will function
 *    as Full preemption for all the other classes", commit "sched: Add Lazy
 *    preemption model", 6.13);
 *  - under none and voluntary TIF_NEED_RESCHED is set and the remote CPU gets an
 *    IPI: a task in user space is preempted on the IPI's return to user mode,
 *    a task in the kernel only at its next scheduling point (cond_resched(),
 *    and might_sleep() under voluntary) or return to user space;
 *  - under full and PREEMPT_RT the kernel is preempted too, outside sections
 *    that disable preemption.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>

#include "kernel-preempt.h"
#include "sched-ext.h"
#include "util.h"

/* The debugfs file is one short line; a command line is at most a few kB (COMMAND_LINE_SIZE). */
#define DEBUGFS_MAX 256
#define CMDLINE_MAX (64 * 1024)
/* A distribution's .config is ~300 kB: read no more than this of it, compressed or not. */
#define CONFIG_MAX (16 * 1024 * 1024)
#define CONFIG_LINE_MAX 256

static const char *const model_table[_PREEMPT_MODEL_MAX] = {
        [PREEMPT_MODEL_UNKNOWN] = "",
        [PREEMPT_MODEL_NONE] = "none",
        [PREEMPT_MODEL_VOLUNTARY] = "voluntary",
        [PREEMPT_MODEL_FULL] = "full",
        [PREEMPT_MODEL_LAZY] = "lazy",
        [PREEMPT_MODEL_RT] = "rt",
};

static const char *const source_table[_PREEMPT_SOURCE_MAX] = {
        [PREEMPT_SOURCE_UNKNOWN] = "",
        [PREEMPT_SOURCE_DEBUGFS] = "debugfs",
        [PREEMPT_SOURCE_CMDLINE] = "cmdline",
        [PREEMPT_SOURCE_CONFIG] = "config",
};

const char *preempt_model_to_string(PreemptModel m) {
        return (unsigned) m < _PREEMPT_MODEL_MAX ? model_table[m] : NULL;
}

const char *preempt_source_to_string(PreemptSource s) {
        return (unsigned) s < _PREEMPT_SOURCE_MAX ? source_table[s] : NULL;
}

/* The word of n bytes, one of the table's (not ""). */
static PreemptModel model_from_word(const char *w, size_t n) {
        for (PreemptModel m = PREEMPT_MODEL_NONE; m < _PREEMPT_MODEL_MAX; m++)
                if (strlen(model_table[m]) == n && memcmp(model_table[m], w, n) == 0)
                        return m;
        return PREEMPT_MODEL_UNKNOWN;
}

PreemptModel preempt_model_from_string(const char *s) {
        return s ? model_from_word(s, strlen(s)) : PREEMPT_MODEL_UNKNOWN;
}

/* ---- the configuration ---------------------------------------------------- */

/* "NAME=VALUE" at line (n bytes): VALUE (n bytes to its end, without the newline), else NULL. */
static const char *config_value(const char *line, size_t n, const char *name, size_t *ret_n) {
        size_t k = strlen(name);

        if (n < k + 1 || memcmp(line, name, k) != 0 || line[k] != '=')
                return NULL;
        *ret_n = n - k - 1;
        if (*ret_n > 0 && line[n - 1] == '\n')
                (*ret_n)--;
        return line + k + 1;
}

static bool config_is_y(const char *line, size_t n, const char *name) {
        size_t vn;
        const char *v = config_value(line, n, name, &vn);

        return v && vn == 1 && v[0] == 'y';
}

void kernel_config_parse_line(KernelConfig *c, const char *line, size_t n) {
        static const struct {
                const char *name;
                PreemptModel model;
        } choices[] = {
                { "CONFIG_PREEMPT_NONE", PREEMPT_MODEL_NONE },
                { "CONFIG_PREEMPT_VOLUNTARY", PREEMPT_MODEL_VOLUNTARY },
                { "CONFIG_PREEMPT", PREEMPT_MODEL_FULL },
                { "CONFIG_PREEMPT_LAZY", PREEMPT_MODEL_LAZY },
        };
        const char *v;
        size_t vn;

        if (!line || n == 0 || line[0] != 'C')
                return;
        for (size_t i = 0; i < ELEMENTSOF(choices); i++)
                if (config_is_y(line, n, choices[i].name)) {
                        c->choice = choices[i].model;
                        c->seen = true;
                        return;
                }
        if (config_is_y(line, n, "CONFIG_PREEMPT_RT")) {
                c->rt = c->seen = true;
                return;
        }
        if (config_is_y(line, n, "CONFIG_PREEMPT_DYNAMIC")) {
                c->dynamic = c->seen = true;
                return;
        }
        v = config_value(line, n, "CONFIG_HZ", &vn);
        if (v && vn > 0 && vn < 8) {
                char num[8];
                uint64_t hz;

                memcpy(num, v, vn);
                num[vn] = 0;
                /* the kernel's choices are 100..1000; anything else in a sane range is still a tick */
                if (safe_atou64(num, &hz) >= 0 && hz >= 10 && hz <= 100000) {
                        c->hz = (uint32_t) hz;
                        c->seen = true;
                }
        }
}

/* ---- debugfs and the command line ------------------------------------------ */

/* isspace() in the C locale, as the kernel's */
static bool is_blank(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/*
 * The next blank-separated word of buf[0..n) from *i on: false when none is left. With quotes, blanks
 * inside double quotes do not end a word (the kernel's next_arg() for the command line).
 */
static bool next_word(const char *buf, size_t n, size_t *i, bool quotes, size_t *ret_start, size_t *ret_len) {
        bool quoted = false;
        size_t start;

        while (*i < n && is_blank(buf[*i]))
                (*i)++;
        if (*i >= n)
                return false;
        start = *i;
        while (*i < n && (quoted || !is_blank(buf[*i]))) {
                if (quotes && buf[*i] == '"')
                        quoted = !quoted;
                (*i)++;
        }
        *ret_start = start;
        *ret_len = *i - start;
        return true;
}

PreemptModel preempt_debugfs_parse(const char *buf, size_t n) {
        PreemptModel found = PREEMPT_MODEL_UNKNOWN;
        size_t i = 0, start, len;

        if (!buf)
                return PREEMPT_MODEL_UNKNOWN;
        while (next_word(buf, n, &i, false, &start, &len)) {
                PreemptModel m;

                if (buf[start] != '(') {
                        if (model_from_word(buf + start, len) == PREEMPT_MODEL_UNKNOWN)
                                return PREEMPT_MODEL_UNKNOWN; /* not the file we know */
                        continue;
                }
                if (len < 3 || buf[i - 1] != ')' || found != PREEMPT_MODEL_UNKNOWN)
                        return PREEMPT_MODEL_UNKNOWN;
                m = model_from_word(buf + start + 1, len - 2);
                /* "rt" is ours, not a kernel mode word */
                if (m == PREEMPT_MODEL_UNKNOWN || m == PREEMPT_MODEL_RT)
                        return PREEMPT_MODEL_UNKNOWN;
                found = m;
        }
        return found;
}

PreemptModel preempt_cmdline_parse(const char *buf, size_t n) {
        static const char key[] = "preempt=";
        const size_t k = sizeof(key) - 1;
        PreemptModel found = PREEMPT_MODEL_UNKNOWN;
        size_t i = 0, start, len;

        if (!buf)
                return PREEMPT_MODEL_UNKNOWN;
        n = strnlen(buf, n); /* a C string in the kernel */
        while (next_word(buf, n, &i, true, &start, &len)) {
                PreemptModel m;

                if (len == 2 && memcmp(buf + start, "--", 2) == 0)
                        break;
                /* next_arg() takes a quote off the start of the word or of its value, and one at its end */
                if (buf[start] == '"') {
                        start++;
                        len--;
                }
                if (len <= k || memcmp(buf + start, key, k) != 0)
                        continue;
                start += k;
                len -= k;
                if (len > 0 && buf[start] == '"') {
                        start++;
                        len--;
                }
                if (len > 0 && buf[start + len - 1] == '"')
                        len--;
                m = model_from_word(buf + start, len);
                if (m != PREEMPT_MODEL_UNKNOWN && m != PREEMPT_MODEL_RT)
                        found = m;
        }
        return found;
}

/* ---- the decision ------------------------------------------------------------ */

void kernel_preempt_decide(const KernelConfig *config, PreemptModel debugfs, PreemptModel cmdline,
                           KernelPreempt *ret) {
        static const KernelConfig none = {};
        const KernelConfig *c = config ?: &none;

        *ret = (KernelPreempt) { .hz = c->hz, .dynamic = c->dynamic };
        if (debugfs != PREEMPT_MODEL_UNKNOWN) {
                /* the file exists only on PREEMPT_DYNAMIC kernels */
                ret->model = debugfs;
                ret->source = PREEMPT_SOURCE_DEBUGFS;
                ret->dynamic = true;
        } else if (cmdline != PREEMPT_MODEL_UNKNOWN && (!c->seen || c->dynamic)) {
                /* a kernel built without PREEMPT_DYNAMIC ignores preempt= */
                ret->model = cmdline;
                ret->source = PREEMPT_SOURCE_CMDLINE;
        } else if (c->choice != PREEMPT_MODEL_UNKNOWN || c->rt) {
                ret->model = c->choice != PREEMPT_MODEL_UNKNOWN ? c->choice : PREEMPT_MODEL_RT;
                ret->source = PREEMPT_SOURCE_CONFIG;
        }
        /* PREEMPT_RT preempts the kernel as full does, and more; in lazy mode it is lazy for the fair class */
        if (c->rt && ret->model == PREEMPT_MODEL_FULL)
                ret->model = PREEMPT_MODEL_RT;
}

/* ---- reading ------------------------------------------------------------------ */

/* A regular file, opened without blocking on whatever else sits at the path; -errno. */
static int open_regular(const char *path) {
        struct stat st;
        int fd, flags;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                close(fd);
                return -EBADFD;
        }
        flags = fcntl(fd, F_GETFL);
        if (flags >= 0)
                (void) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
        return fd;
}

/* Up to max bytes of path into buf (size > max); the count, or -errno. A longer file is cut. */
static ssize_t read_small(const char *path, char *buf, size_t max) {
        size_t n = 0;
        int fd = open_regular(path);

        if (fd < 0)
                return fd;
        while (n < max) {
                ssize_t k = read(fd, buf + n, max - n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        int r = -errno;

                        close(fd);
                        return r;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        close(fd);
        buf[n] = 0;
        return (ssize_t) n;
}

/* A configuration, gzip'ed or plain (zlib reads both), line by line into c; -errno if it cannot be opened. */
static int read_config(const char *path, KernelConfig *c) {
        char line[CONFIG_LINE_MAX];
        bool skip = false; /* the rest of a line longer than line[] */
        gzFile gz;
        int fd;

        fd = open_regular(path);
        if (fd < 0)
                return fd;
        gz = gzdopen(fd, "rb");
        if (!gz) {
                close(fd);
                return -ENOMEM;
        }
        for (;;) {
                size_t n;
                bool whole;

                /* zeroed first, so that a newline after a NUL in the line is this line's own */
                memset(line, 0, sizeof(line));
                /* the uncompressed offset: NULs in the lines do not hide what was read */
                if (gztell(gz) >= CONFIG_MAX || !gzgets(gz, line, sizeof(line)))
                        break;
                n = strlen(line); /* a NUL in the file ends what is parsed of its line */
                whole = memchr(line, '\n', sizeof(line)) != NULL;
                if (!skip)
                        kernel_config_parse_line(c, line, n);
                skip = !whole;
        }
        gzclose(gz);
        return 0;
}

void kernel_preempt_read(const KernelPreemptPaths *paths, KernelPreempt *ret) {
        PreemptModel debugfs = PREEMPT_MODEL_UNKNOWN, cmdline = PREEMPT_MODEL_UNKNOWN;
        KernelConfig config = {};
        char small[DEBUGFS_MAX + 1];
        ssize_t n;

        if (paths->config_gz && read_config(paths->config_gz, &config) >= 0 && config.seen) {
                /* the running kernel's own */
        } else if (paths->config) {
                config = (KernelConfig) {};
                (void) read_config(paths->config, &config);
        }
        if (paths->debugfs) {
                n = read_small(paths->debugfs, small, DEBUGFS_MAX);
                if (n > 0)
                        debugfs = preempt_debugfs_parse(small, (size_t) n);
        }
        if (paths->cmdline) {
                _cleanup_(freep) char *buf = malloc(CMDLINE_MAX + 1);

                n = buf ? read_small(paths->cmdline, buf, CMDLINE_MAX) : -ENOMEM;
                if (n > 0)
                        cmdline = preempt_cmdline_parse(buf, (size_t) n);
        }
        kernel_preempt_decide(&config, debugfs, cmdline, ret);
}

void kernel_preempt_default_paths(KernelPreemptPaths *ret, char *config_buf, size_t size) {
        struct utsname u;

        *ret = (KernelPreemptPaths) {
                .debugfs = "/sys/kernel/debug/sched/preempt",
                .cmdline = "/proc/cmdline",
                .config_gz = "/proc/config.gz",
        };
        if (size > 0 && uname(&u) >= 0 && strchr(u.release, '/') == NULL &&
            snprintf(config_buf, size, "/boot/config-%s", u.release) < (int) size)
                ret->config = config_buf;
}

/* ---- the sentence ---------------------------------------------------------------- */

/* "4 ms" for HZ 250, "3.33 ms" for 300; "one tick" when HZ is unknown. */
static void format_tick(uint32_t hz, char *buf, size_t size) {
        if (hz == 0)
                snprintf(buf, size, "one tick");
        else
                snprintf(buf, size, "%.3g ms", 1000.0 / hz);
}

int preempt_sentence(const char *model, bool dynamic, uint32_t hz, const char *backend, char *buf, size_t size) {
        PreemptModel m = preempt_model_from_string(model);
        bool scx = backend && strncmp(backend, SCX_BACKEND_PREFIX, strlen(SCX_BACKEND_PREFIX)) == 0;
        const char *what, *fix = dynamic ? "; preempt=full on the kernel command line avoids the wait" : "";
        char tick[32], hzs[24];

        format_tick(hz, tick, sizeof(tick));
        if (hz > 0)
                snprintf(hzs, sizeof(hzs), "HZ %" PRIu32, hz);
        else
                snprintf(hzs, sizeof(hzs), "HZ unknown");
        /* what the value a task carries is on this backend */
        if (backend && strcmp(backend, "latency-nice") == 0)
                what = "its latency nice";
        else if (backend && strcmp(backend, "eevdf-slice") == 0)
                what = "its slice";
        else
                what = "its slice or latency nice";

        switch (m) {
        case PREEMPT_MODEL_LAZY:
                if (scx)
                        return snprintf(buf, size,
                                        "lazy preemption (%s): it delays only the fair class's wakeup preemption, "
                                        "by up to %s; the BPF scheduler's preemptions (sched_ext) take effect at "
                                        "once.",
                                        hzs, tick);
                return snprintf(buf, size,
                                "lazy preemption (%s): a fair-class wakeup may wait up to %s behind a busy task, "
                                "whatever %s says (real-time and deadline wakeups do not wait)%s.",
                                hzs, tick, what, fix);
        case PREEMPT_MODEL_NONE:
        case PREEMPT_MODEL_VOLUNTARY:
                return snprintf(buf, size,
                                "%s preemption (%s): a wakeup preemption takes effect at once on a task in user "
                                "space, but on one in the kernel only at its next %sscheduling point or return to "
                                "user space%s.",
                                m == PREEMPT_MODEL_NONE ? "no forced" : "voluntary", hzs,
                                m == PREEMPT_MODEL_NONE ? "" : "voluntary ",
                                dynamic ? "; preempt=full on the kernel command line avoids that wait" : "");
        case PREEMPT_MODEL_FULL:
                return snprintf(buf, size,
                                "full preemption (%s): a wakeup preemption takes effect at once, in user space and "
                                "in the kernel.",
                                hzs);
        case PREEMPT_MODEL_RT:
                return snprintf(buf, size,
                                "real-time kernel (PREEMPT_RT, %s): a wakeup preemption takes effect at once, in "
                                "user space and in almost all of the kernel.", hzs);
        default:
                return snprintf(buf, size,
                                "preemption model unknown (%s): under lazy preemption a fair-class wakeup may wait up "
                                "to %s behind a busy task.", hzs, tick);
        }
}
