/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Small helpers shared by every module: cleanup attributes, ownership
 * transfer, string vectors, number parsing, UTF-8, paths. Nothing here logs
 * or keeps state; read_full_file() is the one that does I/O.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

#define TAKE_PTR(p)                                  \
        ({                                           \
                __typeof__(p) _tp_ = (p);            \
                (p) = NULL;                          \
                _tp_;                                \
        })

#define TAKE_FD(fd)                                  \
        ({                                           \
                int _tfd_ = (fd);                    \
                (fd) = -1;                           \
                _tfd_;                               \
        })

static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

static inline void freep(void *p) {
        free(*(void **) p);
}

static inline void closep(int *fd) {
        if (*fd >= 0)
                (void) close(*fd);
}

static inline void fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}

static inline bool streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return strcmp(a, b) == 0;
}

static inline bool isempty(const char *s) {
        return !s || !*s;
}

/* Makes room for element n of *array (doubling *alloc, from 16); 0 or -ENOMEM. */
int array_grow(void **array, size_t *alloc, size_t n, size_t size);

/* NULL-terminated string vectors. */
char **strv_free(char **l);
static inline void strv_freep(char ***l) {
        strv_free(*l);
}
size_t strv_length(char * const *l);
/* Appends a copy of s. */
int strv_extend(char ***l, const char *s);
/* Takes ownership of s, also on failure. */
int strv_consume(char ***l, char *s);
bool strv_contains(char * const *l, const char *s);
char *strv_join(char * const *l, const char *sep);

/* Strict parsers: the whole string, no trailing garbage, range checked. */
int safe_atoi(const char *s, int *ret);
int safe_atou64(const char *s, uint64_t *ret);
int parse_pid(const char *s, pid_t *ret);
int parse_boolean(const char *s);

/*
 * Replaces path with data: written to a temporary file next to it, synced,
 * given mode, renamed over it. Readers see the old file or the new one.
 */
int write_file_atomic(const char *path, const char *data, size_t size, mode_t mode);

/* CLOCK_MONOTONIC in microseconds. */
uint64_t monotonic_usec(void);

/* Length of the valid UTF-8 sequence at s (1..4), 0 if s does not start one
 * (overlong, surrogate, beyond U+10FFFF, truncated) or *s is NUL. */
size_t utf8_char_len(const char *s);
bool utf8_is_valid(const char *s);
/* The length of the longest prefix of valid UTF-8 s of at most max bytes that ends on a character boundary. */
size_t utf8_prefix_len(const char *s, size_t max);
/*
 * A copy of s that is valid UTF-8: every byte that does not start a valid
 * sequence becomes U+FFFD, as systemd's utf8_escape_invalid() does. With
 * escape_control, C0 controls and DEL become "\xNN" too (for log lines:
 * a process name must not start a fake line). NULL on OOM.
 */
char *utf8_escape_invalid(const char *s, bool escape_control);
/* s itself when it is valid UTF-8, else an escaped copy kept in *buf
 * (free it; NULL when nothing was allocated). NULL only on OOM. */
const char *utf8_safe(const char *s, char **buf);

/* True if the value contains glob metacharacters. */
bool string_is_glob(const char *s);

/*
 * The literal start of a glob as fnmatch(3) (flags 0) reads it: the bytes
 * before the first unescaped '*', '?' or '[', with backslash escapes
 * removed, copied to buf (NUL-terminated; at most size - 1 bytes, the rest
 * cut). Returns the length of the literal start (before any cut), and
 * *ret_whole is true when the whole glob is literal (fnmatch compares it
 * as that string: "Foo\[Steam].exe" is the name Foo[Steam].exe).
 */
size_t glob_literal_prefix(const char *glob, char *buf, size_t size, bool *ret_whole);

/*
 * Splits a list value into words as systemd does for lists: white space
 * separates words; a word that starts with a double or a single quote runs
 * to the same quote, which must end the word ("Web Content" is one word);
 * a backslash before a quote, a backslash, a space, a tab, ';' or '#'
 * stands for that character, any other backslash stays (it escapes glob
 * characters: Foo\[Steam].exe). A quote inside a word is a character
 * (Baldur's). Returns 0, -ENOMEM, or -EINVAL with *ret_error saying why.
 */
int strv_split_quoted(const char *s, char ***ret, const char **ret_error);

/* Reads a whole small file (up to max bytes) into a NUL-terminated buffer. */
int read_full_file(int dir_fd, const char *path, size_t max, char **ret, size_t *ret_size);

/* The last component of a path: after the last slash, or all of it. */
static inline const char *path_basename(const char *p) {
        const char *s = strrchr(p, '/');

        return s ? s + 1 : p;
}

/* Joins two path components with exactly one slash; root may be NULL or "/". */
char *path_join(const char *root, const char *path);
