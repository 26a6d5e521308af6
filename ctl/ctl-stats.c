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

static void print_json(const Ctl *ctl, const CtlStats *s) {
        size_t k = 0;

        putchar('{');
        json_kv_int("finished_usec", (long long) s->finished_usec, true);
        json_kv_int("duration_usec", (long long) s->duration_usec, false);
        json_kv_str("hook", s->hook, false);
        json_kv_str("note", s->note, false);
        json_kv_int("missed_wakeups", (long long) s->missed, false);
        json_kv_str("bucket_unit", "log2 us: bucket i holds [2^i, 2^(i+1)) us, bucket 0 also 0 us", false);
        json_key("classes", false);
        putchar('[');
        for (size_t i = 0; i < s->n_classes; i++) {
                const CtlStatsClass *c = &s->classes[i];

                if (!wanted(ctl, c))
                        continue;
                json_sep(k++);
                putchar('{');
                json_kv_str("rule", c->flags & (LATNICE_STATS_F_OTHER | LATNICE_STATS_F_MORE_RULES) ? "" : c->name,
                            true);
                json_kv_bool("comparison", c->flags & LATNICE_STATS_F_OTHER, false);
                json_kv_bool("more_rules", c->flags & LATNICE_STATS_F_MORE_RULES, false);
                json_kv_bool("rule_removed", c->flags & LATNICE_STATS_F_RULE_REMOVED, false);
                json_kv_int("processes", c->processes, false);
                json_kv_int("wakeups", (long long) (uint64_t) c->hist.wakeups, false);
                json_kv_int("total_ns", (long long) (uint64_t) c->hist.total_ns, false);
                json_kv_int("max_ns", (long long) (uint64_t) c->hist.max_ns, false);
                json_kv_int("preemptions", (long long) (uint64_t) c->hist.preemptions, false);
                printf(",\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f",
                       stats_percentile(&c->hist, 50),
                       stats_percentile(&c->hist, 90),
                       stats_percentile(&c->hist, 99));
                json_key("buckets", false);
                putchar('[');
                for (unsigned b = 0; b < LATNICE_STATS_SLOTS; b++)
                        printf("%s%" PRIu64, b ? "," : "", (uint64_t) c->hist.slots[b]);
                printf("]}");
        }
        printf("]}\n");
}

static void print_class(const CtlStatsClass *c, unsigned width) {
        char title[128], p50[24], p90[24], p99[24], mx[24], avg[24];
        _cleanup_(freep) char *hist = NULL;

        printf("%s", class_title(c, title, sizeof(title)));
        if (c->flags & LATNICE_STATS_F_OTHER)
                printf(" (tasks latniced did not set)");
        else
                printf(": %" PRIu32 " process%s", c->processes, c->processes == 1 ? "" : "es");
        if (c->flags & LATNICE_STATS_F_RULE_REMOVED)
                printf(" (the rule was removed during the collection: counted while it applied)");
        printf("\n");
        if ((uint64_t) c->hist.wakeups == 0) {
                printf("  no wakeups measured; %" PRIu64 " involuntary preemptions\n\n",
                       (uint64_t) c->hist.preemptions);
                return;
        }
        format_us(stats_percentile(&c->hist, 50), p50, sizeof(p50));
        format_us(stats_percentile(&c->hist, 90), p90, sizeof(p90));
        format_us(stats_percentile(&c->hist, 99), p99, sizeof(p99));
        format_us((double) (uint64_t) c->hist.max_ns / 1000, mx, sizeof(mx));
        format_us((double) (uint64_t) c->hist.total_ns / 1000 / (double) (uint64_t) c->hist.wakeups, avg, sizeof(avg));
        printf("  %" PRIu64 " wakeups: p50 %s, p90 %s, p99 %s, max %s, average %s; %" PRIu64
               " involuntary preemptions\n", (uint64_t) c->hist.wakeups, p50, p90, p99, mx, avg,
               (uint64_t) c->hist.preemptions);
        hist = stats_hist_draw(&c->hist, width);
        if (hist)
                printf("%s\n", hist);
}

static void print_text(const Ctl *ctl, const CtlStats *s) {
        unsigned width = terminal_width();
        bool any = false;

        printf("Wakeup latency (woken -> running on a CPU) and involuntary preemptions, measured in the kernel "
               "for %.1f s (%s hooks).\n", (double) s->duration_usec / 1e6, s->hook);
        printf("Percentiles are estimated inside their log2 bucket.\n");
        if (!isempty(s->note))
                printf("%s\n", s->note);
        if (s->missed > 0)
                printf("%" PRIu64 " wakeups found no room for their time and are not counted.\n", s->missed);
        printf("\n");
        for (size_t i = 0; i < s->n_classes; i++) {
                if (!wanted(ctl, &s->classes[i]))
                        continue;
                if (!(s->classes[i].flags & LATNICE_STATS_F_OTHER))
                        any = true;
                print_class(&s->classes[i], width);
        }
        if (!any)
                printf("No process of %s had a value from latniced during the collection.\n\n",
                       ctl->rules ? "the rules named" : "any rule");
        for (char **want = ctl->rules; want && *want; want++) {
                bool found = false;

                for (size_t i = 0; i < s->n_classes; i++)
                        found = found || ((s->classes[i].flags & LATNICE_STATS_F_OTHER) == 0 &&
                                          strcmp(s->classes[i].name, *want) == 0);
                if (!found)
                        printf("Rule %s: no process of it had its value during the collection.\n", *want);
        }
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

static const char stats_usage[] =
        "latnicectl stats [--for=DURATION] [--rule=NAME...] [--json]\n\n"
        "Let latniced measure for DURATION (1s..60s, default 10s) how long the\n"
        "processes of each rule wait from their wakeup until they run, and how\n"
        "often they are preempted, in the kernel, and draw each rule's log2\n"
        "histogram with p50/p90/p99 against everything else (the tasks latniced\n"
        "did not set). --rule shows only the rules named (repeat it). Needs\n"
        "latniced, and root or polkit (the active local user may).\n";

static int run_stats(Ctl *ctl) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(ctl_stats_done) CtlStats s = {};
        uint32_t seconds = 10;
        pid_t agent;
        int r;

        if (ctl->n_args > 0)
                return ctl_usage_error(ctl, "Unexpected argument '%s'.", ctl->args[0]);
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
                if (sd_bus_error_is_set(&error) && error.message)
                        fprintf(stderr, "%s\n", error.message);
                else
                        fprintf(stderr, "Cannot collect scheduler statistics: %s\n", strerror(-r));
                return sd_bus_error_is_set(&error) ? ctl_exit_from_bus_error(&error) : ctl_exit_from_errno(r);
        }
        r = ctl_stats_read(reply, &s);
        if (r < 0)
                return ctl_bad_reply(r);
        if (ctl->json)
                print_json(ctl, &s);
        else
                print_text(ctl, &s);
        return CTL_EXIT_OK;
}

const Verb verb_stats = {
        "stats", run_stats, "measure what the scheduler does for each rule: wakeup latency, preemptions",
        stats_usage,
};

void ctl_stats_status(const CtlStats *s) {
        const CtlStatsClass *other = NULL;
        char p99[24], o99[24];
        struct timespec now;
        uint64_t ago;

        if (s->finished_usec == 0)
                return;
        for (size_t i = 0; i < s->n_classes; i++)
                if (s->classes[i].flags & LATNICE_STATS_F_OTHER)
                        other = &s->classes[i];
        (void) clock_gettime(CLOCK_REALTIME, &now);
        ago = ((uint64_t) now.tv_sec * 1000000 + (uint64_t) now.tv_nsec / 1000 - s->finished_usec) / 1000000;
        format_us(other ? stats_percentile(&other->hist, 99) : 0, o99, sizeof(o99));
        printf("  Statistics: %.1f s, %" PRIu64 " s ago (latnicectl stats): p99 wakeup latency, everything else "
               "%s\n", (double) s->duration_usec / 1e6, ago, o99);
        if (!isempty(s->note))
                printf("              %s\n", s->note);
        for (size_t i = 0; i < s->n_classes; i++) {
                const CtlStatsClass *c = &s->classes[i];
                char title[128];

                if (c->flags & LATNICE_STATS_F_OTHER)
                        continue;
                format_us(stats_percentile(&c->hist, 99), p99, sizeof(p99));
                printf("              %s: p99 %s against %s (%" PRIu64 " wakeups)\n",
                       class_title(c, title, sizeof(title)), (uint64_t) c->hist.wakeups ? p99 : "-", o99,
                       (uint64_t) c->hist.wakeups);
        }
}

void ctl_stats_status_json(const CtlStats *s) {
        json_key("last_stats", false);
        if (s->finished_usec == 0) {
                printf("null");
                return;
        }
        putchar('{');
        json_kv_int("finished_usec", (long long) s->finished_usec, true);
        json_kv_int("duration_usec", (long long) s->duration_usec, false);
        json_kv_str("note", s->note, false);
        json_key("classes", false);
        putchar('[');
        for (size_t i = 0; i < s->n_classes; i++) {
                const CtlStatsClass *c = &s->classes[i];

                json_sep(i);
                putchar('{');
                json_kv_str("rule", c->flags & (LATNICE_STATS_F_OTHER | LATNICE_STATS_F_MORE_RULES) ? "" : c->name,
                            true);
                json_kv_bool("comparison", c->flags & LATNICE_STATS_F_OTHER, false);
                json_kv_int("wakeups", (long long) c->hist.wakeups, false);
                printf(",\"p99_us\":%.1f}", stats_percentile(&c->hist, 99));
        }
        printf("]}");
}
