/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Dropping the pages start-up touched from the resident set. A -util
 * module: the smaps text comes in as a FILE so tests can hand in their own;
 * no logging, no globals.
 *
 * Start-up and a reload run code and read data that the event loop never
 * needs again: the rule parser, libbpf's loader, the embedded BPF objects,
 * and around every page touched the kernel maps up to 64 kB more of a file
 * already in the page cache (fault-around). Those pages stay in the page
 * cache, shared with every other process; only latniced's page tables let
 * go of them, and a page the loop does use comes back by a minor fault.
 *
 * Only clean, private, read-only file mappings qualify (r-xp and r--p with
 * an inode and no anonymous pages): MADV_DONTNEED on them cannot lose data,
 * because every page is the file's own. RELRO and any page written before
 * an mprotect() are anonymous and keep the mapping out.
 */
#pragma once

#include <stdint.h>
#include <stdio.h>

typedef struct MemtrimRange {
        uintptr_t start, end;
        uint64_t rss_kb;
} MemtrimRange;

typedef int (*memtrim_range_cb)(const MemtrimRange *range, void *userdata);

/*
 * Calls cb for each mapping of the smaps text that qualifies and has pages
 * resident. Returns 0, -EBADMSG for text that is not smaps, or cb's error.
 */
int memtrim_parse(FILE *smaps, memtrim_range_cb cb, void *userdata);

/* Trims this process's qualifying mappings; *ret_kb is the resident size they had. */
int memtrim_self(uint64_t *ret_kb);
