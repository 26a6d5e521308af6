/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* latnicectl's tables (see ctl-table.h): text as it comes, JSON through json-c. */

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-table.h"
#include "util.h"

struct Table {
        const TableColumn *columns;
        size_t n_columns;
        bool json, vertical, header, header_done, has_text;
        const char *separator;

        size_t cell;   /* the column the next cell goes to */
        size_t n_rows; /* rows begun */
        size_t last_text; /* the last column that is in the text: the line ends after it */
        json_object *rows, *row; /* JSON: the array (or, vertical, the object) and the row being added */
        int error;
};

static Table *table_new_full(const TableColumn *columns, size_t n_columns, bool json, bool vertical) {
        Table *t = calloc(1, sizeof(Table));

        if (!t)
                return NULL;
        *t = (Table) {
                .columns = columns,
                .n_columns = n_columns,
                .json = json,
                .vertical = vertical,
                .header = !vertical,
                .separator = "  ",
        };
        for (size_t i = 0; i < n_columns; i++)
                if (columns[i].header) {
                        t->last_text = i;
                        t->has_text = true;
                }
        if (json) {
                t->rows = vertical ? json_object_new_object() : json_object_new_array();
                if (!t->rows)
                        return table_free(t);
        }
        return t;
}

Table *table_new(const TableColumn *columns, size_t n_columns, bool json) {
        return table_new_full(columns, n_columns, json, false);
}

Table *table_new_vertical(const TableColumn *columns, size_t n_columns, bool json) {
        return table_new_full(columns, n_columns, json, true);
}

Table *table_free(Table *t) {
        if (!t)
                return NULL;
        json_object_put(t->row);
        json_object_put(t->rows);
        free(t);
        return NULL;
}

void table_set_header(Table *t, bool b) {
        t->header = b;
}

void table_set_separator(Table *t, const char *sep) {
        t->separator = sep;
}

size_t table_rows(const Table *t) {
        return t->n_rows;
}

static void print_header(Table *t) {
        bool first = true;

        if (t->header_done || !t->header || t->vertical || !t->has_text)
                return;
        t->header_done = true;
        for (size_t i = 0; i < t->n_columns; i++) {
                const TableColumn *c = &t->columns[i];

                if (!c->header)
                        continue;
                printf("%s%*s", first ? "" : t->separator, i == t->last_text && c->width < 0 ? 0 : c->width,
                       c->header);
                first = false;
        }
        putchar('\n');
}

/* A vertical table's line: "   Label: value", its further lines below the value. */
static void print_field(const TableColumn *c, const char *text) {
        int indent = c->width < 0 ? -c->width + 1 : c->width + 2;

        if (c->width == 0) {
                printf("%s\n", text);
                return;
        }
        if (!*c->header)
                printf("%*s", indent, "");
        else if (c->width > 0)
                printf("%*s: ", c->width, c->header);
        else {
                int pad = indent - (int) strlen(c->header) - 1;

                printf("%s:%*s", c->header, pad > 1 ? pad : 1, "");
        }
        for (const char *p = text;; p++) {
                const char *nl = strchr(p, '\n');

                if (!nl) {
                        printf("%s\n", p);
                        break;
                }
                printf("%.*s\n%*s", (int) (nl - p), p, indent, "");
                p = nl;
        }
}

static void print_text(Table *t, const TableColumn *c, const char *text) {
        bool first = true;

        if (t->vertical) {
                if (text)
                        print_field(c, text);
                return;
        }
        print_header(t);
        for (size_t i = 0; i < t->cell; i++)
                if (t->columns[i].header)
                        first = false;
        /* The last column is not padded on the right: no trailing blanks. */
        printf("%s%*s", first ? "" : t->separator, t->cell == t->last_text && c->width < 0 ? 0 : c->width,
               text ?: "");
        if (t->cell == t->last_text)
                putchar('\n');
}

/* JSON strings are valid UTF-8: what is not becomes U+FFFD (json-c would pass the bytes on). */
static json_object *json_string(const char *s) {
        _cleanup_(freep) char *clean = utf8_escape_invalid(s ?: "", false);

        return clean ? json_object_new_string(clean) : NULL;
}

/* The cell of the next column, in both forms; text NULL: none (or, for a string, NULL). */
static int table_add(Table *t, TableType type, json_object *v, const char *text) {
        const TableColumn *c;

        if (t->error < 0) {
                json_object_put(v);
                return t->error;
        }
        if (t->vertical && t->n_rows > 0 && t->cell == 0) {
                json_object_put(v);
                return t->error = -EINVAL; /* one row only */
        }
        c = &t->columns[t->cell];
        if (c->type != type) {
                json_object_put(v);
                return t->error = -EINVAL;
        }
        if (t->cell == 0)
                t->n_rows++;
        if (t->json) {
                if (!t->row && !t->vertical) {
                        t->row = json_object_new_object();
                        if (!t->row) {
                                json_object_put(v);
                                return t->error = -ENOMEM;
                        }
                }
                if (c->key) {
                        /* NULL is JSON's null where a value may be missing (TABLE_JSON); else out of memory. */
                        if (!v && type != TABLE_JSON)
                                return t->error = -ENOMEM;
                        if (json_object_object_add(t->vertical ? t->rows : t->row, c->key, v) < 0) {
                                json_object_put(v);
                                return t->error = -ENOMEM;
                        }
                } else
                        json_object_put(v);
        } else {
                json_object_put(v);
                if (c->header)
                        print_text(t, c, text);
        }
        if (++t->cell == t->n_columns) {
                t->cell = 0;
                if (t->row) {
                        if (json_object_array_add(t->rows, t->row) < 0) {
                                json_object_put(t->row);
                                t->row = NULL;
                                return t->error = -ENOMEM;
                        }
                        t->row = NULL;
                }
        }
        return 0;
}

/* What the JSON side needs of a cell: nothing in text mode, or where the column has no key. */
static bool wants_json(const Table *t) {
        return t->json && t->cell < t->n_columns && t->columns[t->cell].key;
}

static bool wants_text(const Table *t) {
        return !t->json && t->cell < t->n_columns && t->columns[t->cell].header;
}

int table_add_string(Table *t, const char *s) {
        return table_add(t, TABLE_STRING, wants_json(t) ? json_string(s) : NULL, s);
}

int table_add_stringf(Table *t, const char *fmt, ...) {
        _cleanup_(freep) char *s = NULL;
        va_list ap;
        int r;

        if (!wants_text(t) && !wants_json(t))
                return table_add(t, TABLE_STRING, NULL, NULL);
        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0) {
                s = NULL;
                if (t->error >= 0)
                        t->error = -ENOMEM;
        }
        return table_add_string(t, s);
}

int table_add_int(Table *t, int64_t v) {
        char buf[32];

        snprintf(buf, sizeof(buf), "%" PRIi64, v);
        return table_add(t, TABLE_INT, wants_json(t) ? json_object_new_int64(v) : NULL, buf);
}

int table_add_uint(Table *t, uint64_t v) {
        char buf[32];

        snprintf(buf, sizeof(buf), "%" PRIu64, v);
        return table_add(t, TABLE_UINT, wants_json(t) ? json_object_new_uint64(v) : NULL, buf);
}

int table_add_bool(Table *t, bool v) {
        return table_add(t, TABLE_BOOL, wants_json(t) ? json_object_new_boolean(v) : NULL, v ? "yes" : "no");
}

int table_add_strv(Table *t, char **l) {
        _cleanup_(freep) char *joined = NULL;
        json_object *a = NULL;

        if (wants_json(t)) {
                a = json_object_new_array();
                for (char **i = l; a && i && *i; i++) {
                        json_object *s = json_string(*i);

                        if (!s || json_object_array_add(a, s) < 0) {
                                json_object_put(s);
                                json_object_put(a);
                                a = NULL; /* table_add() says out of memory */
                        }
                }
        } else if (wants_text(t)) {
                joined = strv_join(l, " ");
                if (!joined && t->error >= 0)
                        t->error = -ENOMEM;
        }
        return table_add(t, TABLE_STRV, a, joined ?: "");
}

int table_add_dict(Table *t, char **l) {
        json_object *o = NULL;

        if (wants_json(t)) {
                o = json_object_new_object();
                for (char **i = l; o && i && i[0] && i[1]; i += 2) {
                        _cleanup_(freep) char *k = utf8_escape_invalid(i[0], false);
                        json_object *v = json_string(i[1]);

                        if (!k || !v || json_object_object_add(o, k, v) < 0) {
                                json_object_put(v);
                                json_object_put(o);
                                o = NULL; /* table_add() says out of memory */
                        }
                }
        }
        return table_add(t, TABLE_DICT, o, NULL);
}

int table_add_double(Table *t, double v) {
        char buf[64];

        snprintf(buf, sizeof(buf), "%.*f", t->cell < t->n_columns ? t->columns[t->cell].decimals : 0, v);
        /* With its text, so that json-c prints the digits the format chose. */
        return table_add(t, TABLE_DOUBLE, wants_json(t) ? json_object_new_double_s(v, buf) : NULL, buf);
}

int table_add_json(Table *t, json_object *v) {
        return table_add(t, TABLE_JSON, v, NULL);
}

void table_text(const Table *t, const char *fmt, ...) {
        va_list ap;

        if (t->json)
                return;
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
}

bool table_is_json(const Table *t) {
        return t->json;
}

int table_finish(Table *t, json_object **ret) {
        *ret = NULL;
        if (t->error >= 0 && t->cell != 0)
                t->error = -EINVAL; /* a row half added */
        if (t->error < 0)
                return t->error;
        if (!t->json) {
                print_header(t);
                return 0;
        }
        *ret = TAKE_PTR(t->rows);
        return *ret ? 0 : -EINVAL;
}

int table_print(Table *t) {
        const char *s;

        if (t->error >= 0 && t->cell != 0)
                t->error = -EINVAL;
        if (t->error < 0)
                return t->error;
        if (!t->json) {
                print_header(t);
                return 0;
        }
        if (!t->rows)
                return -EINVAL; /* stolen */
        /* Plain: no blanks, and '/' as it is, as latnicectl wrote JSON before json-c did it. */
        s = json_object_to_json_string_ext(t->rows, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!s)
                return -ENOMEM;
        puts(s);
        return 0;
}
