#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""latniced exec benchmark: is the value set before main(), how fast, at what cost.

Runs latniced on a temporary rule tree with one rule (Comm=lnprobe,
LatencyNice=-10) and measures, in one run:
  - sequential probes: share set before main(), exec->applied percentiles
    (for probes set before main() the bound t_main - t_exec is used);
  - probes that live 1 ms after main(), probes that start 8 threads;
  - storms of an unmatched static program at 1000/s and at the machine's
    maximum rate, every 100th exec a probe: daemon CPU per 1000 execs,
    missed probes, and the maximum rate with latniced against without it
    (interleaved off/on rounds after a warm-up);
  - Pss and Anonymous (/proc/PID/smaps_rollup: what latniced costs the machine;
    RSS counts the shared libraries whole), the start-up high-water mark
    (VmHWM), and CPU and wakeups while idle;
  - ring-buffer overflows over the whole run (--cmdline-rule adds a
    Cmdline= rule, so every record carries the command line).
Results are ratios and percentiles from this run; nothing here is a test.

--scale runs the large-rule-set scenario instead: it generates
15,000 exact-name rules and 500 globs of every shape in 350 drop-ins (see
write_scale_rules(); --write-scale-rules DIR only writes them), and compares
in interleaved rounds no daemon, the desktop profile alone and the desktop
profile plus the generated set: daemon CPU per 1000 unmatched execs, the
machine's maximum fork+exec rate, Pss and Anonymous, the start-up high-water mark, load
and reload times, probes set before main().
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def schedstat(pid):
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])  # ns on CPU


def ctxt_switches(pid):
    v = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                v += int(line.split()[1])
    return v


def status_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def mem_kb(pid):
    """(Pss, Anonymous) in kB from /proc/PID/smaps_rollup: the shared pages divided among their users, and
    latniced's own private memory."""
    v = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            k, _, rest = line.partition(":")
            if k in ("Pss", "Anonymous"):
                v[k] = int(rest.split()[0])
    return v.get("Pss", 0), v.get("Anonymous", 0)


def bpf_prog_stats():
    """run_time_ns and run_cnt of latniced's programs (needs kernel.bpf_stats_enabled=1)."""
    try:
        out = subprocess.check_output(["bpftool", "--json", "prog", "show"], text=True, stderr=subprocess.DEVNULL)
    except (OSError, subprocess.CalledProcessError):
        return {}
    stats = {}
    for p in json.loads(out):
        if p.get("name") in ("exec_btf", "exit_btf", "exec_tp", "exit_tp"):
            t, c = stats.get(p["name"], (0, 0))
            stats[p["name"]] = (t + p.get("run_time_ns", 0), c + p.get("run_cnt", 0))
    return stats


def daemon_bpf_counters(pid):
    """(execs seen, exec events sent) of the daemon's BPF program: the kernel's own count of the execs that
    woke it, unaffected by what else runs on the machine. (0, 0) without bpftool."""
    ids = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fdinfo"):
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                for line in f:
                    if line.startswith("map_id:"):
                        ids.add(int(line.split()[1]))
        for i in sorted(ids):
            info = json.loads(subprocess.check_output(["bpftool", "--json", "map", "show", "id", str(i)], text=True))
            if info.get("name") != "counters":
                continue
            dump = json.loads(subprocess.check_output(["bpftool", "--json", "map", "dump", "id", str(i)], text=True))
            sums = {e["formatted"]["key"]: sum(v["value"] for v in e["formatted"]["values"]) for e in dump}
            return sums.get(0, 0), sums.get(1, 0)
    except (OSError, ValueError, KeyError, subprocess.CalledProcessError):
        pass
    return 0, 0


def daemon_prog_time(pid):
    """Sum of run_time_ns over the daemon's own BPF programs (its fds; needs kernel.bpf_stats_enabled=1)."""
    t = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fdinfo"):
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                info = f.read()
            if "prog_id:" in info:
                for line in info.splitlines():
                    if line.startswith("run_time_ns:"):
                        t += int(line.split()[1])
    except OSError:
        pass
    return t


def set_bpf_stats(on):
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1" if on else "0")
        return True
    except OSError:
        return False


def pct(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    k = min(len(s) - 1, max(0, int(round(p / 100.0 * (len(s) - 1)))))
    return s[k]


def read_probes(path):
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) != 7:
                continue
            rows.append(dict(pid=int(p[0]), before=int(p[1]), t_exec=int(p[2]), t_main=int(p[3]),
                             t_applied=int(p[4]), threads=int(p[5]), threads_ok=int(p[6])))
    return rows


class Daemon:
    def __init__(self, args, root, log_level="notice"):
        self.args = args
        self.root = root
        self.log_level = log_level
        self.proc = None
        self.log = open(os.path.join(root, "latniced.log"), "w+")
        self.overflows = 0
        self.hwm_kb = 0

    def start(self):
        extra = []
        # a private state directory (older builds have no --state-dir)
        if "--state-dir" in subprocess.run([self.args.latniced, "--help"], capture_output=True, text=True).stdout:
            extra = ["--state-dir", os.path.join(self.root, "state")]
        self.proc = subprocess.Popen([self.args.latniced, "--root", self.root, "--no-profile", "--no-bus",
                                      "--log-level", self.log_level] + extra + self.args.daemon_arg,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        # READY is when the startup scan is done: wait for the daemon to be idle
        deadline = time.time() + 20
        last = -1
        while time.time() < deadline:
            time.sleep(0.3)
            if self.proc.poll() is not None:
                self.log.seek(0)
                sys.exit("latniced exited: " + self.log.read())
            s = schedstat(self.proc.pid)
            if s == last:
                return
            last = s
        sys.exit("latniced did not settle")

    def log_text(self):
        self.log.flush()
        self.log.seek(0)
        t = self.log.read()
        self.log.seek(0, 2)
        return t

    def stop(self):
        """Stops the daemon; returns its exec->applied summary line, if any."""
        line = None
        if self.proc:
            self.hwm_kb = max(self.hwm_kb, status_kb(self.proc.pid, "VmHWM"))
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=20)
            self.proc = None
            self.log.seek(0)
            for l in self.log:
                if l.startswith("exec->applied"):
                    line = l.strip()
                if "ring buffer overflowed" in l:
                    self.overflows += 1
            self.log.seek(0)
            self.log.truncate()
        return line


PROBE_RULE = "[Process bench-probe]\nComm=lnprobe\nLatencyNice=-10\n"
CMDLINE_RULE = "[Process bench-cmdline]\nCmdline=--no-such-word\nLatencyNice=5\n"


def write_rules(root, name, text):
    """The rule file name with text in root's etc/latnice.d (made if it is missing)."""
    os.makedirs(os.path.join(root, "etc/latnice.d"), exist_ok=True)
    with open(os.path.join(root, "etc/latnice.d", name), "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--latniced", required=True)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--nop", required=True)
    ap.add_argument("--spawn", required=True)
    ap.add_argument("--seq", type=int, default=1000)
    ap.add_argument("--storm-secs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--daemon-arg", action="append", default=[])
    ap.add_argument("--cmdline-rule", action="store_true",
                    help="add a Cmdline= rule (records carry argv), the ring buffer's worst case")
    ap.add_argument("--scale", action="store_true", help="the large-rule-set scenario (see above)")
    ap.add_argument("--scale-exact", type=int, default=15000)
    ap.add_argument("--scale-globs", type=int, default=500)
    ap.add_argument("--profile-file", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                            "../../conf/profiles/desktop.conf"))
    ap.add_argument("--write-scale-rules", metavar="DIR", help="only write the generated rule set into DIR")
    args = ap.parse_args()

    if args.write_scale_rules:
        n = write_scale_rules(args.write_scale_rules, args.scale_exact, args.scale_globs)
        print(f"wrote {n} rules to {args.write_scale_rules}")
        return 0

    if os.geteuid() != 0:
        print("exec benchmark needs root (BPF, sched_setattr on other processes)")
        return 77

    root = tempfile.mkdtemp(prefix="latnice-bench-")
    write_rules(root, "50-bench.conf", PROBE_RULE + (CMDLINE_RULE if args.cmdline_rule else ""))
    base, expect = subprocess.check_output([args.spawn, "base"], text=True).split()
    # outside the rule tree: files made in it would wake the daemon's directory watches
    outdir = tempfile.mkdtemp(prefix="latnice-bench-out-")
    out = os.path.join(outdir, "probes.txt")

    def run_seq(n, threads, live_us):
        if os.path.exists(out):
            os.unlink(out)
        subprocess.check_call([args.spawn, "seq", str(n), "2000", out, args.probe, expect, str(threads),
                               str(live_us)])
        return read_probes(out)

    def run_storm(secs, rate, every):
        if os.path.exists(out):
            os.unlink(out)
        o = subprocess.check_output([args.spawn, "storm", str(secs), str(os.cpu_count()), str(rate), str(every),
                                     out, args.probe, args.nop, expect], text=True).split()
        return int(o[0]), float(o[1]), read_probes(out)

    if args.scale:
        try:
            return run_scale(args, root, base, expect, run_seq, run_storm)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    d = Daemon(args, root)
    try:
        return run_all(args, d, root, base, expect, run_seq, run_storm)
    finally:
        d.stop()
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(outdir, ignore_errors=True)


def run_all(args, d, root, base, expect, run_seq, run_storm):
    results = []
    print(f"default slice {int(base)/1e6:.2f} ms, LatencyNice=-10 -> slice {int(expect)/1e6:.3f} ms")

    # warm-up: caches, page cache of the binaries, the daemon's first allocations
    d.start()
    run_seq(50, 0, 50000)

    d.stop()
    d.start()
    rows = run_seq(args.seq, 0, 50000)
    before = [r for r in rows if r["before"]]
    applied = [r for r in rows if r["t_applied"]]
    late = [(r["t_applied"] - r["t_main"]) / 1000.0 for r in applied if not r["before"]]
    spawn = [(r["t_main"] - r["t_exec"]) / 1000.0 for r in rows]
    results.append(("sequential probes set before main()", f"{100.0*len(before)/max(1,len(rows)):.1f}%",
                    ">= 99%"))
    results.append(("sequential probes applied at all", f"{100.0*len(applied)/max(1,len(rows)):.1f}%", "100%"))
    results.append(("probe execve()->main() p50 (us)", f"{pct(spawn,50):.0f}", ""))
    if late:
        results.append(("late probes: main()->applied max (us)", f"{max(late):.0f}", ""))
    summary = d.stop()
    results.append(("exec->applied (daemon, kernel exec timestamp)", summary.split(": ", 1)[1] if summary else "n/a",
                    "p99 <= 1000 us"))
    d.start()

    rows = run_seq(300, 0, 1000)
    ok = [r for r in rows if r["t_applied"]]
    results.append(("1 ms processes applied during their life", f"{100.0*len(ok)/max(1,len(rows)):.1f}%", "100%"))

    rows = run_seq(200, 8, 50000)
    ok = [r for r in rows if r["t_applied"] and r["threads_ok"] == r["threads"]]
    results.append(("8-thread probes with all threads applied", f"{100.0*len(ok)/max(1,len(rows)):.1f}%", "100%"))

    # storm at 1000 execs/s
    c0 = schedstat(d.proc.pid)
    n, rate, rows = run_storm(args.storm_secs, 1000, 100)
    c1 = schedstat(d.proc.pid)
    missed = [r for r in rows if not r["t_applied"]]
    results.append(("1000/s storm: daemon CPU per 1000 execs", f"{(c1-c0)/1e6/max(1,n)*1000:.2f} ms", "<= 10 ms"))
    results.append(("1000/s storm: probes missed", f"{len(missed)} of {len(rows)}", "0"))

    # storm at the machine's maximum rate, every 100th a probe
    c0 = schedstat(d.proc.pid)
    n, rate, rows = run_storm(args.storm_secs, 0, 100)
    c1 = schedstat(d.proc.pid)
    missed = [r for r in rows if not r["t_applied"]]
    results.append(("max-rate storm: daemon CPU per 1000 execs", f"{(c1-c0)/1e6/max(1,n)*1000:.2f} ms",
                    "<= 10 ms"))
    results.append(("max-rate storm: probes missed", f"{len(missed)} of {len(rows)}", "0"))

    # the maximum rate itself, without and with latniced, same workload (no probes),
    # interleaved off/on rounds after a warm-up
    d.stop()
    rates_off, rates_on = [], []
    run_storm(1, 0, 0)
    for _ in range(args.rounds):
        rates_off.append(run_storm(args.storm_secs, 0, 0)[1])
        d.start()
        rates_on.append(run_storm(args.storm_secs, 0, 0)[1])
        d.stop()
    off, on = sum(rates_off) / len(rates_off), sum(rates_on) / len(rates_on)
    results.append(("max fork+exec rate without / with latniced", f"{off:.0f} / {on:.0f} per s", ""))
    results.append(("max rate with latniced, ratio", f"{100.0*on/off:.1f}%", ">= 98%"))

    # The in-kernel part, measured by the kernel itself: BPF run time per call.
    if set_bpf_stats(True):
        d.start()
        n, rate, _ = run_storm(args.storm_secs, 0, 0)
        st = bpf_prog_stats()
        d.stop()
        set_bpf_stats(False)
        for name, (t, c) in sorted(st.items()):
            if c:
                results.append((f"in-kernel {name}: ns per call ({c} calls)", f"{t/c:.0f}", ""))
        exec_ns = sum(t for k, (t, c) in st.items()) / max(1, n)
        results.append(("in-kernel cost per fork+exec+exit vs its period", f"{exec_ns:.0f} ns = "
                        f"{100.0*exec_ns/(1e9*os.cpu_count()/rate):.3f}%", ""))

    d.start()
    pss, anon = mem_kb(d.proc.pid)
    results.append(("Pss / Anonymous (smaps_rollup)", f"{pss/1024:.2f} / {anon/1024:.2f} MB", ""))
    results.append(("start-up high-water mark (VmHWM, max over the run)",
                    f"{max(d.hwm_kb, status_kb(d.proc.pid, 'VmHWM'))/1024:.2f} MB", ""))
    c0, w0 = schedstat(d.proc.pid), ctxt_switches(d.proc.pid)
    time.sleep(5)
    c1, w1 = schedstat(d.proc.pid), ctxt_switches(d.proc.pid)
    results.append(("idle 5 s: CPU / wakeups", f"{(c1-c0)/1e3:.0f} us / {w1-w0}", "~0"))
    d.stop()

    results.append(("ring-buffer overflows over the run" + (" (with a Cmdline= rule)" if args.cmdline_rule else ""),
                    f"{d.overflows}", "0"))
    w = max(len(r[0]) for r in results)
    for name, val, target in results:
        print(f"{name:<{w}}  {val:>22}  {('target ' + target) if target else ''}")
    return 0


# ---- the scale scenario ---------------------------------------------------

def q(s):
    """A value for a rule file, quoted as latnice.d(5) says when it has a space."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"' if " " in s else s


def write_scale_rules(d, n_exact=15000, n_globs=500, n_files=350):
    """A community-sized rule set with names of our own: mostly exact names
    (plain, with spaces, non-ASCII, escaped brackets), and globs of every
    shape the prefilter has to narrow. Nothing in it matches the benchmark's
    own programs. Returns the number of rules."""
    rules = []
    for i in range(n_exact):
        k = i % 15
        if k < 10:
            rules.append((f"sc{i:05d}", f"Comm=sc{i:05d}-game"))
        elif k < 12:
            rules.append((f"Scale Game {i:05d}", f"Exe={q(f'Scale Game {i:05d}.exe')}"))    # spaces
        elif k < 14:
            rules.append((f"jeu {i:05d}", f"Comm=jeu-\u00e9{i:05d}"))                   # non-ASCII, 11 bytes
        else:
            rules.append((f"bracket {i:05d}", f"Exe=SG{i:05d}\\[Steam].exe"))            # the name SG..[Steam].exe
    shapes = [
        lambda i: f"Comm=scg{i:03d}-*",                               # literal prefix
        lambda i: f"Comm=scq{i:03d}-?x",                              # ? inside
        lambda i: f"Comm=scb{i:03d}[abc]*",                           # a class
        lambda i: f"Exe=SCS{i:03d}[Steam].exe",                       # a class that looks like a name
        lambda i: f"Comm=scm{i:03d}*bin",                             # * in the middle
        lambda i: f"Exe=/opt/scale{i:03d}/*/game{i:03d}",             # path glob, literal file name
        lambda i: f"Comm=*.sc{i:03d}\nUser={60000 + i}",              # no literal start: another key
        lambda i: f"Comm=scw{i:03d}\nCmdline=*.exe",                  # glob in a key the kernel cannot see
        lambda i: f"Parent=scp{i:03d}*\nComm=*x",                     # parent prefix
        lambda i: f"Exe={q(f'Scale Glob {i:03d}*')}",                 # spaces and a prefix
    ]
    for i in range(n_globs):
        rules.append((f"glob {i:03d}", shapes[i % len(shapes)](i)))
    os.makedirs(d, exist_ok=True)
    per = (len(rules) + n_files - 1) // n_files
    for f in range(n_files):
        chunk = rules[f * per:(f + 1) * per]
        if not chunk:
            break
        with open(os.path.join(d, f"60-scale-{f:03d}.conf"), "w", encoding="utf-8") as out:
            for j, (name, keys) in enumerate(chunk):
                out.write(f"[Process {name}]\n{keys}\nLatencyNice={(j % 39) - 19}\n\n")
    return len(rules)


def run_scale(args, root, base, expect, run_seq, run_storm):
    roots = {}
    for cfg in ("desktop", "scale"):
        r = os.path.join(root, cfg)
        write_rules(r, "10-bench.conf", PROBE_RULE)
        shutil.copy(args.profile_file, os.path.join(r, "etc/latnice.d/40-desktop.conf"))
        roots[cfg] = r
    n_rules = write_scale_rules(os.path.join(roots["scale"], "etc/latnice.d"), args.scale_exact, args.scale_globs)
    n_files = len([f for f in os.listdir(os.path.join(roots["scale"], "etc/latnice.d")) if f.startswith("60-")])
    print(f"scale set: {n_rules} generated rules in {n_files} files, plus the desktop profile and the probe rule")
    daemons = {cfg: Daemon(args, r) for cfg, r in roots.items()}
    rates = {c: [] for c in ("none", "desktop", "scale")}
    cpu = {c: [] for c in ("desktop", "scale")}
    woke = {c: [0, 0] for c in ("desktop", "scale")}   # execs seen, exec events sent, by the kernel's count
    share = {c: [] for c in ("desktop", "scale")}      # the daemon's cost per exec / the CPU time of an exec
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled") as f:
            stats_before = f.read().strip() == "1"
    except OSError:
        stats_before = False
    stats_on = set_bpf_stats(True)
    mem = {c: (0, 0) for c in ("desktop", "scale")}   # the largest (Pss, Anonymous) seen
    hwm = {c: 0 for c in ("desktop", "scale")}

    # warm-up: page cache, the daemon's first start with each set
    for cfg, d in daemons.items():
        d.start()
        run_storm(1, 0, 0)
        d.stop()
    run_storm(1, 0, 0)

    order = ["none", "desktop", "scale"]
    for rnd in range(args.rounds):
        for cfg in order[rnd % 3:] + order[:rnd % 3]:   # rotate: no configuration always goes first
            d = daemons.get(cfg)
            if d:
                d.start()
                hwm[cfg] = max(hwm[cfg], status_kb(d.proc.pid, "VmHWM"))
                c0 = schedstat(d.proc.pid)
                k0 = daemon_bpf_counters(d.proc.pid)
                b0 = daemon_prog_time(d.proc.pid)
            ct0 = os.times()
            n, rate, _ = run_storm(args.storm_secs, 0, 0)
            ct1 = os.times()
            rates[cfg].append(rate)
            # the CPU time the storm's processes took, per exec (lnspawn waits for its children)
            exec_cpu_ns = ((ct1.children_user - ct0.children_user) + (ct1.children_system - ct0.children_system)) \
                * 1e9 / max(1, n)
            if d:
                c1 = schedstat(d.proc.pid)
                k1 = daemon_bpf_counters(d.proc.pid)
                b1 = daemon_prog_time(d.proc.pid)
                cpu[cfg].append((c1 - c0) / 1e6 / max(1, n) * 1000)
                # what one exec of the storm costs on account of the daemon: its programs in the kernel
                # (every exec and exit on the machine) and its own CPU, over the CPU time one exec takes
                kexecs = max(1, k1[0] - k0[0])
                if b1 > b0:   # bpf_stats is global: another session may have turned it off meanwhile
                    share[cfg].append(((b1 - b0) / kexecs + (c1 - c0) / max(1, n)) / max(exec_cpu_ns, 1.0))
                woke[cfg][0] += k1[0] - k0[0]
                woke[cfg][1] += k1[1] - k0[1]
                mem[cfg] = max(mem[cfg], mem_kb(d.proc.pid))
                d.stop()

    if stats_on and not stats_before:
        set_bpf_stats(False)   # as it was: somebody else may use it

    # matched probes with the big set, then the same with the desktop profile for reference
    # in alternating chunks, so that neither set always runs right after the storms
    before = {c: [0, 0, 0] for c in ("scale", "desktop")}
    applied = {c: [] for c in ("scale", "desktop")}
    chunks = 4
    for k in range(chunks):
        for cfg in (("scale", "desktop") if k % 2 == 0 else ("desktop", "scale")):
            d = daemons[cfg]
            d.start()
            rows = run_seq(args.seq // chunks, 0, 50000)
            before[cfg][0] += sum(1 for r in rows if r["before"])
            before[cfg][1] += sum(1 for r in rows if r["t_applied"])
            before[cfg][2] += len(rows)
            summary = d.stop()
            if summary:
                applied[cfg].append(summary.split(": ", 1)[1].rstrip("."))
    applied = {c: " | ".join(v) if v else "n/a" for c, v in applied.items()}

    def timing(line):
        """(wall, CPU) in us from "Rules in place after W us, C us of CPU"."""
        w = int(line.split("after ")[1].split()[0])
        c = int(line.split(", ")[1].split()[0]) if " of CPU" in line else -1
        return w, c

    # load and reload of the set, as the daemon times them (log level info for its timing lines)
    t = Daemon(args, roots["scale"], log_level="info")
    t.start()
    reloads = []
    for _ in range(5):
        mark = len(t.log_text())
        t.proc.send_signal(signal.SIGHUP)
        for _ in range(100):
            time.sleep(0.05)
            if "Rules in place after" in t.log_text()[mark:]:
                break
        time.sleep(0.3)
        reloads += [timing(l) for l in t.log_text()[mark:].splitlines() if "Rules in place after" in l]
    log = t.log_text()
    t.stop()
    load_us, load_cpu_us = [timing(l) for l in log.splitlines() if "Rules in place after" in l][0]
    pf = [l for l in log.splitlines() if l.startswith("Prefilter")]
    pf_load_us = int(pf[0].split("loaded in ")[1].split()[0]) if pf and "loaded in" in pf[0] else -1
    kmem = pf[0].split("; ")[1].split(", loaded")[0] if pf and "; " in pf[0] else "?"

    def avg(v):
        return sum(v) / len(v) if v else float("nan")

    def median(v):
        return pct(v, 50)

    def paired(cfg):
        """Each round ran the three configurations back to back: its ratio sees the same machine."""
        return [b / a for a, b in zip(rates["none"], rates[cfg]) if a > 0]

    off = avg(rates["none"])
    print(f"\nload: {os.getloadavg()[0]:.1f} (1-min load average at the end), {os.cpu_count()} CPUs; "
          f"{args.rounds} interleaved rounds of {args.storm_secs} s storms at the maximum rate\n")
    print("| rules | prefilter | daemon CPU per 1000 unmatched execs | machine-max fork+exec rate | Pss / Anonymous |")
    print("|---|---|---|---|---|")
    print(f"| no daemon | - | - | {off:.0f}/s | - |")
    for cfg, label in (("desktop", "desktop profile + probe rule"),
                       ("scale", f"desktop + {args.scale_exact} exact names + {args.scale_globs} globs")):
        st = "on" if cfg == "desktop" or (pf and pf[0].startswith("Prefilter on")) else "off"
        print(f"| {label} | {st} | {avg(cpu[cfg]):.2f} ms | {avg(rates[cfg]):.0f}/s "
              f"({avg(rates[cfg]) / off:.3f}x) | {mem[cfg][0] / 1024:.1f} / {mem[cfg][1] / 1024:.1f} MB |")
    if avg(cpu["desktop"]) > 0:
        ratio_cpu = f"{avg(cpu['scale']) / avg(cpu['desktop']):.2f}x"
    else:
        ratio_cpu = f"desktop 0.00 ms, scale {avg(cpu['scale']):.2f} ms"
    b, a, n = before["scale"]
    bd, ad, nd = before["desktop"]
    print()
    results = [
        ("prefilter with the scale set", pf[0] if pf else "?", "on"),
        ("prefilter kernel memory (scale set)", kmem, ""),
        ("daemon CPU per 1000 unmatched execs, scale / desktop", f"{ratio_cpu} (means; medians "
         f"{median(cpu['scale']):.2f} / {median(cpu['desktop']):.2f} ms)", "<= 1.5x"),
        ("execs that woke the daemon during the storms (kernel count), scale / desktop",
         f"{woke['scale'][1]} of {woke['scale'][0]} / {woke['desktop'][1]} of {woke['desktop'][0]}", ""),
        ("max exec rate with the scale set / no daemon", f"{avg(rates['scale']) / off:.3f} (means; median of "
         f"the per-round ratios {median(paired('scale')):.3f})", ">= 0.97"),
        ("the daemon's cost per exec (its BPF + its CPU) / the storm's own CPU per exec, scale / desktop",
         f"{100 * median(share['scale']):.3f}% / {100 * median(share['desktop']):.3f}% (medians; "
         f"rate bound {1 - median(share['scale']):.4f})" if share["scale"] and share["desktop"]
         else "n/a (kernel.bpf_stats_enabled was off)", ""),
        ("max exec rate with the desktop profile / no daemon", f"{avg(rates['desktop']) / off:.3f} (median of "
         f"the per-round ratios {median(paired('desktop')):.3f})", ""),
        ("matched probes set before main() (scale set)", f"{100.0 * b / max(1, n):.1f}% ({b} of {n}, "
                                                         f"{a} applied)", "100%"),
        ("matched probes set before main() (desktop)", f"{100.0 * bd / max(1, nd):.1f}% ({bd} of {nd})", ""),
        ("exec->applied per chunk (daemon, kernel exec timestamp), scale set", applied["scale"], ""),
        ("exec->applied per chunk (daemon, kernel exec timestamp), desktop", applied["desktop"], ""),
        ("Pss / Anonymous with the scale set", f"{mem['scale'][0] / 1024:.2f} / {mem['scale'][1] / 1024:.2f} MB", ""),
        ("start-up high-water mark VmHWM (scale set / desktop)",
         f"{hwm['scale'] / 1024:.2f} / {hwm['desktop'] / 1024:.2f} MB", ""),
        ("load of the set at start: parse + index (CPU) / prefilter maps",
         f"{load_us / 1000:.1f} ({load_cpu_us / 1000:.1f}) / {pf_load_us / 1000:.1f} ms", "< 100 ms"),
        ("reload (parse, index, prefilter), max of 5 (CPU)",
         f"{max(w for w, c in reloads) / 1000:.1f} ({max(c for w, c in reloads) / 1000:.1f}) ms" if reloads else "n/a",
         "< 100 ms"),
        ("per-round rates none / desktop / scale", " ".join(f"{a:.0f}/{b:.0f}/{c:.0f}" for a, b, c in
                                                            zip(rates["none"], rates["desktop"], rates["scale"])), ""),
        ("per-round CPU ms desktop / scale", " ".join(f"{a:.2f}/{b:.2f}" for a, b in zip(cpu["desktop"],
                                                                                        cpu["scale"])), ""),
    ]
    w = max(len(r[0]) for r in results)
    for name, val, target in results:
        print(f"{name:<{w}}  {val}  {('target ' + target) if target else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
