/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Rule parsing, pure: buffers in, a RuleSet out (rules-load.c reads the
 * files). inih splits lines into sections and Key=Value pairs; a line
 * reader of our own feeds it, so that we know the line number of every
 * callback, see section headers (also empty ones), strip indentation (inih
 * would otherwise take an indented line as the continuation of the previous
 * value) and report every malformed line, not only the first. A rule with
 * any error is dropped whole: half a rule could match far more than meant.
 */

#include <stdarg.h>
#include <ini.h>

#include "foreground.h"
#include "latnice/uapi.h"
#include "rules-parse.h"
#include "string-table.h"
#include "util.h"

#ifndef LATNICE_VENDOR_RULE_DIR
#define LATNICE_VENDOR_RULE_DIR "/usr/lib/latnice.d"
#endif

const char * const rule_dirs[] = {
        "/etc/latnice.d",
        "/run/latnice.d",
        LATNICE_VENDOR_RULE_DIR,
        NULL,
};

static const char * const match_key_table[_MATCH_KEY_MAX] = {
        [MATCH_COMM] = "Comm",
        [MATCH_EXE] = "Exe",
        [MATCH_CMDLINE] = "Cmdline",
        [MATCH_PARENT] = "Parent",
        [MATCH_USER] = "User",
        [MATCH_GROUP] = "Group",
        [MATCH_CGROUP] = "Cgroup",
        [MATCH_UNIT] = "Unit",
        [MATCH_ANCESTOR] = "Ancestor",
        [MATCH_APP] = "App",
        [MATCH_THREAD] = "Thread",
};

static const char * const rule_kind_table[_RULE_KIND_MAX] = {
        [RULE_PROCESS] = "Process",
        [RULE_UNIT] = "Unit",
};

static const char * const threads_mode_table[_THREADS_MODE_MAX] = {
        [THREADS_ALL] = "all",
        [THREADS_MAIN] = "main",
};

static const char * const conf_file_state_table[] = {
        [CONF_FILE_ACTIVE] = "active",
        [CONF_FILE_HIDDEN] = "hidden",
        [CONF_FILE_MASKED] = "masked",
        [CONF_FILE_BROKEN] = "broken",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(match_key, MatchKey);
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(rule_kind, RuleKind);
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(threads_mode, ThreadsMode);
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(conf_file_state, ConfFileState);

char *rule_format_key(const Rule *rule, MatchKey k) {
        _cleanup_(freep) char *v = NULL;
        char *s;

        if (!rule_match(rule, k))
                return NULL;
        v = strv_join(rule_match(rule, k), " ");
        if (!v || asprintf(&s, "%s=%s", match_key_to_string(k), v) < 0)
                return NULL;
        return s;
}

void rule_format_ref(const Rule *rule, char *buf, size_t size) {
        snprintf(buf, size, "[%s %s] %s:%u", rule_kind_to_string(rule->kind), rule->name, rule->file, rule->line);
}

void rule_error_format(const RuleError *e, char *buf, size_t size) {
        if (e->file && e->line > 0)
                snprintf(buf, size, "%s:%u: %s", e->file, e->line, e->message);
        else if (e->file)
                snprintf(buf, size, "%s: %s", e->file, e->message);
        else
                snprintf(buf, size, "%s", e->message);
}

/*
 * The arena: names and values of a set's rules, copied in once a rule is
 * complete, freed with the set. A malloc() per value would cost more than
 * the value itself with tens of thousands of rules.
 */
struct RuleArena {
        RuleArena *next;
        size_t used, size;
        _Alignas(max_align_t) char data[];
};

#define RULE_ARENA_BLOCK (64 * 1024 - 64)

static void *arena_alloc(RuleSet *s, size_t size, size_t align) {
        RuleArena *a = s->arena;
        size_t at;

        at = a ? (a->used + align - 1) & ~(align - 1) : 0;
        if (!a || at + size > a->size) {
                size_t bs = size > RULE_ARENA_BLOCK / 4 ? size : RULE_ARENA_BLOCK;

                a = malloc(sizeof(RuleArena) + bs);
                if (!a)
                        return NULL;
                a->size = bs;
                a->used = 0;
                if (bs == size && s->arena) {
                        /* A big one goes behind the current block, which stays open for small ones. */
                        a->next = s->arena->next;
                        s->arena->next = a;
                } else {
                        a->next = s->arena;
                        s->arena = a;
                }
                at = 0;
        }
        a->used = at + size;
        return a->data + at;
}

static char *arena_strdup(RuleSet *s, const char *str) {
        size_t l = strlen(str) + 1;
        char *p = arena_alloc(s, l, 1);

        if (p)
                memcpy(p, str, l);
        return p;
}

RuleSet *rule_set_free(RuleSet *s) {
        if (!s)
                return NULL;
        free(s->rules);
        for (RuleArena *a = s->arena, *n; a; a = n) {
                n = a->next;
                free(a);
        }
        for (size_t i = 0; i < s->n_files; i++) {
                free(s->files[i].path);
                free(s->files[i].shown);
        }
        free(s->files);
        for (size_t i = 0; i < s->n_errors; i++) {
                free(s->errors[i].file);
                free(s->errors[i].message);
        }
        free(s->errors);
        free(s->profile);
        free(s);
        return NULL;
}

int rule_set_add_error(RuleSet *s, const char *file, unsigned line, const char *fmt, ...) {
        RuleError *e;
        va_list ap;
        int r;

        r = array_grow((void **) &s->errors, &s->alloc_errors, s->n_errors, sizeof(RuleError));
        if (r < 0)
                return r;
        e = &s->errors[s->n_errors];
        *e = (RuleError) { .line = line };
        if (file) {
                e->file = strdup(file);
                if (!e->file)
                        return -ENOMEM;
        }
        va_start(ap, fmt);
        r = vasprintf(&e->message, fmt, ap);
        va_end(ap);
        if (r < 0) {
                free(e->file);
                return -ENOMEM;
        }
        s->n_errors++;
        return 0;
}

/* ---- line reader ------------------------------------------------------ */

/*
 * inih's line buffer in Debian's build is INI_MAX_LINE (200) bytes with no
 * realloc: a longer line would be cut and its tail parsed as a line of its
 * own. The reader refuses such lines itself.
 */
typedef struct LineReader {
        const char *pos, *end;
        unsigned line;
        /* Called for every line before inih sees it; returns false to hide the line from inih. */
        bool (*on_line)(void *userdata, char *line, size_t len, int max);
        void *userdata;
} LineReader;

static char *line_reader_next(char *str, int num, void *stream) {
        LineReader *lr = stream;
        const char *nl, *start;
        size_t len;

        if (lr->pos >= lr->end)
                return NULL;

        nl = memchr(lr->pos, '\n', (size_t) (lr->end - lr->pos));
        start = lr->pos;
        len = nl ? (size_t) (nl - start) : (size_t) (lr->end - start);
        lr->pos = nl ? nl + 1 : lr->end;
        lr->line++;

        /* Indentation is allowed and has no meaning. */
        while (len > 0 && (*start == ' ' || *start == '\t')) {
                start++;
                len--;
        }
        while (len > 0 && (start[len - 1] == '\r' || start[len - 1] == ' ' || start[len - 1] == '\t'))
                len--;

        if (len + 2 > (size_t) num) {
                /* Too long for inih: tell the owner, give inih a comment. */
                lr->on_line(lr->userdata, NULL, len, num - 2);
                strcpy(str, ";\n");
                return str;
        }
        memcpy(str, start, len);
        str[len] = '\n';
        str[len + 1] = 0;
        if (!lr->on_line(lr->userdata, str, len, num - 2))
                strcpy(str, ";\n");
        return str;
}

/* ---- rule files ------------------------------------------------------- */

typedef struct ParseContext {
        RuleSet *set;
        const char *file;   /* shown path */
        size_t first_rule;  /* index of this file's first rule in set */
        LineReader reader;
        Rule cur;           /* the section being read; its name and values are still malloc()ed: */
        char *cur_name;
        char **cur_match[_MATCH_KEY_MAX];
        bool in_section;    /* cur is a section being filled */
        bool cur_bad;       /* cur had an error: drop it at the end */
        bool cur_has_ln;
        int oom;
} ParseContext;

_printf_(3, 4)
static void parse_error(ParseContext *c, unsigned line, const char *fmt, ...) {
        _cleanup_(freep) char *m = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&m, fmt, ap) < 0)
                m = NULL;
        va_end(ap);
        if (!m || rule_set_add_error(c->set, c->file, line, "%s", m) < 0)
                c->oom = -ENOMEM;
        c->cur_bad = true;
}

static void parse_cur_done(ParseContext *c) {
        c->cur_name = mfree(c->cur_name);
        for (size_t k = 0; k < _MATCH_KEY_MAX; k++)
                c->cur_match[k] = strv_free(c->cur_match[k]);
        c->cur = (Rule) {};
}

/* The complete rule into the set: name and values into the arena, the keys packed. */
static int parse_freeze(ParseContext *c, Rule *ret) {
        RuleSet *s = c->set;
        size_t n = 0;
        char **p;

        *ret = c->cur;
        ret->keys = 0;
        for (size_t k = 0; k < _MATCH_KEY_MAX; k++)
                if (c->cur_match[k]) {
                        ret->keys |= 1U << k;
                        n += strv_length(c->cur_match[k]) + 1;
                }
        ret->name = arena_strdup(s, c->cur_name);
        p = arena_alloc(s, n * sizeof(char *), _Alignof(char *));
        if (!ret->name || !p)
                return -ENOMEM;
        ret->values = p;
        for (size_t k = 0; k < _MATCH_KEY_MAX; k++) {
                if (!c->cur_match[k])
                        continue;
                for (char **v = c->cur_match[k]; *v; v++) {
                        *p = arena_strdup(s, *v);
                        if (!*p)
                                return -ENOMEM;
                        p++;
                }
                *p++ = NULL;
        }
        return 0;
}

static void parse_finish_section(ParseContext *c) {
        Rule *rule = &c->cur;
        bool any = false;
        int r;

        if (!c->in_section)
                return;
        c->in_section = false;

        if (!c->cur_bad) {
                if (rule->kind == RULE_UNIT && !c->cur_match[MATCH_UNIT]) {
                        /* [Unit game.slice] names its unit (or glob) in the section. */
                        if (strv_extend(&c->cur_match[MATCH_UNIT], c->cur_name) < 0)
                                c->oom = -ENOMEM;
                }
                for (size_t k = 0; k < _MATCH_KEY_MAX; k++)
                        if (c->cur_match[k])
                                any = true;
                if (!any)
                        parse_error(c, rule->line,
                                    "[%s %s] has no match keys (Comm=, Exe=, Cmdline=, Parent=, User=, Group=, "
                                    "Cgroup=, Unit=, Thread=): it would match every process; rule ignored",
                                    rule_kind_to_string(rule->kind), c->cur_name);
                else if (c->cur_match[MATCH_THREAD] && rule->threads == THREADS_MAIN)
                        parse_error(c, rule->line,
                                    "[%s %s] has both Thread= and Threads=main: Thread= chooses the threads itself; "
                                    "drop Threads=main (or Thread=); rule ignored",
                                    rule_kind_to_string(rule->kind), c->cur_name);
                else if (!c->cur_has_ln)
                        parse_error(c, rule->line, "[%s %s] has no LatencyNice= setting; rule ignored",
                                    rule_kind_to_string(rule->kind), c->cur_name);
        }

        if (c->cur_bad || c->oom < 0) {
                parse_cur_done(c);
                return;
        }

        r = array_grow((void **) &c->set->rules, &c->set->alloc_rules, c->set->n_rules, sizeof(Rule));
        if (r >= 0)
                r = parse_freeze(c, &c->set->rules[c->set->n_rules]);
        if (r < 0)
                c->oom = r;
        else
                c->set->n_rules++;
        parse_cur_done(c);
}

static void parse_begin_section(ParseContext *c, char *line, size_t len) {
        char *close, *sp, *name;
        RuleKind kind;

        parse_finish_section(c);
        c->in_section = true;
        c->cur_bad = false;
        c->cur_has_ln = false;
        parse_cur_done(c);
        c->cur = (Rule) {
                .file = c->file,
                .line = c->reader.line,
                .latency_nice = 0,
                .threads = THREADS_ALL,
        };

        close = memchr(line, ']', len);
        if (!close) {
                parse_error(c, c->reader.line, "section header without closing ']'; section ignored");
                return;
        }
        if ((size_t) (close - line) + 1 != len) {
                parse_error(c, c->reader.line, "text after the section header's ']'; section ignored");
                return;
        }
        *close = 0;
        name = line + 1;
        sp = strpbrk(name, " \t");
        if (sp) {
                *sp = 0;
                sp++;
                sp += strspn(sp, " \t");
                for (size_t l = strlen(sp); l > 0 && (sp[l - 1] == ' ' || sp[l - 1] == '\t'); l--)
                        sp[l - 1] = 0;
        }

        if (strcmp(name, "Process") == 0)
                kind = RULE_PROCESS;
        else if (strcmp(name, "Unit") == 0)
                kind = RULE_UNIT;
        else {
                parse_error(c, c->reader.line,
                            "unknown section kind '[%s]': expected [Process NAME] or [Unit NAME]; section ignored",
                            name);
                return;
        }
        c->cur.kind = kind;
        if (isempty(sp)) {
                parse_error(c, c->reader.line, "section [%s] has no name: write [%s NAME]; section ignored", name,
                            name);
                return;
        }
        /* Names may carry spaces ([Process Zup! 5]): they are shown as written, between the brackets. */
        for (const char *p = sp; *p; p++)
                if ((unsigned char) *p < ' ' || *p == 0x7f) {
                        parse_error(c, c->reader.line,
                                    "section name '%s' contains a tab or a control character: name the rule with "
                                    "letters, digits, spaces and punctuation, e.g. [%s %s]; section ignored",
                                    sp, rule_kind_to_string(kind), "My Game");
                        return;
                }
        c->cur_name = strdup(sp);
        if (!c->cur_name)
                c->oom = -ENOMEM;
}

static bool parse_on_line(void *userdata, char *line, size_t len, int max) {
        ParseContext *c = userdata;

        if (!line) {
                parse_error(c, c->reader.line,
                            "line is longer than %d characters; split values over several Key= lines", max);
                return false;
        }
        if (len == 0 || line[0] == ';' || line[0] == '#')
                return true;
        if (line[0] == '[') {
                parse_begin_section(c, line, len);
                return false; /* inih need not track sections: we do */
        }
        if (!memchr(line, '=', len)) {
                parse_error(c, c->reader.line, "expected Key=Value, got '%.*s'", (int) (len > 40 ? 40 : len), line);
                return false;
        }
        return true;
}

static int parse_words(ParseContext *c, const char *key, const char *value, char ***list, MatchKey k) {
        _cleanup_(strv_freep) char **words = NULL;
        const char *why = NULL;
        int r;

        if (isempty(value)) {
                /* Empty assignment resets the list, as in systemd unit files. */
                *list = strv_free(*list);
                return 0;
        }
        r = strv_split_quoted(value, &words, &why);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                parse_error(c, c->reader.line, "%s=%s: %s", key, value, why);
                return 0;
        }
        for (char **w = words; w && *w; w++) {
                size_t l = strlen(*w);

                if (k == MATCH_THREAD && l > 15 && !string_is_glob(*w)) {
                        /* pthread_setname_np() takes at most 15 bytes as well. */
                        parse_error(c, c->reader.line,
                                    "Thread=\"%s\" can never match: it is %zu bytes and the kernel keeps only the "
                                    "first 15 bytes of a thread name", *w, l);
                        continue;
                }
                if (k == MATCH_COMM && l > 15 && !string_is_glob(*w)) {
                        /* The kernel keeps 15 bytes, not characters: "Zup! 5.exe" fits, many UTF-8 names do not. */
                        parse_error(c, c->reader.line,
                                    "Comm=\"%s\" can never match: it is %zu bytes and the kernel keeps only the first "
                                    "15 bytes of a command name; use Exe=\"%s\" (the file name) instead", *w, l, *w);
                        continue;
                }
                if (k == MATCH_ANCESTOR && strchr(*w, '/') && (*w)[0] != '/') {
                        parse_error(c, c->reader.line,
                                    "Ancestor=%s must be a name (command or file name) or an absolute path", *w);
                        continue;
                }
                if (k == MATCH_APP && (l > 255 || strspn(*w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                                 "0123456789._-*?[]") != l)) {
                        parse_error(c, c->reader.line,
                                    "App=%s is not an application ID: letters, digits, '.', '_' and '-' (and globs), "
                                    "at most 255 bytes, e.g. App=com.valvesoftware.Steam or App=firefox", *w);
                        continue;
                }
                if ((k == MATCH_CGROUP) && (*w)[0] != '/' && !string_is_glob(*w)) {
                        parse_error(c, c->reader.line, "%s=%s must be an absolute cgroup path or a glob", key, *w);
                        continue;
                }
                if (strv_extend(list, *w) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* A yes/no key (Inherit=, Override=): *ret takes the value, or the line gets the error. */
static void parse_boolean_key(ParseContext *c, unsigned line, const char *key, const char *value, bool *ret) {
        int r;

        r = parse_boolean(value);
        if (r < 0)
                parse_error(c, line, "%s=%s is not a boolean; expected yes or no", key, value);
        else
                *ret = r;
}

static int parse_handler(void *userdata, const char *section, const char *key, const char *value) {
        ParseContext *c = userdata;
        unsigned line = c->reader.line;
        Rule *rule = &c->cur;
        int v, r;

        (void) section;

        if (!c->in_section) {
                parse_error(c, line, "%s= outside of any section; expected [Process NAME] or [Unit NAME] first", key);
                c->cur_bad = false; /* no rule to drop */
                return 1;
        }
        if (!c->cur_name)
                return 1; /* the header was bad and has been reported */

        for (MatchKey k = 0; k < _MATCH_KEY_MAX; k++) {
                if (strcmp(key, match_key_table[k]) != 0)
                        continue;
                if (rule->kind == RULE_UNIT && k != MATCH_UNIT) {
                        parse_error(c, line, "%s= is not valid in a [Unit] rule (only Unit=); use a [Process] rule",
                                    key);
                        return 1;
                }
                r = parse_words(c, key, value, &c->cur_match[k], k);
                if (r < 0)
                        c->oom = r;
                return c->oom < 0 ? 0 : 1;
        }

        if (strcmp(key, "LatencyNice") == 0) {
                r = safe_atoi(value, &v);
                if (r == -EINVAL)
                        parse_error(c, line, "LatencyNice=%s is not a number; expected an integer from %d to %d",
                                    value, -20, 19);
                else if (r < 0 || v < -20 || v > 19)
                        parse_error(c, line, "LatencyNice=%s is out of range; expected an integer from %d to %d",
                                    value, -20, 19);
                else {
                        rule->latency_nice = v;
                        c->cur_has_ln = true;
                }
        } else if (strcmp(key, "Threads") == 0) {
                if (strcmp(value, "all") == 0)
                        rule->threads = THREADS_ALL;
                else if (strcmp(value, "main") == 0)
                        rule->threads = THREADS_MAIN;
                else
                        parse_error(c, line, "Threads=%s is invalid; expected 'all' or 'main'", value);
        } else if (strcmp(key, "Inherit") == 0)
                parse_boolean_key(c, line, key, value, &rule->inherit);
        else if (strcmp(key, "Override") == 0)
                parse_boolean_key(c, line, key, value, &rule->override);
        else {
                const char *hint = NULL;
                static const char * const actions[] = { "LatencyNice", "Threads", "Override", "Inherit" };

                for (size_t k = 0; k < _MATCH_KEY_MAX; k++)
                        if (strcasecmp(key, match_key_table[k]) == 0)
                                hint = match_key_table[k];
                for (size_t k = 0; k < ELEMENTSOF(actions); k++)
                        if (strcasecmp(key, actions[k]) == 0)
                                hint = actions[k];
                if (hint)
                        parse_error(c, line, "unknown key '%s' (keys are case-sensitive: did you mean '%s'?)", key,
                                    hint);
                else
                        parse_error(c, line, "unknown key '%s'", key);
        }
        return c->oom < 0 ? 0 : 1;
}

static int rule_ptr_compare(const void *a, const void *b) {
        const Rule *x = *(const Rule * const *) a, *y = *(const Rule * const *) b;
        int d;

        if (x->kind != y->kind)
                return x->kind < y->kind ? -1 : 1;
        d = strcmp(x->name, y->name);
        if (d != 0)
                return d;
        return x->line < y->line ? -1 : x->line > y->line;
}

/*
 * Duplicate sections within one file are an error (the second is dropped):
 * they are almost always a copy-paste slip. Sorting keeps this O(n log n)
 * even for files with thousands of rules.
 */
static int drop_duplicate_sections(ParseContext *c) {
        RuleSet *s = c->set;
        size_t n = s->n_rules - c->first_rule, w;
        _cleanup_(freep) Rule **v = NULL;
        _cleanup_(freep) bool *drop = NULL;
        bool any = false;

        if (n < 2)
                return 0;
        v = calloc(n, sizeof(Rule *));
        drop = calloc(n, sizeof(bool));
        if (!v || !drop)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                v[i] = &s->rules[c->first_rule + i];
        qsort(v, n, sizeof(Rule *), rule_ptr_compare);
        for (size_t i = 1; i < n; i++) {
                size_t j = i;

                if (v[i]->kind != v[i - 1]->kind || strcmp(v[i]->name, v[i - 1]->name) != 0)
                        continue;
                /* v[i-1] is the first of the run (sorted by line). */
                while (j > 0 && v[j - 1]->kind == v[i]->kind && strcmp(v[j - 1]->name, v[i]->name) == 0)
                        j--;
                if (rule_set_add_error(s, c->file, v[i]->line,
                                       "duplicate section [%s %s], first defined at line %u; this one is ignored",
                                       rule_kind_to_string(v[i]->kind), v[i]->name, v[j]->line) < 0)
                        return -ENOMEM;
                drop[v[i] - &s->rules[c->first_rule]] = true;
                any = true;
        }
        if (!any)
                return 0;
        w = c->first_rule;
        for (size_t i = 0; i < n; i++) {
                Rule *rule = &s->rules[c->first_rule + i];

                if (!drop[i])
                        s->rules[w++] = *rule; /* a dropped one's strings stay in the arena until the set goes */
        }
        s->n_rules = w;
        return 0;
}

static int parse_buffer(RuleSet *s, const char *shown, const char *buf, size_t size) {
        ParseContext c = {
                .set = s,
                .file = shown,
                .first_rule = s->n_rules,
                .reader = {
                        .pos = buf,
                        .end = buf + size,
                },
        };
        int r;

        c.reader.on_line = parse_on_line;
        c.reader.userdata = &c;

        r = ini_parse_stream(line_reader_next, &c.reader, parse_handler, &c);
        if (c.oom < 0 || r == -2) {
                parse_cur_done(&c);
                return c.oom < 0 ? c.oom : -ENOMEM;
        }
        /* Positive r: inih saw a malformed line; our reader reported each one already. */
        parse_finish_section(&c);
        if (c.oom < 0)
                return c.oom;
        return drop_duplicate_sections(&c);
}

int rule_set_parse_contents(RuleSet *s, ConfFile *f, const char *buf, size_t size) {
        if (memchr(buf, 0, size)) {
                f->state = CONF_FILE_BROKEN;
                return rule_set_add_error(s, f->shown, 0, "contains NUL bytes: binary data, not a rule file; ignored");
        }
        return parse_buffer(s, f->shown, buf, size);
}

/* Loading grows the array by doubling: give back the slack, it can be most of a large set. */
void rule_set_shrink(RuleSet *s) {
        Rule *v;

        if (s->n_rules == 0 || s->n_rules == s->alloc_rules)
                return;
        v = reallocarray(s->rules, s->n_rules, sizeof(Rule));
        if (v) {
                s->rules = v;
                s->alloc_rules = s->n_rules;
        }
}

RuleSet *rule_set_new(void) {
        return calloc(1, sizeof(RuleSet));
}

int rule_set_add_file(RuleSet *s, const char *path, const char *shown, ConfFile **ret) {
        ConfFile *f;
        int r;

        r = array_grow((void **) &s->files, &s->alloc_files, s->n_files, sizeof(ConfFile));
        if (r < 0)
                return r;
        f = &s->files[s->n_files];
        *f = (ConfFile) {
                .path = strdup(path),
                .shown = strdup(shown),
        };
        if (!f->path || !f->shown) {
                free(f->path);
                free(f->shown);
                return -ENOMEM;
        }
        s->n_files++;
        *ret = f;
        return 0;
}

int rule_set_load_buffer(const char *name, const char *buf, size_t size, RuleSet **ret) {
        _cleanup_(rule_set_freep) RuleSet *s = NULL;
        ConfFile *f;
        int r;

        s = rule_set_new();
        if (!s)
                return -ENOMEM;
        r = rule_set_add_file(s, name, name, &f);
        if (r < 0)
                return r;
        r = rule_set_parse_contents(s, f, buf, size);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

bool rule_set_needs_cmdline(const RuleSet *s) {
        for (size_t i = 0; i < s->n_rules; i++)
                if (rule_match(&s->rules[i], MATCH_CMDLINE))
                        return true;
        return false;
}

/* ---- daemon settings -------------------------------------------------- */

typedef struct ConfigContext {
        DaemonConfig *config;
        const char *path;
        LineReader reader;
        bool in_daemon;
        bool in_foreground;
        int oom;
} ConfigContext;

_printf_(2, 3)
static void config_error(ConfigContext *c, const char *fmt, ...) {
        _cleanup_(freep) char *m = NULL;
        va_list ap;

        if (c->config->error)
                return;
        va_start(ap, fmt);
        if (vasprintf(&m, fmt, ap) < 0)
                m = NULL;
        va_end(ap);
        if (!m || asprintf(&c->config->error, "%s:%u: %s", c->path, c->reader.line, m) < 0) {
                c->config->error = NULL;
                c->oom = -ENOMEM;
        }
}

static bool config_on_line(void *userdata, char *line, size_t len, int max) {
        ConfigContext *c = userdata;

        if (!line) {
                config_error(c, "line is longer than %d characters", max);
                return false;
        }
        if (len > 0 && line[0] == '[') {
                c->in_daemon = len == 8 && memcmp(line, "[Daemon]", 8) == 0;
                c->in_foreground = len == 12 && memcmp(line, "[Foreground]", 12) == 0;
                if (!c->in_daemon && !c->in_foreground)
                        config_error(c, "unknown section '%.*s'; expected [Daemon] or [Foreground]", (int) len, line);
                return false;
        }
        if (len > 0 && line[0] != ';' && line[0] != '#' && !memchr(line, '=', len)) {
                config_error(c, "expected Key=Value");
                return false;
        }
        return true;
}

/* [Foreground]: LatencyNice= (empty or "off": no boost), Cover=unit|tree. */
static int config_foreground(ConfigContext *c, const char *key, const char *value) {
        if (strcmp(key, "LatencyNice") == 0) {
                int v;

                if (isempty(value) || strcmp(value, "off") == 0)
                        c->config->foreground = false;
                else if (safe_atoi(value, &v) < 0 || v < LATNICE_MIN || v > LATNICE_MAX)
                        config_error(c, "LatencyNice=%s is not a value in %d..%d (or off)", value, LATNICE_MIN,
                                     LATNICE_MAX);
                else {
                        c->config->foreground = true;
                        c->config->foreground_latency_nice = v;
                }
        } else if (strcmp(key, "Cover") == 0) {
                ForegroundCover v = foreground_cover_from_string(value);

                if (v < 0)
                        config_error(c, "Cover=%s is not one of unit, tree", value);
                else
                        c->config->foreground_cover = v;
        } else
                config_error(c, "unknown key '%s' in [Foreground]", key);
        return 1;
}

static const char * const daemon_scheduler_table[_DAEMON_SCHEDULER_MAX] = {
        [DAEMON_SCHEDULER_NONE] = "none",
        [DAEMON_SCHEDULER_LATNICE] = "latnice",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(daemon_scheduler, DaemonScheduler);

static int config_handler(void *userdata, const char *section, const char *key, const char *value) {
        ConfigContext *c = userdata;

        (void) section;
        if (c->in_foreground)
                return config_foreground(c, key, value);
        if (!c->in_daemon) {
                config_error(c, "%s= outside of the [Daemon] section", key);
                return 1;
        }
        if (strcmp(key, "Profile") == 0) {
                if (!isempty(value) && (strchr(value, '/') || value[0] == '.')) {
                        config_error(c, "Profile=%s is not a profile name", value);
                        return 1;
                }
                free(c->config->profile);
                c->config->profile = isempty(value) ? NULL : strdup(value);
                if (!isempty(value) && !c->config->profile)
                        c->oom = -ENOMEM;
        } else if (strcmp(key, "Scheduler") == 0) {
                if (isempty(value) || strcmp(value, "none") == 0)
                        c->config->scheduler = DAEMON_SCHEDULER_NONE;
                else if (strcmp(value, "latnice") == 0)
                        c->config->scheduler = DAEMON_SCHEDULER_LATNICE;
                else
                        config_error(c, "Scheduler=%s is not one of none, latnice", value);
        } else
                config_error(c, "unknown key '%s'", key);
        return c->oom < 0 ? 0 : 1;
}

void daemon_config_done(DaemonConfig *c) {
        free(c->profile);
        free(c->error);
        *c = (DaemonConfig) {};
}

int daemon_config_parse(const char *path, const char *buf, size_t size, DaemonConfig *config) {
        ConfigContext c = {
                .config = config,
                .path = path,
                .reader = {
                        .pos = buf,
                        .end = buf + size,
                        .on_line = config_on_line,
                },
        };
        int r;

        c.reader.userdata = &c;
        r = ini_parse_stream(line_reader_next, &c.reader, config_handler, &c);
        if (c.oom < 0 || r == -2)
                return -ENOMEM;
        return 0;
}
