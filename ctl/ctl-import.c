/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* latnicectl import-ananicy: reads an ananicy rule tree, writes one checked latnice.d file. */

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>

#include "ananicy.h"
#include "ctl.h"
#include "util.h"

/* Real rule files are a few kB; the limit only keeps a stray huge file from eating memory. */
#define RULE_FILE_MAX (16u * 1024 * 1024)

static char **found_files;
static int found_error;

static bool is_rule_file(const char *path) {
        static const char *const suffixes[] = { ".rules", ".types", ".cgroups" };
        size_t n = strlen(path);

        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                size_t s = strlen(suffixes[i]);

                if (n > s && strcmp(path + n - s, suffixes[i]) == 0)
                        return true;
        }
        return false;
}

static int collect(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        (void) st;
        (void) ftw;
        if (type == FTW_DNR) {
                /* nftw() says FTW_DNR where opendir() failed with EACCES. */
                fprintf(stderr, "Failed to read directory %s: %s, ignoring.\n", path, strerror(EACCES));
                return 0;
        }
        if (type != FTW_F || !is_rule_file(path))
                return 0;
        if (strv_extend(&found_files, path) < 0) {
                found_error = -ENOMEM;
                return 1;
        }
        return 0;
}

static int path_compare(const void *a, const void *b) {
        return strcmp(*(char * const *) a, *(char * const *) b);
}

static int message_compare(const void *a, const void *b) {
        const AnanicyMessage *x = a, *y = b;
        int c = strcmp(x->file, y->file);

        if (c == 0)
                c = x->line < y->line ? -1 : x->line > y->line;
        if (c == 0)
                c = x->seq < y->seq ? -1 : x->seq > y->seq;
        return c;
}

static void print_messages(AnanicyImport *imp) {
        /* By file and line, as a compiler reports. */
        qsort(imp->messages, imp->n_messages, sizeof(*imp->messages), message_compare);
        for (size_t i = 0; i < imp->n_messages; i++) {
                const AnanicyMessage *m = &imp->messages[i];

                fprintf(stderr, "%s:%u: %s: %s\n", m->file, m->line,
                        m->severity == ANANICY_ERROR ? "error" : "warning", m->text);
        }
}

static void print_summary(const AnanicyImport *imp, size_t rules, size_t names, const char *out) {
        size_t ignored = 0;

        for (size_t i = 0; i < ananicy_ignored_field_count(); i++)
                ignored += imp->n_ignored_field[i];
        fprintf(stderr,
                "Imported %zu program name%s into %zu rule%s from %zu file%s (%zu type%s) into %s.\n"
                "%zu rule%s without a latency hint, %zu cgroup definition%s and %zu field%s latnice does not set "
                "were left out; %zu definition%s replaced by a later one; %zu error%s.\n",
                names, names == 1 ? "" : "s", rules, rules == 1 ? "" : "s", imp->n_files,
                imp->n_files == 1 ? "" : "s", imp->n_types, imp->n_types == 1 ? "" : "s", out,
                imp->n_no_value, imp->n_no_value == 1 ? "" : "s", imp->n_cgroups, imp->n_cgroups == 1 ? "" : "s",
                ignored, ignored == 1 ? "" : "s", imp->n_replaced, imp->n_replaced == 1 ? " was" : "s were",
                imp->n_errors, imp->n_errors == 1 ? "" : "s");
}

int verb_import_ananicy(Ctl *ctl) {
        _cleanup_(ananicy_import_done) AnanicyImport imp = {};
        _cleanup_(rule_set_freep) RuleSet *check = NULL;
        _cleanup_(freep) char *text = NULL, *source = NULL;
        char *default_dirs[] = { (char *) "/etc/ananicy.d", NULL }, **dirs;
        const char *out = ctl->out;
        size_t text_size = 0, rules = 0, names = 0;
        FILE *mem;
        int r = 0;

        dirs = ctl->n_args > 0 ? ctl->args : default_dirs;

        for (char **d = dirs; *d; d++) {
                struct stat st;

                r = stat(*d, &st) < 0 ? -errno : !S_ISDIR(st.st_mode) ? -ENOTDIR : 0;
                if (r < 0) {
                        fprintf(stderr, "Failed to read directory %s: %s\n", *d, strerror(-r));
                        return CTL_EXIT_FAILURE;
                }
                if (nftw(*d, collect, 16, FTW_PHYS) < 0 || found_error < 0) {
                        fprintf(stderr, "Failed to read directory %s: %s\n", *d,
                                strerror(found_error < 0 ? -found_error : errno));
                        found_files = strv_free(found_files);
                        return CTL_EXIT_FAILURE;
                }
        }
        qsort(found_files, strv_length(found_files), sizeof(char *), path_compare);
        for (char **p = found_files; p && *p; p++) {
                _cleanup_(freep) char *buf = NULL;
                size_t size = 0;
                int q;

                /* One unreadable file is reported and skipped; only running out of memory stops. */
                q = read_full_file(AT_FDCWD, *p, RULE_FILE_MAX, &buf, &size);
                if (q < 0) {
                        fprintf(stderr, "Failed to read %s: %s, ignoring.\n", *p, strerror(-q));
                        continue;
                }
                r = ananicy_import_buffer(&imp, *p, buf, size);
                if (r < 0)
                        break;
        }
        found_files = strv_free(found_files);
        if (r < 0) {
                fprintf(stderr, "Failed to import the rules: %s\n", strerror(-r));
                return CTL_EXIT_FAILURE;
        }

        source = strv_join(dirs, " ");
        mem = open_memstream(&text, &text_size);
        if (!source || !mem) {
                if (mem)
                        fclose(mem);
                fprintf(stderr, "Out of memory.\n");
                return CTL_EXIT_FAILURE;
        }
        r = ananicy_import_write(&imp, source, mem, &rules, &names);
        if (fclose(mem) != 0 && r == 0)
                r = -errno;
        if (r < 0) {
                fprintf(stderr, "Failed to write the rules: %s\n", strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        print_messages(&imp);

        /* What latniced will make of it: the importer must never write a file it would refuse. */
        r = rule_set_load_buffer(out ? out : "<stdout>", text, text_size, &check);
        if (r < 0 || check->n_errors > 0) {
                for (size_t i = 0; check && i < check->n_errors; i++) {
                        char buf[1024];

                        rule_error_format(&check->errors[i], buf, sizeof(buf));
                        fprintf(stderr, "%s\n", buf);
                }
                fprintf(stderr, "Failed to check the imported rules: they do not load as latnice rules (a bug in "
                        "import-ananicy), nothing written.\n");
                return CTL_EXIT_FAILURE;
        }

        if (out) {
                r = write_file_atomic(out, text, text_size, 0644);
                if (r < 0) {
                        fprintf(stderr, "Failed to write %s: %s\n", out, strerror(-r));
                        return CTL_EXIT_FAILURE;
                }
        } else if (fwrite(text, 1, text_size, stdout) != text_size || fflush(stdout) != 0) {
                fprintf(stderr, "Failed to write to standard output: %m\n");
                return CTL_EXIT_FAILURE;
        }
        print_summary(&imp, rules, names, out ? out : "standard output");
        return imp.n_errors > 0 ? CTL_EXIT_FAILURE : CTL_EXIT_OK;
}
