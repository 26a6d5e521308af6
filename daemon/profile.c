/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Profile lookup along the profile search path. */

#include <dirent.h>
#include <sys/stat.h>

#include "profile.h"
#include "rules.h"
#include "util.h"

#ifndef LATNICE_PROFILE_DIR
#define LATNICE_PROFILE_DIR "/usr/share/latnice/profiles"
#endif

static const char * const profile_dirs[] = {
        "/etc/latnice/profiles",
        LATNICE_PROFILE_DIR,
};

int profile_name_valid(const char *name) {
        size_t l;

        if (isempty(name) || name[0] == '.')
                return 0;
        l = strlen(name);
        if (l > 64)
                return 0;
        return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == l;
}

/* The search path; extra_dir is used as given (no root prefix). */
static int profile_dir_at(const char *root, const char *extra_dir, size_t i, char **ret) {
        if (extra_dir) {
                if (i == 0) {
                        *ret = strdup(extra_dir);
                        return *ret ? 1 : -ENOMEM;
                }
                i--;
        }
        if (i >= ELEMENTSOF(profile_dirs))
                return 0;
        *ret = path_join(root, profile_dirs[i]);
        return *ret ? 1 : -ENOMEM;
}

int profile_find(const char *root, const char *extra_dir, const char *name, char **ret_path) {
        if (!profile_name_valid(name))
                return -EINVAL;
        for (size_t i = 0;; i++) {
                _cleanup_(freep) char *dir = NULL, *path = NULL;
                struct stat st;
                int r;

                r = profile_dir_at(root, extra_dir, i, &dir);
                if (r <= 0)
                        return r < 0 ? r : -ENOENT;
                if (asprintf(&path, "%s/%s.conf", dir, name) < 0)
                        return -ENOMEM;
                if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                        *ret_path = TAKE_PTR(path);
                        return 0;
                }
        }
}

static int compare_str(const void *a, const void *b) {
        return strcmp(*(char * const *) a, *(char * const *) b);
}

int profile_list(const char *root, const char *extra_dir, char ***ret) {
        _cleanup_(strv_freep) char **l = NULL;
        size_t n, w = 0;

        for (size_t i = 0;; i++) {
                _cleanup_(freep) char *dir = NULL;
                struct dirent *de;
                DIR *d;
                int r;

                r = profile_dir_at(root, extra_dir, i, &dir);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                d = opendir(dir);
                if (!d)
                        continue;
                while ((de = readdir(d))) {
                        size_t len = strlen(de->d_name);

                        if (len <= 5 || strcmp(de->d_name + len - 5, ".conf") != 0)
                                continue;
                        r = strv_consume(&l, strndup(de->d_name, len - 5));
                        if (r < 0) {
                                closedir(d);
                                return r;
                        }
                }
                closedir(d);
        }
        n = strv_length(l);
        if (n > 0) {
                qsort(l, n, sizeof(char *), compare_str);
                for (size_t i = 0; i < n; i++) {
                        if (w > 0 && strcmp(l[w - 1], l[i]) == 0) {
                                free(l[i]);
                                continue;
                        }
                        l[w++] = l[i];
                }
                l[w] = NULL;
        } else {
                l = calloc(1, sizeof(char *));
                if (!l)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int rule_tree_option(int c, char *arg, RuleTreeOptions *o) {
        switch (c) {
        case RULE_TREE_ARG_ROOT:
                o->root = arg;
                return 1;
        case RULE_TREE_ARG_PROFILE:
                if (!profile_name_valid(arg))
                        return -EINVAL;
                o->profile = arg;
                return 1;
        case RULE_TREE_ARG_NO_PROFILE:
                o->no_profile = true;
                return 1;
        case RULE_TREE_ARG_PROFILE_DIR:
                o->profile_dir = arg;
                return 1;
        default:
                return 0;
        }
}

int profile_resolve(const RuleTreeOptions *o, char **ret_name, char **ret_path, char **ret_warning) {
        _cleanup_(freep) char *conf = NULL, *name = NULL, *path = NULL;
        DaemonConfig dc = {};
        int r;

        *ret_name = *ret_path = *ret_warning = NULL;
        if (o->no_profile)
                return 0;
        if (o->profile)
                name = strdup(o->profile);
        else {
                conf = path_join(o->root, LATNICE_DAEMON_CONF);
                if (!conf)
                        return -ENOMEM;
                r = daemon_config_load(conf, &dc);
                if (r < 0)
                        return r;
                *ret_warning = TAKE_PTR(dc.error);
                name = strdup(dc.profile ?: LATNICE_DEFAULT_PROFILE);
                daemon_config_done(&dc);
        }
        if (!name)
                return -ENOMEM;
        r = profile_find(o->root, o->profile_dir, name, &path);
        if (r == -ENOENT || r == -EINVAL) {
                if (asprintf(&path, "%s/%s.conf", o->profile_dir ?: LATNICE_PROFILE_DIR, name) < 0)
                        return -ENOMEM;
        } else if (r < 0)
                return r;
        *ret_name = TAKE_PTR(name);
        *ret_path = TAKE_PTR(path);
        return 0;
}
