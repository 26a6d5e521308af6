/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * latnicectl stats: latniced collects for a while what the scheduler did
 * for each rule's processes (wakeup latency, involuntary preemptions,
 * measured in the kernel), and this draws it as runqlat does, with the
 * percentiles, each rule against everything else. status shows the p99s of
 * the last collection (ctl_stats_status()).
 */

#include <inttypes.h>
#include <sys/ioctl.h>
#include <time.h>

#include "ctl-bus.h"
#include "ctl-output.h"
#include "ctl-stats.h"
#include "ctl-table.h"
#include "ctl.h"
#include "latnice/dbus.h"
#include "latnice/stats.h"
#include "stats-hist.h"

void ctl_stats_done(CtlStats *s) {
        for (size_t i = 0; i < s->n_classes; i++)
                free(s->classes[i].name);
        free(s->classes);
        free(s->hook);
        free(s->note);
        *s = (CtlStats) {};
}

static int read_class(sd_bus_message *m, CtlStatsClass *c) {
        const void *slots;
        const char *name;
        size_t size;
        int r;

        r = sd_bus_message_enter_container(m, 'r', "suuttttat");
        if (r <= 0)
                return r;
        r = sd_bus_message_read(m, "suutttt", &name, &c->flags, &c->processes, &c->hist.wakeups,
                                &c->hist.total_ns, &c->hist.max_ns, &c->hist.preemptions);
        if (r < 0)
                return r;
        r = sd_bus_message_read_array(m, 't', &slots, &size);
        if (r < 0)
                return r;
        /* A daemon with more or fewer buckets: what fits, the rest is empty. */
        memcpy(c->hist.slots, slots, size < sizeof(c->hist.slots) ? size : sizeof(c->hist.slots));
        c->name = strdup(name);
        if (!c->name)
                return -ENOMEM;
        r = sd_bus_message_exit_container(m);
        return r < 0 ? r : 1;
}

int ctl_stats_read(sd_bus_message *m, CtlStats *ret) {
        const char *hook, *note;
        int r;

        *ret = (CtlStats) {};
        r = sd_bus_message_read(m, "ttsst", &ret->finished_usec, &ret->duration_usec, &hook, &note, &ret->missed);
        if (r < 0)
                return r;
        ret->hook = strdup(hook);
        ret->note = strdup(note);
        if (!ret->hook || !ret->note)
                return -ENOMEM;
        r = sd_bus_message_enter_container(m, 'a', "(suuttttat)");
        if (r < 0)
                return r;
        for (;;) {
                CtlStatsClass c = {};
                CtlStatsClass *n;

                r = read_class(m, &c);
                if (r <= 0) {
                        free(c.name);
                        break;
                }
                n = reallocarray(ret->classes, ret->n_classes + 1, sizeof(CtlStatsClass));
                if (!n) {
                        free(c.name);
                        return -ENOMEM;
                }
                ret->classes = n;
                ret->classes[ret->n_classes++] = c;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static const char *class_title(const CtlStatsClass *c, char *buf, size_t size) {
        if (c->flags & LATNICE_STATS_F_OTHER)
                return "everything else";
        if (c->flags & LATNICE_STATS_F_MORE_RULES)
                return "more rules (beyond the first 62)";
        snprintf(buf, size, "rule %s", c->name);
        comm_printable(buf);
        return buf;
}

/* "412 us", "2.1 ms", "1.20 s". */
static void format_us(double us, char *buf, size_t size) {
        if (us < 1000)
                snprintf(buf, size, "%.0f us", us);
        else if (us < 1000000)
                snprintf(buf, size, "%.*f ms", us < 10000 ? 2 : 1, us / 1000);
        else
                snprintf(buf, size, "%.2f s", us / 1000000);
}

static unsigned terminal_width(void) {
        struct winsize w;
        const char *e = getenv("COLUMNS");
        int v;

        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0)
                return w.ws_col > 240 ? 240 : w.ws_col;
        if (e && safe_atoi(e, &v) >= 0 && v >= 40 && v <= 240)
                return (unsigned) v;
        return 80;
}

static bool wanted(const Ctl *ctl, const CtlStatsClass *c) {
        if (!ctl->rules || (c->flags & LATNICE_STATS_F_OTHER))
                return true; /* the comparison always */
        for (char **want = ctl->rules; *want; want++)
                if (strcmp(*want, c->name) == 0)
                        return true;
        return false;
}

/* What f collected, without its last newline (the table ends the line); NULL if nothing. */
static char *memstream_text(FILE *f, char **buf) {
        size_t n;

        if (fclose(f) != 0 || !*buf)
                return NULL;
        n = strlen(*buf);
        if (n == 0)
                return NULL;
        if ((*buf)[n - 1] == '\n')
                (*buf)[n - 1] = 0;
        return *buf;
}

static void print_class(FILE *f, const CtlStatsClass *c, unsigned width) {
        char title[128], p50[24], p90[24], p99[24], mx[24], avg[24];
        _cleanup_(freep) char *hist = NULL;

        fprintf(f, "%s", class_title(c, title, sizeof(title)));
        if (c->flags & LATNICE_STATS_F_OTHER)
                fprintf(f, " (tasks latniced did not set)");
        else
                fprintf(f, ": %" PRIu32 " process%s", c->processes, c->processes == 1 ? "" : "es");
        if (c->flags & LATNICE_STATS_F_RULE_REMOVED)
                fprintf(f, " (the rule was removed during the collection: counted while it applied)");
        fprintf(f, "\n");
        if ((uint64_t) c->hist.wakeups == 0) {
                fprintf(f, "  no wakeups measured; %" PRIu64 " involuntary preemptions\n\n",
                        (uint64_t) c->hist.preemptions);
                return;
        }
        format_us(stats_percentile(&c->hist, 50), p50, sizeof(p50));
        format_us(stats_percentile(&c->hist, 90), p90, sizeof(p90));
        format_us(stats_percentile(&c->hist, 99), p99, sizeof(p99));
        format_us((double) (uint64_t) c->hist.max_ns / 1000, mx, sizeof(mx));
        format_us((double) (uint64_t) c->hist.total_ns / 1000 / (double) (uint64_t) c->hist.wakeups, avg, sizeof(avg));
        fprintf(f, "  %" PRIu64 " wakeups: p50 %s, p90 %s, p99 %s, max %s, average %s; %" PRIu64
                " involuntary preemptions\n", (uint64_t) c->hist.wakeups, p50, p90, p99, mx, avg,
                (uint64_t) c->hist.preemptions);
        hist = stats_hist_draw(&c->hist, width);
        if (hist)
                fprintf(f, "%s\n", hist);
}

/* A class as people read it: the title, the percentiles, the histogram. */
static char *class_text(const CtlStatsClass *c, unsigned width) {
        char *buf = NULL;
        size_t size;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        print_class(f, c, width);
        if (!memstream_text(f, &buf))
                buf = mfree(buf);
        return buf;
}

static json_object *buckets_json(const CtlStatsClass *c) {
        json_object *a = json_object_new_array();

        for (unsigned b = 0; a && b < LATNICE_STATS_SLOTS; b++) {
                json_object *v = json_object_new_uint64(c->hist.slots[b]);

                if (!v || json_object_array_add(a, v) < 0) {
                        json_object_put(v);
                        json_object_put(a);
                        return NULL;
                }
        }
        return a;
}

static const TableColumn stats_columns[] = {
        { "", NULL, TABLE_STRING }, /* what was measured, how */
        { NULL, "finished_usec", TABLE_UINT },
        { NULL, "duration_usec", TABLE_UINT },
        { NULL, "hook", TABLE_STRING },
        { NULL, "note", TABLE_STRING },
        { NULL, "missed_wakeups", TABLE_UINT },
        { NULL, "bucket_unit", TABLE_STRING },
        { NULL, "classes", TABLE_JSON },
        { "", NULL, TABLE_STRING }, /* the rules that had no process */
};

static const TableColumn class_columns[] = {
        { NULL, "rule", TABLE_STRING },
        { NULL, "comparison", TABLE_BOOL },
        { NULL, "more_rules", TABLE_BOOL },
        { NULL, "rule_removed", TABLE_BOOL },
        { NULL, "processes", TABLE_UINT },
        { NULL, "wakeups", TABLE_UINT },
        { NULL, "total_ns", TABLE_UINT },
        { NULL, "max_ns", TABLE_UINT },
        { NULL, "preemptions", TABLE_UINT },
        { NULL, "p50_us", TABLE_DOUBLE, 0, 1 },
        { NULL, "p90_us", TABLE_DOUBLE, 0, 1 },
        { NULL, "p99_us", TABLE_DOUBLE, 0, 1 },
        { NULL, "buckets", TABLE_JSON },
        { "", NULL, TABLE_STRING }, /* the class drawn */
};

/* The collection as text or JSON: an exit status, having said what failed. */
static int print_stats(const Ctl *ctl, const CtlStats *s) {
        _cleanup_(table_freep) Table *t = NULL, *classes = NULL;
        _cleanup_(freep) char *head = NULL, *tail = NULL;
        unsigned width = terminal_width();
        json_object *j = NULL;
        size_t size;
        bool any = false;
        FILE *f;
        int r;

        t = table_new_vertical(stats_columns, ELEMENTSOF(stats_columns), ctl->json);
        classes = table_new(class_columns, ELEMENTSOF(class_columns), ctl->json);
        if (!t || !classes)
                return ctl_bad_reply(-ENOMEM);
        table_set_header(classes, false);

        f = open_memstream(&head, &size);
        if (!f)
                return ctl_bad_reply(-ENOMEM);
        fprintf(f, "Wakeup latency (woken -> running on a CPU) and involuntary preemptions, measured in the kernel "
                "for %.1f s (%s hooks).\n", (double) s->duration_usec / 1e6, s->hook);
        fprintf(f, "Percentiles are estimated inside their log2 bucket.\n");
        if (!isempty(s->note))
                fprintf(f, "%s\n", s->note);
        if (s->missed > 0)
                fprintf(f, "%" PRIu64 " wakeups found no room for their time and are not counted.\n", s->missed);
        fprintf(f, "\n");
        table_add_string(t, memstream_text(f, &head));
        table_add_uint(t, s->finished_usec);
        table_add_uint(t, s->duration_usec);
        table_add_string(t, s->hook);
        table_add_string(t, s->note);
        table_add_uint(t, s->missed);
        table_add_string(t, "log2 us: bucket i holds [2^i, 2^(i+1)) us, bucket 0 also 0 us");

        for (size_t i = 0; i < s->n_classes; i++) {
                const CtlStatsClass *c = &s->classes[i];
                _cleanup_(freep) char *text = NULL;

                if (!wanted(ctl, c))
                        continue;
                if (!(c->flags & LATNICE_STATS_F_OTHER))
                        any = true;
                table_add_string(classes,
                                 c->flags & (LATNICE_STATS_F_OTHER | LATNICE_STATS_F_MORE_RULES) ? "" : c->name);
                table_add_bool(classes, c->flags & LATNICE_STATS_F_OTHER);
                table_add_bool(classes, c->flags & LATNICE_STATS_F_MORE_RULES);
                table_add_bool(classes, c->flags & LATNICE_STATS_F_RULE_REMOVED);
                table_add_uint(classes, c->processes);
                table_add_uint(classes, c->hist.wakeups);
                table_add_uint(classes, c->hist.total_ns);
                table_add_uint(classes, c->hist.max_ns);
                table_add_uint(classes, c->hist.preemptions);
                table_add_double(classes, stats_percentile(&c->hist, 50));
                table_add_double(classes, stats_percentile(&c->hist, 90));
                table_add_double(classes, stats_percentile(&c->hist, 99));
                table_add_json(classes, buckets_json(c));
                text = class_text(c, width);
                table_add_string(classes, text);
        }
        r = table_finish(classes, &j);
        if (r < 0)
                return ctl_bad_reply(r);
        table_add_json(t, j);

        f = open_memstream(&tail, &size);
        if (!f)
                return ctl_bad_reply(-ENOMEM);
        if (!any)
                fprintf(f, "No process of %s had a value from latniced during the collection.\n\n",
                        ctl->rules ? "the rules named" : "any rule");
        for (char **rule = ctl->rules; rule && *rule; rule++) {
                bool found = false;

                for (size_t i = 0; i < s->n_classes; i++)
                        found = found || ((s->classes[i].flags & LATNICE_STATS_F_OTHER) == 0 &&
                                          strcmp(s->classes[i].name, *rule) == 0);
                if (!found)
                        fprintf(f, "Rule %s: no process of it had its value during the collection.\n", *rule);
        }
        table_add_string(t, memstream_text(f, &tail));
        return ctl_table_print(t);
}

/* "10", "10s", "1m": whole seconds; -EINVAL for anything else, -ERANGE out of 1..60. */
static int parse_duration(const char *s, uint32_t *ret) {
        char *end = NULL;
        unsigned long long v;
        unsigned mul = 1;

        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
                mul = 60;
        else if (*end && strcmp(end, "s") != 0 && strcmp(end, "sec") != 0)
                return -EINVAL;
        if (v > 3600)
                return -ERANGE;
        v *= mul;
        if (v < LATNICE_STATS_MIN_SEC || v > LATNICE_STATS_MAX_SEC)
                return -ERANGE;
        *ret = (uint32_t) v;
        return 0;
}

int verb_stats(Ctl *ctl) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(ctl_stats_done) CtlStats s = {};
        uint32_t seconds = 10;
        pid_t agent;
        int r;

        if (ctl->for_arg) {
                r = parse_duration(ctl->for_arg, &seconds);
                if (r == -ERANGE)
                        return ctl_usage_error(ctl, "Invalid duration '%s': collect for %d..%d seconds.",
                                               ctl->for_arg, LATNICE_STATS_MIN_SEC, LATNICE_STATS_MAX_SEC);
                if (r < 0)
                        return ctl_usage_error(ctl, "Invalid duration '%s': whole seconds, e.g. 10s or 1m.",
                                               ctl->for_arg);
        }
        r = ctl_bus_connect_or_fail(&bus);
        if (r != CTL_EXIT_OK)
                return r;
        r = sd_bus_message_new_method_call(bus, &call, LATNICE_BUS_NAME, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE,
                                           "CollectStats");
        if (r >= 0)
                r = sd_bus_message_append(call, "u", seconds);
        if (r >= 0)
                r = sd_bus_message_set_allow_interactive_authorization(call, true);
        if (r < 0)
                return ctl_bad_reply(r);
        if (!ctl->json && isatty(STDERR_FILENO))
                fprintf(stderr, "Collecting for %" PRIu32 " s...\n", seconds);
        agent = ctl_polkit_agent_open();
        /* The reply comes when the collection ends: wait for it, and for a polkit prompt. */
        r = sd_bus_call(bus, call, ((uint64_t) seconds + 120) * 1000000, &error, &reply);
        ctl_polkit_agent_close(agent);
        if (r < 0) {
                fprintf(stderr, "Failed to collect scheduler statistics: %s\n",
                        sd_bus_error_is_set(&error) && error.message ? error.message : strerror(-r));
                return sd_bus_error_is_set(&error) ? ctl_exit_from_bus_error(&error) : ctl_exit_from_errno(r);
        }
        r = ctl_stats_read(reply, &s);
        if (r < 0)
                return ctl_bad_reply(r);
        return print_stats(ctl, &s);
}

char *ctl_stats_status_text(const CtlStats *s) {
        const CtlStatsClass *other = NULL;
        char p99[24], o99[24], *buf = NULL;
        struct timespec now;
        uint64_t ago;
        size_t size;
        FILE *f;

        if (s->finished_usec == 0)
                return NULL;
        f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        for (size_t i = 0; i < s->n_classes; i++)
                if (s->classes[i].flags & LATNICE_STATS_F_OTHER)
                        other = &s->classes[i];
        (void) clock_gettime(CLOCK_REALTIME, &now);
        ago = ((uint64_t) now.tv_sec * 1000000 + (uint64_t) now.tv_nsec / 1000 - s->finished_usec) / 1000000;
        format_us(other ? stats_percentile(&other->hist, 99) : 0, o99, sizeof(o99));
        fprintf(f, "%.1f s, %" PRIu64 " s ago (latnicectl stats): p99 wakeup latency, everything else %s",
                (double) s->duration_usec / 1e6, ago, o99);
        if (!isempty(s->note))
                fprintf(f, "\n%s", s->note);
        for (size_t i = 0; i < s->n_classes; i++) {
                const CtlStatsClass *c = &s->classes[i];
                char title[128];

                if (c->flags & LATNICE_STATS_F_OTHER)
                        continue;
                format_us(stats_percentile(&c->hist, 99), p99, sizeof(p99));
                fprintf(f, "\n%s: p99 %s against %s (%" PRIu64 " wakeups)", class_title(c, title, sizeof(title)),
                        (uint64_t) c->hist.wakeups ? p99 : "-", o99, (uint64_t) c->hist.wakeups);
        }
        if (fclose(f) != 0)
                return mfree(buf);
        return buf;
}

json_object *ctl_stats_status_json(const CtlStats *s, bool json) {
        static const TableColumn columns[] = {
                { NULL, "finished_usec", TABLE_UINT },
                { NULL, "duration_usec", TABLE_UINT },
                { NULL, "note", TABLE_STRING },
                { NULL, "classes", TABLE_JSON },
        };
        static const TableColumn last_class_columns[] = {
                { NULL, "rule", TABLE_STRING },
                { NULL, "comparison", TABLE_BOOL },
                { NULL, "wakeups", TABLE_UINT },
                { NULL, "p99_us", TABLE_DOUBLE, 0, 1 },
        };
        _cleanup_(table_freep) Table *t = NULL, *classes = NULL;
        json_object *j = NULL;

        if (!json || s->finished_usec == 0)
                return NULL;
        t = table_new_vertical(columns, ELEMENTSOF(columns), true);
        classes = table_new(last_class_columns, ELEMENTSOF(last_class_columns), true);
        if (!t || !classes)
                return NULL;
        table_add_uint(t, s->finished_usec);
        table_add_uint(t, s->duration_usec);
        table_add_string(t, s->note);
        for (size_t i = 0; i < s->n_classes; i++) {
                const CtlStatsClass *c = &s->classes[i];

                table_add_string(classes,
                                 c->flags & (LATNICE_STATS_F_OTHER | LATNICE_STATS_F_MORE_RULES) ? "" : c->name);
                table_add_bool(classes, c->flags & LATNICE_STATS_F_OTHER);
                table_add_uint(classes, c->hist.wakeups);
                table_add_double(classes, stats_percentile(&c->hist, 99));
        }
        if (table_finish(classes, &j) < 0)
                return NULL;
        table_add_json(t, j);
        if (table_finish(t, &j) < 0)
                return NULL;
        return j;
}
