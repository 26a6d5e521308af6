/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Following the files latniced reads: the rule directories, latniced.conf,
 * the active profile, and the NSS databases behind User=/Group= names.
 * Each target is a directory and what in it counts: every "*.conf", or one
 * file name. A directory that does not exist yet is awaited in its nearest
 * existing ancestor, for its own name only; one that appears, goes away
 * or is replaced makes the caller set the watches again. Any other event
 * (ldconfig in /etc, a pid file in /run) counts for nothing. inotify;
 * no logging.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef enum DirWatchKind {
        DIR_WATCH_RULES,   /* a rule directory: every *.conf counts */
        DIR_WATCH_FILE,    /* one file in a directory (latniced.conf, the profile) */
        DIR_WATCH_NSS,     /* passwd, group: names may resolve differently now */
} DirWatchKind;

typedef struct DirWatchTarget {
        const char *dir;
        const char *name; /* DIR_WATCH_FILE, DIR_WATCH_NSS: the file name */
        DirWatchKind kind;
} DirWatchTarget;

typedef enum DirWatchChange {
        DIR_WATCH_CHANGED_RULES = 1 << 0,  /* reload */
        DIR_WATCH_CHANGED_NSS = 1 << 1,    /* resolve names again */
        DIR_WATCH_CHANGED_LAYOUT = 1 << 2, /* a directory came or went: set the watches again */
} DirWatchChange;

typedef struct DirWatch DirWatch;

int dir_watch_new(DirWatch **ret);
DirWatch *dir_watch_free(DirWatch *w);
int dir_watch_fd(const DirWatch *w);
/* Replaces all watches with these targets (copied). */
int dir_watch_set(DirWatch *w, const DirWatchTarget *targets, size_t n);
/* Reads what is queued; *ret_changes: DirWatchChange flags. */
int dir_watch_read(DirWatch *w, unsigned *ret_changes);
