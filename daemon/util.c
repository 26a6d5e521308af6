/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers for strings, numbers and small files (see util.h): no logging, no globals. */

#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <time.h>

#include "util.h"

int array_grow(void **array, size_t *alloc, size_t n, size_t size) {
        size_t na;
        void *p;

        if (n < *alloc)
                return 0;
        na = *alloc ? *alloc * 2 : 16;
        p = reallocarray(*array, na, size);
        if (!p)
                return -ENOMEM;
        *array = p;
        *alloc = na;
        return 0;
}

char **strv_free(char **l) {
        if (!l)
                return NULL;
        for (char **i = l; *i; i++)
                free(*i);
        free(l);
        return NULL;
}

size_t strv_length(char * const *l) {
        size_t n = 0;

        if (!l)
                return 0;
        while (l[n])
                n++;
        return n;
}

int strv_consume(char ***l, char *s) {
        size_t n = strv_length(*l);
        char **nl;

        if (!s)
                return -ENOMEM;
        nl = realloc(*l, sizeof(char *) * (n + 2));
        if (!nl) {
                free(s);
                return -ENOMEM;
        }
        nl[n] = s;
        nl[n + 1] = NULL;
        *l = nl;
        return 0;
}

int strv_extend(char ***l, const char *s) {
        return strv_consume(l, strdup(s));
}

bool strv_contains(char * const *l, const char *s) {
        if (!l)
                return false;
        for (char * const *i = l; *i; i++)
                if (strcmp(*i, s) == 0)
                        return true;
        return false;
}

char *strv_join(char * const *l, const char *sep) {
        size_t len = 1, k = strlen(sep);
        char *ret, *p;

        for (char * const *i = l; i && *i; i++)
                len += strlen(*i) + k;
        ret = p = malloc(len);
        if (!ret)
                return NULL;
        *p = 0;
        for (char * const *i = l; i && *i; i++) {
                if (i != l)
                        p = stpcpy(p, sep);
                p = stpcpy(p, *i);
        }
        return ret;
}

/*
 * strtoll() or strtoull(), whichever ret_* is given: all of s is one number, overflow is -ERANGE. No
 * blank before it: strto*() would skip it, and strtoull() takes " -1" for 2^64 - 1.
 */
static int parse_integer(const char *s, long long *ret_signed, unsigned long long *ret_unsigned) {
        char *end;

        if (isempty(s) || isspace((unsigned char) *s))
                return -EINVAL;
        errno = 0;
        if (ret_signed)
                *ret_signed = strtoll(s, &end, 10);
        else
                *ret_unsigned = strtoull(s, &end, 10);
        if (errno > 0)
                return -errno;
        if (*end)
                return -EINVAL;
        return 0;
}

int safe_atoi(const char *s, int *ret) {
        long long v;
        int r;

        r = parse_integer(s, &v, NULL);
        if (r < 0)
                return r;
        if (v < INT_MIN || v > INT_MAX)
                return -ERANGE;
        *ret = (int) v;
        return 0;
}

int safe_atou64(const char *s, uint64_t *ret) {
        unsigned long long v;
        int r;

        /* strtoull() takes a sign, and "-1" as ULLONG_MAX */
        if (s && (*s == '-' || *s == '+'))
                return -EINVAL;
        r = parse_integer(s, NULL, &v);
        if (r < 0)
                return r;
        *ret = (uint64_t) v;
        return 0;
}

int parse_pid(const char *s, pid_t *ret) {
        int v, r;

        r = safe_atoi(s, &v);
        if (r < 0)
                return r;
        if (v <= 0)
                return -ERANGE;
        *ret = (pid_t) v;
        return 0;
}

int parse_boolean(const char *s) {
        static const char * const yes[] = { "1", "yes", "y", "true", "t", "on" };
        static const char * const no[] = { "0", "no", "n", "false", "f", "off" };

        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (strcasecmp(s, yes[i]) == 0)
                        return 1;
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (strcasecmp(s, no[i]) == 0)
                        return 0;
        return -EINVAL;
}

size_t utf8_char_len(const char *s) {
        const unsigned char *p = (const unsigned char *) s;
        uint32_t c;
        size_t n;

        if (p[0] < 0x80)
                return p[0] ? 1 : 0;
        if (p[0] < 0xc2)
                return 0; /* continuation byte, or the overlong 0xc0/0xc1 */
        n = p[0] < 0xe0 ? 2 : p[0] < 0xf0 ? 3 : p[0] < 0xf5 ? 4 : 0;
        if (n == 0)
                return 0;
        c = p[0] & (0x7f >> n);
        for (size_t i = 1; i < n; i++) {
                if ((p[i] & 0xc0) != 0x80)
                        return 0; /* also stops at the NUL of a truncated sequence */
                c = (c << 6) | (p[i] & 0x3f);
        }
        if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) || (c >= 0xd800 && c <= 0xdfff))
                return 0;
        return n;
}

size_t utf8_prefix_len(const char *s, size_t max) {
        size_t l = 0;

        for (;;) {
                size_t n = utf8_char_len(s + l);

                if (n == 0 || l + n > max)
                        return l;
                l += n;
        }
}

bool utf8_is_valid(const char *s) {
        while (*s) {
                size_t n = utf8_char_len(s);

                if (n == 0)
                        return false;
                s += n;
        }
        return true;
}

char *utf8_escape_invalid(const char *s, bool escape_control) {
        /* worst case: every byte becomes 4 ("\xNN") or 3 (U+FFFD) bytes */
        char *ret = malloc(strlen(s) * 4 + 1), *p = ret;

        if (!ret)
                return NULL;
        while (*s) {
                size_t n = utf8_char_len(s);
                unsigned char c = (unsigned char) *s;

                if (n == 0) {
                        p = stpcpy(p, "\xef\xbf\xbd");
                        s++;
                } else if (escape_control && n == 1 && (c < 0x20 || c == 0x7f)) {
                        p += sprintf(p, "\\x%02x", c);
                        s++;
                } else {
                        memcpy(p, s, n);
                        p += n;
                        s += n;
                }
        }
        *p = 0;
        return ret;
}

const char *utf8_safe(const char *s, char **buf) {
        *buf = NULL;
        if (!s || utf8_is_valid(s))
                return s;
        *buf = utf8_escape_invalid(s, false);
        return *buf;
}

bool string_is_glob(const char *s) {
        return strpbrk(s, "*?[") != NULL;
}

size_t glob_literal_prefix(const char *glob, char *buf, size_t size, bool *ret_whole) {
        size_t n = 0;
        const char *p = glob;

        for (; *p; p++) {
                char c = *p;

                if (c == '*' || c == '?' || c == '[')
                        break;
                if (c == '\\') {
                        /* A trailing backslash: fnmatch's reading of it is not ours to guess. */
                        if (!p[1])
                                break;
                        c = *++p;
                }
                if (n + 1 < size)
                        buf[n] = c;
                n++;
        }
        if (size > 0)
                buf[n < size ? n : size - 1] = 0;
        *ret_whole = *p == 0;
        return n;
}

static bool is_blank(char c) {
        return c == ' ' || c == '\t';
}

int strv_split_quoted(const char *s, char ***ret, const char **ret_error) {
        _cleanup_(strv_freep) char **l = NULL;
        _cleanup_(freep) char *w = NULL;
        size_t len = strlen(s);
        int r;

        *ret_error = NULL;
        w = malloc(len + 1);
        if (!w)
                return -ENOMEM;
        for (const char *p = s;;) {
                char quote = 0;
                size_t n = 0;

                while (is_blank(*p))
                        p++;
                if (!*p)
                        break;
                if (*p == '"' || *p == '\'')
                        quote = *p++;
                for (;; p++) {
                        if (!*p) {
                                if (quote) {
                                        *ret_error = quote == '"' ? "a double quote (\") is not closed"
                                                                  : "a single quote (') is not closed";
                                        return -EINVAL;
                                }
                                break;
                        }
                        if (quote && *p == quote) {
                                p++;
                                if (*p && !is_blank(*p)) {
                                        *ret_error = "text right after a closing quote: put white space between words";
                                        return -EINVAL;
                                }
                                break;
                        }
                        if (!quote && is_blank(*p))
                                break;
                        if (*p == '\\') {
                                if (!p[1]) {
                                        *ret_error = "a backslash at the end of the value escapes nothing";
                                        return -EINVAL;
                                }
                                if (strchr("\"'\\ \t;#", p[1]))
                                        p++;
                                else
                                        w[n++] = *p++; /* kept: it escapes a glob character */
                        }
                        w[n++] = *p;
                }
                if (n == 0) {
                        *ret_error = "an empty quoted word (\"\") names nothing";
                        return -EINVAL;
                }
                w[n] = 0;
                r = strv_extend(&l, w);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int read_full_file(int dir_fd, const char *path, size_t max, char **ret, size_t *ret_size) {
        _cleanup_(closep) int fd = -1;
        _cleanup_(freep) char *buf = NULL;
        size_t size = 0, alloc = 4096;
        struct stat st;

        fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
                return -EBADFD;
        if (S_ISREG(st.st_mode) && (uint64_t) st.st_size > max)
                return -EFBIG;

        buf = malloc(alloc);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n;

                if (size + 1 >= alloc) {
                        char *nb;

                        if (alloc > max + 1)
                                return -EFBIG;
                        alloc *= 2;
                        nb = realloc(buf, alloc);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                }
                n = read(fd, buf + size, alloc - size - 1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                size += (size_t) n;
                if (size > max)
                        return -EFBIG;
        }
        buf[size] = 0;
        *ret = TAKE_PTR(buf);
        if (ret_size)
                *ret_size = size;
        return 0;
}

char *path_join(const char *root, const char *path) {
        size_t rl;
        char *ret;

        if (isempty(root) || streq_ptr(root, "/"))
                return strdup(path);
        rl = strlen(root);
        while (rl > 1 && root[rl - 1] == '/')
                rl--;
        while (*path == '/')
                path++;
        if (asprintf(&ret, "%.*s/%s", (int) rl, root, path) < 0)
                return NULL;
        return ret;
}

uint64_t monotonic_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

int write_file_atomic(const char *path, const char *data, size_t size, mode_t mode) {
        _cleanup_(freep) char *tmp = NULL;
        _cleanup_(closep) int fd = -1;
        int r = 0;

        if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
                return -ENOMEM;
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (size_t done = 0; done < size;) {
                ssize_t n = write(fd, data + done, size - done);

                if (n < 0) {
                        r = -errno;
                        break;
                }
                done += (size_t) n;
        }
        if (r == 0 && fchmod(fd, mode) < 0)
                r = -errno;
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                (void) unlink(tmp);
        return r;
}
