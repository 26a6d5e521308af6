/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * scx_latnice's loader: loads scheduler/scx_latnice.bpf.c, attaches it as
 * the system's sched_ext scheduler and holds it until SIGINT/SIGTERM, or
 * until the kernel disables it (an error, the watchdog, sysrq-S), then says
 * why and exits: 0 when asked to stop, 1 when the kernel ejected it.
 *
 * The scheduler hangs on a BPF link, not on the map: when this process dies
 * however it dies (SIGKILL included), the kernel closes the link and every
 * task goes back to the fair class. libbpf before 1.2 cannot make struct_ops
 * links (Debian 12 has 1.1), so the map is created with BPF_F_LINK and the
 * link is made here with BPF_LINK_CREATE (kernel 6.4, commit 68b04864ca42
 * "bpf: Create links for BPF struct_ops maps").
 *
 * The values it honours on mainline are those latniced granted: a map
 * pinned at LATNICE_GRANTED_PIN (include/latnice/granted.h), created here
 * or, where one of the same layout is pinned already, reused, so that
 * latniced's entries survive a restart of the scheduler.
 *
 * Nothing is polled: the sd-event loop wakes on the signals, on the link
 * (EPOLLHUP once the kernel detached it, 6.9 and later) and on the kernel's
 * sched_ext uevents (the "root" kobject goes away on every disable path).
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/netlink.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include <linux/types.h>

#include "latnice/granted.h"
#include "latnice/uapi.h"

/* The kernel's short type names, which the skeleton's view of the BPF globals uses. */
typedef __u32 u32;
typedef __s32 s32;
typedef __u64 u64;
typedef __s64 s64;

#include "scx_latnice.h"
#include "scx_latnice.skel.h"

/* Not in Debian 12's linux/bpf.h (6.1): include/uapi/linux/bpf.h of 6.4 and later. */
#define LN_BPF_F_LINK (1U << 13)
#define LN_BPF_STRUCT_OPS 44

/* enum scx_exit_kind (kernel/sched/ext.c, 6.12): below 1024 a clean unregistration, from 1024 an error. */
#define LN_SCX_EXIT_UNREG 64
#define LN_SCX_EXIT_ERROR 1024

#define BPF_FS_MAGIC_ 0xcafe4a11 /* linux/magic.h's BPF_FS_MAGIC */
#define BASE_SLICE_FILE "/sys/kernel/debug/sched/base_slice_ns"
#define MAX_CPUS 512 /* as in the BPF side */

typedef struct Loader {
        struct scx_latnice_bpf *skel;
        struct bpf_link *map_link; /* libbpf's handle of the map update; the kernel link is link_fd */
        int link_fd;
        int uevent_fd;
        sd_event *event;
} Loader;

static Loader *loader_free(Loader *l) {
        if (!l)
                return NULL;
        sd_event_unref(l->event);
        if (l->uevent_fd >= 0)
                close(l->uevent_fd);
        if (l->link_fd >= 0)
                close(l->link_fd);
        if (l->map_link) {
                /* Its detach would delete the map's value, which a BPF_F_LINK map refuses: the link is ours. */
                bpf_link__disconnect(l->map_link);
                bpf_link__destroy(l->map_link);
        }
        scx_latnice_bpf__destroy(l->skel);
        free(l);
        return NULL;
}

static void loader_freep(Loader **l) {
        loader_free(*l);
}

/* The default slice: debugfs where mounted, else what sched_getattr() reports for this thread once it is
 * a plain SCHED_OTHER task without a custom slice (a custom slice is inherited from whoever started us). */
static int read_base_slice(unsigned long long *ret) {
        struct latnice_sched_attr a = { .size = LATNICE_SCHED_ATTR_SIZE_VER1 };
        FILE *f = fopen(BASE_SLICE_FILE, "re");
        unsigned long long v = 0;

        if (f) {
                int ok = fscanf(f, "%llu", &v) == 1;

                fclose(f);
                if (ok && v > 0) {
                        *ret = v;
                        return 0;
                }
        }
        if (latnice_sched_getattr(0, &a, LATNICE_SCHED_ATTR_SIZE_VER1, 0) < 0)
                return -errno;
        a = (struct latnice_sched_attr) {
                .size = LATNICE_SCHED_ATTR_SIZE_VER1,
                .sched_policy = LATNICE_SCHED_OTHER,
                .sched_nice = a.sched_policy == LATNICE_SCHED_OTHER || a.sched_policy == LATNICE_SCHED_BATCH
                                      ? a.sched_nice
                                      : 0,
        };
        if (latnice_sched_setattr(0, &a, 0) < 0)
                return -errno;
        if (latnice_sched_getattr(0, &a, LATNICE_SCHED_ATTR_SIZE_VER1, 0) < 0)
                return -errno;
        if (a.sched_runtime == 0)
                return -EOPNOTSUPP;
        *ret = a.sched_runtime;
        return 0;
}

/*
 * Where the map of granted values is pinned: a bpffs, in a directory only root can write (bpffs mounted
 * without mode= is 1777: a directory another user made there could hold a map that user writes). A pin of
 * another layout (an scx_latnice of another version) is replaced, so that libbpf can pin ours. Returns 0,
 * or 1 where there is no bpffs: then the map is not pinned and every task runs at 0.
 */
static int prepare_pin(struct bpf_map *map) {
        struct bpf_map_info info = {};
        __u32 len = sizeof(info);
        struct statfs sfs;
        struct stat st;
        int fd;

        if (statfs(LATNICE_BPFFS, &sfs) < 0 || (unsigned long) sfs.f_type != BPF_FS_MAGIC_)
                return 1;
        if (mkdir(LATNICE_GRANTED_PIN_DIR, 0700) < 0 && errno != EEXIST)
                return -errno;
        if (lstat(LATNICE_GRANTED_PIN_DIR, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022))
                return -EPERM;
        if (lstat(LATNICE_GRANTED_PIN, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        fd = bpf_obj_get(LATNICE_GRANTED_PIN);
        if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && st.st_uid == 0 &&
            info.type == bpf_map__type(map) && info.key_size == bpf_map__key_size(map) &&
            info.value_size == bpf_map__value_size(map) && info.max_entries == bpf_map__max_entries(map) &&
            info.map_flags == bpf_map__map_flags(map)) {
                close(fd);
                return 0;
        }
        if (fd >= 0)
                close(fd);
        printf("scx_latnice: %s is not a map of this version's layout: replacing it (latniced fills the new one)\n",
               LATNICE_GRANTED_PIN);
        return unlink(LATNICE_GRANTED_PIN) < 0 ? -errno : 0;
}

static unsigned count_granted(Loader *l) {
        struct latnice_granted_key k, next;
        int fd = bpf_map__fd(l->skel->maps.granted);
        unsigned n = 0;

        for (const void *prev = NULL; n <= LATNICE_GRANTED_MAX && bpf_map_get_next_key(fd, prev, &next) == 0;
             prev = &k, n++)
                k = next;
        return n;
}

static void report(Loader *l) {
        const struct scx_latnice_bpf__bss *b = l->skel->bss;

        printf("scx_latnice: %llu wakeup preemptions, %llu idle CPUs woken, %llu tasks put straight on an idle "
               "CPU, %llu queued, %llu CPU hotplug events\n",
               (unsigned long long) b->nr_wakeup_kicks, (unsigned long long) b->nr_idle_kicks,
               (unsigned long long) b->nr_direct, (unsigned long long) b->nr_queued,
               (unsigned long long) b->nr_hotplug);
}

/* Has the kernel disabled us? Then say why and leave the loop. */
static void check_exit(Loader *l) {
        struct latnice_exit_info *ei = &l->skel->bss->exit_info;
        int kind = __atomic_load_n(&ei->kind, __ATOMIC_ACQUIRE);

        if (kind == 0)
                return;
        printf("scx_latnice: %s by the kernel: %s%s%s%s (kind %d, code %lld)\n",
               kind >= LN_SCX_EXIT_ERROR ? "EJECTED" : "disabled", ei->reason, ei->msg[0] ? " (" : "", ei->msg,
               ei->msg[0] ? ")" : "", kind, (long long) ei->exit_code);
        (void) sd_event_exit(l->event, kind >= LN_SCX_EXIT_ERROR ? 1 : 0);
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Loader *l = userdata;

        printf("scx_latnice: %s, detaching\n", strsignal((int) si->ssi_signo));
        /* The kernel runs the unregistration (and our exit callback) before BPF_LINK_DETACH returns. */
        if (bpf_link_detach(l->link_fd) < 0)
                fprintf(stderr, "scx_latnice: BPF_LINK_DETACH: %s; closing the link instead\n", strerror(errno));
        close(l->link_fd);
        l->link_fd = -1;
        if (__atomic_load_n(&l->skel->bss->exit_info.kind, __ATOMIC_ACQUIRE) != 0)
                check_exit(l);
        return sd_event_exit(l->event, 0);
}

static int on_link(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Loader *l = userdata;

        check_exit(l);
        /* Detached without an exit record (cannot happen with sched_ext, which always calls exit): leave. */
        if (revents & (EPOLLHUP | EPOLLERR)) {
                printf("scx_latnice: the kernel detached the scheduler\n");
                return sd_event_exit(l->event, 1);
        }
        return 0;
}

static int on_uevent(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Loader *l = userdata;
        char buf[4096];

        /* Drain; whatever it said, the exit record decides. */
        while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) >= 0 || errno == ENOBUFS)
                ;
        check_exit(l);
        return 0;
}

static int open_uevents(void) {
        struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = 1 };
        int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);

        if (fd < 0)
                return -errno;
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                int r = -errno;

                close(fd);
                return r;
        }
        return fd;
}

static bool arg_verbose;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap) {
        if (level == LIBBPF_DEBUG && !arg_verbose)
                return 0;
        return vfprintf(stderr, fmt, ap);
}

static void help(void) {
        printf("scx_latnice [-v]\n\n"
               "Runs the latency-nice sched_ext scheduler until SIGINT or SIGTERM.\n"
               "  -v, --verbose   libbpf's messages too\n"
               "  -h, --help      this text\n");
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "verbose", no_argument, NULL, 'v' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        static const unsigned w[LATNICE_WIDTH] = LATNICE_PRIO_TO_WEIGHT;
        __attribute__((cleanup(loader_freep))) Loader *l = NULL;
        LIBBPF_OPTS(bpf_object_open_opts, open_opts, .pin_root_path = LATNICE_GRANTED_PIN_DIR);
        unsigned long long base = 0;
        bool pinned;
        sigset_t ss;
        long tck;
        int c, r, ncpus;

        while ((c = getopt_long(argc, argv, "vh", options, NULL)) >= 0)
                switch (c) {
                case 'v':
                        arg_verbose = true;
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        return 2;
                }
        if (optind < argc) {
                fprintf(stderr, "scx_latnice: unexpected argument '%s'\n", argv[optind]);
                return 2;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        libbpf_set_print(libbpf_print);

        l = calloc(1, sizeof(Loader));
        if (!l)
                return 1;
        l->link_fd = l->uevent_fd = -1;

        r = read_base_slice(&base);
        if (r < 0) {
                fprintf(stderr, "scx_latnice: cannot learn the default slice (%s): a kernel without EEVDF?\n",
                        strerror(-r));
                return 1;
        }
        ncpus = libbpf_num_possible_cpus();
        if (ncpus <= 0) {
                fprintf(stderr, "scx_latnice: cannot count the CPUs: %s\n", strerror(-ncpus));
                return 1;
        }
        if (ncpus > MAX_CPUS)
                fprintf(stderr, "scx_latnice: %d CPUs: wakeup preemption looks at the first %d only\n", ncpus,
                        MAX_CPUS);

        l->skel = scx_latnice_bpf__open_opts(&open_opts);
        if (!l->skel) {
                fprintf(stderr, "scx_latnice: cannot open the BPF object: %s\n", strerror(errno));
                return 1;
        }
        /* The mapping for every value; w[20] is 1024, so slice(0) is the default slice itself. */
        for (int i = 0; i < LATNICE_WIDTH; i++)
                l->skel->rodata->slice_of[i] = latnice_slice_of_weight(base, w[i]);
        l->skel->rodata->nr_cpus = (unsigned) ncpus;
        tck = sysconf(_SC_CLK_TCK);
        l->skel->rodata->ns_per_tick = tck > 0 ? 1000000000ULL / (unsigned long long) tck : 10000000ULL;
        r = prepare_pin(l->skel->maps.granted);
        if (r < 0) {
                fprintf(stderr, "scx_latnice: refusing to use %s for the values latniced grants: %s%s\n",
                        LATNICE_GRANTED_PIN_DIR, strerror(-r),
                        r == -EPERM ? " (not a directory of root's, or writable by others)" : "");
                return 1;
        }
        pinned = r == 0;
        if (!pinned) {
                fprintf(stderr, "scx_latnice: no bpffs at %s: latniced cannot tell the scheduler the values it "
                        "grants, every task runs at latency nice 0\n", LATNICE_BPFFS);
                r = bpf_map__set_pin_path(l->skel->maps.granted, NULL);
                if (r < 0) {
                        fprintf(stderr, "scx_latnice: cannot unpin the map: %s\n", strerror(-r));
                        return 1;
                }
        }
        r = bpf_map__set_map_flags(l->skel->maps.latnice_ops,
                                   bpf_map__map_flags(l->skel->maps.latnice_ops) | LN_BPF_F_LINK);
        if (r >= 0)
                r = bpf_program__set_flags(l->skel->progs.latnice_init,
                                           bpf_program__flags(l->skel->progs.latnice_init) | BPF_F_SLEEPABLE);
        if (r < 0) {
                fprintf(stderr, "scx_latnice: cannot prepare the BPF object: %s\n", strerror(-r));
                return 1;
        }
        r = scx_latnice_bpf__load(l->skel);
        if (r < 0) {
                fprintf(stderr, "scx_latnice: cannot load the scheduler (%s): a kernel without sched_ext "
                        "(CONFIG_SCHED_CLASS_EXT), or not root?\n", strerror(-r));
                return 1;
        }

        /* The signals first: from the attach on, a SIGTERM must detach, not kill. */
        sigemptyset(&ss);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGHUP);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        r = sd_event_default(&l->event);
        if (r >= 0)
                r = sd_event_add_signal(l->event, NULL, SIGINT, on_signal, l);
        if (r >= 0)
                r = sd_event_add_signal(l->event, NULL, SIGTERM, on_signal, l);
        if (r >= 0)
                r = sd_event_add_signal(l->event, NULL, SIGHUP, on_signal, l);
        if (r < 0) {
                fprintf(stderr, "scx_latnice: cannot set up the event loop: %s\n", strerror(-r));
                return 1;
        }

        l->map_link = bpf_map__attach_struct_ops(l->skel->maps.latnice_ops);
        if (!l->map_link) {
                fprintf(stderr, "scx_latnice: cannot set the scheduler's operations: %s\n", strerror(errno));
                return 1;
        }
        l->link_fd = bpf_link_create(bpf_map__fd(l->skel->maps.latnice_ops), 0, LN_BPF_STRUCT_OPS, NULL);
        if (l->link_fd < 0) {
                fprintf(stderr, "scx_latnice: cannot attach the scheduler (%s)%s\n", strerror(errno),
                        errno == EEXIST || errno == EBUSY ? ": another sched_ext scheduler runs" : "");
                return 1;
        }
        r = sd_event_add_io(l->event, NULL, l->link_fd, EPOLLIN | EPOLLHUP, on_link, l);
        if (r < 0) {
                fprintf(stderr, "scx_latnice: cannot watch the link: %s\n", strerror(-r));
                return 1;
        }
        l->uevent_fd = open_uevents();
        if (l->uevent_fd >= 0)
                r = sd_event_add_io(l->event, NULL, l->uevent_fd, EPOLLIN, on_uevent, l);
        if (l->uevent_fd < 0 || r < 0)
                fprintf(stderr, "scx_latnice: no kernel uevents (%s): an ejection is noticed when the link "
                        "closes only\n", strerror(l->uevent_fd < 0 ? -l->uevent_fd : -r));

        printf("scx_latnice: attached (default slice %llu ns, %d CPUs; slice(-20) %llu ns, slice(19) %llu ns); "
               "values latniced granted: %s, %u entries\n",
               base, ncpus, (unsigned long long) l->skel->rodata->slice_of[0],
               (unsigned long long) l->skel->rodata->slice_of[LATNICE_WIDTH - 1],
               pinned ? LATNICE_GRANTED_PIN : "not pinned", count_granted(l));
        (void) sd_notify(0, "READY=1\nSTATUS=Scheduling (sched_ext: latnice)");
        check_exit(l); /* disabled between the attach and now */

        r = sd_event_loop(l->event);
        (void) sd_notify(0, "STOPPING=1");
        report(l);
        return r < 0 ? 1 : r;
}
