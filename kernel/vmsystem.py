#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Boot a whole Debian 12 system (systemd as PID 1) in qemu and test latnice installed from its package.

The system mode of vmtest.py's kernels: a bookworm root file system made
with mmdebstrap into a directory and mke2fs -d into an ext4 image (cached
outside the tree, keyed by its inputs), Debian's own linux-image-6.12-cloud
installed in it with its initramfs. The latnice package is built from this
tree (dpkg-buildpackage -b, cached by the tree's contents) and put, with the
in-VM test driver (vmsystem-run.sh) and lntest, on a second small disk. The
root image is booted with snapshot=on (the cache is never written) with

  --kernel 6.1 | 6.12     the patched kernels of vmtest.py (built and cached
                          there), no initramfs: ext4 and virtio are built in;
  --kernel debian-6.12    Debian's unpatched 6.12 (vmlinuz and initrd.img
                          from the image), the mainline (EEVDF slice) case.

After boot, lntest.service (in the image) runs the driver from the second
disk: it installs the package with apt like a user, enables latniced and
checks [Unit] rules, reexec, bus restart, reinstall and stop, printing
"LNTEST PASS|FAIL|SKIP name[: why]" on the serial console, then powers off.

Exit status: the number of failed checks, 77 when something needed cannot
be had here (the reason is printed). Python 3 standard library only.
"""

import argparse
import base64
import fcntl
import gzip
import inspect
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import vmtest  # noqa: E402  (same directory)
import debcache  # noqa: E402
from vmtest import Skip, Failure, log, run, sha256, need_tool, EXIT_SKIP  # noqa: E402

SRC = os.path.dirname(HERE)
ROOTFS_CACHE = os.environ.get("LATNICE_ROOTFS_CACHE", "/var/cache/latnice/rootfs")
DRIVER = os.path.join(HERE, "vmsystem-run.sh")
BENCH_DRIVER = os.path.join(HERE, "vmbench-run.sh")
BENCH_DIR = os.path.join(SRC, "bench", "desktop")
KERNELS = ("6.1", "6.12", "debian-6.12")

MIRROR = os.environ.get("LATNICE_DEBIAN_MIRROR", "http://deb.debian.org/debian")
SECURITY = os.environ.get("LATNICE_DEBIAN_SECURITY", "http://deb.debian.org/debian-security")
SOURCES = ("deb %s bookworm main" % MIRROR,
           "deb %s bookworm-updates main" % MIRROR,
           "deb %s bookworm-security main" % SECURITY)
# What latnice's package needs (its shlibs Depends and Recommends; checked
# against the built .deb below), an init system, Debian's 6.12 kernel and
# the few tools the driver uses (bash, coreutils, util-linux are essential),
# and python3 for the desktop benchmark's sitting (--bench: bench/desktop/run.py).
# (latnice-focus, with libxcb1, is not installed here.)
PACKAGES = (
    "systemd", "systemd-sysv", "udev", "dbus", "polkitd",
    "libbpf1", "libelf1", "libinih1", "libsystemd0", "zlib1g",
    "mawk", "kmod", "initramfs-tools", "linux-image-6.12-cloud-amd64", "python3",
)
IMAGE_SIZE = "2G"

# Units that only slow a test boot down (timers, gettys on the test's console).
MASK = ("apt-daily.timer", "apt-daily-upgrade.timer", "dpkg-db-backup.timer",
        "e2scrub_all.timer", "e2scrub_reap.service", "fstrim.timer", "man-db.timer",
        "systemd-tmpfiles-clean.timer", "getty@tty1.service", "serial-getty@ttyS0.service",
        "console-getty.service", "systemd-timesyncd.service", "systemd-networkd-wait-online.service")

LNTEST_SERVICE = """[Unit]
Description=latnice system-mode test driver (kernel/vmsystem.py)
RequiresMountsFor=/lntest
ConditionPathExists=/lntest/run.sh
After=dbus.service systemd-user-sessions.service
SuccessAction=reboot-force
FailureAction=reboot-force
[Service]
Type=oneshot
ExecStart=/lntest/run.sh
StandardOutput=journal+console
TimeoutStartSec=infinity
[Install]
WantedBy=multi-user.target
"""

CUSTOMIZE = r"""#!/bin/sh
# mmdebstrap --customize-hook (kernel/vmsystem.py): the test image's own files.
set -e
R=$1
echo lnvm > "$R/etc/hostname"
printf '127.0.1.1 lnvm\n' >> "$R/etc/hosts"
# A fixed machine-id: no first boot (presets, firstboot) at every run.
echo 5c1f4a0e9b6d4d7a8f3e2b1c0d9e8f7a > "$R/etc/machine-id"
printf '/dev/vda / ext4 rw,noatime 0 0\n/dev/vdb /lntest ext4 ro,nofail,x-systemd.device-timeout=300s 0 0\n' > "$R/etc/fstab"
mkdir -p "$R/lntest" "$R/etc/systemd/system/multi-user.target.wants"
for u in @MASK@; do ln -sf /dev/null "$R/etc/systemd/system/$u"; done
cat > "$R/etc/systemd/system/lntest.service" <<'EOF'
@SERVICE@EOF
ln -sf /etc/systemd/system/lntest.service "$R/etc/systemd/system/multi-user.target.wants/lntest.service"
# journald: the console is the test's; keep the journal in memory.
mkdir -p "$R/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\nForwardToConsole=no\n' > "$R/etc/systemd/journald.conf.d/lntest.conf"
# What the image was made of, for the cache and the log.
chroot "$R" dpkg-query -W -f '${Package} ${Version}\n' > "$R/lntest.packages"
"""


def rootfs_inputs():
    """Everything that decides the base image, for its cache key."""
    return [" ".join(SOURCES), " ".join(PACKAGES), " ".join(MASK), IMAGE_SIZE, LNTEST_SERVICE,
            CUSTOMIZE, inspect.getsource(build_rootfs), inspect.getsource(rootfs_inputs)]


def build_rootfs(timings):
    """The cached base image: root.img (ext4), vmlinuz and initrd.img of Debian's 6.12."""
    key = sha256(*rootfs_inputs())
    cache = os.path.join(ROOTFS_CACHE, key)
    os.makedirs(ROOTFS_CACHE, exist_ok=True)
    lock = open(os.path.join(ROOTFS_CACHE, ".lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    if os.path.exists(os.path.join(cache, "done")):
        log("cached root file system %s" % cache)
        timings["rootfs"] = 0.0
        return cache
    mmdebstrap = need_tool("mmdebstrap", "mmdebstrap")
    mke2fs = need_tool("mke2fs", "e2fsprogs")
    t = time.time()
    tmp = cache + ".tmp"
    if os.path.exists(tmp):
        shutil.rmtree(tmp)
    os.makedirs(tmp)
    root = os.path.join(tmp, "root")
    hook = os.path.join(tmp, "customize.sh")
    with open(hook, "w") as f:
        f.write(CUSTOMIZE.replace("@MASK@", " ".join(MASK)).replace("@SERVICE@", LNTEST_SERVICE))
    logfile = os.path.join(tmp, "mmdebstrap.log")
    log("mmdebstrap bookworm into %s (log: %s)" % (root, logfile))
    try:
        run([mmdebstrap, "--variant=apt", "--mode=root", "--format=directory",
             "--include=" + ",".join(PACKAGES),
             "--customize-hook=sh %s \"$1\"" % hook,
             "bookworm", root] + list(SOURCES), logfile=logfile, timeout=1800)
    except Failure as e:
        if "Could not resolve" in str(e) or "Temporary failure resolving" in str(e):
            raise Skip("the Debian archive cannot be reached: %s" % MIRROR)
        raise
    boot = os.path.join(root, "boot")
    for name, pattern in (("vmlinuz", r"^vmlinuz-6\.12\..*-cloud-amd64$"),
                          ("initrd.img", r"^initrd\.img-6\.12\..*-cloud-amd64$")):
        found = sorted(f for f in os.listdir(boot) if re.match(pattern, f))
        if len(found) != 1:
            raise Failure("expected one %s in %s, found %s" % (pattern, boot, os.listdir(boot)))
        shutil.copyfile(os.path.join(boot, found[0]), os.path.join(tmp, name))
        with open(os.path.join(tmp, name + ".name"), "w") as f:
            f.write(found[0] + "\n")
    shutil.copyfile(os.path.join(root, "lntest.packages"), os.path.join(tmp, "packages.txt"))
    log("mke2fs -t ext4 -d (%s)" % IMAGE_SIZE)
    run([mke2fs, "-q", "-F", "-t", "ext4", "-L", "lnroot", "-d", root,
         os.path.join(tmp, "root.img"), IMAGE_SIZE], logfile=logfile)
    shutil.rmtree(root)
    open(os.path.join(tmp, "done"), "w").close()
    if os.path.exists(cache):
        shutil.rmtree(cache)
    os.rename(tmp, cache)
    timings["rootfs"] = time.time() - t
    log("built root file system %s in %.0f s" % (cache, timings["rootfs"]))
    return cache


def build_deb(timings):
    """latnice_*.deb from this tree (dpkg-buildpackage -b, nocheck: the unit suite runs elsewhere).

    From debcache's cache when the install test (or an earlier run) built this tree already; a
    build under way elsewhere holds the cache's lock, and this waits for it."""
    for tool, pkg in (("dpkg-buildpackage", "dpkg-dev"), ("dh", "debhelper")):
        need_tool(tool, pkg)
    try:
        files = debcache.tree_files()
    except debcache.NotATree as e:
        raise Skip(str(e))
    key = debcache.key(files)
    lock = open(debcache.lock_path(), "w")
    t = time.time()
    fcntl.flock(lock, fcntl.LOCK_EX)
    deb = debcache.lookup(key)
    if deb:
        log("cached package %s (waited %.0f s for the cache)" % (deb, time.time() - t))
        timings["deb"] = 0.0
        return deb
    t = time.time()
    work = tempfile.mkdtemp(prefix="latnice-deb.", dir="/var/tmp")
    try:
        src = os.path.join(work, "latnice")
        os.makedirs(src)
        for f in files:
            dst = os.path.join(src, f)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if os.path.islink(os.path.join(SRC, f)):
                os.symlink(os.readlink(os.path.join(SRC, f)), dst)
            else:
                shutil.copy2(os.path.join(SRC, f), dst)
        logfile = os.path.join(work, "build.log")
        log("dpkg-buildpackage -b -uc -us (DEB_BUILD_OPTIONS=nocheck; log: %s)" % logfile)
        env = dict(os.environ, DEB_BUILD_OPTIONS="nocheck")
        run(["dpkg-buildpackage", "-b", "-uc", "-us", "-jauto"], cwd=src, logfile=logfile, env=env, timeout=1200)
        debs = [f for f in os.listdir(work) if f.startswith("latnice_") and f.endswith("_amd64.deb")]
        if len(debs) != 1:
            raise Failure("dpkg-buildpackage made %s, not one latnice_*_amd64.deb" % debs)
        deb = debcache.store(key, os.path.join(work, debs[0]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    timings["deb"] = time.time() - t
    log("built %s in %.0f s" % (debs[0], timings["deb"]))
    return deb


def check_deb_against_image(deb, rootfs):
    """Every Depends/Recommends of the package is in the image: the VM installs offline."""
    have = {}
    with open(os.path.join(rootfs, "packages.txt")) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                have[parts[0]] = parts[1]
    missing = []
    for field in ("Depends", "Recommends"):
        p = subprocess.run(["dpkg-deb", "-f", deb, field], stdout=subprocess.PIPE)
        if p.returncode != 0:
            raise Failure("dpkg-deb -f %s %s failed" % (deb, field))
        for alt in filter(None, (a.strip() for a in p.stdout.decode().split(","))):
            names = [re.sub(r"[\s(:].*", "", x.strip()) for x in alt.split("|")]
            if not any(n in have for n in names):
                missing.append("%s: %s" % (field, alt))
    if missing:
        raise Failure("the image lacks what the package asks for (add it to PACKAGES):\n  " +
                      "\n  ".join(missing))


def make_payload(kind, deb, rundir, logfile, bench=None):
    """The second disk: the driver, the package, lntest (static), the kind of kernel; with bench (run.py's
    arguments), the desktop benchmark's driver, run.py and lnbench-desktop (static) instead of lntest."""
    pay = os.path.join(rundir, "payload")
    os.makedirs(pay)
    shutil.copyfile(DRIVER if bench is None else BENCH_DRIVER, os.path.join(pay, "run.sh"))
    os.chmod(os.path.join(pay, "run.sh"), 0o755)
    shutil.copyfile(deb, os.path.join(pay, os.path.basename(deb)))
    bindir = os.path.join(rundir, "bin")
    os.makedirs(bindir)
    if bench is None:
        progs = vmtest.build_tests(bindir, logfile)
        shutil.copyfile(progs["lntest"], os.path.join(pay, "lntest"))
        os.chmod(os.path.join(pay, "lntest"), 0o755)
    else:
        gcc = need_tool("gcc", "gcc")
        run([gcc, "-static", "-O2", "-std=c11", "-D_GNU_SOURCE", "-pthread", "-Wall", "-Werror",
             "-I", os.path.join(SRC, "include"), "-o", os.path.join(pay, "lnbench-desktop"),
             os.path.join(BENCH_DIR, "desktop-bench.c"), "-lm"], logfile=logfile)
        shutil.copyfile(os.path.join(BENCH_DIR, "run.py"), os.path.join(pay, "run.py"))
        with open(os.path.join(pay, "bench-args"), "w") as f:
            f.write(bench + "\n")
    with open(os.path.join(pay, "kind"), "w") as f:
        f.write(kind + "\n")
    img = os.path.join(rundir, "payload.img")
    run(["mke2fs", "-q", "-F", "-t", "ext4", "-O", "^has_journal", "-L", "lntest", "-d", pay, img, "64M"],
        logfile=logfile)
    return img


def boot(qemu, kernel, initrd, rootimg, payload, args, rundir):
    """Like vmtest.boot, with the disks and a systemd command line."""
    console = os.path.join(rundir, "console.log")
    append = ("root=/dev/vda rw rootfstype=ext4 console=ttyS0 panic=-1 loglevel=4 "
              "systemd.show_status=error " + ("" if initrd else vmtest.kernel_clock() + " ") + args.append).strip()
    cmd = [qemu, "-nographic", "-no-reboot", "-m", str(args.memory), "-smp", vmtest.smp(args.smp),
           "-kernel", kernel, "-append", append,
           "-drive", "file=%s,format=raw,if=virtio,snapshot=on" % rootimg,
           "-drive", "file=%s,format=raw,if=virtio" % payload,
           "-nic", "none"]
    if initrd:
        cmd += ["-initrd", initrd]
    lines, timed_out = vmtest.run_vm(cmd, args, console, echo=("LNTEST", "LATNICE", "KNOB", "STATUS"),
                                     grace_after_end=60)
    return lines, timed_out, console


def bench_output(args, lines):
    """The sitting's tables (and its cells, as JSON) from the console, to --bench-out and stdout."""
    tables = [line[len("LNBENCH-DESKTOP "):] for line in lines if line.startswith("LNBENCH-DESKTOP ")]
    cells = [line.split(" ", 1)[1] for line in lines if line.startswith("LNBENCH-DESKTOP-JSON ")]
    begin = [line for line in lines if line.startswith("LNTEST BEGIN")]
    text = "\n".join(["VM: %s, qemu -smp %d (TCG); %s" % (args.kernel, args.smp, begin[0] if begin else "?"),
                      ""] + tables) + "\n"
    print(text)
    if args.bench_out:
        with open(args.bench_out, "w") as f:
            f.write(text)
        if cells:
            with open(args.bench_out + ".json", "wb") as f:
                f.write(gzip.decompress(base64.b64decode(cells[-1])))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", required=True, choices=KERNELS,
                    help="a patched series (built by vmtest.py, cached) or Debian's own 6.12")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--timeout", type=int, default=900, help="hard limit for the VM run in seconds")
    ap.add_argument("--memory", type=int, default=2048, help="VM memory in MiB")
    ap.add_argument("--allow-offset", action="store_true", help="as vmtest.py")
    ap.add_argument("--prepare-only", action="store_true",
                    help="build (or find in the caches) the kernel, root file system and package; no boot")
    ap.add_argument("--append", default="", help="more kernel command line (e.g. systemd.show_status=1)")
    ap.add_argument("--smp", type=int, default=2, help="the VM's CPUs")
    ap.add_argument("--bench", metavar="ARGS",
                    help="instead of the checks, the desktop benchmark's sitting (bench/desktop/run.py ARGS, "
                         "e.g. '--loads light,storm --rounds 3'); its tables go to --bench-out")
    ap.add_argument("--bench-out", metavar="FILE", help="with --bench: the tables (markdown); FILE.json the cells")
    ap.add_argument("-v", "--verbose", action="store_true", help="echo the whole console")
    args = ap.parse_args()

    timings = {}
    try:
        return run_system(args, timings)
    finally:
        vmtest.write_phases("vm system " + args.kernel, timings)


def run_system(args, timings):
    t0 = time.time()
    work = os.path.join(vmtest.WORK_ROOT, "system-" + args.kernel)
    try:
        if os.geteuid() != 0:
            raise Skip("needs root (mmdebstrap --mode=root, mke2fs -d keeping the owners)")
        if not os.path.exists("/usr/share/keyrings/debian-archive-keyring.gpg"):
            raise Skip("no Debian archive keyring (debian-archive-keyring) for mmdebstrap")
        qemu = need_tool("qemu-system-x86_64", "qemu-system-x86")
        need_tool("mke2fs", "e2fsprogs")
        os.makedirs(work, exist_ok=True)
        lock = open(os.path.join(work, ".lock"), "w")
        fcntl.flock(lock, fcntl.LOCK_EX)
        if args.kernel == "debian-6.12":
            kind = "mainline"
            kernel = initrd = None
        else:
            kind = "patched-" + args.kernel
            kwork = os.path.join(vmtest.WORK_ROOT, args.kernel)
            os.makedirs(kwork, exist_ok=True)
            klock = open(os.path.join(kwork, ".lock"), "w")
            fcntl.flock(klock, fcntl.LOCK_EX)
            kernel = vmtest.build_kernel(args.kernel, args, kwork, timings)
            klock.close()
            initrd = None
        # The root file system first: the install test, started beside this, builds the package
        # meanwhile and leaves it in the cache (debcache.py).
        rootfs = build_rootfs(timings)
        deb = build_deb(timings)
        check_deb_against_image(deb, rootfs)
        if kind == "mainline":
            kernel = os.path.join(rootfs, "vmlinuz")
            initrd = os.path.join(rootfs, "initrd.img")
            log("Debian's kernel %s" % open(os.path.join(rootfs, "vmlinuz.name")).read().strip())
        if args.prepare_only:
            log("%s: kernel %s, root %s, package %s; %s" % (
                args.kernel, kernel, rootfs, deb, ", ".join("%s %.0f s" % kv for kv in timings.items())))
            return 0
        rundir = os.path.join(work, "run")
        if os.path.exists(rundir):
            shutil.rmtree(rundir)
        os.makedirs(rundir)
        payload = make_payload(kind, deb, rundir, os.path.join(rundir, "payload.log"), args.bench)
        t = time.time()
        lines, timed_out, console = boot(qemu, kernel, initrd, os.path.join(rootfs, "root.img"),
                                         payload, args, rundir)
        timings["boot+tests"] = time.time() - t
    except (Skip, Failure) as e:
        return vmtest.setup_exit("vmsystem", e)

    if args.bench is not None:
        bench_output(args, lines)
    results = vmtest.parse_results(lines, timed_out, console, args.timeout)
    counts = vmtest.print_results("vmsystem: results for %s:" % args.kernel, results)
    for line in lines:
        if "Startup finished" in line:
            print("  boot: " + line.strip())
    timings["total"] = time.time() - t0
    print("vmsystem: %s: %d passed, %d failed, %d skipped; %s" % (
        args.kernel, counts["PASS"], counts["FAIL"], counts["SKIP"],
        ", ".join("%s %.0f s" % kv for kv in timings.items())))
    print("vmsystem: console log: %s" % console)
    for f in ("payload", "payload.img", "bin"):
        p = os.path.join(rundir, f)
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p) and counts["FAIL"] == 0:
            os.unlink(p)
    return min(counts["FAIL"], EXIT_SKIP - 1)


if __name__ == "__main__":
    sys.exit(main())
