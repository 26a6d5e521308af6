// SPDX-License-Identifier: GPL-2.0
/*
 * lnbench: wakeup-latency and throughput benchmark for latency nice, run in
 * the test VM (vmtest.py --bench). A cyclictest-like periodic task sleeps to
 * absolute deadlines and measures how late it wakes up, while a
 * hackbench-like load (groups of senders and receivers over AF_UNIX
 * socketpairs) keeps both CPUs busy. Three configurations are compared:
 *
 *   base    periodic task at latency nice 0,   load at 0
 *   lat-20  periodic task at latency nice -20, load at 0
 *   tput19  periodic task at latency nice 0,   load at 19
 *
 * The load runs continuously; the configurations are interleaved in an
 * order that rotates every round, after a warm-up pass that is thrown
 * away: under emulation a single pass per value shows order effects
 * larger than the effect being measured. Results are pooled per
 * configuration and reported as ratios against base.
 *
 *   lnbench [-g groups] [-f fds-per-group] [-t phase-ms] [-r rounds]
 *           [-w warmup-ms] [-i interval-us] [-c cpu] [-m uapi|slice] [-n name]
 *
 * -c pins the periodic task and the load (forked after) to one CPU.
 * -m slice gives the values as latniced does on a mainline kernel, as EEVDF
 * custom slices (sched_runtime = slice(ln), include/latnice/slice-map.h),
 * instead of the series' latency-nice uAPI: for mainline and sched_ext
 * (scx_latnice reads the slices). -n tags the result lines (run=name) when
 * one boot runs several.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hackload.h"
#include "lntest.h"


static int arg_groups = 2, arg_fds = 10, arg_phase_ms = 1000, arg_rounds = 8;
static int arg_warmup_ms = 1000, arg_interval_us = 1000, arg_cpu = -1;
static int arg_slice;			/* -m slice */
static const char *arg_name;		/* -n */
static unsigned long long base_slice;	/* -m slice: the default slice */

static volatile uint64_t *counters;	/* messages received, per receiver */
static pid_t *load_pids;
static int n_load;

struct config {
	const char *name;
	int periodic_ln, load_ln;
	double *samples;		/* wakeup latencies, us, pooled */
	size_t n, cap;
	double msgs, secs;		/* throughput, pooled */
	double round_avg[64], round_p99[64], round_tput[64];	/* per round */
};

static struct config configs[] = {
	{ .name = "base", .periodic_ln = 0, .load_ln = 0 },
	{ .name = "lat-20", .periodic_ln = -20, .load_ln = 0 },
	{ .name = "tput19", .periodic_ln = 0, .load_ln = 19 },
};
#define N_CONFIGS (sizeof(configs) / sizeof(configs[0]))

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int start_load(void)
{
	n_load = 0;
	load_pids = calloc((size_t)arg_groups * arg_fds * 2, sizeof(pid_t));
	counters = mmap(NULL, sizeof(uint64_t) * arg_groups * arg_fds,
			PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!load_pids || counters == MAP_FAILED)
		return -1;

	for (int g = 0; g < arg_groups; g++) {
		int wfd[arg_fds];

		for (int r = 0; r < arg_fds; r++) {
			int sv[2];
			pid_t pid;

			if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
				return -1;
			pid = fork();
			if (pid < 0)
				return -1;
			if (pid == 0) {
				close(sv[0]);
				hackload_receiver(sv[1], &counters[g * arg_fds + r]);
			}
			close(sv[1]);
			wfd[r] = sv[0];
			load_pids[n_load++] = pid;
		}
		for (int s = 0; s < arg_fds; s++) {
			pid_t pid = fork();

			if (pid < 0)
				return -1;
			if (pid == 0)
				hackload_sender(wfd, arg_fds);
			load_pids[n_load++] = pid;
		}
		for (int r = 0; r < arg_fds; r++)
			close(wfd[r]);
	}
	return 0;
}

static void stop_load(void)
{
	for (int i = 0; i < n_load; i++)
		kill(load_pids[i], SIGKILL);
	while (wait(NULL) > 0)
		;
}

static uint64_t total_msgs(void)
{
	uint64_t sum = 0;

	for (int i = 0; i < arg_groups * arg_fds; i++)
		sum += __atomic_load_n(&counters[i], __ATOMIC_RELAXED);
	return sum;
}

/* A value as a custom slice (0: the default), policy and nice kept. */
static int slice_set(pid_t pid, int ln)
{
	static const unsigned w[LATNICE_WIDTH] = LATNICE_PRIO_TO_WEIGHT;
	struct ln_sched_attr a = { 0 };

	if (ln_getattr(pid, &a, SCHED_ATTR_SIZE_VER1) < 0)
		return -1;
	a.size = SCHED_ATTR_SIZE_VER1;
	a.sched_flags = 0;
	a.sched_runtime = ln == 0 ? 0 : latnice_slice_of_weight(base_slice, w[LATNICE_TO_PRIO(ln)]);
	return ln_setattr(pid, &a, 0);
}

static int value_set(pid_t pid, int ln)
{
	return arg_slice ? slice_set(pid, ln) : ln_set(pid, ln);
}

static int set_config(const struct config *c)
{
	for (int i = 0; i < n_load; i++)
		if (value_set(load_pids[i], c->load_ln) < 0)
			return -1;
	return value_set(0, c->periodic_ln);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void stats(double *v, size_t n, double *avg, double *p99, double *max)
{
	double sum = 0;

	*avg = *p99 = *max = 0;
	if (!n)
		return;
	qsort(v, n, sizeof(*v), cmp_double);
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	*avg = sum / n;
	*p99 = v[(size_t)((n - 1) * 0.99)];
	*max = v[n - 1];
}

/* One phase: run the periodic task for ms milliseconds in config c. */
static int run_phase(struct config *c, int ms, int round, int record)
{
	uint64_t start, end, next, m0, m1;
	size_t first = c->n;
	double avg, p99, max, *tmp;

	if (set_config(c) < 0) {
		printf("LNTEST FAIL bench: setting latency nice for %s: %m\n", c->name);
		return -1;
	}
	usleep(50000);	/* let the load settle into the new values */
	m0 = total_msgs();
	start = now_ns();
	end = start + (uint64_t)ms * 1000000ull;
	next = start;
	while (next < end) {
		struct timespec ts;
		uint64_t t;

		next += (uint64_t)arg_interval_us * 1000;
		ts.tv_sec = next / 1000000000ull;
		ts.tv_nsec = next % 1000000000ull;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		t = now_ns();
		if (record) {
			if (c->n == c->cap) {
				c->cap = c->cap ? 2 * c->cap : 4096;
				c->samples = realloc(c->samples, c->cap * sizeof(double));
				if (!c->samples)
					return -1;
			}
			c->samples[c->n++] = (t - next) / 1000.0;
		}
		/* A wakeup later than the next period skips it, like cyclictest. */
		while (next + (uint64_t)arg_interval_us * 1000 < t)
			next += (uint64_t)arg_interval_us * 1000;
	}
	m1 = total_msgs();
	end = now_ns();
	if (!record)
		return 0;
	c->msgs += (double)(m1 - m0);
	c->secs += (end - start) / 1e9;
	tmp = malloc((c->n - first) * sizeof(double) + 1);
	if (!tmp)
		return -1;
	memcpy(tmp, c->samples + first, (c->n - first) * sizeof(double));
	stats(tmp, c->n - first, &avg, &p99, &max);
	free(tmp);
	if (round >= 0 && round < 64) {
		c->round_avg[round] = avg;
		c->round_p99[round] = p99;
		c->round_tput[round] = (m1 - m0) / ((end - start) / 1e9);
	}
	printf("LNBENCH phase round=%d config=%s periodic=%d load=%d n=%zu avg_us=%.1f p99_us=%.1f max_us=%.1f msgs_per_s=%.0f\n",
	       round, c->name, c->periodic_ln, c->load_ln, c->n - first, avg, p99,
	       max, (m1 - m0) / ((end - start) / 1e9));
	fflush(stdout);
	return 0;
}

/* Median over rounds of x[round] / base[round]: pairs measured close in time. */
static double median_ratio(const double *x, const double *base, int rounds)
{
	double r[64];
	int n = 0;

	for (int i = 0; i < rounds && i < 64; i++)
		if (base[i] > 0)
			r[n++] = x[i] / base[i];
	if (!n)
		return 0;
	qsort(r, n, sizeof(r[0]), cmp_double);
	return n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	double avg[N_CONFIGS], p50[N_CONFIGS], p99[N_CONFIGS], max[N_CONFIGS], tput[N_CONFIGS];
	char tag[80];
	int opt, r = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "g:f:t:r:w:i:c:m:n:")) != -1) {
		switch (opt) {
		case 'g': arg_groups = atoi(optarg); break;
		case 'f': arg_fds = atoi(optarg); break;
		case 't': arg_phase_ms = atoi(optarg); break;
		case 'r': arg_rounds = atoi(optarg); break;
		case 'w': arg_warmup_ms = atoi(optarg); break;
		case 'i': arg_interval_us = atoi(optarg); break;
		case 'c': arg_cpu = atoi(optarg); break;
		case 'm':
			if (strcmp(optarg, "slice") && strcmp(optarg, "uapi"))
				return 2;
			arg_slice = !strcmp(optarg, "slice");
			break;
		case 'n': arg_name = optarg; break;
		default:
			fprintf(stderr, "usage: lnbench [-g groups] [-f fds] [-t phase-ms] [-r rounds] [-w warmup-ms] [-i interval-us] [-c cpu] [-m uapi|slice] [-n name]\n");
			return 2;
		}
	}
	if (arg_groups < 1 || arg_fds < 1 || arg_phase_ms < 1 || arg_rounds < 1 || arg_rounds > 64 ||
	    arg_interval_us < 1 || arg_warmup_ms < 0)
		return 2;

	printf("LNBENCH setup groups=%d fds=%d processes=%d phase_ms=%d rounds=%d warmup_ms=%d interval_us=%d cpu=%d\n",
	       arg_groups, arg_fds, arg_groups * arg_fds * 2, arg_phase_ms,
	       arg_rounds, arg_warmup_ms, arg_interval_us, arg_cpu);
	if (arg_cpu >= 0) {
		/* Everything on one CPU: the wakeup decision is all that matters. */
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(arg_cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0) {
			printf("LNTEST FAIL bench: pinning to CPU %d: %m\n", arg_cpu);
			return 1;
		}
	}
	if (arg_slice) {
		struct ln_sched_attr a = { 0 };

		/* What sched_getattr() reports for a task without a custom slice: the default. */
		if (ln_getattr(0, &a, SCHED_ATTR_SIZE_VER1) < 0 || !a.sched_runtime || slice_set(0, 0) < 0) {
			printf("LNTEST SKIP bench: no EEVDF custom slices: %m\n");
			return 0;
		}
		base_slice = a.sched_runtime;
	} else if (ln_set(0, 0) < 0) {
		printf("LNTEST SKIP bench: no latency nice uAPI: %m\n");
		return 0;
	}
	if (start_load() < 0) {
		printf("LNTEST FAIL bench: starting the load: %m\n");
		stop_load();
		return 1;
	}

	/* Warm up every configuration once, unrecorded. */
	for (size_t c = 0; c < N_CONFIGS && r == 0; c++)
		r = run_phase(&configs[c], arg_warmup_ms, -1, 0);
	/* Interleave: rotate the order each round, reverse it every other. */
	for (int round = 0; round < arg_rounds && r == 0; round++)
		for (size_t k = 0; k < N_CONFIGS && r == 0; k++) {
			size_t c = (k + round) % N_CONFIGS;

			if (round % 2)
				c = N_CONFIGS - 1 - c;
			r = run_phase(&configs[c], arg_phase_ms, round, 1);
		}
	stop_load();
	value_set(0, 0);
	if (r)
		return 1;

	snprintf(tag, sizeof(tag), "%s ", arg_name ? arg_name : "");
	for (size_t c = 0; c < N_CONFIGS; c++) {
		stats(configs[c].samples, configs[c].n, &avg[c], &p99[c], &max[c]);
		/* stats() sorted them */
		p50[c] = configs[c].n ? configs[c].samples[(configs[c].n - 1) / 2] : 0;
		tput[c] = configs[c].secs > 0 ? configs[c].msgs / configs[c].secs : 0;
		printf("LNBENCH summary %s%sconfig=%s periodic=%d load=%d n=%zu avg_us=%.1f p99_us=%.1f max_us=%.1f "
		       "msgs_per_s=%.0f p50_us=%.1f\n",
		       arg_name ? "run=" : "", arg_name ? tag : "", configs[c].name, configs[c].periodic_ln,
		       configs[c].load_ln, configs[c].n, avg[c], p99[c], max[c], tput[c], p50[c]);
	}
	printf("LNBENCH ratio %s%savg_latency_-20_vs_0=%.3f p99_latency_-20_vs_0=%.3f throughput_19_vs_0=%.3f "
	       "p50_latency_-20_vs_0=%.3f\n",
	       arg_name ? "run=" : "", arg_name ? tag : "",
	       avg[0] > 0 ? avg[1] / avg[0] : 0, p99[0] > 0 ? p99[1] / p99[0] : 0,
	       tput[0] > 0 ? tput[2] / tput[0] : 0, p50[0] > 0 ? p50[1] / p50[0] : 0);
	printf("LNBENCH ratio-median-of-rounds %s%savg_latency_-20_vs_0=%.3f p99_latency_-20_vs_0=%.3f "
	       "throughput_19_vs_0=%.3f\n",
	       arg_name ? "run=" : "", arg_name ? tag : "",
	       median_ratio(configs[1].round_avg, configs[0].round_avg, arg_rounds),
	       median_ratio(configs[1].round_p99, configs[0].round_p99, arg_rounds),
	       median_ratio(configs[2].round_tput, configs[0].round_tput, arg_rounds));
	if (!arg_name)
		printf("LNTEST PASS bench\n");
	return 0;
}
