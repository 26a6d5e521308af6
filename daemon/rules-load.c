/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Finding and reading rule files and latniced.conf: the drop-in directories
 * in file-name order, hidden and masked files, the profile last. A -util
 * module (directory listings and file reads below the root handed in); the
 * parsing itself is rules.c's, which does no I/O.
 */

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include "rules-parse.h"
#include "util.h"

static int parse_file(RuleSet *s, ConfFile *f) {
        _cleanup_(freep) char *buf = NULL;
        size_t size;
        int r;

        r = read_full_file(AT_FDCWD, f->path, RULE_FILE_MAX_SIZE, &buf, &size);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                f->state = CONF_FILE_BROKEN;
                if (r == -EFBIG)
                        return rule_set_add_error(s, f->shown, 0,
                                                  "file is larger than %d bytes; not a rule file? ignored",
                                                  RULE_FILE_MAX_SIZE);
                if (r == -EISDIR)
                        return rule_set_add_error(s, f->shown, 0, "is a directory, not a rule file; ignored");
                if (r == -EBADFD)
                        return rule_set_add_error(s, f->shown, 0, "is not a regular file; ignored");
                return rule_set_add_error(s, f->shown, 0, "cannot read: %s; ignored", strerror(-r));
        }
        return rule_set_parse_contents(s, f, buf, size);
}

typedef struct DirEntry {
        char *name;
        size_t dir; /* index into rule_dirs */
} DirEntry;

static int dir_entry_compare(const void *a, const void *b) {
        const DirEntry *x = a, *y = b;
        int d = strcmp(x->name, y->name);

        if (d != 0)
                return d;
        return x->dir < y->dir ? -1 : x->dir > y->dir;
}

static bool is_conf_name(const char *n) {
        size_t l = strlen(n);

        return n[0] != '.' && l > 5 && strcmp(n + l - 5, ".conf") == 0;
}

static int collect_dir(RuleSet *s, const char *root, size_t dir, DirEntry **entries, size_t *n, size_t *alloc) {
        _cleanup_(freep) char *path = NULL;
        DIR *d;
        struct dirent *de;
        int r = 0;

        path = path_join(root, rule_dirs[dir]);
        if (!path)
                return -ENOMEM;
        d = opendir(path);
        if (!d) {
                if (errno == ENOENT)
                        return 0;
                if (errno == ENOTDIR)
                        return rule_set_add_error(s, rule_dirs[dir], 0, "is not a directory; ignored");
                return rule_set_add_error(s, rule_dirs[dir], 0, "cannot open directory: %s; ignored", strerror(errno));
        }
        while ((errno = 0, de = readdir(d))) {
                if (!is_conf_name(de->d_name))
                        continue;
                r = array_grow((void **) entries, alloc, *n, sizeof(DirEntry));
                if (r < 0)
                        break;
                (*entries)[*n] = (DirEntry) { .name = strdup(de->d_name), .dir = dir };
                if (!(*entries)[*n].name) {
                        r = -ENOMEM;
                        break;
                }
                (*n)++;
        }
        if (r == 0 && errno != 0)
                r = rule_set_add_error(s, rule_dirs[dir], 0, "cannot list directory: %s; ignored", strerror(errno));
        closedir(d);
        return r;
}

static bool is_masked(const char *path) {
        char target[64];
        ssize_t n;

        n = readlink(path, target, sizeof(target) - 1);
        if (n < 0)
                return false;
        target[n] = 0;
        return strcmp(target, "/dev/null") == 0;
}

static int load_dirs(RuleSet *s, const char *root) {
        DirEntry *entries = NULL;
        size_t n = 0, alloc = 0;
        int r = 0;

        for (size_t d = 0; rule_dirs[d] && r >= 0; d++)
                r = collect_dir(s, root, d, &entries, &n, &alloc);
        if (r >= 0 && n > 0)
                qsort(entries, n, sizeof(DirEntry), dir_entry_compare);

        for (size_t i = 0, winner = 0; r >= 0 && i < n; i++) {
                _cleanup_(freep) char *shown = NULL, *path = NULL;
                ConfFile *f;

                if (asprintf(&shown, "%s/%s", rule_dirs[entries[i].dir], entries[i].name) < 0) {
                        r = -ENOMEM;
                        break;
                }
                path = path_join(root, shown);
                if (!path) {
                        r = -ENOMEM;
                        break;
                }
                r = rule_set_add_file(s, path, shown, &f);
                if (r < 0)
                        break;
                if (i > 0 && strcmp(entries[i].name, entries[winner].name) == 0) {
                        f->state = CONF_FILE_HIDDEN;
                        f->hidden_by = s->files[s->n_files - 1 - (i - winner)].shown;
                        continue;
                }
                winner = i;
                if (is_masked(path)) {
                        f->state = CONF_FILE_MASKED;
                        continue;
                }
                r = parse_file(s, f);
        }

        for (size_t i = 0; i < n; i++)
                free(entries[i].name);
        free(entries);
        return r;
}

static int rule_set_load_profile(RuleSet *s, const char *name, const char *path) {
        ConfFile *f;
        int r;

        s->profile = strdup(name);
        if (!s->profile)
                return -ENOMEM;
        r = rule_set_add_file(s, path, path, &f);
        if (r < 0)
                return r;
        f->profile = true;
        if (access(path, F_OK) < 0 && errno == ENOENT) {
                f->state = CONF_FILE_BROKEN;
                return rule_set_add_error(s, path, 0, "profile '%s' does not exist; running without its rules", name);
        }
        return parse_file(s, f);
}

int rule_set_load(const char *root, const char *profile_name, const char *profile_path, RuleSet **ret) {
        _cleanup_(rule_set_freep) RuleSet *s = NULL;
        int r;

        s = rule_set_new();
        if (!s)
                return -ENOMEM;
        r = load_dirs(s, root);
        if (r < 0)
                return r;
        /* The profile comes last: the administrator's own rules take precedence over it. */
        if (profile_name && profile_path) {
                r = rule_set_load_profile(s, profile_name, profile_path);
                if (r < 0)
                        return r;
        }
        rule_set_shrink(s);
        *ret = TAKE_PTR(s);
        return 0;
}

int rule_set_load_files(char * const *paths, RuleSet **ret) {
        _cleanup_(rule_set_freep) RuleSet *s = NULL;
        int r;

        s = rule_set_new();
        if (!s)
                return -ENOMEM;
        for (char * const *p = paths; p && *p; p++) {
                ConfFile *f;

                r = rule_set_add_file(s, *p, *p, &f);
                if (r < 0)
                        return r;
                r = parse_file(s, f);
                if (r < 0)
                        return r;
        }
        rule_set_shrink(s);
        *ret = TAKE_PTR(s);
        return 0;
}

int daemon_config_load(const char *path, DaemonConfig *config) {
        _cleanup_(freep) char *buf = NULL;
        size_t size;
        int r;

        r = read_full_file(AT_FDCWD, path, RULE_FILE_MAX_SIZE, &buf, &size);
        if (r == -ENOENT)
                return 0;
        if (r < 0) {
                if (asprintf(&config->error, "%s: cannot read: %s", path, strerror(-r)) < 0)
                        return -ENOMEM;
                return 0;
        }
        return daemon_config_parse(path, buf, size, config);
}
