/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* inotify for the files latniced reads (see dir-watch.h). */

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "dir-watch.h"
#include "util.h"

#define DIR_MASK                                                                                               \
        (IN_CREATE | IN_DELETE | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_ATTRIB | IN_DELETE_SELF |  \
         IN_MOVE_SELF | IN_ONLYDIR)
#define ANCESTOR_MASK (IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
#define FILE_MASK (IN_CLOSE_WRITE | IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)

typedef struct Watch {
        int wd;
        DirWatchKind kind;
        char *name;     /* the file name that counts (NULL: every *.conf) */
        char *awaited;  /* watching an ancestor: the name of the component we wait for */
        bool file;      /* a watch on the file itself (an NSS file bind-mounted over /etc/passwd) */
} Watch;

struct DirWatch {
        int fd;
        Watch *watches;
        size_t n_watches;
};

static void watches_clear(DirWatch *w) {
        for (size_t i = 0; i < w->n_watches; i++) {
                free(w->watches[i].name);
                free(w->watches[i].awaited);
        }
        free(w->watches);
        w->watches = NULL;
        w->n_watches = 0;
}

int dir_watch_new(DirWatch **ret) {
        DirWatch *w = calloc(1, sizeof(DirWatch));

        if (!w)
                return -ENOMEM;
        w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (w->fd < 0) {
                int r = -errno;

                free(w);
                return r;
        }
        *ret = w;
        return 0;
}

DirWatch *dir_watch_free(DirWatch *w) {
        if (!w)
                return NULL;
        watches_clear(w);
        close(w->fd);
        free(w);
        return NULL;
}

int dir_watch_fd(const DirWatch *w) {
        return w->fd;
}

static int add(DirWatch *w, const char *path, uint32_t mask, const Watch *tmpl) {
        Watch *nw;
        int wd;

        /* Several targets may share a directory: their masks add up. */
        wd = inotify_add_watch(w->fd, path, mask | IN_MASK_ADD);
        if (wd < 0)
                return -errno;
        nw = reallocarray(w->watches, w->n_watches + 1, sizeof(Watch));
        if (!nw)
                return -ENOMEM;
        w->watches = nw;
        nw[w->n_watches] = (Watch) { .wd = wd, .kind = tmpl->kind, .file = tmpl->file };
        if ((tmpl->name && !(nw[w->n_watches].name = strdup(tmpl->name))) ||
            (tmpl->awaited && !(nw[w->n_watches].awaited = strdup(tmpl->awaited))))
                return -ENOMEM;
        w->n_watches++;
        return 0;
}

/* Watches dir, or waits for it in its nearest existing ancestor. */
static int add_target(DirWatch *w, const DirWatchTarget *t) {
        _cleanup_(freep) char *path = strdup(t->dir);
        struct stat st;
        int r;

        if (!path)
                return -ENOMEM;
        if (stat(path, &st) >= 0 && S_ISDIR(st.st_mode)) {
                r = add(w, path, DIR_MASK, &(Watch) { .kind = t->kind, .name = (char *) t->name });
                if (r < 0)
                        return r;
                if (t->kind == DIR_WATCH_NSS && t->name) {
                        /* the file itself too: a file bind-mounted over it is edited in place */
                        _cleanup_(freep) char *f = path_join(path, t->name);

                        if (!f)
                                return -ENOMEM;
                        (void) add(w, f, FILE_MASK, &(Watch) { .kind = t->kind, .file = true });
                }
                return 0;
        }
        for (;;) {
                char *slash = strrchr(path, '/');

                if (!slash)
                        return 0;
                if (slash == path) {
                        /* below the root directory */
                        r = add(w, "/", ANCESTOR_MASK, &(Watch) { .kind = t->kind, .awaited = slash + 1 });
                        return r == -ENOENT ? 0 : r;
                }
                *slash = 0;
                if (stat(path, &st) >= 0 && S_ISDIR(st.st_mode)) {
                        r = add(w, path, ANCESTOR_MASK, &(Watch) { .kind = t->kind, .awaited = slash + 1 });
                        return r == -ENOENT ? 0 : r;
                }
        }
}

int dir_watch_set(DirWatch *w, const DirWatchTarget *targets, size_t n) {
        int r = 0;

        /* Watch descriptors are not reused soon: late events of removed ones match nothing below. */
        for (size_t i = 0; i < w->n_watches; i++)
                (void) inotify_rm_watch(w->fd, w->watches[i].wd);
        watches_clear(w);
        for (size_t i = 0; i < n; i++) {
                int q = add_target(w, &targets[i]);

                if (q < 0 && r == 0)
                        r = q;
        }
        return r;
}

static bool is_conf(const char *name) {
        size_t l = strlen(name);

        return l > 5 && strcmp(name + l - 5, ".conf") == 0;
}

static unsigned changed(DirWatchKind kind) {
        return kind == DIR_WATCH_NSS ? DIR_WATCH_CHANGED_NSS : DIR_WATCH_CHANGED_RULES;
}

static unsigned event_changes(const DirWatch *w, const struct inotify_event *ev) {
        unsigned c = 0;

        if (ev->mask & IN_Q_OVERFLOW)
                return DIR_WATCH_CHANGED_RULES | DIR_WATCH_CHANGED_NSS | DIR_WATCH_CHANGED_LAYOUT;
        for (size_t i = 0; i < w->n_watches; i++) {
                const Watch *x = &w->watches[i];

                if (x->wd != ev->wd)
                        continue;
                if (x->awaited) {
                        /* only the directory we wait for counts, not whatever else appears there */
                        if (ev->len > 0 && strcmp(ev->name, x->awaited) == 0)
                                c |= DIR_WATCH_CHANGED_LAYOUT | changed(x->kind);
                        else if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED))
                                c |= DIR_WATCH_CHANGED_LAYOUT;
                        continue;
                }
                if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
                        /* the directory (or file) is gone or moved: what it held is gone too */
                        c |= DIR_WATCH_CHANGED_LAYOUT | changed(x->kind);
                        continue;
                }
                if (x->file) {
                        c |= changed(x->kind);
                        continue;
                }
                if (ev->len == 0)
                        continue;
                if (x->name ? strcmp(ev->name, x->name) == 0 : is_conf(ev->name))
                        c |= changed(x->kind);
        }
        return c;
}

int dir_watch_read(DirWatch *w, unsigned *ret_changes) {
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        unsigned c = 0;

        for (;;) {
                ssize_t n = read(w->fd, buf, sizeof(buf));

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                break;
                        *ret_changes = c;
                        return -errno;
                }
                if (n == 0)
                        break;
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *) p;

                        c |= event_changes(w, ev);
                        p += sizeof(struct inotify_event) + ev->len;
                }
        }
        *ret_changes = c;
        return 0;
}
