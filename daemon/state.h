/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What latniced set, kept where a crash cannot take it: a file of
 * fixed-size records in the state directory (/run/latnice, a tmpfs),
 * mapped shared into memory. Writing a record is a store into the page
 * cache, no system call, so a matched exec costs nothing extra; a
 * SIGKILL loses nothing that was written. After a restart the records of
 * processes that still run with the value we wrote are adopted again, so
 * restores and Inherit=no resets keep working (Restart=on-failure,
 * --keep-on-exit). I/O, no logging.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "applied.h"

enum {
        STATE_F_VIA_UNIT = 1 << 0,
        STATE_F_INHERIT = 1 << 1,
        STATE_F_MANUAL = 1 << 2,
        STATE_F_FOREGROUND = 1 << 3,
        STATE_F_THREAD = 1 << 4, /* a Thread= rule's value on one thread */
};

typedef struct StateRecord {
        uint32_t valid; /* STATE_RECORD_VALID once the rest is written */
        int32_t pid;
        uint64_t start_time;
        uint64_t raw;
        uint64_t before_raw;
        uint32_t uid;
        uint32_t manual_uid;
        int16_t latency_nice;
        int16_t before;
        uint16_t flags;
        uint16_t reserved;
        char comm[16];
        uint64_t exe_ino;
        uint32_t exe_dev;
        uint32_t tgid;  /* STATE_F_THREAD: pid is one thread of this process */
} StateRecord;

#define STATE_RECORD_VALID 0x4c4e5231U /* "LNR1" */

typedef struct StateFile StateFile;

/* What the records are about: a record from another backend or boot means nothing. */
typedef struct StateKey {
        uint32_t backend;
        uint64_t base_slice_ns;
        char boot_id[40];
} StateKey;

/*
 * Opens (creating dir and file) dir/applied. Records of an earlier run with
 * the same key are offered to adopt() one by one; those it keeps stay, at
 * the slot it is told (records are kept dense, in order), the others are
 * dropped. A file with another key is emptied.
 */
typedef bool (*StateAdopt)(const StateRecord *rec, uint32_t slot, void *userdata);
int state_file_open(const char *dir, const StateKey *key, StateAdopt adopt, void *userdata, StateFile **ret);

/* The file is done with: unlink it (nothing left to remember), or keep it for the next run. */
StateFile *state_file_close(StateFile *f, bool keep);

size_t state_file_size(const StateFile *f);

/* Appends a record; its slot, or STATE_SLOT_NONE if the file cannot grow. */
uint32_t state_file_add(StateFile *f, const StateRecord *rec);
/* Rewrites a slot. */
void state_file_update(StateFile *f, uint32_t slot, const StateRecord *rec);
/*
 * Drops a slot. The last record moves into it (the file stays dense):
 * returns the pid of the record that moved (its owner must learn the new
 * slot), 0 if none did.
 */
pid_t state_file_remove(StateFile *f, uint32_t slot);

/* A record for an applied-table entry. */
void state_record_from_applied(const AppliedProcess *e, StateRecord *ret);

/*
 * The cgroup side, in dir/units (text, rewritten whole; it changes only as
 * units come and go): the cgroup knobs latniced wrote, with what they held
 * before, and the units it asked systemd for CPUAccounting=yes.
 */
typedef struct StateKnob {
        char *cgroup; /* NULL: not written yet */
        int before;   /* the knob's value before our first write */
        int value;    /* what we wrote last */
} StateKnob;

/* Writes the file (tmp + rename); with nothing to remember, removes it. */
int state_units_write(const char *dir, const StateKnob *knobs, size_t n_knobs, char * const *asked);
/*
 * Reads it, appending to *knobs and *asked. Lines that are not ours (bad
 * values, relative paths) are skipped and counted in *ret_skipped.
 * 0 also when there is no file.
 */
int state_units_read(const char *dir, StateKnob **knobs, size_t *n_knobs, char ***asked, unsigned *ret_skipped);
