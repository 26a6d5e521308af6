// SPDX-License-Identifier: GPL-2.0
/*
 * lntest: checks the latency-nice uAPI of a patched kernel from inside the
 * test VM and prints one "LNTEST PASS|FAIL|SKIP name[: why]" line per check
 * for vmtest.py. Runs as root (PID 1's child) on a busybox initramfs.
 *
 *   lntest [--series 6.1|6.12|7.3] [TEST...]  run all or the named tests
 *   lntest getln PID                         print PID's latency nice
 *   lntest getslice PID                      print the slice PID reports (sched_runtime)
 *   lntest setslice PID NS                   give PID a custom slice of NS (0: the default)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lntest.h"

static const char *arg_series = "6.12";
static char why[1024];

/* Record why a test failed and leave the test function. */
#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		snprintf(why, sizeof(why), __VA_ARGS__);		\
		return -1;						\
	}								\
} while (0)

static bool is_eevdf(void)
{
	return strcmp(arg_series, "6.1") != 0;
}

/*
 * 7.x's fair class is flat: only tasks are in the EEVDF tree, so a group's
 * cpu.latency.nice acts through its tasks' slices (kernel/7.3/0003), and
 * the series adds a wakeup credit for negative values (kernel/7.3/0004).
 */
static bool is_flat(void)
{
	return strcmp(arg_series, "7.3") == 0;
}

static int set_full(pid_t pid, int ln, uint64_t extra_flags)
{
	struct ln_sched_attr a = {
		.size = SCHED_ATTR_SIZE_VER2,
		.sched_policy = SCHED_OTHER,
		.sched_flags = SCHED_FLAG_LATENCY_NICE | extra_flags,
		.sched_latency_nice = ln,
	};
	return ln_setattr(pid, &a, 0);
}

/* Run fn in a child and pass its verdict (and why) back. */
static int in_child(int (*fn)(void))
{
	int pfd[2], status;
	pid_t pid;
	ssize_t n;

	if (pipe(pfd) < 0)
		CHECK(0, "pipe: %m");
	pid = fork();
	if (pid < 0)
		CHECK(0, "fork: %m");
	if (pid == 0) {
		int r;

		close(pfd[0]);
		why[0] = 0;
		r = fn();
		if (r)
			(void)!write(pfd[1], why, strlen(why));
		_exit(r ? 1 : 0);
	}
	close(pfd[1]);
	n = read(pfd[0], why, sizeof(why) - 1);
	why[n > 0 ? n : 0] = 0;
	close(pfd[0]);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status), "child died: status 0x%x", status);
	return WEXITSTATUS(status) ? -1 : 0;
}

/* in_child() for a function that takes a string. */
static int (*child_fn_arg)(const char *);
static const char *child_arg;

static int child_trampoline(void)
{
	return child_fn_arg(child_arg);
}

static int in_child_arg(int (*fn)(const char *), const char *arg)
{
	child_fn_arg = fn;
	child_arg = arg;
	return in_child(child_trampoline);
}

/* ---- task interface ---------------------------------------------------- */

static int t_default(void)
{
	CHECK(ln_get(0) == 0, "PID 1's child starts at %d, expected 0", ln_get(0));
	CHECK(ln_get(1) == 0, "init has %d, expected 0", ln_get(1));
	return 0;
}

static int t_roundtrip(void)
{
	for (int ln = -20; ln <= 19; ln++) {
		CHECK(ln_set(0, ln) == 0, "set %d (KEEP_ALL): %m", ln);
		CHECK(ln_get(0) == ln, "set %d, got %d", ln, ln_get(0));
	}
	/* Also without KEEP_*: policy SCHED_OTHER, nice 0. */
	for (int ln = 19; ln >= -20; ln--) {
		CHECK(set_full(0, ln, 0) == 0, "set %d (full attr): %m", ln);
		CHECK(ln_get(0) == ln, "set %d, got %d", ln, ln_get(0));
	}
	CHECK(ln_set(0, 0) == 0, "reset to 0: %m");
	return 0;
}

static int t_range(void)
{
	static const int bad[] = { -21, 20, -40, 39, 40, 100, -100,
				   INT_MIN, INT_MAX, INT_MIN + 1, INT_MAX - 1 };

	CHECK(ln_set(0, 3) == 0, "set 3: %m");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		CHECK(ln_set(0, bad[i]) < 0 && errno == EINVAL,
		      "value %d: expected EINVAL, got %s", bad[i],
		      errno ? strerror(errno) : "success");
		errno = 0;
		CHECK(set_full(0, bad[i], 0) < 0 && errno == EINVAL,
		      "value %d (full attr): expected EINVAL, got %s", bad[i],
		      errno ? strerror(errno) : "success");
		CHECK(ln_get(0) == 3, "value %d changed the value to %d",
		      bad[i], ln_get(0));
	}
	CHECK(ln_set(0, 0) == 0, "reset to 0: %m");
	return 0;
}

static int t_oldsize(void)
{
	struct ln_sched_attr a;

	CHECK(ln_set(0, 7) == 0, "set 7: %m");

	/* VER1 (56) and VER0 (48) callers without the flag still work... */
	for (unsigned int size = SCHED_ATTR_SIZE_VER0; size <= SCHED_ATTR_SIZE_VER1; size += 8) {
		memset(&a, 0, sizeof(a));
		a.size = size;
		a.sched_policy = SCHED_OTHER;
		a.sched_latency_nice = -20;	/* beyond size: must be ignored */
		CHECK(ln_setattr(0, &a, 0) == 0, "size %u setattr: %m", size);
		CHECK(ln_get(0) == 7, "size %u setattr changed the value to %d",
		      size, ln_get(0));
		memset(&a, 0, sizeof(a));
		a.sched_latency_nice = 12345;
		CHECK(ln_getattr(0, &a, size) == 0, "size %u getattr: %m", size);
		CHECK(a.size == size, "size %u getattr reported size %u", size, a.size);
		CHECK(a.sched_latency_nice == 12345,
		      "size %u getattr wrote beyond the caller's struct", size);
	}

	/* ...but the flag needs the VER2 struct. */
	memset(&a, 0, sizeof(a));
	a.size = SCHED_ATTR_SIZE_VER1;
	a.sched_flags = SCHED_FLAG_KEEP_ALL | SCHED_FLAG_LATENCY_NICE;
	a.sched_latency_nice = 1;
	errno = 0;
	CHECK(ln_setattr(0, &a, 0) < 0 && errno == EINVAL,
	      "flag with a 56-byte struct: expected EINVAL, got %s",
	      errno ? strerror(errno) : "success");

	/* A 60-byte call without the flag leaves it alone too. */
	memset(&a, 0, sizeof(a));
	a.size = SCHED_ATTR_SIZE_VER2;
	a.sched_policy = SCHED_OTHER;
	a.sched_latency_nice = -5;
	CHECK(ln_setattr(0, &a, 0) == 0, "size 60 without the flag: %m");
	CHECK(ln_get(0) == 7, "size 60 without the flag changed the value to %d",
	      ln_get(0));

	/* getattr reports size 60 to a 60-byte (or larger) caller. */
	memset(&a, 0, sizeof(a));
	CHECK(ln_getattr(0, &a, SCHED_ATTR_SIZE_VER2) == 0, "getattr 60: %m");
	CHECK(a.size == SCHED_ATTR_SIZE_VER2 && a.sched_latency_nice == 7,
	      "getattr 60: size %u value %d", a.size, a.sched_latency_nice);
	CHECK(ln_set(0, 0) == 0, "reset to 0: %m");
	return 0;
}

static int t_legacy(void)
{
	struct sched_param sp = { 0 };

	CHECK(ln_set(0, -8) == 0, "set -8: %m");
	CHECK(sched_setscheduler(0, SCHED_BATCH, &sp) == 0, "SCHED_BATCH: %m");
	CHECK(ln_get(0) == -8, "sched_setscheduler changed it to %d", ln_get(0));
	CHECK(sched_setscheduler(0, SCHED_OTHER, &sp) == 0, "SCHED_OTHER: %m");
	CHECK(sched_setparam(0, &sp) == 0, "sched_setparam: %m");
	CHECK(setpriority(PRIO_PROCESS, 0, 5) == 0, "setpriority: %m");
	CHECK(ln_get(0) == -8, "nice/setparam changed it to %d", ln_get(0));
	CHECK(setpriority(PRIO_PROCESS, 0, 0) == 0, "setpriority 0: %m");
	/* A SCHED_FIFO task keeps the value for when it returns to fair. */
	sp.sched_priority = 1;
	CHECK(sched_setscheduler(0, SCHED_FIFO, &sp) == 0, "SCHED_FIFO: %m");
	CHECK(ln_get(0) == -8, "SCHED_FIFO changed it to %d", ln_get(0));
	sp.sched_priority = 0;
	CHECK(sched_setscheduler(0, SCHED_OTHER, &sp) == 0, "back to OTHER: %m");
	CHECK(ln_get(0) == -8, "FIFO->OTHER changed it to %d", ln_get(0));
	CHECK(ln_set(0, 0) == 0, "reset to 0: %m");
	return 0;
}

static int child_get_status(int expect, bool reset_expected)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -2;
	if (pid == 0) {
		struct ln_sched_attr a = { 0 };
		int ok = ln_get(0) == expect;

		if (ln_getattr(0, &a, SCHED_ATTR_SIZE_VER2) == 0 && reset_expected &&
		    (a.sched_flags & SCHED_FLAG_RESET_ON_FORK))
			ok = 0;
		_exit(ok ? 0 : 100 + ln_get(0));
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int t_fork(void)
{
	int r;

	CHECK(ln_set(0, -7) == 0, "set -7: %m");
	r = child_get_status(-7, false);
	CHECK(r == 0, "child: exit %d (value %d), expected -7", r, r - 100);
	CHECK(ln_set(0, 13) == 0, "set 13: %m");
	r = child_get_status(13, false);
	CHECK(r == 0, "child: exit %d (value %d), expected 13", r, r - 100);
	CHECK(ln_set(0, 0) == 0, "reset to 0: %m");
	return 0;
}

static int t_reset_on_fork(void)
{
	int r;

	CHECK(set_full(0, -9, SCHED_FLAG_RESET_ON_FORK) == 0,
	      "set -9 with RESET_ON_FORK: %m");
	CHECK(ln_get(0) == -9, "parent has %d", ln_get(0));
	r = child_get_status(0, true);
	CHECK(r == 0, "child: exit %d (value %d), expected 0 and no reset flag",
	      r, r - 100);
	CHECK(ln_get(0) == -9, "parent changed to %d", ln_get(0));
	/* Positive values are reset too (nice only resets negative ones). */
	CHECK(set_full(0, 9, SCHED_FLAG_RESET_ON_FORK) == 0, "set 9: %m");
	r = child_get_status(0, true);
	CHECK(r == 0, "child of a 9 parent: value %d, expected 0", r - 100);
	CHECK(set_full(0, 0, 0) == 0, "clear RESET_ON_FORK: %m");
	return 0;
}

static int t_other_pid(void)
{
	int ok = 0, status;
	pid_t pid = fork();

	CHECK(pid >= 0, "fork: %m");
	if (pid == 0) {
		pause();
		_exit(0);
	}
	if (ln_set(pid, 12) == 0 && ln_get(pid) == 12 && ln_get(0) == 0 &&
	    ln_set(pid, -12) == 0 && ln_get(pid) == -12)
		ok = 1;
	else
		snprintf(why, sizeof(why), "child value %d, own %d: %m",
			 ln_get(pid), ln_get(0));
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	if (!ok)
		return -1;
	errno = 0;
	CHECK(ln_set(pid, 1) < 0 && errno == ESRCH,
	      "setting a reaped pid: expected ESRCH, got %s",
	      errno ? strerror(errno) : "success");
	return 0;
}

static uint64_t runtime_of(pid_t pid);
static int set_runtime(uint64_t runtime);

static int unpriv_body(void)
{
	CHECK(ln_set(0, 5) == 0, "root set 5: %m");
	CHECK(setgroups(0, NULL) == 0, "setgroups: %m");
	CHECK(setgid(65534) == 0, "setgid: %m");
	CHECK(setuid(65534) == 0, "setuid: %m");	/* drops all capabilities */
	errno = 0;
	CHECK(ln_set(0, 4) < 0 && errno == EPERM,
	      "lowering 5 -> 4 without CAP_SYS_NICE: expected EPERM, got %s",
	      errno ? strerror(errno) : "success");
	CHECK(ln_set(0, -20) < 0 && errno == EPERM, "lowering to -20: %s",
	      errno ? strerror(errno) : "success");
	CHECK(ln_get(0) == 5, "value after refused lowering: %d", ln_get(0));
	CHECK(ln_set(0, 5) == 0, "setting the same value: %m");
	CHECK(ln_set(0, 10) == 0, "raising 5 -> 10: %m");
	CHECK(ln_get(0) == 10, "value after raising: %d", ln_get(0));
	CHECK(ln_set(0, 19) == 0, "raising 10 -> 19: %m");
	errno = 0;
	CHECK(ln_set(0, 18) < 0 && errno == EPERM, "lowering 19 -> 18: %s",
	      errno ? strerror(errno) : "success");
	errno = 0;
	CHECK(ln_set(0, 20) < 0 && errno == EINVAL,
	      "out of range as nobody: expected EINVAL, got %s",
	      errno ? strerror(errno) : "success");
	errno = 0;
	CHECK(ln_set(1, 19) < 0 && errno == EPERM,
	      "changing init as nobody: expected EPERM, got %s",
	      errno ? strerror(errno) : "success");
	if (is_eevdf()) {
		/* Mainline's own custom slice stays unprivileged, and explicit. */
		CHECK(set_runtime(200000) == 0, "sched_runtime as nobody: %m");
		CHECK(runtime_of(0) == 200000, "slice %llu after sched_runtime 0.2 ms",
		      (unsigned long long)runtime_of(0));
		CHECK(ln_get(0) == 19, "sched_runtime changed latency nice to %d", ln_get(0));
	}
	return 0;
}

static int t_unprivileged(void)
{
	return in_child(unpriv_body);
}

/* /proc/PID/sched shows latency_prio = latency nice + 20 (SCHED_DEBUG). */
static long proc_sched_field(pid_t pid, const char *field)
{
	char path[64], line[256];
	long val = LONG_MIN;
	size_t flen = strlen(field);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/sched", pid ? pid : getpid());
	f = fopen(path, "re");
	if (!f)
		return LONG_MIN;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, field, flen) == 0 && (line[flen] == ' ' || line[flen] == ':')) {
			char *colon = strchr(line, ':');
			char *dot;

			if (!colon)
				continue;
			/* se.slice is printed as ms.ns ("1.400000"). */
			dot = strchr(colon, '.');
			if (dot) {
				long ms = strtol(colon + 1, NULL, 10);
				long frac = strtol(dot + 1, NULL, 10);

				val = ms * 1000000 + frac;
			} else {
				val = strtol(colon + 1, NULL, 10);
			}
			break;
		}
	}
	fclose(f);
	return val;
}

static int t_proc_sched(void)
{
	if (access("/proc/self/sched", R_OK) != 0) {
		snprintf(why, sizeof(why), "SKIP /proc/self/sched missing (no SCHED_DEBUG)");
		return 1;
	}
	for (int ln = -20; ln <= 19; ln += 13) {
		CHECK(ln_set(0, ln) == 0, "set %d: %m", ln);
		CHECK(proc_sched_field(0, "latency_prio") == ln + 20,
		      "latency nice %d: /proc/self/sched latency_prio %ld",
		      ln, proc_sched_field(0, "latency_prio"));
	}
	CHECK(ln_set(0, 0) == 0, "reset to 0: %m");
	return 0;
}

/* ---- BTF: what latniced uses to detect the patched uAPI --------------- */

struct btf_header {
	uint16_t magic;
	uint8_t version, flags;
	uint32_t hdr_len, type_off, type_len, str_off, str_len;
};

static int t_btf(void)
{
	static const char path[] = "/sys/kernel/btf/vmlinux";
	const struct btf_header *h;
	const uint8_t *types, *p, *end;
	const char *strs;
	struct stat st;
	uint8_t *buf;
	ssize_t n, got = 0;
	int fd, found_task = 0, found_member = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0, "%s: %m", path);
	CHECK(fstat(fd, &st) == 0 && st.st_size > 0, "stat %s: %m", path);
	buf = malloc(st.st_size);
	CHECK(buf, "malloc");
	while (got < st.st_size && (n = read(fd, buf + got, st.st_size - got)) > 0)
		got += n;
	close(fd);
	CHECK(got == st.st_size, "short read of %s", path);
	h = (const void *)buf;
	CHECK(h->magic == 0xeB9F, "bad BTF magic 0x%x", h->magic);
	types = buf + h->hdr_len + h->type_off;
	strs = (const char *)buf + h->hdr_len + h->str_off;
	p = types;
	end = types + h->type_len;
	while (p + 12 <= end) {
		uint32_t name_off = *(const uint32_t *)p;
		uint32_t info = *(const uint32_t *)(p + 4);
		unsigned int kind = (info >> 24) & 0x1f, vlen = info & 0xffff;
		size_t extra = 0;

		p += 12;
		switch (kind) {
		case 1: case 14: case 17: extra = 4; break;	/* INT VAR DECL_TAG */
		case 3: extra = 12; break;				/* ARRAY */
		case 4: case 5:						/* STRUCT UNION */
			extra = 12 * (size_t)vlen;
			if (!strcmp(strs + name_off, "task_struct") && kind == 4) {
				found_task = 1;
				for (unsigned int i = 0; i < vlen; i++) {
					const char *m = strs + *(const uint32_t *)(p + 12 * i);

					if (!strcmp(m, "latency_prio") || !strcmp(m, "latency_nice"))
						found_member = 1;
				}
			}
			break;
		case 6: case 13: extra = 8 * (size_t)vlen; break;	/* ENUM FUNC_PROTO */
		case 15: case 19: extra = 12 * (size_t)vlen; break;	/* DATASEC ENUM64 */
		default: break;
		}
		p += extra;
	}
	free(buf);
	CHECK(found_task, "no struct task_struct in kernel BTF");
	CHECK(found_member, "struct task_struct has no latency_prio/latency_nice member");
	return 0;
}

/* ---- EEVDF: latency nice sets the request size ------------------------- */

static const int prio_to_weight[40] = {
	88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916,
	9548, 7620, 6100, 4904, 3906, 3121, 2501, 1991, 1586, 1277,
	1024, 820, 655, 526, 423, 335, 272, 215, 172, 137,
	110, 87, 70, 56, 45, 36, 29, 23, 18, 15,
};

/* daemon/sched-map.c: slice(ln) = clamp(base * 1024 / weight(ln), 0.1 ms, 100 ms) */
static uint64_t expected_slice(uint64_t base, int ln)
{
	uint64_t s;

	if (ln == 0)
		return base;
	s = base * 1024 / prio_to_weight[ln + 20];
	if (s < 100000)
		s = 100000;
	if (s > 100000000)
		s = 100000000;
	return s;
}

static uint64_t runtime_of(pid_t pid)
{
	struct ln_sched_attr a = { 0 };

	if (ln_getattr(pid, &a, SCHED_ATTR_SIZE_VER2) < 0)
		return 0;
	return a.sched_runtime;
}

static uint64_t base_slice(void)
{
	char buf[64] = "";
	int fd = open("/sys/kernel/debug/sched/base_slice_ns", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		(void)!read(fd, buf, sizeof(buf) - 1);
		close(fd);
		return strtoull(buf, NULL, 10);
	}
	return 0;
}

static int set_runtime(uint64_t runtime)
{
	struct ln_sched_attr a = {
		.size = SCHED_ATTR_SIZE_VER2,
		.sched_policy = SCHED_OTHER,
		.sched_runtime = runtime,
	};
	return ln_setattr(0, &a, 0);
}

static int t_slice(void)
{
	uint64_t base, dbg;
	long ps;
	int r;

	if (!is_eevdf()) {
		snprintf(why, sizeof(why), "SKIP CFS kernel: latency nice has no slice there");
		return 1;
	}
	CHECK(set_runtime(0) == 0 && ln_set(0, 0) == 0, "reset: %m");
	base = runtime_of(0);
	CHECK(base > 0, "sched_getattr reports no default slice");
	dbg = base_slice();
	CHECK(dbg == 0 || dbg == base,
	      "default slice %llu != debugfs base_slice_ns %llu",
	      (unsigned long long)base, (unsigned long long)dbg);

	for (int ln = -20; ln <= 19; ln++) {
		uint64_t want = expected_slice(base, ln);

		CHECK(ln_set(0, ln) == 0, "set %d: %m", ln);
		CHECK(runtime_of(0) == want, "latency nice %d: slice %llu, expected %llu",
		      ln, (unsigned long long)runtime_of(0), (unsigned long long)want);
		ps = proc_sched_field(0, "se.slice");
		CHECK(ps == LONG_MIN || (uint64_t)ps == want,
		      "latency nice %d: /proc/self/sched se.slice %ld, expected %llu",
		      ln, ps, (unsigned long long)want);
	}

	/* An explicit sched_runtime wins over latency nice... */
	CHECK(set_runtime(3000000) == 0, "sched_runtime 3 ms: %m");
	CHECK(runtime_of(0) == 3000000, "explicit slice: %llu",
	      (unsigned long long)runtime_of(0));
	CHECK(ln_set(0, -10) == 0, "set -10 over an explicit slice: %m");
	CHECK(ln_get(0) == -10, "value %d", ln_get(0));
	CHECK(runtime_of(0) == 3000000, "latency nice overrode the explicit slice: %llu",
	      (unsigned long long)runtime_of(0));
	/* ...and sched_runtime = 0 hands the slice back to latency nice. */
	CHECK(set_runtime(0) == 0, "sched_runtime 0: %m");
	CHECK(runtime_of(0) == expected_slice(base, -10),
	      "after dropping the explicit slice: %llu, expected %llu",
	      (unsigned long long)runtime_of(0),
	      (unsigned long long)expected_slice(base, -10));
	/* Legacy calls pass the reported slice back: it stays latency nice's. */
	{
		struct sched_param sp = { 0 };

		CHECK(sched_setscheduler(0, SCHED_OTHER, &sp) == 0, "setscheduler: %m");
	}
	CHECK(ln_set(0, 5) == 0, "set 5: %m");
	CHECK(runtime_of(0) == expected_slice(base, 5),
	      "after sched_setscheduler the slice no longer follows latency nice: %llu, expected %llu",
	      (unsigned long long)runtime_of(0),
	      (unsigned long long)expected_slice(base, 5));

	/* Fork copies the slice; RESET_ON_FORK resets it to the default. */
	CHECK(ln_set(0, -15) == 0, "set -15: %m");
	r = fork();
	CHECK(r >= 0, "fork: %m");
	if (r == 0)
		_exit(runtime_of(0) == expected_slice(base, -15) ? 0 : 1);
	waitpid(r, &r, 0);
	CHECK(WIFEXITED(r) && WEXITSTATUS(r) == 0, "child did not inherit the slice");
	CHECK(set_full(0, -15, SCHED_FLAG_RESET_ON_FORK) == 0, "RESET_ON_FORK: %m");
	r = fork();
	CHECK(r >= 0, "fork: %m");
	if (r == 0)
		_exit(runtime_of(0) == base && ln_get(0) == 0 ? 0 : 1);
	waitpid(r, &r, 0);
	CHECK(WIFEXITED(r) && WEXITSTATUS(r) == 0,
	      "RESET_ON_FORK child did not get the default slice");
	CHECK(set_full(0, 0, 0) == 0 && set_runtime(0) == 0, "reset: %m");
	CHECK(runtime_of(0) == base, "back at 0 the slice is %llu, not the default %llu",
	      (unsigned long long)runtime_of(0), (unsigned long long)base);
	return 0;
}

/* ---- cgroups ------------------------------------------------------------ */

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int saved;

	if (fd < 0)
		return -1;
	n = write(fd, val, strlen(val));
	saved = errno;
	close(fd);
	errno = saved;
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

static int read_long(const char *path, long long *ret)
{
	char buf[64] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	*ret = strtoll(buf, NULL, 10);
	return 0;
}

/* Check a knob of range [lo, hi] with default def in directory dir. */
static int check_knob(const char *dir, const char *name, int lo, int hi, int def)
{
	static const char *const bad_fmt[] = {
		"%d", "%d", "40", "-40", "100", "9223372036854775807",
		"-9223372036854775808", "4294967296", "4294967316", "abc", "",
	};
	char path[512], val[64];
	long long v;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	CHECK(read_long(path, &v) == 0, "read %s: %m", path);
	CHECK(v == def, "%s reads %lld, expected the default %d", path, v, def);
	for (int x = lo; x <= hi; x++) {
		snprintf(val, sizeof(val), "%d", x);
		CHECK(write_file(path, val) == 0, "write %d to %s: %m", x, path);
		CHECK(read_long(path, &v) == 0 && v == x, "%s: wrote %d, read %lld",
		      path, x, v);
	}
	snprintf(val, sizeof(val), "%d", lo + (hi - lo) / 3);
	CHECK(write_file(path, val) == 0, "write %s: %m", val);
	for (size_t i = 0; i < sizeof(bad_fmt) / sizeof(bad_fmt[0]); i++) {
		long long keep = lo + (hi - lo) / 3;

		if (i == 0)
			snprintf(val, sizeof(val), "%d", lo - 1);
		else if (i == 1)
			snprintf(val, sizeof(val), "%d", hi + 1);
		else
			snprintf(val, sizeof(val), "%s", bad_fmt[i]);
		errno = 0;
		if (!val[0]) {
			/* An empty write is a no-op or an error; never a value. */
			(void)write_file(path, "\n");
		} else {
			CHECK(write_file(path, val) < 0, "%s accepted \"%s\"", path, val);
			CHECK(errno == EINVAL || errno == ERANGE,
			      "%s: \"%s\" failed with %s, expected EINVAL", path, val,
			      strerror(errno));
		}
		CHECK(read_long(path, &v) == 0 && v == keep,
		      "%s: after \"%s\" reads %lld, expected %lld", path, val, v, keep);
	}
	snprintf(val, sizeof(val), "%d", def);
	CHECK(write_file(path, val) == 0, "restore %s: %m", path);
	return 0;
}

static int t_cgroup_v1(void)
{
	static const char mnt[] = "/tmp/lncg1";
	char path[256];
	long long v;
	int r;

	mkdir(mnt, 0755);
	for (int i = 0; mount("cgroup", mnt, "cgroup", 0, "cpu") < 0; i++) {
		/* EBUSY while the controller is still bound to cgroup2 */
		CHECK(i < 50 && errno == EBUSY, "mount -t cgroup -o cpu: %m");
		usleep(100000);
	}
	/* The root group has no entity: the knob is absent or refuses writes. */
	snprintf(path, sizeof(path), "%s/cpu.latency", mnt);
	if (access(path, F_OK) == 0) {
		CHECK(read_long(path, &v) == 0 && v == 20,
		      "root cpu.latency reads %lld, expected 20 (root group not initialised?)", v);
		errno = 0;
		CHECK(write_file(path, "10") < 0 && errno == EINVAL,
		      "root cpu.latency accepted a write (%s)", strerror(errno));
	}
	snprintf(path, sizeof(path), "%s/lntest", mnt);
	CHECK(mkdir(path, 0755) == 0 || errno == EEXIST, "mkdir %s: %m", path);
	r = check_knob(path, "cpu.latency", 0, 39, 20);
	rmdir(path);
	/* Let the removed group go, or the hierarchy survives the umount. */
	usleep(300000);
	umount(mnt);
	return r;
}

static int t_cgroup_v2(void)
{
	static const char mnt[] = "/tmp/lncg2";
	char path[256], procs_path[300];
	int r;

	mkdir(mnt, 0755);
	if (mount("cgroup2", mnt, "cgroup2", 0, NULL) < 0) {
		snprintf(why, sizeof(why), "mount -t cgroup2: %m");
		return -1;
	}
	snprintf(path, sizeof(path), "%s/cpu.latency.nice", mnt);
	CHECK(access(path, F_OK) < 0, "cpu.latency.nice exists on the root group");
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", mnt);
	/*
	 * The cpu controller comes back from the v1 hierarchy unmounted
	 * above only once that hierarchy is gone, which is asynchronous.
	 */
	for (int i = 0; write_file(path, "+cpu") < 0; i++) {
		CHECK(i < 30 && (errno == ENOENT || errno == EBUSY),
		      "enable +cpu in %s: %m", path);
		usleep(100000);
	}
	snprintf(path, sizeof(path), "%s/lntest", mnt);
	CHECK(mkdir(path, 0755) == 0 || errno == EEXIST, "mkdir %s: %m", path);
	r = check_knob(path, "cpu.latency.nice", -20, 19, 0);
	/* The 2022 series also has the raw 0..39 file on v2; 6.12 does not. */
	snprintf(procs_path, sizeof(procs_path), "%s/cpu.latency", path);
	if (r == 0 && access(procs_path, F_OK) == 0)
		r = check_knob(path, "cpu.latency", 0, 39, 20);
	if (r == 0) {
		/* Members keep their own value; the group's is separate. */
		char procs[300], pid[32];

		snprintf(procs, sizeof(procs), "%s/cpu.latency.nice", path);
		write_file(procs, "-20");
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", path);
		snprintf(pid, sizeof(pid), "%d", getpid());
		if (write_file(procs, pid) == 0) {
			int own = ln_get(0);

			snprintf(procs, sizeof(procs), "%s/cgroup.procs", mnt);
			write_file(procs, pid);
			CHECK(own == 0, "joining a -20 group changed the task's value to %d", own);
		}
		snprintf(procs, sizeof(procs), "%s/cpu.latency.nice", path);
		write_file(procs, "0");
	}
	rmdir(path);
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", mnt);
	write_file(path, "-cpu");
	umount(mnt);
	return r;
}

/*
 * 7.3: a task without a slice of its own gets the slice of the innermost
 * group above it that has a cpu.latency.nice; its own value wins; the
 * group's value is taken at the task's next placement (a sleep does it).
 */
/*
 * se.slice once it is want: a task takes its group's slice when it is placed (a sleep and a
 * wakeup) or starts a new request, so sleep a little until then, a bounded number of times.
 */
static long slice_after_sleeps(long want)
{
	long ps = proc_sched_field(0, "se.slice");

	for (int i = 0; i < 100 && ps != want; i++) {
		usleep(2000);
		ps = proc_sched_field(0, "se.slice");
	}
	return ps;
}

static int group_slice_body(const char *mnt)
{
	char parent[256], leaf[300], path[400], pid[32];
	uint64_t base = runtime_of(0);
	long ps;

	snprintf(parent, sizeof(parent), "%s/lntest-slice", mnt);
	snprintf(leaf, sizeof(leaf), "%s/leaf", parent);
	CHECK(mkdir(parent, 0755) == 0 || errno == EEXIST, "mkdir %s: %m", parent);
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", parent);
	CHECK(write_file(path, "+cpu") == 0, "enable +cpu in %s: %m", path);
	CHECK(mkdir(leaf, 0755) == 0 || errno == EEXIST, "mkdir %s: %m", leaf);
	snprintf(path, sizeof(path), "%s/cpu.latency.nice", parent);
	CHECK(write_file(path, "-10") == 0, "write -10 to %s: %m", path);
	snprintf(path, sizeof(path), "%s/cgroup.procs", leaf);
	snprintf(pid, sizeof(pid), "%d", getpid());
	CHECK(write_file(path, pid) == 0, "join %s: %m", leaf);
	ps = slice_after_sleeps(expected_slice(base, -10));
	CHECK(ps == (long)expected_slice(base, -10),
	      "in a leaf below a -10 group: se.slice %ld, expected %llu", ps,
	      (unsigned long long)expected_slice(base, -10));
	CHECK(ln_get(0) == 0, "the group's value changed the task's own to %d", ln_get(0));
	CHECK(ln_set(0, -5) == 0, "set -5: %m");
	slice_after_sleeps(expected_slice(base, -5));
	CHECK(runtime_of(0) == expected_slice(base, -5),
	      "own -5 in a -10 group: slice %llu, expected %llu",
	      (unsigned long long)runtime_of(0), (unsigned long long)expected_slice(base, -5));
	CHECK(ln_set(0, 0) == 0, "set 0: %m");
	snprintf(path, sizeof(path), "%s/cpu.latency.nice", leaf);
	CHECK(write_file(path, "5") == 0, "write 5 to %s: %m", path);
	ps = slice_after_sleeps(expected_slice(base, 5));
	CHECK(ps == (long)expected_slice(base, 5),
	      "leaf 5 below a -10 group: se.slice %ld, expected %llu (the innermost wins)",
	      ps, (unsigned long long)expected_slice(base, 5));
	CHECK(write_file(path, "0") == 0, "write 0 to %s: %m", path);
	ps = slice_after_sleeps(expected_slice(base, -10));
	CHECK(ps == (long)expected_slice(base, -10),
	      "leaf back at 0: se.slice %ld, expected the parent's %llu", ps,
	      (unsigned long long)expected_slice(base, -10));
	snprintf(path, sizeof(path), "%s/cgroup.procs", mnt);
	CHECK(write_file(path, pid) == 0, "back to the root group: %m");
	ps = slice_after_sleeps(base);
	CHECK(ps == (long)base, "back in the root group: se.slice %ld, expected the default %llu",
	      ps, (unsigned long long)base);
	return 0;
}

static int t_group_slice(void)
{
	static const char mnt[] = "/tmp/lncg3";
	char path[300];
	int r;

	if (!is_flat()) {
		snprintf(why, sizeof(why), "SKIP %s: a group's value is the slice of the group's entity, "
			 "not of its tasks", arg_series);
		return 1;
	}
	mkdir(mnt, 0755);
	CHECK(mount("cgroup2", mnt, "cgroup2", 0, NULL) == 0, "mount -t cgroup2: %m");
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", mnt);
	for (int i = 0; write_file(path, "+cpu") < 0; i++) {
		CHECK(i < 30 && (errno == ENOENT || errno == EBUSY), "enable +cpu in %s: %m", path);
		usleep(100000);
	}
	r = in_child_arg(group_slice_body, mnt);
	snprintf(path, sizeof(path), "%s/lntest-slice/leaf", mnt);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/lntest-slice", mnt);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", mnt);
	write_file(path, "-cpu");
	umount(mnt);
	return r;
}

/*
 * Latency nice buys no CPU: on one CPU, a task that runs in short bursts
 * and sleeps briefly (so it is placed, and on 7.3 lent its credit, at
 * every wakeup) against a CPU hog at 0 gets the same share at latency nice
 * -20 as at 0; and a hog at 19 against a hog at 0 gets half. Measured as
 * CPU time over a fixed span; the bounds are loose (x1.25): what they guard
 * against (a credit given, not lent) would be a multiple.
 */
static void spin_until(const struct timespec *end, long burst_us, long sleep_us)
{
	struct timespec now, b;

	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end->tv_sec || (now.tv_sec == end->tv_sec && now.tv_nsec >= end->tv_nsec))
			return;
		if (!burst_us)
			continue;
		b = now;
		do
			clock_gettime(CLOCK_MONOTONIC, &now);
		while ((now.tv_sec - b.tv_sec) * 1000000 + (now.tv_nsec - b.tv_nsec) / 1000 < burst_us);
		usleep(sleep_us);
	}
}

/* CPU seconds of two tasks on CPU 0 for span ms: a at latency nice lna (bursts), b at lnb (hog). */
static int share_pair(int lna, long burst_us, int lnb, long span_ms, double *ret_a, double *ret_b)
{
	struct timespec end;
	pid_t pids[2];
	int lns[2] = { lna, lnb };
	double cpu[2];

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += span_ms / 1000;
	end.tv_nsec += (span_ms % 1000) * 1000000;
	if (end.tv_nsec >= 1000000000) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000;
	}
	for (int i = 0; i < 2; i++) {
		pids[i] = fork();
		CHECK(pids[i] >= 0, "fork: %m");
		if (pids[i] == 0) {
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET(0, &set);
			if (sched_setaffinity(0, sizeof(set), &set) < 0 || set_full(0, lns[i], 0) < 0)
				_exit(2);
			spin_until(&end, i == 0 ? burst_us : 0, 50);
			_exit(0);
		}
	}
	for (int i = 0; i < 2; i++) {
		struct rusage ru;
		int status;

		CHECK(wait4(pids[i], &status, 0, &ru) == pids[i], "wait4: %m");
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d: status 0x%x", i, status);
		cpu[i] = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
			 (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	}
	*ret_a = cpu[0];
	*ret_b = cpu[1];
	return 0;
}

static int t_no_cpu(void)
{
	double a0, b0, a20, b20, h19, h0, share0, share20;

	if (!is_flat()) {
		snprintf(why, sizeof(why), "SKIP %s: the wakeup credit is 7.3's", arg_series);
		return 1;
	}
	/*
	 * Bursts of 0.2 ms and 50 us sleeps: more than their share against a hog,
	 * placed thousands of times a second. A credit of one -20 request (0.1 ms)
	 * that was not repaid would add up to a multiple of the task's share.
	 */
	if (share_pair(0, 200, 0, 1000, &a0, &b0) < 0)
		return -1;
	if (share_pair(-20, 200, 0, 1000, &a20, &b20) < 0)
		return -1;
	CHECK(a0 + b0 > 0.5 && a20 + b20 > 0.5, "the pairs ran %.2f s and %.2f s of 1 s each", a0 + b0, a20 + b20);
	share0 = a0 / (a0 + b0);
	share20 = a20 / (a20 + b20);
	printf("LNTEST INFO no-cpu bursts at 0: %.3f of the CPU, at -20: %.3f\n", share0, share20);
	if (share_pair(19, 0, 0, 1000, &h19, &h0) < 0)
		return -1;
	printf("LNTEST INFO no-cpu hog at 19 against one at 0: %.3f s / %.3f s\n", h19, h0);
	/*
	 * XXX: no verdict on these figures here. Under plain TCG the guest's clock carries the host's
	 * load (0.419 / 0.422 of the CPU on a quiet host, 0.061 / 0.078 beside the lab's VMs): a share
	 * bound would be a timing threshold. The shares belong in the lab (bench/lab, icount).
	 */
	snprintf(why, sizeof(why), "SKIP %s: shares measured (INFO above), judged in bench/lab, not under TCG",
		 arg_series);
	return 1;
}

/* ---- driver ------------------------------------------------------------- */

static const struct {
	const char *name;
	int (*fn)(void);
} tests[] = {
	{ "btf-task-struct-member", t_btf },
	{ "default-zero", t_default },
	{ "set-get-roundtrip", t_roundtrip },
	{ "range-einval", t_range },
	{ "old-size-attr", t_oldsize },
	{ "legacy-calls-keep-value", t_legacy },
	{ "fork-inherits", t_fork },
	{ "reset-on-fork", t_reset_on_fork },
	{ "other-pid", t_other_pid },
	{ "unprivileged", t_unprivileged },
	{ "proc-sched", t_proc_sched },
	{ "eevdf-slice", t_slice },
	{ "latency-nice-buys-no-cpu", t_no_cpu },
	/* v2 first: a v1 hierarchy may outlive its umount and keep "cpu" */
	{ "cgroup-v2-cpu.latency.nice", t_cgroup_v2 },
	{ "cgroup-v2-group-slice", t_group_slice },
	{ "cgroup-v1-cpu.latency", t_cgroup_v1 },
};

int main(int argc, char **argv)
{
	int failed = 0, i = 1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "getln")) {
		printf("%d\n", ln_get(atoi(argv[2])));
		return 0;
	}
	/* The slice sched_getattr() reports for a task (EEVDF: custom or the default). */
	if (argc == 3 && !strcmp(argv[1], "getslice")) {
		printf("%llu\n", (unsigned long long)runtime_of(atoi(argv[2])));
		return 0;
	}
	/* Sets a task's custom slice as another program would (0: back to the default). */
	if (argc == 4 && !strcmp(argv[1], "setslice")) {
		struct ln_sched_attr a = {
			.size = SCHED_ATTR_SIZE_VER2,
			.sched_policy = SCHED_OTHER,
			.sched_runtime = strtoull(argv[3], NULL, 10),
		};

		if (ln_setattr(atoi(argv[2]), &a, 0) < 0) {
			perror("sched_setattr");
			return 1;
		}
		return 0;
	}
	if (argc > 2 && !strcmp(argv[1], "--series")) {
		arg_series = argv[2];
		i = 3;
	}
	for (size_t t = 0; t < sizeof(tests) / sizeof(tests[0]); t++) {
		int r;

		if (i < argc) {
			bool wanted = false;

			for (int j = i; j < argc; j++)
				wanted |= !strcmp(argv[j], tests[t].name);
			if (!wanted)
				continue;
		}
		why[0] = 0;
		r = tests[t].fn();
		if (r == 0)
			LN_PASS(tests[t].name);
		else if (r > 0)
			printf("LNTEST SKIP %s: %s\n", tests[t].name, why + 5);
		else {
			printf("LNTEST FAIL %s: %s\n", tests[t].name, why);
			failed++;
			/* Leave a clean state for the next test. */
			set_full(0, 0, 0);
		}
	}
	return failed ? 1 : 0;
}
