#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The desktop benchmark's sitting: does a profile make a loaded desktop better?

Runs lnbench-desktop (the sensitive side: audio "pipewire", compositor "sway",
terminal "foot"; see desktop-bench.c for its output format) against three loads:
  light   one CPU hog per core, for --light-seconds;
  build   one clean build of a scratch copy of this project (ninja -j 2*nproc of the daemon
          and the CLI: gcc's cc1, as, ld and clang for BPF, as any C tree has), timed;
  heavy   the same build while a hackbench-like message storm runs;
  storm   the message storm alone, for --light-seconds (where no compiler is: the VM's image);
under each configuration:
  none            no daemon;
  desktop         latniced with the shipped desktop profile, installed as users have it:
                  a private root with etc/latnice/latniced.conf saying Profile=desktop and
                  the profile in usr/share/latnice/profiles (latniced --root); its Exe= paths
                  of pipewire, sway and foot name the parts' files (lnbench-desktop --exe-dir:
                  a copy per part), as they name the real programs' on a desktop;
  sensitive-only  the desktop profile without its positive values (the load left alone);
  strong          the desktop profile with every negative value at -20 and every positive at 19.
The alternatives are derived from the shipped desktop.conf, so they follow it.

Configurations are interleaved: every round runs each load under each
configuration, in an order rotated by one each round, after a warm-up cell.
Figures are ratios against "none" of the same sitting: counts are pooled over the
rounds (misses and late frames per 10,000), percentiles are the median of the
rounds', maxima the maximum, build wall time the median.

The whole sitting runs in a private pid namespace (unshare), so the daemon
applies to the benchmark's processes only and never to the machine's others;
the daemon and the loads are stopped by pid, the daemon always (try/finally).

--smoke: a few seconds, light load, configurations none and desktop, one
round; it checks only that the output has the documented format (never a timing)
and exits 77 when it cannot run here (not root, no unshare, a daemon that does
not start for lack of BPF).

Output: the tables (markdown) on stdout, and with --json FILE every cell's raw
metrics. Nothing here is a test of timings.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

SKIP = 77
NS_ENV = "LNBENCH_DESKTOP_NS"
BUSY_FLAG = "/tmp/latnice-machine-busy"

PARTS = {
    "audio": ["periods", "misses", "misses_per_10k", "wakeup_p50", "wakeup_p99", "wakeup_max", "slice"],
    "compositor": ["frames", "late_frames", "late_per_10k", "wakeup_p50", "wakeup_p99", "wakeup_max", "slice",
                   "input_slice"],
    "terminal": ["echoes", "wakeup_p50", "wakeup_p99", "wakeup_max", "echo_p50", "echo_p99", "echo_max", "slice"],
    "driver": ["measured"],
}
UNITS = {"count": int, "per10k": float, "us": float, "ns": int}
METRIC_RE = re.compile(r"^metric (\w+) (\w+) (-?[0-9]+(?:\.[0-9]+)?) (count|per10k|us|ns)$")
INFO_RE = re.compile(r"^info (\w+) (\w+) (\S+)$")


def parse_bench_output(text):
    """{part: {name: value}} from lnbench-desktop's output; raises ValueError on any deviation from the format."""
    lines = text.splitlines()
    if not lines or lines[0] != "# lnbench-desktop 1":
        raise ValueError(f"first line is not '# lnbench-desktop 1': {lines[:1]}")
    if lines[-1] != "# end":
        raise ValueError(f"last line is not '# end': {lines[-1:]}")
    metrics, info = {}, {}
    for line in lines[1:-1]:
        m = METRIC_RE.match(line)
        if m:
            part, name, value, unit = m.groups()
            if part not in PARTS or name not in PARTS[part]:
                raise ValueError(f"unknown metric: {line}")
            if name in metrics.setdefault(part, {}):
                raise ValueError(f"metric twice: {line}")
            if UNITS[unit] is int and "." in value:
                raise ValueError(f"{unit} must be an integer: {line}")
            metrics[part][name] = UNITS[unit](value)
            continue
        m = INFO_RE.match(line)
        if m:
            info.setdefault(m.group(1), {})[m.group(2)] = m.group(3)
            continue
        raise ValueError(f"line in no documented format: {line!r}")
    for part, names in PARTS.items():
        missing = [n for n in names if n not in metrics.get(part, {})]
        if missing:
            raise ValueError(f"{part}: missing {', '.join(missing)}")
    return metrics, info


# ---------------------------------------------------------------- profiles

def profile_variant(text, kind):
    """The desktop profile as shipped, or an alternative derived from it rule by rule.

    A rule is a block of lines between blank lines (its comment and its section)."""
    if kind == "desktop":
        return text
    blocks = []
    for block in text.split("\n\n"):
        lines = block.split("\n")
        values = [int(l.split("=", 1)[1]) for l in lines if l.startswith("LatencyNice=")]
        if kind == "sensitive-only" and values and values[0] > 0:
            continue
        if kind == "strong":
            lines = [f"LatencyNice={-20 if int(l[12:]) < 0 else 19 if int(l[12:]) > 0 else 0}"
                     if l.startswith("LatencyNice=") else l for l in lines]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks).rstrip("\n") + "\n"


# The parts lnbench-desktop runs, by the names of the programs they stand for.
PART_PROGRAMS = ("pipewire", "sway", "foot")


def bench_exe_paths(text, exe_dir):
    """The profile with its Exe= paths of the programs the parts stand for pointing at the parts' files.

    The shipped profile names files root installed (Exe=/usr/bin/pipewire), not names: on this bench
    the file of the audio server is lnbench-desktop's copy in exe_dir, so the same rule with the same
    value names that file instead."""
    lines = []
    for line in text.split("\n"):
        if line.startswith("Exe="):
            words = [os.path.join(exe_dir, os.path.basename(w)) if w.startswith("/") and os.path.basename(w) in PART_PROGRAMS
                     else w for w in line[4:].split()]
            line = "Exe=" + " ".join(words)
        lines.append(line)
    return "\n".join(lines)


CONFIGS = ["none", "desktop", "sensitive-only", "strong"]
LOADS = ["light", "build", "heavy", "storm"]
TIMED_LOADS = ("light", "storm")  # run for --light-seconds; the others for one build


# ---------------------------------------------------------------- processes

def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().strip()


def uptime():
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


class Daemon:
    """latniced on a private root, started and stopped by pid, waited for by sd_notify READY=1."""

    def __init__(self, latniced, root):
        self.latniced, self.root = latniced, root
        self.proc = None

    def start(self, profile, profile_text):
        shutil.rmtree(self.root, ignore_errors=True)
        for d in ("etc/latnice.d", "etc/latnice", "usr/share/latnice/profiles", "state"):
            os.makedirs(os.path.join(self.root, d))
        with open(os.path.join(self.root, "etc/latnice/latniced.conf"), "w") as f:
            f.write(f"[Daemon]\nProfile={profile}\n")
        with open(os.path.join(self.root, f"usr/share/latnice/profiles/{profile}.conf"), "w") as f:
            f.write(profile_text)
        sock_path = os.path.join(self.root, "notify")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(sock_path)
        self.log = open(os.path.join(self.root, "latniced.log"), "w+")
        env = dict(os.environ, NOTIFY_SOCKET=sock_path)
        try:
            self.proc = subprocess.Popen([self.latniced, "--root", self.root, "--no-bus", "--log-level", "notice",
                                          "--state-dir", os.path.join(self.root, "state")],
                                         stdout=self.log, stderr=subprocess.STDOUT, env=env)
            sock.settimeout(0.5)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError("latniced exited: " + self.log_text())
                try:
                    if b"READY=1" in sock.recv(4096):
                        return
                except socket.timeout:
                    pass
            raise RuntimeError("latniced sent no READY=1 in 30 s: " + self.log_text())
        finally:
            sock.close()

    def log_text(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self):
        """SIGTERM by pid: latniced restores what it set and exits; SIGKILL by pid only if it hangs."""
        if not self.proc:
            return
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    print(f"latniced {self.proc.pid} did not exit on SIGTERM, killing it", file=sys.stderr)
                    self.proc.kill()
                    self.proc.wait()
            if self.proc.returncode != 0:
                print(f"latniced exited with {self.proc.returncode}:\n{self.log_text()}", file=sys.stderr)
        finally:
            self.proc = None
            self.log.close()


def stop_group(proc, sig=signal.SIGTERM, timeout=10):
    """Stops a load started with start_new_session=True: its process group, by the id we got at start."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, sig)
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        pass


class Build:
    """A scratch copy of this project, configured once; each run() is one clean, timed build."""

    def __init__(self, source, scratch, jobs, targets):
        self.dir = os.path.join(scratch, "src")
        self.build = os.path.join(scratch, "build")
        self.jobs, self.targets = jobs, targets
        os.makedirs(self.dir)
        # the tree's files, as a checkout has them (and new ones not yet committed)
        files = subprocess.run(["git", "-C", source, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                               capture_output=True, check=True).stdout
        for rel in filter(None, files.decode().split("\0")):
            src = os.path.join(source, rel)
            if os.path.isfile(src):
                dst = os.path.join(self.dir, rel)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy2(src, dst)
        r = subprocess.run(["meson", "setup", self.build, self.dir], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("meson setup of the build load failed:\n" + r.stdout[-3000:] + r.stderr[-3000:])

    def run(self):
        subprocess.run(["ninja", "-C", self.build, "-t", "clean"], check=True, stdout=subprocess.DEVNULL)
        t = time.monotonic()
        p = subprocess.Popen(["ninja", "-C", self.build, "-j", str(self.jobs)] + self.targets, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            if p.wait() != 0:
                raise RuntimeError("the build failed")
        finally:
            stop_group(p)
        return time.monotonic() - t


def run_cell(args, config, load, daemon, profile_text, build):
    """One measurement: [daemon] + sensitive side + load. Returns the cell's record."""
    cell = {"config": config, "load": load, "loadavg_before": loadavg(), "busy_flag": os.path.exists(BUSY_FLAG)}
    hogs, storm, bench = [], None, None
    try:
        if config != "none":
            daemon.start(config, profile_text)
        if load in ("light",):
            for _ in range(os.cpu_count() or 1):
                hogs.append(subprocess.Popen([args.bench, "hog"], start_new_session=True))
        if load in ("heavy", "storm"):
            storm = subprocess.Popen([args.bench, "storm", str(args.storm_groups), str(args.storm_pairs)],
                                     start_new_session=True)
        duration = args.light_seconds if load in TIMED_LOADS else 3600
        bench = subprocess.Popen([args.bench, "run", "--duration", str(duration), "--warmup", str(args.warmup),
                                  "--exe-dir", args.exe_dir],
                                 stdout=subprocess.PIPE, text=True)
        if load in TIMED_LOADS:
            out, _ = bench.communicate(timeout=duration + args.warmup + 60)
        else:
            cell["build_s"] = build.run()
            bench.send_signal(signal.SIGTERM)
            out, _ = bench.communicate(timeout=60)
        if bench.returncode != 0:
            raise RuntimeError(f"lnbench-desktop exited with {bench.returncode}")
        cell["metrics"], cell["info"] = parse_bench_output(out)
        cell["raw"] = out
    finally:
        if bench and bench.poll() is None:
            bench.kill()
            bench.wait()
        stop_group(storm)
        for h in hogs:
            stop_group(h)
        daemon.stop()
    cell["loadavg_after"] = loadavg()
    return cell


# ---------------------------------------------------------------- figures

FIGURES = [
    # (column, part, metric, how rounds combine)
    ("audio miss/10k", "audio", ("misses", "periods"), "rate"),
    ("audio wake p50", "audio", "wakeup_p50", "median"),
    ("audio wake p99", "audio", "wakeup_p99", "median"),
    ("audio wake max", "audio", "wakeup_max", "max"),
    ("late frames/10k", "compositor", ("late_frames", "frames"), "rate"),
    ("frame wake p50", "compositor", "wakeup_p50", "median"),
    ("frame wake p99", "compositor", "wakeup_p99", "median"),
    ("frame wake max", "compositor", "wakeup_max", "max"),
    ("term wake p50", "terminal", "wakeup_p50", "median"),
    ("term wake p99", "terminal", "wakeup_p99", "median"),
    ("term wake max", "terminal", "wakeup_max", "max"),
    ("echo p50", "terminal", "echo_p50", "median"),
    ("echo p99", "terminal", "echo_p99", "median"),
    ("echo max", "terminal", "echo_max", "max"),
    ("build s", None, "build_s", "median"),
]


def figure(cells, part, metric, how):
    if how == "rate":
        num = sum(c["metrics"][part][metric[0]] for c in cells)
        den = sum(c["metrics"][part][metric[1]] for c in cells)
        return 10000.0 * num / den if den else None
    vals = [c[metric] if part is None else c["metrics"][part][metric] for c in cells
            if part is not None or metric in c]
    if not vals:
        return None
    return max(vals) if how == "max" else statistics.median(vals)


def fmt_ratio(v, base):
    if v is None or base is None:
        return "-"
    if base == 0:
        return "0/0" if v == 0 else "inf"
    return f"{v / base:.2f}"


def fmt_abs(v):
    if v is None:
        return "-"
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 1 else f"{v:.2f}"


def tables(results, configs, loads):
    lines = []
    for load in loads:
        base_cells = [c for c in results if c["load"] == load and c["config"] == "none"]
        cols = [f for f in FIGURES if f[1] is not None or load not in TIMED_LOADS]
        lines.append(f"### load: {load}\n")
        lines.append("| config | " + " | ".join(c[0] for c in cols) + " |")
        lines.append("|---" * (len(cols) + 1) + "|")
        base = {c[0]: figure(base_cells, c[1], c[2], c[3]) for c in cols}
        for config in configs:
            cells = [c for c in results if c["load"] == load and c["config"] == config]
            if not cells:
                continue
            row = []
            for col in cols:
                v = figure(cells, col[1], col[2], col[3])
                row.append(fmt_abs(v) if config == "none" else f"{fmt_ratio(v, base[col[0]])} ({fmt_abs(v)})")
            lines.append(f"| {config} | " + " | ".join(row) + " |")
        lines.append("")
        slices = {}
        for c in results:
            if c["load"] == load:
                s = slices.setdefault(c["config"], set())
                s.add(tuple(c["metrics"][p]["slice"] // 1000 for p in ("audio", "compositor", "terminal")))
        lines.append("slices seen (us, audio/compositor/terminal): " +
                     "; ".join(f"{k} {sorted(v)}" for k, v in slices.items()) + "\n")
    return "\n".join(lines)


# ---------------------------------------------------------------- main

def in_namespace(argv):
    """Re-executes in a private pid and mount namespace with its own /proc (see the module comment)."""
    if os.environ.get(NS_ENV) == "1":
        return None
    unshare = shutil.which("unshare")
    if not unshare:
        print("SKIP: unshare(1) is not installed")
        return SKIP
    env = dict(os.environ, **{NS_ENV: "1"})
    r = subprocess.run([unshare, "--pid", "--fork", "--mount", "--mount-proc", "--kill-child", sys.executable,
                        os.path.abspath(__file__)] + argv, env=env)
    return r.returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", required=True, help="lnbench-desktop")
    ap.add_argument("--latniced", required=True)
    ap.add_argument("--profiles", required=True, help="the shipped profiles (conf/profiles)")
    ap.add_argument("--source", help="the tree the build load compiles (default: this project)",
                    default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ap.add_argument("--smoke", action="store_true", help="seconds: check the output format, nothing else")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--loads", default="light,build,heavy")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--light-seconds", type=float, default=15, help="how long a light or storm cell runs")
    ap.add_argument("--warmup", type=float, default=1)
    ap.add_argument("--jobs", type=int, default=2 * (os.cpu_count() or 1))
    ap.add_argument("--build-targets", default="daemon/latniced ctl/latnicectl",
                    help="ninja targets of one build (bounded: the daemon and the CLI, 66 steps)")
    ap.add_argument("--storm-groups", type=int, default=2)
    ap.add_argument("--storm-pairs", type=int, default=5)
    ap.add_argument("--scratch", default="/var/tmp", help="where the build's scratch copy goes")
    ap.add_argument("--json", help="write every cell's raw metrics here")
    args = ap.parse_args()

    if os.geteuid() != 0:
        print("SKIP: the desktop benchmark needs root (BPF, sched_setattr on other processes, unshare)")
        return SKIP
    r = in_namespace(sys.argv[1:])
    if r is not None:
        return r

    loads = args.loads.split(",")
    configs = args.configs.split(",")
    if args.smoke:
        loads, configs, args.rounds, args.light_seconds, args.warmup = ["light"], ["none", "desktop"], 1, 2, 0.5
    for c in configs:
        if c not in CONFIGS:
            sys.exit(f"unknown configuration {c}: {', '.join(CONFIGS)}")
    for lo in loads:
        if lo not in LOADS:
            sys.exit(f"unknown load {lo}: {', '.join(LOADS)}")
    if "none" not in configs:
        configs.insert(0, "none")
    with open(os.path.join(args.profiles, "desktop.conf")) as f:
        desktop = f.read()
    scratch = tempfile.mkdtemp(prefix="lnbench-desktop-", dir=args.scratch)
    args.exe_dir = os.path.join(scratch, "parts")
    os.makedirs(args.exe_dir)
    profiles = {c: bench_exe_paths(profile_variant(desktop, c), args.exe_dir) for c in configs if c != "none"}
    daemon = Daemon(args.latniced, os.path.join(scratch, "root"))
    header = {"command": " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]), "uname": os.uname().release,
              "cpus": os.cpu_count(), "uptime_start": uptime(), "loadavg_start": loadavg(),
              "busy_flag_start": os.path.exists(BUSY_FLAG), "jobs": args.jobs,
              "start": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    results = []
    try:
        build = Build(os.path.abspath(args.source), scratch, args.jobs, args.build_targets.split()) if set(loads) & {"build", "heavy"} else None
        # warm-up cell: caches, the daemon binary and the build tree are hot before anything counts
        if not args.smoke:
            run_cell(args, configs[-1], loads[0], daemon, profiles.get(configs[-1]), build)
        for rnd in range(args.rounds):
            for li, load in enumerate(loads):
                k = (rnd + li) % len(configs)
                for config in configs[k:] + configs[:k]:
                    cell = run_cell(args, config, load, daemon, profiles.get(config), build)
                    cell["round"] = rnd
                    results.append(cell)
                    print(f"# round {rnd} {load:5} {config:14} load {cell['loadavg_before']}"
                          + (f" build {cell['build_s']:.1f} s" if "build_s" in cell else ""),
                          file=sys.stderr, flush=True)
    except RuntimeError as e:
        if args.smoke and "latniced" in str(e):
            print(f"SKIP: latniced cannot run here: {e}")
            return SKIP
        raise
    finally:
        daemon.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    header.update(uptime_end=uptime(), loadavg_end=loadavg(), busy_flag_end=os.path.exists(BUSY_FLAG),
                  end=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()))

    if args.smoke:
        # the format was checked by parse_bench_output() for every cell; say what ran
        for c in results:
            print(f"{c['config']}: format ok, slices (ns) audio {c['metrics']['audio']['slice']}"
                  f" compositor {c['metrics']['compositor']['slice']} terminal {c['metrics']['terminal']['slice']}")
        # The profile must reach the parts, or the sitting would compare "none" with "none" (a mechanism, no timing).
        slices = {c["config"]: c["metrics"] for c in results}
        same = [part for part in ("audio", "compositor", "terminal")
                if slices["desktop"][part]["slice"] == slices["none"][part]["slice"]]
        if same:
            print(f"FAIL: the desktop profile gave no value to the parts {', '.join(same)}: their slices are "
                  "those of no daemon")
            return 1
        return 0
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"header": header, "cells": results}, f, indent=1)
    print(f"command: {header['command']}")
    print(f"kernel {header['uname']}, {header['cpus']} CPUs, {header['start']} .. {header['end']}")
    print(f"uptime at start: {header['uptime_start']}; /proc/loadavg {header['loadavg_start']}")
    print(f"uptime at end: {header['uptime_end']}; /proc/loadavg {header['loadavg_end']}")
    print(f"{BUSY_FLAG} at start: {header['busy_flag_start']}, at end: {header['busy_flag_end']}")
    print(f"rounds {args.rounds}, build -j{args.jobs}, storm {args.storm_groups}x{args.storm_pairs} pairs\n")
    print(tables(results, configs, loads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
