/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lnbench-desktop: the latency-sensitive side of a desktop, for bench/desktop/run.py.
 *
 * "run" starts three processes, each exec'd under the command name a desktop
 * profile rule matches (a symlink named like the program, so latniced sees
 * the name at exec, as it sees the real program's; with --exe-dir=DIR a copy
 * of this program per part, DIR/COMM, each its own file, for rules that name
 * the file: run.py points the profile's Exe= paths there):
 *   audio       (default comm "pipewire"): a 2.67 ms periodic timer (128 frames
 *               at 48 kHz), a little work per period; a period whose work ends
 *               after the period is over, or that is skipped, is a miss;
 *   compositor  (default comm "sway"): a 60 Hz frame loop, a few hundred us of
 *               work per frame; a frame finished past its 16.7 ms is late; a
 *               second thread delivers "key presses" to the terminal and times
 *               the echo, as a compositor delivers keys and receives the frame;
 *   terminal    (default comm "foot"): woken by a pipe write, works a little,
 *               answers.
 * Samples before --warmup are dropped (latniced applies at exec, within ms).
 * The run ends after --duration or at SIGINT/SIGTERM; then each part reports.
 *
 * Output (stdout), one line per item, whitespace-separated:
 *   # lnbench-desktop 1                     format version, first line
 *   info PART KEY VALUE                     what ran (comm, pid, work, loops_per_us)
 *   metric PART NAME VALUE UNIT             UNIT: count, per10k, us, ns
 * PART is audio, compositor, terminal or driver. Metrics:
 *   audio:      periods, misses (count), misses_per_10k (per10k),
 *               wakeup_p50, wakeup_p99, wakeup_max (us), slice (ns)
 *   compositor: frames, late_frames (count), late_per_10k (per10k),
 *               wakeup_p50, wakeup_p99, wakeup_max (us), slice, input_slice (ns)
 *   terminal:   echoes (count), wakeup_p50, wakeup_p99, wakeup_max (us: key
 *               written -> terminal running), echo_p50, echo_p99, echo_max
 *               (us: key written -> answer read by the compositor), slice (ns)
 *   driver:     measured (us: the measured window)
 * "slice" is what sched_getattr() reports at the end (sched_runtime: the
 * custom slice, or the default one). The last line is "# end".
 *
 * "hog" spins forever; "storm [GROUPS [PAIRS]]" is a hackbench-like message
 * storm: GROUPS groups of PAIRS senders and PAIRS receivers, every sender
 * writing 100-byte messages to every receiver of its group through pipes.
 * Both are loads for run.py and run until killed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "latnice/uapi.h"

#define FORMAT_VERSION 1

/* The fds a part finds at exec. */
#define FD_REPORT 3 /* write end of the report pipe */
#define FD_STOP 4   /* read end of the stop pipe: POLLHUP when the run ends */
#define FD_IN 5     /* compositor: answers from the terminal; terminal: key presses */
#define FD_OUT 6    /* compositor: key presses to the terminal; terminal: answers */

#define AUDIO_PERIOD_NS 2666667ULL     /* 128 frames at 48 kHz */
#define FRAME_PERIOD_NS 16666667ULL    /* 60 Hz */
#define KEY_GAP_MIN_MS 15              /* key presses every 15..35 ms, a fast typist's repeat */
#define KEY_GAP_SPAN_MS 20

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static volatile uint64_t work_sink;

/* A fixed amount of CPU work: the same instructions whoever gets preempted. */
static void work_loops(uint64_t loops) {
        uint64_t x = 88172645463325252ULL;

        for (uint64_t i = 0; i < loops; i++) {
                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                __asm__ volatile("" : "+r"(x));
        }
        work_sink = x;
}

/* Loops per us of thread CPU time: preemption does not count, so this holds under load. */
static double calibrate(void) {
        uint64_t best = UINT64_MAX;

        for (int i = 0; i < 7; i++) {
                uint64_t t = thread_cpu_ns();

                work_loops(200000);
                t = thread_cpu_ns() - t;
                if (t > 0 && t < best)
                        best = t;
        }
        return 200000.0 * 1000.0 / (double) best;
}

static uint64_t my_slice_ns(pid_t tid) {
        struct latnice_sched_attr a = {};

        if (latnice_sched_getattr(tid, &a, sizeof(a), 0) < 0)
                return 0;
        return a.sched_runtime;
}

typedef struct Samples {
        uint64_t *v;
        size_t n, cap;
} Samples;

static int samples_add(Samples *s, uint64_t x) {
        if (s->n == s->cap) {
                size_t cap = s->cap ? s->cap * 2 : 4096;
                uint64_t *v = realloc(s->v, cap * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                s->v = v;
                s->cap = cap;
        }
        s->v[s->n++] = x;
        return 0;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

/* Nearest-rank percentile in us; sorts s. 0 without samples. */
static double samples_pct_us(Samples *s, double p) {
        size_t k;

        if (s->n == 0)
                return 0;
        qsort(s->v, s->n, sizeof(*s->v), cmp_u64);
        k = (size_t) ((p / 100.0) * (double) s->n + 0.999999);
        if (k < 1)
                k = 1;
        if (k > s->n)
                k = s->n;
        return (double) s->v[k - 1] / 1000.0;
}

/* A report is collected in one buffer and written with one write(): the
 * parts share the report pipe, and writes up to PIPE_BUF do not interleave. */
typedef struct Report {
        char buf[PIPE_BUF];
        size_t len;
        bool overflow;
} Report;

__attribute__((format(printf, 2, 3)))
static void report_add(Report *r, const char *fmt, ...) {
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(r->buf + r->len, sizeof(r->buf) - r->len, fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t) n >= sizeof(r->buf) - r->len)
                r->overflow = true;
        else
                r->len += (size_t) n;
}

static void report_latency(Report *r, const char *part, const char *name, Samples *s) {
        report_add(r, "metric %s %s_p50 %.1f us\n", part, name, samples_pct_us(s, 50));
        report_add(r, "metric %s %s_p99 %.1f us\n", part, name, samples_pct_us(s, 99));
        report_add(r, "metric %s %s_max %.1f us\n", part, name, samples_pct_us(s, 100));
}

static int report_send(Report *r) {
        if (r->overflow)
                return -ENOBUFS;
        if (write(FD_REPORT, r->buf, r->len) != (ssize_t) r->len)
                return -EIO;
        return 0;
}

typedef struct PartArgs {
        const char *role;
        uint64_t t_start;     /* CLOCK_MONOTONIC ns: samples before are dropped */
        double loops_per_us;
        unsigned work_us;
} PartArgs;

/* The stop pipe hung up: the run is over. */
static bool stop_requested(const struct pollfd *p) {
        return p->revents & (POLLHUP | POLLERR | POLLIN);
}

static int timer_start(uint64_t period_ns, uint64_t *ret_t0) {
        uint64_t t0 = now_ns() + period_ns;
        struct itimerspec its = {
                .it_value = { .tv_sec = (time_t) (t0 / 1000000000ULL), .tv_nsec = (long) (t0 % 1000000000ULL) },
                .it_interval = { .tv_sec = (time_t) (period_ns / 1000000000ULL),
                                 .tv_nsec = (long) (period_ns % 1000000000ULL) },
        };
        int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);

        if (fd < 0)
                return -errno;
        if (timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
                int r = -errno;

                close(fd);
                return r;
        }
        *ret_t0 = t0;
        return fd;
}

typedef struct PeriodicResult {
        uint64_t periods, misses;
        Samples wakeup;
} PeriodicResult;

/* The audio and the frame loop: wake on a periodic timer, work, finish
 * within the period. A wakeup's latency counts from the oldest expiry not
 * yet served; expiries skipped entirely are misses too. */
static int periodic_loop(const PartArgs *a, uint64_t period_ns, PeriodicResult *res) {
        uint64_t loops = (uint64_t) (a->loops_per_us * a->work_us), t0 = 0, k = 0;
        int tfd = timer_start(period_ns, &t0), r = 0;

        if (tfd < 0)
                return tfd;
        for (;;) {
                struct pollfd p[2] = { { .fd = tfd, .events = POLLIN }, { .fd = FD_STOP, .events = POLLIN } };
                uint64_t n, t, first, latest, done;

                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        break;
                }
                if (stop_requested(&p[1]))
                        break;
                if (!(p[0].revents & POLLIN))
                        continue;
                if (read(tfd, &n, sizeof(n)) != sizeof(n) || n == 0)
                        continue;
                t = now_ns();
                first = t0 + k * period_ns;
                latest = t0 + (k + n - 1) * period_ns;
                k += n;
                work_loops(loops);
                done = now_ns();
                if (first < a->t_start)
                        continue;
                res->periods += n;
                res->misses += (n - 1) + (done > latest + period_ns);
                r = samples_add(&res->wakeup, t - first);
                if (r < 0)
                        break;
        }
        close(tfd);
        return r;
}

/* A periodic part's metrics under its own names: the periods, the missed ones (also per 10000), the
 * wakeup latency, and the slice it runs with now. */
static void report_periodic(Report *rep, const char *part, const char *periods, const char *misses,
                            const char *per_10k, PeriodicResult *res) {
        report_add(rep, "metric %s %s %" PRIu64 " count\n", part, periods, res->periods);
        report_add(rep, "metric %s %s %" PRIu64 " count\n", part, misses, res->misses);
        report_add(rep, "metric %s %s %.2f per10k\n", part, per_10k,
                   res->periods ? 10000.0 * (double) res->misses / (double) res->periods : 0.0);
        report_latency(rep, part, "wakeup", &res->wakeup);
        report_add(rep, "metric %s slice %" PRIu64 " ns\n", part, my_slice_ns(0));
}

static int part_audio(const PartArgs *a) {
        PeriodicResult res = {};
        Report rep = {};
        int r = periodic_loop(a, AUDIO_PERIOD_NS, &res);

        if (r < 0)
                return r;
        report_periodic(&rep, "audio", "periods", "misses", "misses_per_10k", &res);
        free(res.wakeup.v);
        return report_send(&rep);
}

typedef struct EchoResult {
        const PartArgs *args;
        pid_t tid;
        uint64_t slice;
        Samples rtt;
        int error;
} EchoResult;

/* The compositor's input side: a key press to the terminal at random
 * intervals, the time until its answer comes back. */
static void *echo_thread(void *userdata) {
        EchoResult *e = userdata;
        unsigned seed = (unsigned) now_ns();

        e->tid = (pid_t) syscall(SYS_gettid);
        for (;;) {
                struct pollfd p[2] = { { .fd = FD_STOP, .events = POLLIN }, { .fd = FD_IN, .events = POLLIN } };
                uint64_t t, back;
                int gap = KEY_GAP_MIN_MS + (int) (rand_r(&seed) % KEY_GAP_SPAN_MS), n;

                n = poll(p, 1, gap);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n != 0)
                        break; /* stop, or an error */
                t = now_ns();
                if (write(FD_OUT, &t, sizeof(t)) != sizeof(t)) {
                        e->error = -EIO;
                        break;
                }
                do
                        n = poll(p, 2, -1);
                while (n < 0 && errno == EINTR);
                if (n < 0 || stop_requested(&p[0]))
                        break;
                if (read(FD_IN, &back, sizeof(back)) != sizeof(back) || back != t) {
                        e->error = -EPROTO;
                        break;
                }
                back = now_ns();
                if (t >= e->args->t_start && samples_add(&e->rtt, back - t) < 0) {
                        e->error = -ENOMEM;
                        break;
                }
        }
        e->slice = my_slice_ns(0);
        return NULL;
}

static int part_compositor(const PartArgs *a) {
        PeriodicResult res = {};
        EchoResult echo = { .args = a };
        Report rep = {};
        pthread_t th;
        int r;

        r = -pthread_create(&th, NULL, echo_thread, &echo);
        if (r < 0)
                return r;
        r = periodic_loop(a, FRAME_PERIOD_NS, &res);
        /* the slice while running: after the loop but before the echo thread is joined */
        report_periodic(&rep, "compositor", "frames", "late_frames", "late_per_10k", &res);
        (void) pthread_join(th, NULL);
        if (r < 0)
                return r;
        if (echo.error < 0)
                return echo.error;
        report_add(&rep, "metric compositor input_slice %" PRIu64 " ns\n", echo.slice);
        report_latency(&rep, "terminal", "echo", &echo.rtt);
        free(res.wakeup.v);
        free(echo.rtt.v);
        return report_send(&rep);
}

static int part_terminal(const PartArgs *a) {
        uint64_t loops = (uint64_t) (a->loops_per_us * a->work_us), echoes = 0;
        Samples wakeup = {};
        Report rep = {};
        int r = 0;

        for (;;) {
                struct pollfd p[2] = { { .fd = FD_IN, .events = POLLIN }, { .fd = FD_STOP, .events = POLLIN } };
                uint64_t t, now;

                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        break;
                }
                if (stop_requested(&p[1]) || !(p[0].revents & POLLIN))
                        break;
                if (read(FD_IN, &t, sizeof(t)) != sizeof(t))
                        break; /* the compositor is gone */
                now = now_ns();
                work_loops(loops);
                if (write(FD_OUT, &t, sizeof(t)) != sizeof(t))
                        break;
                if (t < a->t_start)
                        continue;
                echoes++;
                r = samples_add(&wakeup, now - t);
                if (r < 0)
                        break;
        }
        if (r < 0)
                return r;
        report_add(&rep, "metric terminal echoes %" PRIu64 " count\n", echoes);
        report_latency(&rep, "terminal", "wakeup", &wakeup);
        report_add(&rep, "metric terminal slice %" PRIu64 " ns\n", my_slice_ns(0));
        free(wakeup.v);
        return report_send(&rep);
}

static int parse_u64(const char *s, uint64_t *ret) {
        char *end;
        unsigned long long v;

        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno != 0 || end == s || *end != '\0' || s[0] == '-')
                return -EINVAL;
        *ret = v;
        return 0;
}

static int parse_double(const char *s, double *ret) {
        char *end;
        double v;

        errno = 0;
        v = strtod(s, &end);
        if (errno != 0 || end == s || *end != '\0' || !(v >= 0))
                return -EINVAL;
        *ret = v;
        return 0;
}

/* part ROLE T_START_NS LOOPS_PER_US WORK_US, exec'd by "run" under the part's comm. */
static int run_part(int argc, char **argv) {
        PartArgs a = {};
        uint64_t w;

        if (argc != 6 || parse_u64(argv[3], &a.t_start) < 0 || parse_double(argv[4], &a.loops_per_us) < 0 ||
            parse_u64(argv[5], &w) < 0 || w > 100000) {
                fprintf(stderr, "usage: lnbench-desktop part ROLE T_START_NS LOOPS_PER_US WORK_US\n");
                return 2;
        }
        a.role = argv[2];
        a.work_us = (unsigned) w;
        /* timer slack would add up to 50 us to every timed wakeup */
        (void) prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
        int r = strcmp(a.role, "audio") == 0      ? part_audio(&a)
                : strcmp(a.role, "compositor") == 0 ? part_compositor(&a)
                : strcmp(a.role, "terminal") == 0   ? part_terminal(&a)
                                                    : -EINVAL;
        if (r < 0) {
                fprintf(stderr, "lnbench-desktop: part %s failed: %s\n", a.role, strerror(-r));
                return 1;
        }
        return 0;
}

typedef struct Part {
        const char *role;
        const char *comm;
        unsigned work_us;
        pid_t pid;
} Part;

static int move_fd(int from, int to) {
        if (from == to)
                return fcntl(from, F_SETFD, 0) < 0 ? -errno : 0;
        return dup2(from, to) < 0 ? -errno : 0;
}

/* The child side of a part: fds to their numbers, everything else closed by CLOEXEC. */
static void exec_part(const Part *p, const char *path, int report, int stop, int in, int out, uint64_t t_start,
                      double loops_per_us) {
        char ts[32], lpu[32], wus[16];
        int fds[4] = { report, stop, in, out }, tmp[4];

        /* dup everything above 6 first, so one move cannot overwrite another's source */
        for (int i = 0; i < 4; i++) {
                tmp[i] = fds[i] < 0 ? -1 : fcntl(fds[i], F_DUPFD_CLOEXEC, 10);
                if (fds[i] >= 0 && tmp[i] < 0)
                        _exit(127);
        }
        for (int i = 0; i < 4; i++)
                if (tmp[i] >= 0 && move_fd(tmp[i], FD_REPORT + i) < 0)
                        _exit(127);
        snprintf(ts, sizeof(ts), "%" PRIu64, t_start);
        snprintf(lpu, sizeof(lpu), "%.3f", loops_per_us);
        snprintf(wus, sizeof(wus), "%u", p->work_us);
        execl(path, p->comm, "part", p->role, ts, lpu, wus, (char *) NULL);
        fprintf(stderr, "lnbench-desktop: exec %s: %m\n", path);
        _exit(127);
}

/* A copy of target, executable: a file of its own, as each program of a desktop is. */
static int copy_file(const char *target, const char *path) {
        int in, out, r = 0;
        ssize_t n;

        in = open(target, O_RDONLY | O_CLOEXEC);
        if (in < 0)
                return -errno;
        out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
        if (out < 0) {
                r = -errno;
                close(in);
                return r;
        }
        while ((n = copy_file_range(in, NULL, out, NULL, 1 << 20, 0)) > 0)
                ;
        if (n < 0)
                r = -errno;
        close(in);
        if (close(out) < 0 && r == 0)
                r = -errno;
        return r;
}

static int make_link(const char *dir, const char *comm, const char *target, bool copy, char *ret, size_t size) {
        if (strchr(comm, '/') || strlen(comm) > 15 || comm[0] == '\0' || comm[0] == '.')
                return -EINVAL;
        snprintf(ret, size, "%s/%s", dir, comm);
        if (copy)
                return copy_file(target, ret);
        if (symlink(target, ret) < 0)
                return -errno;
        return 0;
}

static void help(void) {
        printf("lnbench-desktop [run] [OPTIONS...]  the sensitive side of a desktop; metrics on stdout\n"
               "lnbench-desktop hog                 a CPU hog, until killed\n"
               "lnbench-desktop storm [GROUPS [PAIRS]]  a hackbench-like message storm, until killed\n\n"
               "  --duration=SEC          measure this long (default 10; SIGINT/SIGTERM end it earlier)\n"
               "  --warmup=SEC            drop samples from the first SEC (default 1)\n"
               "  --audio-comm=NAME       command name of the audio part (default pipewire)\n"
               "  --compositor-comm=NAME  command name of the compositor part (default sway)\n"
               "  --terminal-comm=NAME    command name of the terminal part (default foot)\n"
               "  --exe-dir=DIR           run each part from a copy of this program, DIR/COMM\n"
               "  --audio-work-us=N       work per audio period (default 250)\n"
               "  --frame-work-us=N       work per frame (default 400)\n"
               "  --echo-work-us=N        work per key press (default 100)\n");
}

/* fork(), the child killed with us: a part or a storm outliving the driver would run forever. */
static pid_t fork_tied(void) {
        pid_t pid = fork();

        if (pid == 0)
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        return pid;
}

static int run_driver(int argc, char **argv) {
        enum { ARG_DURATION = 0x100, ARG_WARMUP, ARG_AUDIO_COMM, ARG_COMP_COMM, ARG_TERM_COMM, ARG_AUDIO_WORK,
               ARG_FRAME_WORK, ARG_ECHO_WORK, ARG_EXE_DIR };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "duration", required_argument, NULL, ARG_DURATION },
                { "warmup", required_argument, NULL, ARG_WARMUP },
                { "audio-comm", required_argument, NULL, ARG_AUDIO_COMM },
                { "compositor-comm", required_argument, NULL, ARG_COMP_COMM },
                { "terminal-comm", required_argument, NULL, ARG_TERM_COMM },
                { "audio-work-us", required_argument, NULL, ARG_AUDIO_WORK },
                { "frame-work-us", required_argument, NULL, ARG_FRAME_WORK },
                { "echo-work-us", required_argument, NULL, ARG_ECHO_WORK },
                { "exe-dir", required_argument, NULL, ARG_EXE_DIR },
                {}
        };
        Part parts[3] = {
                { .role = "audio", .comm = "pipewire", .work_us = 250 },
                { .role = "compositor", .comm = "sway", .work_us = 400 },
                { .role = "terminal", .comm = "foot", .work_us = 100 },
        };
        double duration = 10, warmup = 1, loops_per_us;
        char self[PATH_MAX], tmp_dir[] = "/tmp/lnbench-desktop.XXXXXX", links[3][PATH_MAX];
        const char *dir = NULL;
        int report[2], stop[2], keys[2], answers[2], sfd, tfd, c, rc = 0;
        uint64_t t_begin, t_start, t_end, v;
        sigset_t mask;
        ssize_t n;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_DURATION:
                case ARG_WARMUP:
                        if (parse_double(optarg, c == ARG_DURATION ? &duration : &warmup) < 0) {
                                fprintf(stderr, "lnbench-desktop: invalid time '%s'\n", optarg);
                                return 2;
                        }
                        break;
                case ARG_AUDIO_COMM:
                case ARG_COMP_COMM:
                case ARG_TERM_COMM:
                        parts[c - ARG_AUDIO_COMM].comm = optarg;
                        break;
                case ARG_EXE_DIR:
                        dir = optarg;
                        break;
                case ARG_AUDIO_WORK:
                case ARG_FRAME_WORK:
                case ARG_ECHO_WORK:
                        if (parse_u64(optarg, &v) < 0 || v > 100000) {
                                fprintf(stderr, "lnbench-desktop: invalid work '%s'\n", optarg);
                                return 2;
                        }
                        parts[c - ARG_AUDIO_WORK].work_us = (unsigned) v;
                        break;
                default:
                        return 2;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "lnbench-desktop: unexpected argument '%s'\n", argv[optind]);
                return 2;
        }

        n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n < 0) {
                perror("lnbench-desktop: /proc/self/exe");
                return 1;
        }
        self[n] = '\0';
        memset(links, 0, sizeof(links));
        if (!dir && !(dir = mkdtemp(tmp_dir))) {
                perror("lnbench-desktop: mkdtemp");
                return 1;
        }
        for (int i = 0; i < 3; i++) {
                int q = make_link(dir, parts[i].comm, self, dir != tmp_dir, links[i], sizeof(links[i]));

                if (q < 0) {
                        if (q == -EINVAL)
                                fprintf(stderr, "lnbench-desktop: invalid command name '%s'\n", parts[i].comm);
                        else
                                fprintf(stderr, "lnbench-desktop: %s: %s\n", links[i], strerror(-q));
                        links[i][0] = '\0'; /* not ours to remove (it was there already) */
                        rc = q == -EINVAL ? 2 : 1;
                        goto cleanup_links;
                }
        }

        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0 || (sfd = signalfd(-1, &mask, SFD_CLOEXEC)) < 0 ||
            pipe2(report, O_CLOEXEC) < 0 || pipe2(stop, O_CLOEXEC) < 0 || pipe2(keys, O_CLOEXEC) < 0 ||
            pipe2(answers, O_CLOEXEC) < 0) {
                perror("lnbench-desktop: setup");
                rc = 1;
                goto cleanup_links;
        }

        loops_per_us = calibrate();
        t_begin = now_ns();
        t_start = t_begin + (uint64_t) (warmup * 1e9);
        t_end = t_start + (uint64_t) (duration * 1e9);

        printf("# lnbench-desktop %d\n", FORMAT_VERSION);
        printf("info driver loops_per_us %.1f\n", loops_per_us);
        printf("info driver warmup_s %.3f\n", warmup);
        for (int i = 0; i < 3; i++) {
                int in = -1, out = -1;

                if (i == 1) {
                        in = answers[0];
                        out = keys[1];
                } else if (i == 2) {
                        in = keys[0];
                        out = answers[1];
                }
                parts[i].pid = fork_tied();
                if (parts[i].pid < 0) {
                        perror("lnbench-desktop: fork");
                        rc = 1;
                        break;
                }
                if (parts[i].pid == 0) {
                        sigprocmask(SIG_UNBLOCK, &mask, NULL);
                        exec_part(&parts[i], links[i], report[1], stop[0], in, out, t_start, loops_per_us);
                }
                printf("info %s comm %s\n", parts[i].role, parts[i].comm);
                printf("info %s pid %d\n", parts[i].role, (int) parts[i].pid);
                printf("info %s work_us %u\n", parts[i].role, parts[i].work_us);
        }
        fflush(stdout);
        close(report[1]);
        close(stop[0]);
        close(keys[0]);
        close(keys[1]);
        close(answers[0]);
        close(answers[1]);

        /* Wait for the end of the window or a signal, then hang up the stop pipe. */
        tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
        if (rc == 0 && tfd >= 0) {
                struct itimerspec its = { .it_value = { .tv_sec = (time_t) (t_end / 1000000000ULL),
                                                        .tv_nsec = (long) (t_end % 1000000000ULL) } };
                struct pollfd p[2] = { { .fd = sfd, .events = POLLIN }, { .fd = tfd, .events = POLLIN } };

                if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
                        while (poll(p, 2, -1) < 0 && errno == EINTR)
                                ;
        }
        t_end = now_ns();
        close(stop[1]);

        /* Copy the parts' reports until every part has closed its end. */
        for (;;) {
                char buf[PIPE_BUF];

                n = read(report[0], buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                fwrite(buf, 1, (size_t) n, stdout);
        }
        for (int i = 0; i < 3; i++) {
                int status;

                if (parts[i].pid <= 0)
                        continue;
                if (waitpid(parts[i].pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                        fprintf(stderr, "lnbench-desktop: part %s failed\n", parts[i].role);
                        rc = 1;
                }
        }
        printf("metric driver measured %.0f us\n", t_end > t_start ? (double) (t_end - t_start) / 1000.0 : 0.0);
        printf("# end\n");
        fflush(stdout);

cleanup_links:
        for (int i = 0; i < 3; i++)
                if (links[i][0])
                        (void) unlink(links[i]);
        if (dir == tmp_dir)
                (void) rmdir(dir);
        return rc;
}

static _Noreturn void run_hog(void) {
        for (;;)
                work_loops(100000000);
}

static volatile sig_atomic_t storm_stop;

static void storm_on_term(int sig) {
        storm_stop = 1;
}

/* A receiver reads its pipe until it is closed. */
static _Noreturn void storm_receive(int fd) {
        char msg[100];

        for (;;)
                if (read(fd, msg, sizeof(msg)) <= 0)
                        _exit(0);
}

/* A sender writes to each receiver in turn. */
static _Noreturn void storm_send(int fds[][2], unsigned pairs) {
        char msg[100] = {};

        for (;;)
                for (unsigned r = 0; r < pairs; r++)
                        if (write(fds[r][1], msg, sizeof(msg)) < 0)
                                _exit(0);
}

/* pairs receivers, then pairs senders; they die with their parent. */
static int storm_group(unsigned pairs, pid_t *pids, size_t *npids) {
        int fds[64][2];

        for (unsigned r = 0; r < pairs; r++)
                if (pipe2(fds[r], O_CLOEXEC) < 0)
                        return -errno;
        for (unsigned i = 0; i < 2 * pairs; i++) {
                pid_t pid = fork_tied();

                if (pid < 0)
                        return -errno;
                if (pid == 0) {
                        if (i < pairs)
                                storm_receive(fds[i][0]);
                        storm_send(fds, pairs);
                }
                pids[(*npids)++] = pid;
        }
        for (unsigned r = 0; r < pairs; r++) {
                close(fds[r][0]);
                close(fds[r][1]);
        }
        return 0;
}

static int run_storm(int argc, char **argv) {
        uint64_t groups = 4, pairs = 10;
        pid_t pids[16 * 2 * 64];
        size_t npids = 0;
        struct sigaction sa = { .sa_handler = storm_on_term };
        int r = 0;

        if ((argc > 2 && (parse_u64(argv[2], &groups) < 0 || groups < 1 || groups > 16)) ||
            (argc > 3 && (parse_u64(argv[3], &pairs) < 0 || pairs < 1 || pairs > 64)) || argc > 4) {
                fprintf(stderr, "usage: lnbench-desktop storm [GROUPS(1-16) [PAIRS(1-64)]]\n");
                return 2;
        }
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        for (uint64_t g = 0; g < groups && r == 0; g++)
                r = storm_group((unsigned) pairs, pids, &npids);
        if (r < 0)
                fprintf(stderr, "lnbench-desktop: storm: %s\n", strerror(-r));
        while (r == 0 && !storm_stop)
                pause();
        for (size_t i = 0; i < npids; i++)
                (void) kill(pids[i], SIGKILL);
        for (size_t i = 0; i < npids; i++)
                (void) waitpid(pids[i], NULL, 0);
        return r < 0 ? 1 : 0;
}

int main(int argc, char **argv) {
        if (argc > 1 && strcmp(argv[1], "part") == 0)
                return run_part(argc, argv);
        if (argc > 1 && strcmp(argv[1], "hog") == 0)
                run_hog();
        if (argc > 1 && strcmp(argv[1], "storm") == 0)
                return run_storm(argc, argv);
        if (argc > 1 && strcmp(argv[1], "run") == 0) {
                argv[1] = argv[0];
                return run_driver(argc - 1, argv + 1);
        }
        return run_driver(argc, argv);
}
