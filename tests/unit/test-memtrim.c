/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memtrim.c: which mappings qualify, on written smaps text; then a real trim of this process. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memtrim.h"
#include "tests.h"

typedef struct Seen {
        uintptr_t start[8];
        uint64_t kb[8];
        size_t n;
} Seen;

static int collect(const MemtrimRange *range, void *userdata) {
        Seen *seen = userdata;

        ASSERT_TRUE(seen->n < 8);
        seen->start[seen->n] = range->start;
        seen->kb[seen->n++] = range->rss_kb;
        return 0;
}

static int parse_text(const char *text, Seen *seen) {
        FILE *f = fmemopen((void *) text, strlen(text), "r");
        int r;

        ASSERT_TRUE(f);
        *seen = (Seen) {};
        r = memtrim_parse(f, collect, seen);
        fclose(f);
        return r;
}

#define MAPPING(range, perms, inode, path, rss, anon)                                              \
        range " " perms " 00000000 fe:01 " inode "    " path "\n"                                  \
        "Size:                100 kB\nKernelPageSize:        4 kB\nRss:                 " rss " kB\n" \
        "Pss:                  10 kB\nAnonymous:           " anon " kB\nVmFlags: rd mr mw me\n"

TEST(qualifying_mappings) {
        static const char text[] =
                /* text of a library: yes */
                MAPPING("7f0000001000-7f0000002000", "r-xp", "1234", "/usr/lib/libc.so.6", "900", "0")
                /* RELRO after relocation: read-only but written, so anonymous: no */
                MAPPING("7f0000002000-7f0000003000", "r--p", "1234", "/usr/lib/libc.so.6", "16", "16")
                /* read-only data, never written: yes */
                MAPPING("7f0000003000-7f0000004000", "r--p", "1234", "/usr/lib/libc.so.6", "40", "0")
                /* writable data: no */
                MAPPING("7f0000004000-7f0000005000", "rw-p", "1234", "/usr/lib/libc.so.6", "8", "0")
                /* a shared read-only mapping (the BPF ring buffer's data pages): no */
                MAPPING("7f0000005000-7f0000006000", "r--s", "77", "anon_inode:bpf-map", "64", "0")
                /* no file behind it ([vvar]): no */
                MAPPING("7f0000006000-7f0000007000", "r--p", "0", "[vvar]", "16", "0")
                /* nothing resident: nothing to do */
                MAPPING("7f0000007000-7f0000008000", "r-xp", "99", "/usr/lib/libz.so.1", "0", "0")
                /* the last mapping of the text counts too */
                MAPPING("7f0000008000-7f0000009000", "r-xp", "98", "/usr/sbin/latniced (deleted)", "272", "0");
        Seen seen;

        ASSERT_EQ(parse_text(text, &seen), 0);
        ASSERT_EQ(seen.n, 3u);
        ASSERT_EQ(seen.start[0], 0x7f0000001000);
        ASSERT_EQ(seen.kb[0], 900);
        ASSERT_EQ(seen.start[1], 0x7f0000003000);
        ASSERT_EQ(seen.start[2], 0x7f0000008000);
        ASSERT_EQ(seen.kb[2], 272);
}

TEST(unknown_is_not_clean) {
        /* A mapping whose Anonymous: line is missing (or cut off) is not known to be clean. */
        static const char cut[] = "7f0000001000-7f0000002000 r-xp 00000000 fe:01 1234  /lib/x.so\nRss:  8 kB\n";
        static const char garbage[] = "this is not smaps\nRss: 8 kB\n";
        Seen seen;

        ASSERT_EQ(parse_text(cut, &seen), 0);
        ASSERT_EQ(seen.n, 0u);
        ASSERT_EQ(parse_text(garbage, &seen), -EBADMSG);
        ASSERT_EQ(parse_text("", &seen), -EBADMSG);
}

/* The resident kB of the mapping that starts at addr, from /proc/self/smaps; -1 if there is none. */
static long long rss_of(const void *addr) {
        FILE *f = fopen("/proc/self/smaps", "re");
        char line[512];
        bool here = false;
        long long kb = -1;

        ASSERT_TRUE(f);
        while (fgets(line, sizeof line, f)) {
                unsigned long long start, end;

                if (sscanf(line, "%llx-%llx ", &start, &end) == 2 && strchr(line, '-') < strchr(line, ' '))
                        here = start == (uintptr_t) addr;
                else if (here && sscanf(line, "Rss: %lld kB", &kb) == 1)
                        break;
        }
        fclose(f);
        return kb;
}

TEST(trim_self) {
        /* A clean private file mapping, read in full: trimmed, and its bytes still read back right. */
        char tmpl[] = "/tmp/test-memtrim-XXXXXX";
        long page = sysconf(_SC_PAGESIZE);
        size_t len = 64 * (size_t) page;
        unsigned char *buf = malloc(len);
        uint64_t kb = 0, sum = 0, want = 0;
        int fd = mkstemp(tmpl);

        ASSERT_TRUE(buf && fd >= 0);
        for (size_t i = 0; i < len; i++)
                want += buf[i] = (unsigned char) (i * 7 + 3);
        ASSERT_EQ(write(fd, buf, len), (ssize_t) len);
        unlink(tmpl);
        unsigned char *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        ASSERT_TRUE(map != MAP_FAILED);
        for (size_t i = 0; i < len; i++)
                sum += map[i];
        ASSERT_EQ(sum, want);
        ASSERT_EQ(rss_of(map), (long long) (len / 1024));

        ASSERT_EQ(memtrim_self(&kb), 0);
        /* Our mapping's 64 pages went (and some of the test program's own text). */
        ASSERT_EQ(rss_of(map), 0);
        ASSERT_TRUE(kb > len / 1024);
        /* ... and the bytes come back from the file. */
        sum = 0;
        for (size_t i = 0; i < len; i++)
                sum += map[i];
        ASSERT_EQ(sum, want);
        munmap(map, len);
        close(fd);
        free(buf);
}
