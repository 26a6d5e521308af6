/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ananicy rule files to latnice.d: parsing (one JSON object a line, as
 * ananicy-cpp reads them), type merging, duplicate and conflict reports,
 * and the file written. No I/O but the stream the caller passes in.
 */

#include <json-c/json.h>
#include <ini.h>
#include <stdarg.h>

#include "ananicy.h"
#include "util.h"

/* A rule line of the written file stays below inih's line buffer, which the rule parser refuses to overflow. */
#define LINE_MAX_BYTES (INI_MAX_LINE - 10)
/* The kernel keeps 15 bytes of a command name; longer names are matched by file name. */
#define COMM_MAX 15
/* A name from a rule file is shown with at most this many bytes: a megabyte name must not flood the terminal. */
#define SHOWN(s) (int) strnlen((s), 64), (s)

/* Fields ananicy sets and latnice does not: read, counted, otherwise ignored. */
static const char *const ignored_fields[] = {
        "ioclass", "ionice", "oom_score_adj", "cgroup", "rtprio", "CPUQuota",
};

_Static_assert(ELEMENTSOF(ignored_fields) <= ELEMENTSOF(((AnanicyImport *) NULL)->n_ignored_field),
               "AnanicyImport.n_ignored_field has a counter per ignored field");

size_t ananicy_ignored_field_count(void) {
        return ELEMENTSOF(ignored_fields);
}

static void fields_done(AnanicyFields *f) {
        f->sched = mfree(f->sched);
        f->cmdlines = strv_free(f->cmdlines);
}

static void entry_done(AnanicyEntry *e) {
        free(e->name);
        free(e->type);
        fields_done(&e->f);
}

void ananicy_import_done(AnanicyImport *imp) {
        for (size_t i = 0; i < imp->n_programs; i++)
                entry_done(&imp->programs[i]);
        for (size_t i = 0; i < imp->n_types; i++)
                entry_done(&imp->types[i]);
        for (size_t i = 0; i < imp->n_messages; i++)
                free(imp->messages[i].text);
        free(imp->programs);
        free(imp->types);
        free(imp->messages);
        strv_free(imp->files);
        *imp = (AnanicyImport) {};
}

_printf_(5, 6) static int message(AnanicyImport *imp, AnanicySeverity sev, const char *file, unsigned line,
                                  const char *fmt, ...) {
        AnanicyMessage *m;
        va_list ap;
        int r;

        m = realloc(imp->messages, (imp->n_messages + 1) * sizeof(*m));
        if (!m)
                return -ENOMEM;
        imp->messages = m;
        m = &imp->messages[imp->n_messages];
        *m = (AnanicyMessage) { .severity = sev, .file = file, .line = line, .seq = imp->n_messages };
        va_start(ap, fmt);
        r = vasprintf(&m->text, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        /* A JSON key may hold escapes; the report is one terminal line. */
        for (char *c = m->text; *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                        *c = '?';
        imp->n_messages++;
        if (sev == ANANICY_ERROR)
                imp->n_errors++;
        return 0;
}

/* A name that can stand in a rule: no control bytes (a newline would end the rule line), not empty. */
static bool name_usable(const char *s, size_t len) {
        if (len == 0 || strlen(s) != len)
                return false;
        for (size_t i = 0; i < len; i++)
                if ((unsigned char) s[i] < 0x20 || s[i] == 0x7f)
                        return false;
        return true;
}

static int take_int(AnanicyImport *imp, const char *file, unsigned line, const char *key, json_object *v,
                    bool *has, int *ret) {
        int64_t x;

        if (json_object_get_type(v) != json_type_int)
                return message(imp, ANANICY_ERROR, file, line, "\"%s\" must be a whole number; field ignored", key);
        x = json_object_get_int64(v);
        if (x < -20 || x > 19)
                return message(imp, ANANICY_ERROR, file, line, "\"%s\": %" PRId64 " is outside -20..19; field ignored",
                               key, x);
        *has = true;
        *ret = (int) x;
        return 0;
}

static int take_string(AnanicyImport *imp, const char *file, unsigned line, const char *key, json_object *v,
                       char **ret) {
        if (json_object_get_type(v) != json_type_string ||
            !name_usable(json_object_get_string(v), (size_t) json_object_get_string_len(v)))
                return message(imp, ANANICY_ERROR, file, line,
                               "\"%s\" must be a non-empty string without control characters; field ignored", key);
        free(*ret);
        *ret = strdup(json_object_get_string(v));
        return *ret ? 0 : -ENOMEM;
}

static int take_cmdlines(AnanicyImport *imp, const char *file, unsigned line, json_object *v, char ***ret) {
        size_t n;

        if (json_object_get_type(v) != json_type_array)
                return message(imp, ANANICY_ERROR, file, line,
                               "\"cmdlines\" must be a list of strings; field ignored");
        n = json_object_array_length(v);
        for (size_t i = 0; i < n; i++) {
                json_object *w = json_object_array_get_idx(v, i);

                if (json_object_get_type(w) != json_type_string ||
                    !name_usable(json_object_get_string(w), (size_t) json_object_get_string_len(w))) {
                        *ret = strv_free(*ret);
                        return message(imp, ANANICY_ERROR, file, line,
                                       "\"cmdlines\" must be a list of non-empty strings; field ignored");
                }
                if (strv_extend(ret, json_object_get_string(w)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int entry_append(AnanicyEntry **array, size_t *n, AnanicyEntry *e) {
        AnanicyEntry *a = realloc(*array, (*n + 1) * sizeof(**array));

        if (!a)
                return -ENOMEM;
        *array = a;
        a[(*n)++] = *e;
        *e = (AnanicyEntry) {};
        return 0;
}

/* The object on one line: a program rule ("name"), a type ("type" alone) or a cgroup ("cgroup" alone). */
static int import_object(AnanicyImport *imp, const char *file, unsigned line, json_object *obj) {
        _cleanup_(entry_done) AnanicyEntry e = { .file = file, .line = line };
        json_object *name = NULL, *type = NULL, *cgroup = NULL;
        int r = 0;

        json_object_object_get_ex(obj, "name", &name);
        json_object_object_get_ex(obj, "type", &type);
        json_object_object_get_ex(obj, "cgroup", &cgroup);
        if (!name && !type) {
                if (cgroup) {
                        /* latniced never creates cgroups: systemd owns the tree. */
                        imp->n_cgroups++;
                        return 0;
                }
                return message(imp, ANANICY_ERROR, file, line,
                               "neither \"name\" nor \"type\": not a rule; line ignored");
        }
        if (name) {
                if (json_object_get_type(name) != json_type_string ||
                    !name_usable(json_object_get_string(name), (size_t) json_object_get_string_len(name)))
                        return message(imp, ANANICY_ERROR, file, line,
                                       "\"name\" must be a non-empty string without control characters; line ignored");
                e.name = strdup(json_object_get_string(name));
                if (!e.name)
                        return -ENOMEM;
                if (type) {
                        r = take_string(imp, file, line, "type", type, &e.type);
                        if (r < 0)
                                return r;
                }
        } else {
                r = take_string(imp, file, line, "type", type, &e.name);
                if (r < 0 || !e.name)
                        return r;
        }

        json_object_object_foreach(obj, key, v) {
                bool known = false;

                if (streq_ptr(key, "name") || streq_ptr(key, "type"))
                        continue;
                if (streq_ptr(key, "latency_nice"))
                        r = take_int(imp, file, line, key, v, &e.f.has_latency_nice, &e.f.latency_nice);
                else if (streq_ptr(key, "nice"))
                        r = take_int(imp, file, line, key, v, &e.f.has_nice, &e.f.nice);
                else if (streq_ptr(key, "sched"))
                        r = take_string(imp, file, line, key, v, &e.f.sched);
                else if (streq_ptr(key, "cmdlines") && name)
                        r = take_cmdlines(imp, file, line, v, &e.f.cmdlines);
                else {
                        for (size_t i = 0; i < ELEMENTSOF(ignored_fields); i++)
                                if (streq_ptr(key, ignored_fields[i])) {
                                        imp->n_ignored_field[i]++;
                                        known = true;
                                }
                        if (!known)
                                r = message(imp, ANANICY_WARNING, file, line, "unknown field \"%.*s\" ignored",
                                            SHOWN(key));
                }
                if (r < 0)
                        return r;
        }
        if (e.f.sched && !ananicy_latency_nice(&(AnanicyFields) { .sched = e.f.sched }, &(int) { 0 }) &&
            !streq_ptr(e.f.sched, "other") && !streq_ptr(e.f.sched, "normal")) {
                r = message(imp, ANANICY_WARNING, file, line,
                            "\"sched\": \"%.*s\" is not a policy latnice knows (other, batch, idle, fifo, rr, "
                            "iso); ignored", SHOWN(e.f.sched));
                if (r < 0)
                        return r;
                e.f.sched = mfree(e.f.sched);
        }

        e.order = imp->order++;
        return name ? entry_append(&imp->programs, &imp->n_programs, &e)
                    : entry_append(&imp->types, &imp->n_types, &e);
}

static bool is_comment(const char *p, const char *end) {
        return p == end || *p == '#' || (end - p >= 2 && p[0] == '/' && p[1] == '/');
}

/* What follows the object: nothing, a comma (a line copied out of a JSON array), a '#' or '//' comment. */
static bool rest_is_comment(const char *p, const char *end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
                p++;
        if (p < end && *p == ',')
                p++;
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
                p++;
        return is_comment(p, end);
}

int ananicy_import_buffer(AnanicyImport *imp, const char *file, const char *buf, size_t size) {
        json_tokener *tok;
        const char *stored;
        unsigned line = 0;
        int r = 0;

        if (strv_extend(&imp->files, file) < 0)
                return -ENOMEM;
        stored = imp->files[imp->n_files++];
        tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;

        for (const char *p = buf, *end = buf + size; p < end && r >= 0;) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *eol = nl ? nl : end, *s = p;
                json_object *obj;

                line++;
                p = nl ? nl + 1 : end;
                /* A UTF-8 byte order mark (editors on Windows write one): ananicy-cpp reads past it. */
                if (line == 1 && eol - s >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0)
                        s += 3;
                while (s < eol && (*s == ' ' || *s == '\t' || *s == '\r'))
                        s++;
                if (is_comment(s, eol))
                        continue;
                imp->n_lines++;
                if (*s != '{') {
                        r = message(imp, ANANICY_ERROR, stored, line,
                                    "not a JSON object ('{' expected); line ignored");
                        continue;
                }
                json_tokener_reset(tok);
                /* As ananicy-cpp reads a line: the object ends at its first '}' (the rules' objects are flat;
                 * a '}' inside a string ends it early there, and is a broken line here). What follows is
                 * checked below, without json-c's own comment syntax running to the end of the line. */
                {
                        const char *close = memchr(s, '}', (size_t) (eol - s));

                        obj = json_tokener_parse_ex(tok, s, (int) ((close ? close + 1 : eol) - s));
                }
                if (!obj) {
                        enum json_tokener_error err = json_tokener_get_error(tok);

                        r = message(imp, ANANICY_ERROR, stored, line, "broken JSON: %s; line ignored",
                                    err == json_tokener_continue ? "the object does not end on this line"
                                                                 : json_tokener_error_desc(err));
                        continue;
                }
                if (json_object_get_type(obj) != json_type_object)
                        r = message(imp, ANANICY_ERROR, stored, line, "not a JSON object; line ignored");
                else if (!rest_is_comment(s + json_tokener_get_parse_end(tok), eol))
                        r = message(imp, ANANICY_ERROR, stored, line, "text after the object; line ignored");
                else
                        r = import_object(imp, stored, line, obj);
                json_object_put(obj);
        }
        json_tokener_free(tok);
        return r < 0 ? r : 0;
}

bool ananicy_latency_nice(const AnanicyFields *f, int *ret) {
        static const struct {
                const char *sched;
                int value;
        } by_sched[] = {
                /* "I can wait": SCHED_IDLE is the far end, SCHED_BATCH half way. */
                { "idle", 19 },
                { "batch", 10 },
                /* Realtime asks for prompt wakeups; latnice gives no realtime priority, only the hint. */
                { "fifo", -15 },
                { "rr", -15 },
                { "iso", -15 },
        };

        /* ananicy-cpp's own rule: latency_nice, else nice. */
        if (f->has_latency_nice) {
                *ret = f->latency_nice;
                return true;
        }
        if (f->has_nice) {
                *ret = f->nice;
                return true;
        }
        for (size_t i = 0; f->sched && i < ELEMENTSOF(by_sched); i++)
                if (streq_ptr(f->sched, by_sched[i].sched)) {
                        *ret = by_sched[i].value;
                        return true;
                }
        return false;
}

int ananicy_word_escape(const char *word, char **buf, size_t *len) {
        size_t n = strlen(word);
        char *b = realloc(*buf, *len + 2 * n + 1), *o;

        if (!b)
                return -ENOMEM;
        *buf = b;
        o = b + *len;
        for (const char *p = word; *p; p++) {
                /* Quotes, blanks, comment starts and backslashes are taken by the word splitter; the
                 * glob characters stay escaped, so fnmatch() compares them as themselves. */
                if (strchr("\"'\\ \t;#*?[", *p))
                        *o++ = '\\';
                *o++ = *p;
        }
        *o = 0;
        *len = (size_t) (o - b);
        return 0;
}

/* ---- resolving ------------------------------------------------------- */

/* Orders argv word lists word by word; a list sorts before its own extensions, no list before any. */
static int cmdlines_compare(char * const *a, char * const *b) {
        bool more_a, more_b;

        for (;; a++, b++) {
                int c;

                more_a = a && *a;
                more_b = b && *b;
                if (!more_a || !more_b)
                        return more_a - more_b;
                c = strcmp(*a, *b);
                if (c != 0)
                        return c;
        }
}

static int entry_compare(const void *a, const void *b) {
        const AnanicyEntry *x = a, *y = b;
        int c = strcmp(x->name, y->name);

        if (c == 0)
                c = cmdlines_compare(x->f.cmdlines, y->f.cmdlines);
        if (c == 0)
                c = x->order < y->order ? -1 : x->order > y->order;
        return c;
}

static bool fields_equal(const AnanicyFields *a, const AnanicyFields *b) {
        int va = 0, vb = 0;
        bool ha = ananicy_latency_nice(a, &va), hb = ananicy_latency_nice(b, &vb);

        return ha == hb && va == vb;
}

static bool same_key(const AnanicyEntry *a, const AnanicyEntry *b) {
        return streq_ptr(a->name, b->name) && cmdlines_compare(a->f.cmdlines, b->f.cmdlines) == 0;
}

/* Sorts by key and keeps the last definition of each, as ananicy-cpp's map does; reports the others. */
static int dedupe(AnanicyImport *imp, AnanicyEntry *a, size_t *n, const char *what) {
        size_t out = 0;
        int r;

        if (*n == 0)
                return 0;
        qsort(a, *n, sizeof(*a), entry_compare);
        for (size_t i = 0; i < *n; i++) {
                if (i + 1 < *n && same_key(&a[i], &a[i + 1])) {
                        const AnanicyEntry *later = &a[i + 1];

                        /* Same type and same value: a harmless repeat; otherwise a conflict worth a look. */
                        if (fields_equal(&a[i].f, &later->f) && streq_ptr(a[i].type, later->type))
                                r = message(imp, ANANICY_WARNING, later->file, later->line,
                                            "%s \"%.*s\" repeats %s:%u", what, SHOWN(later->name), a[i].file,
                                            a[i].line);
                        else
                                r = message(imp, ANANICY_WARNING, later->file, later->line,
                                            "%s \"%.*s\" is also defined at %s:%u, differently; the later one "
                                            "is used, as ananicy does", what, SHOWN(later->name), a[i].file,
                                            a[i].line);
                        if (r < 0)
                                return r;
                        imp->n_replaced++;
                        entry_done(&a[i]);
                        continue;
                }
                a[out++] = a[i];
        }
        *n = out;
        return 0;
}

static const AnanicyEntry *type_find(const AnanicyImport *imp, const char *name) {
        size_t lo = 0, hi = imp->n_types;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                int c = strcmp(name, imp->types[mid].name);

                if (c == 0)
                        return &imp->types[mid];
                if (c < 0)
                        hi = mid;
                else
                        lo = mid + 1;
        }
        return NULL;
}

/* One program as it will be written: the section it goes to and how it is matched. */
typedef struct Placed {
        const AnanicyEntry *e;
        const char *type;  /* its known type, or NULL */
        int value;
        bool type_value;   /* the type's own value (not one the program sets itself) */
        bool by_exe;       /* longer than a command name: Exe= with the file name */
} Placed;

static int placed_compare(const void *a, const void *b) {
        const Placed *x = a, *y = b;
        int c;

        /* Rules with argv words first: they are narrower than a plain name rule for the same program. */
        c = (y->e->f.cmdlines != NULL) - (x->e->f.cmdlines != NULL);
        if (c == 0)
                c = (x->type == NULL) - (y->type == NULL);
        if (c == 0 && x->type && y->type)
                c = strcmp(x->type, y->type);
        if (c == 0)
                c = (y->type_value) - (x->type_value);
        if (c == 0)
                c = x->value - y->value;
        if (c == 0)
                c = x->by_exe - y->by_exe;
        if (c == 0)
                c = strcmp(x->e->name, y->e->name);
        return c;
}

static bool same_section(const Placed *a, const Placed *b) {
        return !a->e->f.cmdlines && !b->e->f.cmdlines && streq_ptr(a->type, b->type) &&
               a->type_value == b->type_value && a->value == b->value && a->by_exe == b->by_exe;
}

/* Writes "Key=word word ..." lines, wrapped below the line limit; repeated keys add to the list. */
typedef struct KeyWriter {
        FILE *f;
        const char *key;
        char *line;
        size_t len, used;
} KeyWriter;

static void key_writer_flush(KeyWriter *w) {
        if (w->used > 0)
                fprintf(w->f, "%s=%s\n", w->key, w->line);
        w->used = 0;
}

static int key_writer_add(KeyWriter *w, const char *word) {
        _cleanup_(freep) char *esc = NULL;
        size_t elen = 0;
        char *b;
        int r;

        r = ananicy_word_escape(word, &esc, &elen);
        if (r < 0)
                return r;
        if (w->used > 0 && strlen(w->key) + 1 + w->used + 1 + elen > LINE_MAX_BYTES)
                key_writer_flush(w);
        b = realloc(w->line, w->used + elen + 2);
        if (!b)
                return -ENOMEM;
        w->line = b;
        if (w->used > 0)
                b[w->used++] = ' ';
        memcpy(b + w->used, esc, elen + 1);
        w->used += elen;
        return 0;
}

static size_t escaped_len(const char *s) {
        size_t n = 0;

        for (; *s; s++)
                n += strchr("\"'\\ \t;#*?[", *s) ? 2 : 1;
        return n;
}

/* Every word must fit on a line of its own after "Cmdline=" (the longest key used). */
static bool words_fit(const AnanicyEntry *e) {
        if (escaped_len(e->name) + strlen("Cmdline=") > LINE_MAX_BYTES)
                return false;
        for (char **c = e->f.cmdlines; c && *c; c++)
                if (escaped_len(*c) + strlen("Cmdline=") > LINE_MAX_BYTES)
                        return false;
        return true;
}

/* Section names are unique: one section per type, value and key. */
static void section_name(const Placed *p, size_t index, char *buf, size_t size) {
        const char *exe = p->by_exe ? " by file name" : "";

        /* A bracket would end the section header; such a type is named by its position. */
        if (p->type && strpbrk(p->type, "[]"))
                snprintf(buf, size, "ananicy rule %zu", index);
        else if (p->e->f.cmdlines)
                snprintf(buf, size, "ananicy %s with arguments %zu", p->e->name, index);
        else if (p->type && p->type_value)
                snprintf(buf, size, "ananicy %s%s", p->type, exe);
        else if (p->type)
                snprintf(buf, size, "ananicy %s, own value %d%s", p->type, p->value, exe);
        else
                snprintf(buf, size, "ananicy untyped, value %d%s", p->value, exe);
}

static void section_comment(FILE *f, const Placed *p, const AnanicyEntry *type) {
        if (p->type && p->type_value)
                fprintf(f, "# type %s (%s:%u)", p->type, type->file, type->line);
        else if (p->e->f.cmdlines)
                fprintf(f, "# %s:%u", p->e->file, p->e->line);
        else
                fprintf(f, "# programs%s%s that set their own value", p->type ? " of type " : "",
                        p->type ? p->type : "");
        if (p->by_exe)
                fprintf(f, "; names longer than the kernel's 15-byte command name, matched by file name");
        fputc('\n', f);
}

int ananicy_import_write(AnanicyImport *imp, const char *source, FILE *f, size_t *ret_rules, size_t *ret_names) {
        _cleanup_(freep) Placed *placed = NULL;
        size_t n_placed = 0, n_rules = 0;
        KeyWriter w = { .f = f };
        int r;

        r = dedupe(imp, imp->types, &imp->n_types, "type");
        if (r < 0)
                return r;
        r = dedupe(imp, imp->programs, &imp->n_programs, "program");
        if (r < 0)
                return r;

        placed = calloc(imp->n_programs ? imp->n_programs : 1, sizeof(*placed));
        if (!placed)
                return -ENOMEM;
        for (size_t i = 0; i < imp->n_programs; i++) {
                const AnanicyEntry *e = &imp->programs[i], *t = NULL;
                AnanicyFields merged = e->f;
                int tv = 0, v;
                bool has_tv = false;

                if (e->type) {
                        t = type_find(imp, e->type);
                        if (!t) {
                                r = message(imp, ANANICY_WARNING, e->file, e->line,
                                            "\"%.*s\": type \"%.*s\" is not defined in any .types file; only "
                                            "the rule's own fields count", SHOWN(e->name), SHOWN(e->type));
                                if (r < 0)
                                        return r;
                        }
                }
                if (t) {
                        /* The rule's own fields replace the type's, field by field. */
                        has_tv = ananicy_latency_nice(&t->f, &tv);
                        if (!merged.has_latency_nice && t->f.has_latency_nice) {
                                merged.has_latency_nice = true;
                                merged.latency_nice = t->f.latency_nice;
                        }
                        if (!merged.has_nice && t->f.has_nice) {
                                merged.has_nice = true;
                                merged.nice = t->f.nice;
                        }
                        if (!merged.sched)
                                merged.sched = t->f.sched;
                }
                if (!ananicy_latency_nice(&merged, &v)) {
                        imp->n_no_value++;
                        continue;
                }
                if (strlen(e->name) > COMM_MAX && strchr(e->name, '/')) {
                        r = message(imp, ANANICY_ERROR, e->file, e->line,
                                    "\"%.*s\" is longer than a command name and has a '/', so it is no file name "
                                    "either; rule ignored", SHOWN(e->name));
                        if (r < 0)
                                return r;
                        continue;
                }
                if (!words_fit(e)) {
                        r = message(imp, ANANICY_ERROR, e->file, e->line,
                                    "\"%.*s\": the name or an argument word is too long for a rule line; rule ignored",
                                    SHOWN(e->name));
                        if (r < 0)
                                return r;
                        continue;
                }
                placed[n_placed++] = (Placed) {
                        .e = e,
                        .type = t ? t->name : NULL,
                        .value = v,
                        .type_value = t && has_tv && tv == v,
                        .by_exe = strlen(e->name) > COMM_MAX,
                };
        }
        qsort(placed, n_placed, sizeof(*placed), placed_compare);

        fprintf(f, "# Imported from the ananicy rules in %s by latnicectl import-ananicy.\n"
                   "# Latency nice: the rule's or its type's latency_nice, else nice (as ananicy-cpp sets it),\n"
                   "# else sched: idle 19, batch 10, fifo/rr/iso -15. Not imported (latnice sets none of\n"
                   "# them): ioclass, ionice, oom_score_adj, cgroup, rtprio, .cgroups files.\n",
                source);
        for (size_t i = 0; i < n_placed; i++) {
                const Placed *p = &placed[i];
                char name[256];

                if (i > 0 && same_section(&placed[i - 1], p)) {
                        r = key_writer_add(&w, p->e->name);
                        if (r < 0)
                                goto fail;
                        continue;
                }
                key_writer_flush(&w);
                if (i > 0)
                        fprintf(f, "LatencyNice=%d\n", placed[i - 1].value);
                fputc('\n', f);
                section_comment(f, p, p->type ? type_find(imp, p->type) : NULL);
                section_name(p, n_rules + 1, name, sizeof(name));
                fprintf(f, "[Process %s]\n", name);
                n_rules++;
                if (p->e->f.cmdlines) {
                        w.key = "Cmdline";
                        for (char **c = p->e->f.cmdlines; *c; c++) {
                                r = key_writer_add(&w, *c);
                                if (r < 0)
                                        goto fail;
                        }
                        key_writer_flush(&w);
                }
                w.key = p->by_exe ? "Exe" : "Comm";
                r = key_writer_add(&w, p->e->name);
                if (r < 0)
                        goto fail;
        }
        key_writer_flush(&w);
        if (n_placed > 0)
                fprintf(f, "LatencyNice=%d\n", placed[n_placed - 1].value);
        free(w.line);
        if (ret_rules)
                *ret_rules = n_rules;
        if (ret_names)
                *ret_names = n_placed;
        return ferror(f) ? -EIO : 0;
fail:
        free(w.line);
        return r;
}
