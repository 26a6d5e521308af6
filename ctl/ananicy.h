/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Turns ananicy / ananicy-cpp rule files into one latnice.d file. The
 * parsing and the translation are here and take buffers; reading the
 * tree and writing the result are the verb's (ctl-import.c).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum AnanicySeverity {
        ANANICY_ERROR,   /* a line or a rule that could not be used */
        ANANICY_WARNING, /* used, but differently from what the line says, or not all of it */
} AnanicySeverity;

typedef struct AnanicyMessage {
        AnanicySeverity severity;
        const char *file; /* owned by the import */
        unsigned line;
        char *text;
        size_t seq; /* order of reporting, for a stable sort */
} AnanicyMessage;

typedef struct AnanicyFields {
        bool has_latency_nice, has_nice;
        int latency_nice, nice;
        char *sched;     /* as written; NULL if absent */
        char **cmdlines; /* minq-ananicy's "cmdlines": argv words the process must have */
} AnanicyFields;

typedef struct AnanicyEntry {
        char *name;      /* program name, or type name */
        char *type;      /* a program's "type"; NULL for a type */
        AnanicyFields f;
        const char *file;
        unsigned line;
        size_t order;    /* position in reading order: a later definition replaces an earlier one */
} AnanicyEntry;

typedef struct AnanicyImport {
        char **files;    /* every file read, in order; entries and messages point here */
        size_t n_files;
        AnanicyEntry *programs, *types;
        size_t n_programs, n_types;
        AnanicyMessage *messages;
        size_t n_messages, n_errors;
        /* What was read and what latnice has no use for. */
        size_t n_lines, n_cgroups, n_no_value, n_replaced;
        size_t n_ignored_field[8]; /* indexed by the ignored-field table in ananicy.c */
        size_t order;
} AnanicyImport;

void ananicy_import_done(AnanicyImport *imp);

/* Parses one file's content (one JSON object a line, '#' comments). Returns 0 or -ENOMEM;
 * what is wrong with the content becomes messages with file:line. */
int ananicy_import_buffer(AnanicyImport *imp, const char *file, const char *buf, size_t size);

/* Resolves types and duplicates and writes the latnice.d file to f. *ret_rules: sections written,
 * *ret_names: program names in them. Returns 0, -ENOMEM or -EIO. */
int ananicy_import_write(AnanicyImport *imp, const char *source, FILE *f, size_t *ret_rules, size_t *ret_names);

/* The latency nice a type's (or a program's merged) fields give, per the table in latnicectl(1);
 * false when they carry nothing latnice sets. */
bool ananicy_latency_nice(const AnanicyFields *f, int *ret);

/* Appends the word to buf so strv_split_quoted() gives it back unchanged and no glob reads it. */
int ananicy_word_escape(const char *word, char **buf, size_t *len);

/* Names of the fields latnice reads and ignores, for the report. */
const char *ananicy_ignored_field_name(size_t i);
size_t ananicy_ignored_field_count(void);
