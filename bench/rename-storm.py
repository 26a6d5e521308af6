#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What a rename storm by an unprivileged user costs the machine.

As nobody, a process renames itself in a loop between Game.exe and another
name, against a Comm=Game.exe rule: latniced, its exec source at SCHED_FIFO,
and a normal task share CPU 0; the attacker runs on CPU 1. Reported, from one
run: the daemon's CPU time against the attacker's, and the work the normal
task got done during the storm with latniced against the same storm without
latniced (what the daemon costs it), in alternating windows, median of the pairs. Targets (issue 30): daemon CPU at most 10% of the
attacker's, the normal task loses less than 5%.

Usage: rename-storm.py LATNICED HELPER_RENAME [SECONDS [ROUNDS]] [--source=...]
"""
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def victim(seconds):
    """A normal task on CPU 0: loop iterations in the window."""
    code = ("import time\n"
            "end = time.monotonic() + %f\n"
            "n = 0\n"
            "while time.monotonic() < end:\n"
            "    n += 1\n"
            "print(n)\n" % seconds)
    out = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", code], check=True,
                         capture_output=True, text=True).stdout
    return int(out)


def main():
    if os.geteuid() != 0:
        print("needs root (BPF, the daemon)")
        return 77
    if os.cpu_count() < 2:
        print("needs two CPUs")
        return 77
    latniced, helper = sys.argv[1], sys.argv[2]
    args = [a for a in sys.argv[3:] if a.startswith("--")]
    rest = [a for a in sys.argv[3:] if not a.startswith("--")]
    seconds = float(rest[0]) if rest else 10.0
    rounds = int(rest[1]) if len(rest) > 1 else 3
    nobody = pwd.getpwnam("nobody")

    tmp = tempfile.mkdtemp(prefix="latnice-storm-")
    try:
        os.makedirs(f"{tmp}/root/etc/latnice.d")
        with open(f"{tmp}/root/etc/latnice.d/50-game.conf", "w") as f:
            f.write("[Process game]\nComm=Game.exe\nLatencyNice=-10\n")
        prog = f"{tmp}/storm"
        shutil.copy(helper, prog)
        os.chmod(tmp, 0o755)
        def storm_window():
            """The attacker's storms for the window, with the victim beside: (victim work, attacker CPU)."""
            code = ("import resource, subprocess, time\n"
                    "end = time.monotonic() + %f\n"
                    "while time.monotonic() < end:\n"
                    "    subprocess.run([%r, 'storm', '30000', 'Game.exe', 'Other.exe'], check=True,\n"
                    "                   stdout=subprocess.DEVNULL)\n"
                    "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
                    "print(r.ru_utime + r.ru_stime)\n" % (seconds, prog))
            attacker = subprocess.Popen(
                ["taskset", "-c", "1", "setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}",
                 "--clear-groups", sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
            work = victim(seconds)
            return work, float(attacker.communicate()[0])

        def with_daemon():
            """The same window with latniced running: (victim work, attacker CPU, daemon CPU)."""
            log = open(f"{tmp}/log", "w")
            daemon = subprocess.Popen(["taskset", "-c", "0", latniced, "--root", f"{tmp}/root", "--state-dir",
                                       f"{tmp}/state", "--no-profile", "--no-bus"] + args,
                                      stdout=log, stderr=subprocess.STDOUT)
            try:
                for _ in range(600):
                    with open(f"{tmp}/log") as f:
                        if any(line.startswith("Ready:") for line in f):
                            break
                    time.sleep(0.05)
                else:
                    raise RuntimeError("latniced did not get ready")
                d0 = cpu_seconds(daemon.pid)
                work, a = storm_window()
                return work, a, cpu_seconds(daemon.pid) - d0
            finally:
                daemon.terminate()
                daemon.wait()
                log.close()

        # Windows with and without latniced alternate (A B B A ...), so that the machine's other load,
        # which moves on a shared machine, falls on both sides alike; the storm alone already costs
        # the normal task (the attacker's CPU is busy, so everything else crowds onto CPU 0).
        pairs = []
        for i in range(rounds):
            if i % 2 == 0:
                without, _ = storm_window()
                work, a, dcpu = with_daemon()
            else:
                work, a, dcpu = with_daemon()
                without, _ = storm_window()
            pairs.append((work, without, a, dcpu))
        print(f"# rename storm, {rounds} rounds of {seconds:.0f} s, {' '.join(args) or 'BPF source'}, "
              f"load {os.getloadavg()[0]:.2f}")
        for work, without, a, dcpu in pairs:
            print(f"round: daemon CPU {dcpu:.2f} s, attacker CPU {a:.2f} s (ratio {dcpu / a:.3f}); normal task "
                  f"{work} iterations with latniced, {without} without: loses {100 * (1 - work / without):.1f}%")
        ratio = sum(p[3] for p in pairs) / sum(p[2] for p in pairs)
        losses = sorted(100 * (1 - p[0] / p[1]) for p in pairs)
        print(f"daemon CPU / attacker CPU: {ratio:.3f} (target <= 0.10)")
        print(f"normal task on the daemon's CPU loses {losses[len(losses) // 2]:.1f}% (median of {rounds} pairs; "
              f"target < 5%)")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
