#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the fork hook of latniced's BPF program costs a fork.

lnfork forks and waits N times in a row (the child exits at once): the
machine's fork rate for one process. In interleaved rounds, one run:
  - no daemon;
  - latniced without the fork hook (--latniced-before, e.g. a build of the
    previous commit) and with it (--latniced), each for
      unmarked: lnfork carries no value (every fork stops at the hook's
                first check), and
      marked:   a copy named lnfork-m that a rule gives LatencyNice=-10, so
                every child inherits a value of latniced's: the hook records
                it, the exit hook forgets it.
Reported: the median ns per fork+wait over the rounds, and ratios within the
run; with kernel.bpf_stats_enabled (set for the run, then put back), the
hook's own run time per call. Nothing here is a test.
"""
import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("exec_bench", os.path.join(HERE, "../exec/exec_bench.py"))
exec_bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(exec_bench)


def prog_stats(pid, names):
    """{name: (run_time_ns, run_cnt)} of the daemon's programs called names."""
    out = {}
    try:
        for fd in os.listdir(f"/proc/{pid}/fdinfo"):
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                info = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
            if "prog_id" not in info:
                continue
            p = json.loads(subprocess.check_output(["bpftool", "--json", "prog", "show", "id",
                                                    info["prog_id"].strip()], text=True))
            if p.get("name") in names:
                out[p["name"]] = (p.get("run_time_ns", 0), p.get("run_cnt", 0))
    except (OSError, ValueError, subprocess.CalledProcessError):
        pass
    return out


PROGS = ("fork_btf", "fork_raw", "exit_btf", "exit_tp")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--latniced", required=True, help="latniced with the fork hook")
    ap.add_argument("--latniced-before", help="latniced without it (a build of an earlier commit); "
                    "without one, only the hook's own run time and no daemon against --latniced")
    ap.add_argument("--fork", required=True, help="lnfork")
    ap.add_argument("--spawn", required=True, help="lnspawn (for the slice LatencyNice=-10 means here)")
    ap.add_argument("--forks", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("fork benchmark needs root (BPF)")
        return 77

    root = tempfile.mkdtemp(prefix="latnice-fork-bench-")
    exec_bench.write_rules(root, "50-bench.conf", "[Process bench-fork]\nComm=lnfork-m\nLatencyNice=-10\n")
    marked = os.path.join(root, "lnfork-m")
    shutil.copy(args.fork, marked)
    _, expect = subprocess.check_output([args.spawn, "base"], text=True).split()

    def loop(path, wait):
        out = subprocess.check_output([path, str(args.forks)] + ([expect] if wait else []), text=True)
        return float(out)

    try:
        with open("/proc/sys/kernel/bpf_stats_enabled") as f:
            stats_before = f.read().strip()
    except OSError:
        stats_before = None
    exec_bench.set_bpf_stats(True)
    res = {}
    hook = []
    configs = ["none", "before", "after"] if args.latniced_before else ["none", "after"]
    try:
        loop(args.fork, False)  # warm-up
        for r in range(args.rounds):
            k = r % len(configs)
            for c in configs[k:] + configs[:k]:
                if c == "none":
                    res.setdefault("none", []).append(loop(args.fork, False))
                    continue
                d = exec_bench.Daemon(types.SimpleNamespace(latniced=args.latniced if c == "after"
                                                            else args.latniced_before, daemon_arg=[]), root)
                d.start()
                s0 = prog_stats(d.proc.pid, PROGS)
                res.setdefault(c + " unmarked", []).append(loop(args.fork, False))
                s1 = prog_stats(d.proc.pid, PROGS)
                res.setdefault(c + " marked", []).append(loop(marked, True))
                s2 = prog_stats(d.proc.pid, PROGS)
                d.stop()
                for a, b, kind in ((s0, s1, "unmarked"), (s1, s2, "marked")):
                    for name in b:
                        t = b[name][0] - a.get(name, (0, 0))[0]
                        n = b[name][1] - a.get(name, (0, 0))[1]
                        if n > 0:
                            hook.append((c, kind, name, t / n))
    finally:
        if stats_before is not None:
            with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
                f.write(stats_before)
        shutil.rmtree(root, ignore_errors=True)

    med = {k: statistics.median(v) for k, v in res.items()}
    print(f"{args.forks} fork+wait per loop, {args.rounds} interleaved rounds, {os.cpu_count()} CPUs; "
          "ns per fork+wait, median and minimum over the rounds:")
    for k in ("none", "before unmarked", "after unmarked", "before marked", "after marked"):
        if k not in res:
            continue
        print(f"  {k:18} {med[k]:8.0f} {min(res[k]):8.0f}   (rounds: {' '.join(f'{x:.0f}' for x in res[k])})")
    if args.latniced_before:
        print("ratios of the medians (fork hook / no fork hook, same daemon otherwise):")
        print(f"  unmarked parent: {med['after unmarked'] / med['before unmarked']:.3f}")
        print(f"  marked parent:   {med['after marked'] / med['before marked']:.3f}")
    print(f"  latniced with the hook / no daemon, unmarked: {med['after unmarked'] / med['none']:.3f}")
    print("the programs' own run time per call (bpf_stats; every fork and exit on the machine while a loop ran), "
          "median over the rounds, ns:")
    for c in [c for c in ("before", "after") if c in configs]:
        for kind in ("unmarked", "marked"):
            row = []
            for name in PROGS:
                v = [t for cc, k, nn, t in hook if (cc, k, nn) == (c, kind, name)]
                if v:
                    row.append(f"{name} {statistics.median(v):.0f}")
            print(f"  {c:6} {kind:8}: {', '.join(row) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
