/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * latnicectl's output, declared once. A verb names its columns (a header for
 * people, a key for programs) and adds each row once; the table prints it as
 * aligned text or, with --json, as one JSON array of objects. A vertical
 * table (status) is one row printed as "Label: value" lines, or one object.
 *
 * A column without a key is text only and one without a header JSON only, so
 * that a sentence for people and the numbers behind it are still one row.
 * Text is printed as each cell is added, so it keeps its place among the
 * messages on stderr; widths are fixed, as printf's, never measured.
 */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

typedef enum TableType {
        TABLE_STRING, /* const char *; NULL is "" (JSON, text), and no line at all in a vertical table */
        TABLE_INT,    /* int64_t */
        TABLE_UINT,   /* uint64_t */
        TABLE_BOOL,
        TABLE_STRV,   /* char **: an array; text joins it with spaces */
        TABLE_DICT,   /* char **: key, value, key, value...: an object; JSON only */
        TABLE_DOUBLE, /* with the column's decimals, in JSON too */
        TABLE_JSON,   /* json_object *, taken (NULL: null); JSON only */
} TableType;

typedef struct TableColumn {
        const char *header; /* the text header (vertical: the label; "" none); NULL: not in the text */
        const char *key;    /* the JSON key; NULL: not in the JSON */
        TableType type;
        int width;          /* at least |width| wide, < 0 left-aligned, as %*s; vertical: the label's
                             * ("%*s: " or, < 0, "label:" and blanks to |width| + 1), 0: the value alone */
        int decimals;       /* TABLE_DOUBLE: the digits after the point, as "%.*f" */
} TableColumn;

typedef struct Table Table;

Table *table_new(const TableColumn *columns, size_t n_columns, bool json);
Table *table_new_vertical(const TableColumn *columns, size_t n_columns, bool json);
Table *table_free(Table *t);
static inline void table_freep(Table **t) {
        table_free(*t);
}
/* Text: the header line, before the first row (on by default for a horizontal table). */
void table_set_header(Table *t, bool b);
/* Text: what stands between two columns, "  " by default. */
void table_set_separator(Table *t, const char *sep);

/*
 * The next cell, in column order; after the last column the next row
 * begins. An error (out of memory, a cell of the wrong type) sticks and is
 * returned by table_print(), so a verb need not check every cell.
 */
int table_add_string(Table *t, const char *s);
/* A string made only where it is printed: the text for a text column, the JSON for a key. */
int table_add_stringf(Table *t, const char *fmt, ...) _printf_(2, 3);
int table_add_int(Table *t, int64_t v);
int table_add_uint(Table *t, uint64_t v);
int table_add_bool(Table *t, bool v);
int table_add_strv(Table *t, char **l);
int table_add_dict(Table *t, char **l);
int table_add_double(Table *t, double v);
int table_add_json(Table *t, json_object *v);

size_t table_rows(const Table *t);
bool table_is_json(const Table *t);
/*
 * Ends a table that is a cell of another: the text header if no row printed
 * it, and *ret the JSON (the array, or the vertical table's object) for
 * table_add_json(); NULL in text.
 */
int table_finish(Table *t, json_object **ret);
/* Text for people only, around the table (a count, "nothing found"): nothing with --json. */
void table_text(const Table *t, const char *fmt, ...) _printf_(2, 3);
/* Ends the output: the JSON document and a newline, or the text header if no row printed it. */
int table_print(Table *t);
