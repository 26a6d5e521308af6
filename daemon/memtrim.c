/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Dropping start-up's clean file pages from the resident set (see memtrim.h). */

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "memtrim.h"
#include "util.h"

typedef struct Mapping {
        MemtrimRange range;
        bool candidate;
        bool anonymous;
        bool rss_seen, anonymous_seen;
} Mapping;

static int mapping_flush(Mapping *map, memtrim_range_cb cb, void *userdata) {
        if (!map->candidate)
                return 0;
        map->candidate = false;
        /* A mapping whose counters we could not read is not known to be clean. */
        if (!map->rss_seen || !map->anonymous_seen || map->anonymous || map->range.rss_kb == 0)
                return 0;
        return cb(&map->range, userdata);
}

/* "55d0c0a00000-55d0c0a21000 r-xp 00002000 fe:01 1234   /usr/sbin/latniced" */
static bool parse_header(const char *line, Mapping *map) {
        uintptr_t start, end;
        char perms[5];
        unsigned long long inode;
        int n = 0;

        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s %*s %*s %llu%n", &start, &end, perms, &inode, &n) != 4 ||
            n == 0)
                return false;
        *map = (Mapping) {
                .range = { .start = start, .end = end },
                /* Read-only, private, backed by a file: never written, so the file holds every page. */
                .candidate = inode != 0 && start < end && perms[0] == 'r' && perms[1] == '-' && perms[3] == 'p',
        };
        return true;
}

static bool parse_kb(const char *line, const char *key, uint64_t *ret) {
        size_t l = strlen(key);
        char *end;

        if (strncmp(line, key, l) != 0)
                return false;
        errno = 0;
        unsigned long long v = strtoull(line + l, &end, 10);
        if (errno != 0 || end == line + l)
                return false;
        *ret = v;
        return true;
}

int memtrim_parse(FILE *smaps, memtrim_range_cb cb, void *userdata) {
        _cleanup_(freep) char *line = NULL;
        size_t size = 0;
        Mapping map = {};
        bool any = false;
        int r;

        for (;;) {
                ssize_t n = getline(&line, &size, smaps);
                if (n < 0)
                        break;
                uint64_t v;

                /* Mapping headers start with a lower-case hex address, counters with a capital. */
                if ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f')) {
                        r = mapping_flush(&map, cb, userdata);
                        if (r < 0)
                                return r;
                        if (!parse_header(line, &map))
                                return -EBADMSG;
                        any = true;
                } else if (parse_kb(line, "Rss:", &v)) {
                        map.range.rss_kb = v;
                        map.rss_seen = true;
                } else if (parse_kb(line, "Anonymous:", &v)) {
                        map.anonymous = v > 0;
                        map.anonymous_seen = true;
                }
        }
        if (ferror(smaps))
                return -EIO;
        if (!any)
                return -EBADMSG;
        return mapping_flush(&map, cb, userdata);
}

static int trim_one(const MemtrimRange *range, void *userdata) {
        uint64_t *kb = userdata;

        /* Fails only for mlock()ed or special mappings: those simply stay. */
        if (madvise((void *) range->start, range->end - range->start, MADV_DONTNEED) == 0)
                *kb += range->rss_kb;
        return 0;
}

int memtrim_self(uint64_t *ret_kb) {
        _cleanup_(fclosep) FILE *f = NULL;
        uint64_t kb = 0;
        int r;

        f = fopen("/proc/self/smaps", "re");
        if (!f)
                return -errno;
        r = memtrim_parse(f, trim_one, &kb);
        if (r < 0)
                return r;
        if (ret_kb)
                *ret_kb = kb;
        return 0;
}
