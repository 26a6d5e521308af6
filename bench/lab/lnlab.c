// SPDX-License-Identifier: GPL-2.0
/*
 * lnlab: the in-guest side of the scheduler lab (bench/lab/run). One run is one row of the lab's
 * table: a load (hackbench-like message groups, or user-space CPU hogs as a build has) runs for the
 * whole run, and a latency-sensitive task is started again for every phase under each mechanism,
 * the mechanisms interleaved in an order that rotates every round after a warm-up round that is
 * thrown away. Samples are pooled per mechanism; one "LNLAB cell" line each at the end.
 *
 *   lnlab run -L LOAD -m MECH[,MECH...] [-r rounds] [-t phase-ms] [-w warmup-ms] [-R ROLE] [-n name]
 *             [-s seed] [-B bindir]
 *
 * LOAD: "hackbench:G" (G groups of 20 senders and 20 receivers over AF_UNIX socketpairs, as the
 * seed's hackbench -g G), "hogs:N" (N processes spinning in user space: a compiler between
 * system calls, which lazy preemption makes wait for the tick) or "idle".
 * ROLE, the latency-sensitive task: "cyclic" (cyclictest: a 1 ms absolute timer, no work: the
 * seed's measurement), "audio" (2.67 ms period, 250 us of work), "frame" (16.7 ms, 400 us),
 * "echo" (a key press through a pipe, 100 us of work; the latency is press -> reader running).
 * MECH, how the task is made latency-sensitive, or the load made to wait:
 *   none      nothing: the task and the load at latency nice 0;
 *   latniced  the task is exec'd as /bin/lab-ln, which latniced in this guest matches by a rule
 *             (bench/lab/run writes it): the value as users get it, on whatever backend latniced
 *             chose on this kernel; the task reports what it found set on itself;
 *   uapi      the task sets latency nice -20 on itself through the series' uAPI (patched kernels);
 *   batch     the load at SCHED_BATCH;  idle: the load at SCHED_IDLE;
 *   fifo      the task at SCHED_FIFO 50: the floor, what no fair-class mechanism can beat;
 *   scx       scx_latnice (/bin/scx_latnice) loaded for the phase, the task exec'd as lab-ln:
 *             latniced's value as scx_latnice gives it (sched_ext kernels).
 *
 * The periodic task is the same binary exec'd as "lab-plain" or "lab-ln"; it writes its samples
 * (float, us) to the pipe on its stdout, then a trailer with what it found set on itself.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hackload.h"
#include "latnice/uapi.h"

#define GROUP_FDS 20	/* hackbench's default: 20 senders and 20 receivers a group */
#define MAX_MECHS 8
#define MAX_ROUNDS 64

struct trailer {
	uint32_t magic;
	int32_t policy;
	int32_t latency_nice;	/* -1000: no such attribute on this kernel */
	uint64_t slice_ns;	/* sched_runtime as sched_getattr() says it */
};
#define TRAILER_MAGIC 0x4c4e4c42u

static volatile uint64_t *counters;	/* load progress: messages or hog loops, per load task */
static pid_t *load_pids;
static int n_load, n_counters;
static const char *bindir = "/bin";	/* -B: where lab-plain and lab-ln are */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t work_sink;

/* The same instructions whoever is preempted: under icount, instructions are time. */
static void work_loops(uint64_t loops)
{
	uint64_t x = 88172645463325252ull;

	for (uint64_t i = 0; i < loops; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		__asm__ volatile("" : "+r"(x));
	}
	work_sink = x;
}

static double loops_per_us(void)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 5; i++) {
		struct timespec a, b;
		uint64_t t;

		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
		work_loops(200000);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
		t = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000ull + (uint64_t)b.tv_nsec - (uint64_t)a.tv_nsec;
		if (t > 0 && t < best)
			best = t;
	}
	return best == UINT64_MAX ? 100.0 : 200000.0 * 1000.0 / (double)best;
}

/* ---- the latency-sensitive task (exec'd per phase) ---------------------------------------- */

static int emit(float v)
{
	return write(STDOUT_FILENO, &v, sizeof(v)) == sizeof(v) ? 0 : -1;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { .tv_sec = (time_t)(t / 1000000000ull), .tv_nsec = (long)(t % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* cyclic, audio, frame: wake at absolute deadlines, work, record how late each wakeup was. */
static int periodic(uint64_t period_ns, uint64_t work, uint64_t warm_end, uint64_t end)
{
	uint64_t next = now_ns();

	while (next < end) {
		uint64_t t;

		next += period_ns;
		sleep_until(next);
		t = now_ns();
		if (next >= warm_end && emit((float)((double)(t - next) / 1000.0)) < 0)
			return -1;
		work_loops(work);
		/* A wakeup later than the next period skips it, as cyclictest does. */
		while (next + period_ns < now_ns())
			next += period_ns;
	}
	return 0;
}

/* echo: a typist writes its time into a pipe every 10-40 ms; latency = written -> reader running. */
static int echo(uint64_t work, uint64_t warm_end, uint64_t end)
{
	int p[2];
	pid_t typist;
	uint64_t sent;
	int r = 0;

	if (pipe(p) < 0)
		return -1;
	typist = fork();
	if (typist < 0)
		return -1;
	if (typist == 0) {
		unsigned seed = 12345;

		close(p[0]);
		for (;;) {
			struct timespec ts = { 0, (long)(10 + rand_r(&seed) % 31) * 1000000L };
			uint64_t t;

			nanosleep(&ts, NULL);
			t = now_ns();
			if (write(p[1], &t, sizeof(t)) != sizeof(t) || t > end)
				_exit(0);
		}
	}
	close(p[1]);
	while (read(p[0], &sent, sizeof(sent)) == sizeof(sent)) {
		uint64_t t = now_ns();

		if (sent > end)
			break;
		if (sent >= warm_end && emit((float)((double)(t - sent) / 1000.0)) < 0) {
			r = -1;
			break;
		}
		work_loops(work);
	}
	kill(typist, SIGKILL);
	waitpid(typist, NULL, 0);
	return r;
}

/* lab-plain|lab-ln ROLE MODE WARMUP_MS PHASE_MS LOOPS_PER_US */
static int task_main(int argc, char **argv)
{
	const char *role, *mode;
	uint64_t t0, warm_end, end;
	double lpu;
	struct trailer tr = { .magic = TRAILER_MAGIC, .latency_nice = -1000 };
	struct latnice_sched_attr a = { 0 };
	int r;

	if (argc != 6)
		return 2;
	role = argv[1];
	mode = argv[2];
	lpu = atof(argv[5]);
	/* No timer slack (a fair task has 50 us, a real-time one none): the lab measures the scheduler. */
	if (prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) < 0)
		return 3;
	if (strcmp(mode, "fifo") == 0) {
		struct sched_param sp = { .sched_priority = 50 };

		if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
			return 3;
	} else if (strcmp(mode, "uapi") == 0) {
		a.size = LATNICE_SCHED_ATTR_SIZE_VER2;
		a.sched_flags = LATNICE_SCHED_FLAG_KEEP_POLICY | LATNICE_SCHED_FLAG_KEEP_PARAMS |
				LATNICE_SCHED_FLAG_LATENCY_NICE;
		a.sched_latency_nice = -20;
		if (latnice_sched_setattr(0, &a, 0) < 0)
			return 4;
	}
	t0 = now_ns();
	warm_end = t0 + (uint64_t)atoi(argv[3]) * 1000000ull;
	end = warm_end + (uint64_t)atoi(argv[4]) * 1000000ull;
	if (strcmp(role, "cyclic") == 0)
		r = periodic(1000000ull, 0, warm_end, end);
	else if (strcmp(role, "audio") == 0)
		r = periodic(2666667ull, (uint64_t)(lpu * 250), warm_end, end);
	else if (strcmp(role, "frame") == 0)
		r = periodic(16666667ull, (uint64_t)(lpu * 400), warm_end, end);
	else if (strcmp(role, "echo") == 0)
		r = echo((uint64_t)(lpu * 100), warm_end, end);
	else
		return 2;
	if (r < 0)
		return 5;
	/* What this task ran with, read at the end: latniced applies at exec, within the warm-up. */
	memset(&a, 0, sizeof(a));
	if (latnice_sched_getattr(0, &a, LATNICE_SCHED_ATTR_SIZE_VER2, 0) == 0)
		tr.latency_nice = a.sched_latency_nice;
	else if (latnice_sched_getattr(0, &a, LATNICE_SCHED_ATTR_SIZE_VER1, 0) < 0)
		return 6;
	tr.policy = (int32_t)a.sched_policy;
	tr.slice_ns = a.sched_runtime;
	return write(STDOUT_FILENO, &tr, sizeof(tr)) == sizeof(tr) ? 0 : 7;
}

/* ---- loads ------------------------------------------------------------------------------ */

static void hog(volatile uint64_t *count)
{
	for (;;) {
		work_loops(10000);
		__atomic_add_fetch(count, 1, __ATOMIC_RELAXED);
	}
}

static int start_load(const char *load)
{
	int groups = 0, hogs = 0;

	if (strncmp(load, "hackbench:", 10) == 0)
		groups = atoi(load + 10);
	else if (strncmp(load, "hogs:", 5) == 0)
		hogs = atoi(load + 5);
	else if (strcmp(load, "idle") != 0)
		return -EINVAL;
	if (groups < 0 || groups > 64 || hogs < 0 || hogs > 256)
		return -EINVAL;
	n_counters = groups ? groups * GROUP_FDS : hogs;
	load_pids = calloc((size_t)groups * GROUP_FDS * 2 + (size_t)hogs + 1, sizeof(pid_t));
	counters = mmap(NULL, sizeof(uint64_t) * ((size_t)n_counters + 1), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!load_pids || counters == MAP_FAILED)
		return -ENOMEM;
	for (int h = 0; h < hogs; h++) {
		pid_t pid = fork();

		if (pid < 0)
			return -errno;
		if (pid == 0)
			hog(&counters[h]);
		load_pids[n_load++] = pid;
	}
	for (int g = 0; g < groups; g++) {
		int wfd[GROUP_FDS];

		for (int r = 0; r < GROUP_FDS; r++) {
			int sv[2];
			pid_t pid;

			if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
				return -errno;
			pid = fork();
			if (pid < 0)
				return -errno;
			if (pid == 0) {
				close(sv[0]);
				hackload_receiver(sv[1], &counters[g * GROUP_FDS + r]);
			}
			close(sv[1]);
			wfd[r] = sv[0];
			load_pids[n_load++] = pid;
		}
		for (int s = 0; s < GROUP_FDS; s++) {
			pid_t pid = fork();

			if (pid < 0)
				return -errno;
			if (pid == 0)
				hackload_sender(wfd, GROUP_FDS);
			load_pids[n_load++] = pid;
		}
		for (int r = 0; r < GROUP_FDS; r++)
			close(wfd[r]);
	}
	return 0;
}

static uint64_t load_progress(void)
{
	uint64_t sum = 0;

	for (int i = 0; i < n_counters; i++)
		sum += __atomic_load_n(&counters[i], __ATOMIC_RELAXED);
	return sum;
}

static int load_policy(int policy)
{
	struct sched_param sp = { 0 };

	for (int i = 0; i < n_load; i++)
		if (sched_setscheduler(load_pids[i], policy, &sp) < 0)
			return -errno;
	return 0;
}

/* ---- sched_ext ----------------------------------------------------------------------------- */

static int scx_state_is(const char *want)
{
	char buf[32] = "";
	int fd = open("/sys/kernel/sched_ext/state", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return strncmp(buf, want, strlen(want)) == 0;
}

static int scx_wait(const char *want)
{
	/* Loading a BPF scheduler takes seconds on the lab's 125 MIPS CPU under a load. */
	for (int i = 0; i < 6000; i++) {
		if (scx_state_is(want))
			return 0;
		usleep(10000);
	}
	return -ETIMEDOUT;
}

/* scx_latnice for one phase: started, and waited for until sched_ext says it is enabled. */
static pid_t scx_start(void)
{
	char exe[256];
	pid_t pid;

	snprintf(exe, sizeof(exe), "%s/scx_latnice", bindir);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open("/tmp/scx_latnice.log", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		execl(exe, "scx_latnice", (char *)NULL);
		_exit(127);
	}
	if (scx_wait("enabled") < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -ETIMEDOUT;
	}
	return pid;
}

static int scx_stop(pid_t pid)
{
	kill(pid, SIGINT);
	waitpid(pid, NULL, 0);
	return scx_wait("disabled");
}

/* ---- the driver ------------------------------------------------------------------------- */

struct cell {
	const char *mech;
	float *samples;
	size_t n, cap;
	double progress, secs;	/* the load's work and the time it had */
	struct trailer tr;	/* what the task last found set on itself */
	int failed;
};

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

static double pct(const float *v, size_t n, double q)
{
	return n ? v[(size_t)((double)(n - 1) * q)] : 0;
}

/* One phase: the task under c's mechanism for warmup + phase ms; its samples into c. */
static int run_phase(struct cell *c, const char *role, int warmup_ms, int phase_ms, double lpu, int record)
{
	int p[2], status, r = 0;
	char warm[16], ph[16], lp[32];
	int scx = strcmp(c->mech, "scx") == 0;
	const char *base = strcmp(c->mech, "latniced") == 0 || scx ? "lab-ln" : "lab-plain";
	pid_t scx_pid = 0;
	char exe[256];
	const char *mode = strcmp(c->mech, "fifo") == 0 || strcmp(c->mech, "uapi") == 0 ? c->mech : "plain";
	uint64_t p0, t0, t1;
	unsigned char buf[4096];
	size_t have = 0;
	pid_t pid;

	if (strcmp(c->mech, "batch") == 0 || strcmp(c->mech, "idle") == 0) {
		r = load_policy(strcmp(c->mech, "batch") == 0 ? SCHED_BATCH : SCHED_IDLE);
		if (r < 0)
			return r;
	}
	if (scx) {
		scx_pid = scx_start();
		if (scx_pid < 0)
			return (int)scx_pid;
	}
	snprintf(exe, sizeof(exe), "%s/%s", bindir, base);
	snprintf(warm, sizeof(warm), "%d", warmup_ms);
	snprintf(ph, sizeof(ph), "%d", phase_ms);
	snprintf(lp, sizeof(lp), "%.3f", lpu);
	if (pipe(p) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		dup2(p[1], STDOUT_FILENO);
		close(p[0]);
		close(p[1]);
		execl(exe, base, role, mode, warm, ph, lp, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	usleep((useconds_t)warmup_ms * 1000);
	p0 = load_progress();
	t0 = now_ns();
	for (;;) {
		ssize_t k = read(p[0], buf + have, sizeof(buf) - have);

		if (k <= 0)
			break;
		have += (size_t)k;
		/* Keep the last sizeof(trailer) bytes: they may be the trailer. */
		while (have >= sizeof(float) + sizeof(struct trailer)) {
			float v;

			memcpy(&v, buf, sizeof(v));
			if (record) {
				if (c->n == c->cap) {
					c->cap = c->cap ? 2 * c->cap : 8192;
					c->samples = realloc(c->samples, c->cap * sizeof(float));
					if (!c->samples)
						return -ENOMEM;
				}
				c->samples[c->n++] = v;
			}
			memmove(buf, buf + sizeof(v), have - sizeof(v));
			have -= sizeof(v);
		}
	}
	t1 = now_ns();
	if (record) {
		c->progress += (double)(load_progress() - p0);
		c->secs += (double)(t1 - t0) / 1e9;
	}
	close(p[0]);
	waitpid(pid, &status, 0);
	if (strcmp(c->mech, "batch") == 0 || strcmp(c->mech, "idle") == 0)
		r = load_policy(SCHED_OTHER);
	if (scx && scx_stop(scx_pid) < 0 && r == 0)
		r = -ETIMEDOUT;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || have != sizeof(struct trailer)) {
		c->failed = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		return r;
	}
	memcpy(&c->tr, buf, sizeof(c->tr));
	if (c->tr.magic != TRAILER_MAGIC)
		c->failed = 100;
	return r;
}

static int run_main(int argc, char **argv)
{
	const char *load = "idle", *role = "cyclic", *name = "-";
	char *mechs_arg = NULL, *save = NULL;
	struct cell cells[MAX_MECHS] = { 0 };
	int n_cells = 0, rounds = 3, phase_ms = 1000, warmup_ms = 200, seed = 0, opt, r;
	double lpu;

	while ((opt = getopt(argc, argv, "L:m:r:t:w:R:n:B:s:")) != -1) {
		switch (opt) {
		case 'L': load = optarg; break;
		case 'm': mechs_arg = optarg; break;
		case 'r': rounds = atoi(optarg); break;
		case 't': phase_ms = atoi(optarg); break;
		case 'w': warmup_ms = atoi(optarg); break;
		case 'R': role = optarg; break;
		case 'n': name = optarg; break;
		case 'B': bindir = optarg; break;
		case 's': seed = atoi(optarg); break;
		default: return 2;
		}
	}
	if (!mechs_arg || rounds < 1 || rounds > MAX_ROUNDS || phase_ms < 10 || warmup_ms < 0)
		return 2;
	for (char *m = strtok_r(mechs_arg, ",", &save); m && n_cells < MAX_MECHS; m = strtok_r(NULL, ",", &save))
		cells[n_cells++].mech = m;
	lpu = loops_per_us();
	r = start_load(load);
	if (r < 0) {
		printf("LNLAB error run=%s: starting the load %s: %s\n", name, load, strerror(-r));
		return 1;
	}
	/*
	 * Under icount a boot is a pure function of its inputs: the same seed gives the same numbers, to
	 * the microsecond. Another seed starts the phases at another point of the load's cycle, so two
	 * seeds are two independent samples of one experiment.
	 */
	if (seed > 0)
		usleep((useconds_t)seed * 7919);
	printf("LNLAB info run=%s load=%s role=%s tasks=%d loops_per_us=%.1f seed=%d\n", name, load, role, n_load,
	       lpu, seed);
	fflush(stdout);
	/* Round 0 warms up (thrown away); then each round starts one mechanism later. */
	for (int round = 0; round <= rounds; round++)
		for (int k = 0; k < n_cells; k++) {
			struct cell *c = &cells[(k + round) % n_cells];

			r = run_phase(c, role, warmup_ms, phase_ms, lpu, round > 0);
			if (r < 0) {
				printf("LNLAB error run=%s mech=%s: %s\n", name, c->mech, strerror(-r));
				return 1;
			}
		}
	for (int i = 0; i < n_load; i++)
		kill(load_pids[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	for (int k = 0; k < n_cells; k++) {
		struct cell *c = &cells[k];
		double sum = 0;

		qsort(c->samples, c->n, sizeof(float), cmp_float);
		for (size_t i = 0; i < c->n; i++)
			sum += c->samples[i];
		printf("LNLAB cell run=%s load=%s role=%s mech=%s n=%zu avg=%.1f p50=%.1f p99=%.1f p999=%.1f "
		       "max=%.1f tput=%.0f policy=%d ln=%d slice=%llu failed=%d\n",
		       name, load, role, c->mech, c->n, c->n ? sum / (double)c->n : 0, pct(c->samples, c->n, 0.5),
		       pct(c->samples, c->n, 0.99), pct(c->samples, c->n, 0.999), pct(c->samples, c->n, 1.0),
		       c->secs > 0 ? c->progress / c->secs : 0, c->tr.policy, c->tr.latency_nice,
		       (unsigned long long)c->tr.slice_ns, c->failed);
		free(c->samples);
	}
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	const char *self = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];

	if (strncmp(self, "lab-", 4) == 0)
		return task_main(argc, argv);
	if (argc > 1 && strcmp(argv[1], "run") == 0)
		return run_main(argc - 1, argv + 1);
	fprintf(stderr, "usage: lnlab run -L LOAD -m MECH[,MECH...] [-r rounds] [-t phase-ms] [-w warmup-ms] "
		"[-R cyclic|audio|frame|echo] [-n name]\n");
	return 2;
}
