/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* latniced: command line, and run(): wires the bus and unit layers to the manager and runs it. */

#include <bpf/libbpf.h>
#include <getopt.h>
#include <stdarg.h>
#include <signal.h>
#include <sys/resource.h>

#include "log.h"
#include "manager-bus.h"
#include "manager-foreground.h"
#include "manager-lifecycle.h"
#include "manager-units.h"
#include "manager.h"
#include "profile.h"
#include "util.h"

static ManagerOptions arg_options = {
        .source = SOURCE_AUTO,
};

/* The layers above the manager, which it reaches only through these. */
static const ManagerHooks hooks = {
        .bus_api_connected = manager_bus_on_connected,
        .bus_api_disconnected = manager_bus_on_disconnected,
        .units_connected = manager_units_on_connected,
        .units_disconnected = manager_units_on_disconnected,
        .applied = manager_bus_emit_applied,
        .reloaded = manager_bus_emit_reloaded,
        .units_decide = manager_units_decide,
        .units_filter_ids = manager_units_filter_ids,
        .units_rules_changed = manager_units_rules_changed,
        .units_free = manager_units_free,
        .foreground_reload = manager_foreground_reload,
        .foreground_drop_adopted = manager_foreground_drop_adopted,
        .foreground_free = manager_foreground_free,
        .stats_done = manager_bus_stats_done,
        .backend_changed = manager_bus_emit_backend,
};

static void help(void) {
        printf("latniced [OPTIONS...]\n\n"
               "Gives processes a latency nice value from the rules in /etc/latnice.d,\n"
               "/run/latnice.d, %s and the active profile, as they start.\n\n"
               "  -h --help              show this help\n"
               "     --version           show the version\n"
               "     --root=DIR          read rules and latniced.conf below DIR\n"
               "     --profile=NAME      use this profile instead of latniced.conf's\n"
               "     --no-profile        use only the drop-in rules\n"
               "     --profile-dir=DIR   look for profiles in DIR first\n"
               "     --dry-run           decide and log, apply nothing\n"
               "     --keep-on-exit      do not restore values on exit\n"
               "     --state-dir=DIR     remember what was set in DIR (default %s)\n"
               "     --source=SOURCE     auto (default), bpf, netlink or proc-scan\n"
               "     --tracepoint        use the plain tracepoints instead of tp_btf (exec, statistics)\n"
               "     --ringbuf-size=N    BPF ring buffer bytes (power of two)\n"
               "     --scan-interval=MS  period of the proc-scan source\n"
               "     --no-bus            do not connect to the system bus\n"
               "     --no-realtime       handle exec events as a normal task, not SCHED_FIFO\n"
               "     --scx-latnice=PATH  the scx_latnice that Scheduler=latnice runs without systemd\n"
               "                         (default " LATNICE_SCX_LATNICE ")\n"
               "     --log-level=LEVEL   err, warning, notice, info (default), debug\n",
               LATNICE_VENDOR_RULE_DIR, LATNICE_STATE_DIR);
}

enum {
        ARG_VERSION = 0x100,
        ARG_DRY_RUN,
        ARG_KEEP_ON_EXIT,
        ARG_STATE_DIR,
        ARG_SOURCE,
        ARG_TRACEPOINT,
        ARG_RINGBUF_SIZE,
        ARG_SCAN_INTERVAL,
        ARG_NO_BUS,
        ARG_NO_REALTIME,
        ARG_LOG_LEVEL,
        ARG_TEST_STATS_FAIL,
        ARG_SCX_LATNICE,
};

/* The options that only switch a flag on or store a path: 1 if c is one, 0 if not, < 0 for a relative path. */
static int flag_or_path_option(int c, char *arg) {
        static const struct {
                int option;
                bool *flag;       /* set to true, or: */
                const char *name; /* ... arg must be an absolute path, kept in *path */
                char **path;
        } table[] = {
                { ARG_DRY_RUN, &arg_options.dry_run },
                { ARG_KEEP_ON_EXIT, &arg_options.keep_on_exit },
                { ARG_TRACEPOINT, &arg_options.force_tracepoint },
                { ARG_TEST_STATS_FAIL, &arg_options.stats_fail },
                { ARG_NO_BUS, &arg_options.no_bus },
                { ARG_NO_REALTIME, &arg_options.no_realtime },
                { ARG_STATE_DIR, .name = "--state-dir", .path = &arg_options.state_dir },
                { ARG_SCX_LATNICE, .name = "--scx-latnice", .path = &arg_options.scx_latnice },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                if (table[i].option != c)
                        continue;
                if (table[i].flag)
                        *table[i].flag = true;
                else if (arg[0] != '/')
                        return log_error_errno(-EINVAL, "%s= needs an absolute path.", table[i].name);
                else
                        *table[i].path = arg;
                return 1;
        }
        return 0;
}

static int parse_argv(int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                RULE_TREE_OPTIONS,
                { "dry-run", no_argument, NULL, ARG_DRY_RUN },
                { "keep-on-exit", no_argument, NULL, ARG_KEEP_ON_EXIT },
                { "state-dir", required_argument, NULL, ARG_STATE_DIR },
                { "source", required_argument, NULL, ARG_SOURCE },
                { "tracepoint", no_argument, NULL, ARG_TRACEPOINT },
                { "ringbuf-size", required_argument, NULL, ARG_RINGBUF_SIZE },
                { "scan-interval", required_argument, NULL, ARG_SCAN_INTERVAL },
                { "no-bus", no_argument, NULL, ARG_NO_BUS },
                { "no-realtime", no_argument, NULL, ARG_NO_REALTIME },
                { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
                { "scx-latnice", required_argument, NULL, ARG_SCX_LATNICE },
                /* Tests only: the statistics take the path of a kernel where nothing attaches. */
                { "test-stats-fail", no_argument, NULL, ARG_TEST_STATS_FAIL },
                {}
        };
        RuleTreeOptions tree = {};
        uint64_t v;
        int c, l, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                r = rule_tree_option(c, optarg, &tree);
                if (r < 0)
                        return log_error_errno(r, "Invalid profile name '%s'.", optarg);
                if (r > 0)
                        continue;
                r = flag_or_path_option(c, optarg);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("latniced %s\n", LATNICE_VERSION);
                        return 0;
                case ARG_SOURCE:
                        arg_options.source = source_kind_from_string(optarg);
                        if (arg_options.source == _SOURCE_INVALID)
                                return log_error_errno(-EINVAL, "Unknown --source=%s: expected auto, bpf, netlink "
                                                       "or proc-scan.", optarg);
                        break;
                case ARG_RINGBUF_SIZE:
                        if (safe_atou64(optarg, &v) < 0 || v < 4096 || v > (1ULL << 30) || (v & (v - 1)))
                                return log_error_errno(-EINVAL, "Invalid --ringbuf-size=%s: a power of two from 4096.",
                                                       optarg);
                        arg_options.ringbuf_size = (size_t) v;
                        break;
                case ARG_SCAN_INTERVAL:
                        if (safe_atou64(optarg, &v) < 0 || v < 10 || v > 3600 * 1000)
                                return log_error_errno(-EINVAL, "Invalid --scan-interval=%s: milliseconds, 10 or "
                                                       "more.", optarg);
                        arg_options.scan_interval_usec = v * 1000;
                        break;
                case ARG_LOG_LEVEL:
                        l = log_level_from_string(optarg);
                        if (l < 0)
                                return log_error_errno(l, "Invalid --log-level=%s.", optarg);
                        log_set_max_level(l);
                        break;
                default:
                        return -EINVAL;
                }
        }
        if (optind < argc)
                return log_error_errno(-EINVAL, "latniced takes no arguments.");
        /* Strings of argv; manager_new() copies what it keeps and frees its copies. */
        arg_options.root = (char *) tree.root;
        arg_options.profile = (char *) tree.profile;
        arg_options.profile_dir = (char *) tree.profile_dir;
        arg_options.no_profile = tree.no_profile;
        return 1;
}

/* libbpf's own messages: details behind our summaries, so at debug level only. */
static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap) {
        char buf[1024];
        size_t l;

        if (log_get_max_level() < LOG_DEBUG)
                return 0;
        vsnprintf(buf, sizeof(buf), fmt, ap);
        l = strlen(buf);
        if (l > 0 && buf[l - 1] == '\n')
                buf[l - 1] = 0;
        log_debug("libbpf: %s", buf);
        return 0;
}

static int run(int argc, char **argv) {
        _cleanup_(manager_freep) Manager *m = NULL;
        struct rlimit rl;
        sigset_t ss;
        int r;

        log_open();
        libbpf_set_print(libbpf_log);
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;

        /* BPF maps count against RLIMIT_MEMLOCK on kernels before 5.11 (the unit sets LimitMEMLOCK=). */
        if (getrlimit(RLIMIT_MEMLOCK, &rl) >= 0 && rl.rlim_cur != RLIM_INFINITY) {
                rl = (struct rlimit) { RLIM_INFINITY, RLIM_INFINITY };
                if (setrlimit(RLIMIT_MEMLOCK, &rl) < 0)
                        log_info_errno(-errno, "Failed to raise RLIMIT_MEMLOCK, ignoring (on kernels before 5.11 "
                                       "the BPF maps may not fit: set LimitMEMLOCK=infinity for latniced): %m");
        }

        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &ss, NULL) < 0)
                return log_error_errno(-errno, "Failed to block signals: %m");

        r = manager_new(&arg_options, &hooks, &m);
        if (r < 0)
                return log_error_errno(r, "Failed to set up: %m");
        r = manager_start(m);
        if (r < 0)
                return r;
        return manager_run(m);
}

int main(int argc, char **argv) {
        int r = run(argc, argv);

        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
