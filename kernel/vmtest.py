#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Build a latency-nice kernel from a Debian linux-source package and test it in qemu.

For one series (kernel/6.1, kernel/6.12 or kernel/7.3) this extracts the
Debian source tarball (7.3's from trixie-backports, fetched and verified by
debsource.py), applies the series with fuzz 0 checking that every hunk
applies exactly, configures a tinyconfig-based test kernel (plus config.fragment,
verified after olddefconfig), builds bzImage (cached by a hash of its
inputs), builds the in-VM test programs (tests/*.c, static), packs them with
busybox into an initramfs, boots qemu-system-x86_64 (software emulation) and
parses "LNTEST PASS|FAIL|SKIP name[: why]" lines from the serial console.

Exit status: the number of failed checks (0: all passed), 77 when the kernel
source, qemu or a build tool cannot be had (the reason is printed).

Python 3 standard library only.
"""

import argparse
import gzip
import hashlib
import inspect
import io
import os
import re
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import debsource  # noqa: E402  (same directory)

SERIES = ("6.1", "6.12", "7.3", "scx-6.12")
# Kernels built without the project's patches, for what mainline does on its own: "scx-6.12" is
# Debian's 6.12 with sched_ext (CONFIG_SCHED_CLASS_EXT, off in Debian's 6.12 cloud kernel) and
# scx_simple from the same tree's tools/sched_ext, for latniced under a BPF scheduler.
UNPATCHED = ("scx-6.12",)
EXIT_SKIP = 77
# The test kernels have no ACPI and so no HPET (config.fragment): TCG's TSC follows the host's, and
# without tsc=reliable the clocksource watchdog would swap it for jiffies. With no HPET and no PM
# timer the kernel can measure the TSC's rate only against the PIT, and under TCG on a busy host that
# fails now and then ("Unable to calibrate against PIT", "Marking TSC unstable"), leaving jiffies:
# tsc_early_khz gives it the host's rate, which TCG's TSC runs at.


def host_tsc_khz():
    """The host's TSC rate in kHz, or None: from the kernel log's calibration, else (in a VM, whose
    /proc/cpuinfo rate is the one its hypervisor gave) from /proc/cpuinfo."""
    try:
        log = subprocess.run(["dmesg"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, errors="replace", timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        log = ""
    for pattern in (r"Refined TSC clocksource calibration: ([0-9]+)\.([0-9]{3}) MHz",
                    r"tsc: Detected ([0-9]+)\.([0-9]{3}) MHz TSC",
                    r"tsc: Detected ([0-9]+)\.([0-9]{3}) MHz processor"):
        found = re.findall(pattern, log)
        if found:
            return int(found[-1][0]) * 1000 + int(found[-1][1])
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
    except OSError:
        return None
    flags = re.search(r"^flags\s*:(.*)$", info, re.M)
    mhz = re.search(r"^cpu MHz\s*:\s*([0-9]+)\.([0-9]{3})", info, re.M)
    if flags and mhz and {"hypervisor", "constant_tsc"} <= set(flags.group(1).split()):
        return int(mhz.group(1)) * 1000 + int(mhz.group(2))
    return None


def kernel_clock():
    """The test kernels' clock options, for the command line of a boot (read when one boots, not at import)."""
    khz = host_tsc_khz()
    return "tsc=reliable" + (" tsc_early_khz=%d" % khz if khz else "")


def smp(n):
    """qemu's -smp for n CPUs the test kernels see: without ACPI the BIOS's MP table is all they have,
    and SeaBIOS lists only the first CPU of each package there, so each CPU is its own socket."""
    return "%d,sockets=%d,cores=1,threads=1" % (n, n)

WORK_ROOT = os.environ.get("LATNICE_KERNEL_WORK", "/var/tmp/latnice-kernel-work")
CACHE_ROOT = os.environ.get("LATNICE_KERNEL_CACHE", "/var/cache/latnice/kernel")
FRAGMENT = os.path.join(HERE, "config.fragment")
# A kernel build that has not finished in this time (about five times what
# it takes on two idle cores, kernel/README.md) is stuck, not slow.
MAKE_TIMEOUT = 1800
TESTS_DIR = os.path.join(HERE, "tests")


class Skip(Exception):
    """The environment cannot run this test; exit 77 with the reason."""


class Failure(Exception):
    """A step failed; counts as one failure."""


def log(msg):
    print("vmtest: " + msg, flush=True)


def run(cmd, cwd=None, logfile=None, check=True, env=None, timeout=None):
    """Run cmd; with logfile, send its output there (and show the tail on failure)."""
    try:
        if logfile:
            with open(logfile, "ab") as f:
                f.write(("\n$ " + " ".join(cmd) + "\n").encode())
                f.flush()
                p = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT,
                                   env=env, timeout=timeout)
        else:
            p = subprocess.run(cmd, cwd=cwd, env=env, timeout=timeout,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except subprocess.TimeoutExpired:
        raise Failure("timed out after %d s: %s%s" % (timeout, " ".join(cmd),
                      " (log: %s)" % logfile if logfile else ""))
    if check and p.returncode != 0:
        tail = ""
        if logfile:
            with open(logfile, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 6000))
                tail = f.read().decode(errors="replace")
        else:
            tail = p.stdout.decode(errors="replace")[-6000:]
        raise Failure("command failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), tail))
    return p


def apt_install(pkg):
    """Try to install a Debian package; False when that is impossible here."""
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return False
    log("installing %s with apt-get" % pkg)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        p = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", pkg],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=900)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return p.returncode == 0


def need_tool(tool, pkg):
    path = shutil.which(tool)
    if path:
        return path
    if apt_install(pkg):
        path = shutil.which(tool)
        if path:
            return path
    raise Skip("%s is missing and %s cannot be installed" % (tool, pkg))


def write_phases(title, timings):
    """Append each timed step to $LATNICE_PHASE_LOG for tools/run-tests' phase table.

    A step taken from a cache is written as such (0 s), so the table shows
    what a run rebuilt."""
    path = os.environ.get("LATNICE_PHASE_LOG")
    if not path:
        return
    with open(path, "a") as f:
        for k, v in timings.items():
            if k != "total":
                f.write("%s: %s\t%.0f\n" % (title, k, v))


def sha256(*parts):
    h = hashlib.sha256()
    for p in parts:
        if isinstance(p, str):
            p = p.encode()
        h.update(len(p).to_bytes(8, "little"))
        h.update(p)
    return h.hexdigest()


def source_of(series):
    """The linux-source-X a series builds from: "scx-6.12" is 6.12."""
    return series.rsplit("-", 1)[-1]


def tarball_for(series):
    series = source_of(series)
    if series in debsource.SUITES:
        # Not in bookworm: fetched from the suite that has it and verified against the archive's
        # keys (debsource.py), without adding that suite to the host's apt sources.
        try:
            return debsource.fetch(series)
        except debsource.Unavailable as e:
            raise Skip("linux-source-%s cannot be had: %s" % (series, e))
        except debsource.Invalid as e:
            raise Failure("linux-source-%s does not verify: %s" % (series, e))
    path = "/usr/src/linux-source-%s.tar.xz" % series
    if not os.path.exists(path):
        if not apt_install("linux-source-%s" % series) or not os.path.exists(path):
            raise Skip("%s is missing and linux-source-%s cannot be installed" % (path, series))
    return path


def tarball_id(series, path):
    """What identifies the source: the package version and the file itself."""
    if source_of(series) in debsource.SUITES:
        rec = debsource.record(source_of(series), path)
        return "%s %s %s" % (path, rec.get("Version", "unknown"), rec.get("Tarball-SHA256", "unknown"))
    version = "unknown"
    try:
        p = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "linux-source-%s" % source_of(series)],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        if p.returncode == 0:
            version = p.stdout.decode().strip()
    except OSError:
        pass
    st = os.stat(path)
    return "%s %s %d %d" % (path, version, st.st_size, int(st.st_mtime))


def series_patches(series):
    if series in UNPATCHED:
        return []
    d = os.path.join(HERE, series)
    patches = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".patch"))
    if not patches:
        raise Failure("no patches in %s" % d)
    return patches


def apply_patches(src, patches, allow_offset, logfile):
    """Apply with fuzz 0; refuse any hunk that does not apply exactly."""
    for patch in patches:
        name = os.path.basename(patch)
        cmd = ["patch", "-p1", "-F0", "--no-backup-if-mismatch", "-i", patch]
        p = subprocess.run(cmd + ["--dry-run"], cwd=src, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        out = p.stdout.decode(errors="replace")
        with open(logfile, "a") as f:
            f.write("$ %s\n%s" % (" ".join(cmd), out))
        bad = [l for l in out.splitlines()
               if "FAILED" in l or "fuzz" in l or "reversed" in l.lower()
               or (not allow_offset and "offset" in l)]
        if p.returncode != 0 or bad:
            raise Failure("%s does not apply exactly:\n%s" % (name, out))
        run(cmd, cwd=src, logfile=logfile)
        log("applied %s" % name)


def read_fragment():
    """The fragment as {CONFIG_X: value or None for 'is not set'}."""
    want = {}
    with open(FRAGMENT) as f:
        for line in f:
            line = line.strip()
            m = re.match(r"^# (CONFIG_\w+) is not set$", line)
            if m:
                want[m.group(1)] = None
                continue
            if not line or line.startswith("#"):
                continue
            m = re.match(r"^(CONFIG_\w+)=(.*)$", line)
            if not m:
                raise Failure("config.fragment: bad line %r" % line)
            want[m.group(1)] = m.group(2)
    return want


def configure_kernel(src, build, jobs, logfile):
    """tinyconfig + config.fragment + olddefconfig, then verify the fragment stuck."""
    make = ["make", "-C", src, "O=" + build]
    run(make + ["tinyconfig"], logfile=logfile)
    want = read_fragment()
    cfg = os.path.join(build, ".config")
    with open(cfg) as f:
        lines = [l for l in f.read().splitlines()
                 if not any(re.match(r"^(# )?%s[= ]" % k, l) for k in want)]
    for k, v in want.items():
        lines.append("# %s is not set" % k if v is None else "%s=%s" % (k, v))
    with open(cfg, "w") as f:
        f.write("\n".join(lines) + "\n")
    run(make + ["olddefconfig"], logfile=logfile)
    with open(cfg) as f:
        have = {}
        for line in f:
            m = re.match(r"^(CONFIG_\w+)=(.*)$", line.strip())
            if m:
                have[m.group(1)] = m.group(2)
    lost = []
    for k, v in want.items():
        if v is None and k in have:
            lost.append("%s should be unset, is %s" % (k, have[k]))
        elif v is not None and have.get(k) != v:
            lost.append("%s=%s wanted, got %s" % (k, v, have.get(k, "unset")))
    if lost:
        raise Failure("config.fragment did not stick after olddefconfig "
                      "(missing dependency or tool?):\n  " + "\n  ".join(lost))


def check_pahole():
    path = need_tool("pahole", "dwarves")
    p = subprocess.run([path, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    ver = p.stdout.decode().strip()
    m = re.match(r"v?(\d+)\.(\d+)", ver)
    if p.returncode != 0 or not m or (int(m.group(1)), int(m.group(2))) < (1, 16):
        raise Skip("pahole %r cannot generate kernel BTF (need >= 1.16)" % ver)
    return ver


def prepare_source(series, work, patches, allow_offset, logfile):
    """Extract and patch, or reuse the tree if its inputs are unchanged."""
    tarball = tarball_for(series)
    key = sha256(tarball_id(series, tarball), *[open(p, "rb").read() for p in patches])
    src = os.path.join(work, "src")
    stamp = os.path.join(work, "src.stamp")
    if os.path.isdir(src) and os.path.exists(stamp) and open(stamp).read().strip() == key:
        log("reusing extracted and patched tree %s" % src)
        return src, key, False
    for d in (src, os.path.join(work, "build")):
        if os.path.exists(d):
            shutil.rmtree(d)
    if os.path.exists(stamp):
        os.unlink(stamp)
    tmp = os.path.join(work, "extract.tmp")
    if os.path.exists(tmp):
        shutil.rmtree(tmp)
    os.makedirs(tmp)
    log("extracting %s" % tarball)
    run(["tar", "-xf", tarball, "-C", tmp], logfile=logfile, timeout=600)
    tops = os.listdir(tmp)
    if len(tops) != 1:
        raise Failure("unexpected tarball layout: %s" % tops)
    os.rename(os.path.join(tmp, tops[0]), src)
    os.rmdir(tmp)
    apply_patches(src, patches, allow_offset, logfile)
    with open(stamp, "w") as f:
        f.write(key + "\n")
    return src, key, True


def scx_clang():
    """The clang that compiles tools/sched_ext's BPF schedulers (6.12's needs >= 16)."""
    return need_tool("clang-19", "clang-19")


def build_scx(src, build, out, jobs, logfile):
    """scx_simple from the kernel tree's tools/sched_ext, against the built kernel's BTF.

    The tree brings its own libbpf and bpftool (built on the host); the
    scheduler's BPF side is compiled by clang against vmlinux.h dumped from
    this kernel's vmlinux, so it loads on exactly this kernel."""
    os.makedirs(out, exist_ok=True)
    run(["make", "-C", os.path.join(src, "tools", "sched_ext"), "O=" + out,
         "CLANG=" + scx_clang(), "VMLINUX_BTF=" + os.path.join(build, "vmlinux"),
         "-j%d" % jobs, "scx_simple"], logfile=logfile, timeout=MAKE_TIMEOUT // 2)
    return os.path.join(out, "build", "bin", "scx_simple")


# The debug information is there for BTF, which pahole makes from the DWARF types alone: the
# locations of variables that gcc's variable tracking computes are never read. Without it the
# compile takes 7% less CPU (kernel/README.md, "Build times").
KCFLAGS = "-fno-var-tracking -fno-var-tracking-assignments"


def build_kernel(series, args, work, timings):
    global FRAGMENT
    patches = series_patches(series)
    os.makedirs(work, exist_ok=True)
    logfile = os.path.join(work, "build.log")
    t = time.time()
    src, src_key = None, None
    tarball = tarball_for(series)
    # The cache key covers everything that decides the bzImage.
    config_step = inspect.getsource(configure_kernel) + inspect.getsource(read_fragment)
    # A series' own config.fragment (kernel/X/config.fragment) adds to and overrides the common
    # one: what that kernel's Kconfig needs on top (e.g. 6.1's KPROBES depend on MODULES).
    series_fragment = os.path.join(HERE, series, "config.fragment")
    has_fragment = os.path.exists(series_fragment)
    extra = [open(series_fragment, "rb").read()] if has_fragment else []
    scx = series.startswith("scx-")
    if scx:
        # The scheduler binary is cached with the kernel it was built against.
        p = subprocess.run([scx_clang(), "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        extra += [inspect.getsource(build_scx), p.stdout]
    key = sha256(tarball_id(series, tarball),
                 *[open(p, "rb").read() for p in patches],
                 open(FRAGMENT, "rb").read(), config_step, "bzImage", KCFLAGS, *extra)
    cache = os.path.join(CACHE_ROOT, key)
    image = os.path.join(cache, "bzImage")
    build = os.path.join(work, "build")
    if scx and os.path.exists(image) and not os.path.exists(os.path.join(cache, "vmlinux.btf")):
        save_btf(build, cache, logfile)  # a kernel cached before the BTF was kept: from its build, if still there
    if os.path.exists(image) and (not scx or all(os.path.exists(os.path.join(cache, f))
                                                for f in ("scx_simple", "vmlinux.btf"))):
        log("cached kernel %s" % image)
        timings["kernel build"] = 0.0
        if scx:
            publish_btf(cache, work)
        return image
    open(logfile, "w").close()
    check_pahole()
    src, src_key, fresh = prepare_source(series, work, patches, args.allow_offset, logfile)
    timings["kernel extract+patch"] = time.time() - t
    os.makedirs(build, exist_ok=True)
    t = time.time()
    common = FRAGMENT
    if has_fragment:
        # configure_kernel() reads FRAGMENT: the two files merged, the series' lines last.
        FRAGMENT = os.path.join(work, "config.fragment.merged")
        with open(FRAGMENT, "wb") as f:
            f.write(open(common, "rb").read() + b"\n" + open(series_fragment, "rb").read())
    log("configuring (tinyconfig + %s%s)" % (os.path.relpath(common, HERE),
                                            " + %s/config.fragment" % series if has_fragment else ""))
    try:
        configure_kernel(src, build, args.jobs, logfile)
    finally:
        FRAGMENT = common
    log("building bzImage with -j%d (log: %s)" % (args.jobs, logfile))
    run(["make", "-C", src, "O=" + build, "-j%d" % args.jobs, "KCFLAGS=" + KCFLAGS, "bzImage"], logfile=logfile,
        timeout=MAKE_TIMEOUT)
    timings["kernel build"] = time.time() - t
    os.makedirs(cache, exist_ok=True)
    if scx:
        t = time.time()
        log("building scx_simple from tools/sched_ext with %s" % scx_clang())
        tool = build_scx(src, build, os.path.join(work, "scx"), args.jobs, logfile)
        shutil.copyfile(tool, os.path.join(cache, "scx_simple.tmp"))
        os.chmod(os.path.join(cache, "scx_simple.tmp"), 0o755)
        os.rename(os.path.join(cache, "scx_simple.tmp"), os.path.join(cache, "scx_simple"))
        timings["scx_simple"] = time.time() - t
        save_btf(build, cache, logfile)
        publish_btf(cache, work)
    tmp = image + ".tmp"
    shutil.copyfile(os.path.join(build, "arch/x86/boot/bzImage"), tmp)
    shutil.copyfile(os.path.join(build, ".config"), os.path.join(cache, "config"))
    os.rename(tmp, image)
    log("built %s in %.0f s" % (image, timings["kernel build"]))
    return image


def save_btf(build, cache, logfile):
    """The kernel's BTF (its vmlinux's .BTF section, raw, as /sys/kernel/btf/vmlinux is) into the
    cache: scx_latnice (scheduler/) is built against it, and the build directory may not last."""
    vmlinux = os.path.join(build, "vmlinux")
    if not os.path.exists(vmlinux):
        return
    os.makedirs(cache, exist_ok=True)
    tmp = os.path.join(cache, "vmlinux.btf.tmp")
    run(["objcopy", "--dump-section", ".BTF=" + tmp, vmlinux, os.path.join(cache, "objcopy.out")],
        logfile=logfile, timeout=120)
    os.unlink(os.path.join(cache, "objcopy.out"))
    os.rename(tmp, os.path.join(cache, "vmlinux.btf"))


def publish_btf(cache, work):
    """work/vmlinux.btf: where meson looks for the sched_ext kernel's BTF (scheduler/meson.build)."""
    dst = os.path.join(work, "vmlinux.btf")
    tmp = dst + ".tmp"
    shutil.copyfile(os.path.join(cache, "vmlinux.btf"), tmp)
    os.rename(tmp, dst)


# ---- initramfs -------------------------------------------------------------

class Cpio:
    """A newc cpio archive built in memory (no root needed for device nodes)."""

    def __init__(self):
        self.buf = io.BytesIO()
        self.ino = 1
        self.names = set()

    def _entry(self, name, mode, data=b"", rdev=(0, 0)):
        name = name.lstrip("/")
        if name in self.names:
            return
        self.names.add(name)
        nb = name.encode() + b"\0"
        fields = [self.ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(nb), 0]
        self.ino += 1
        hdr = b"070701" + b"".join(b"%08x" % v for v in fields)
        self.buf.write(hdr + nb)
        self.buf.write(b"\0" * ((4 - (len(hdr) + len(nb)) % 4) % 4))
        self.buf.write(data)
        self.buf.write(b"\0" * ((4 - len(data) % 4) % 4))

    def dir(self, name):
        parts = name.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            self._entry("/".join(parts[:i]), 0o040755)

    def file(self, name, data, mode=0o755):
        self.dir(os.path.dirname(name.strip("/")) or ".")
        self._entry(name, 0o100000 | mode, data)

    def symlink(self, name, target):
        self.dir(os.path.dirname(name.strip("/")) or ".")
        self._entry(name, 0o120777, target.encode())

    def chardev(self, name, major, minor):
        self.dir(os.path.dirname(name.strip("/")))
        self._entry(name, 0o020600, rdev=(major, minor))

    def add_host_file(self, path, dest=None):
        """Copy a host file, following symlinks but keeping the link names."""
        dest = dest or path
        if os.path.islink(path):
            target = os.readlink(path)
            self.symlink(dest, target)
            real = os.path.join(os.path.dirname(path), target)
            self.add_host_file(os.path.normpath(real),
                               os.path.normpath(os.path.join(os.path.dirname(dest), target))
                               if not target.startswith("/") else target)
            return
        with open(path, "rb") as f:
            self.file(dest, f.read(), os.stat(path).st_mode & 0o777)

    def add_program(self, path, dest):
        """A host executable with the shared libraries ldd lists and the loader."""
        self.add_host_file(os.path.realpath(path), dest)
        p = subprocess.run(["ldd", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out = p.stdout.decode(errors="replace")
        if p.returncode != 0 or "not a dynamic executable" in out:
            return
        for line in out.splitlines():
            m = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
            if m and os.path.exists(m.group(1)):
                self.add_host_file(m.group(1))

    def close(self):
        self._entry("TRAILER!!!", 0)
        data = self.buf.getvalue()
        return data + b"\0" * ((512 - len(data) % 512) % 512)


def build_tests(outdir, logfile):
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not gcc:
        raise Skip("no C compiler for the in-VM test programs")
    progs = {}
    for f in sorted(os.listdir(TESTS_DIR)):
        if not f.endswith(".c"):
            continue
        name = f[:-2]
        out = os.path.join(outdir, name)
        run([gcc, "-static", "-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror",
             "-I", os.path.join(TESTS_DIR, "..", "..", "include"),
             "-o", out, os.path.join(TESTS_DIR, f)], logfile=logfile)
        progs[name] = out
    return progs


# What both VMs' /init start with: busybox's applets and the file systems.
VM_MOUNTS = r"""/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t bpf -o mode=0700 bpf /sys/fs/bpf 2>/dev/null"""

INIT = r"""#!/bin/busybox sh
# /init of the latnice test VM (generated by kernel/vmtest.py)
@MOUNTS@
echo "LNTEST BEGIN series=@SERIES@ kernel=$(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo) clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource) available=$(cat /sys/devices/system/clocksource/clocksource0/available_clocksource | tr ' ' ,)"
/bin/lntest --series @SERIES@
if [ "@BENCH@" = 1 ]; then
    echo "LNTEST INFO bench clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
    /bin/lnbench @BENCH_ARGS@
fi
if [ -x /usr/bin/latniced ]; then
    if [ -x /usr/bin/dbus-daemon ]; then
        mkdir -p /run/dbus
        dbus-daemon --config-file=/etc/dbus-1/lntest-system.conf --fork --nopidfile \
            && echo "LNTEST INFO latniced: system bus started"
    fi
    mkdir -p /etc/latnice.d
    printf '[Process lntest-target]\nComm=lntest-target\nLatencyNice=-10\n' > /etc/latnice.d/50-test.conf
    # Running before latniced: the start-up scan decides them (not an exec event). On this
    # backend the default is prio 20, not raw 0: neither may read as somebody else's value.
    /bin/lntest-target 30 &
    T0=$!
    sleep 30 &
    S0=$!
    /usr/bin/latniced --log-level debug > /tmp/latniced.log 2>&1 &
    LP=$!
    i=0
    while [ $i -lt 150 ] && ! grep -q 'backend' /tmp/latniced.log; do
        sleep 0.1; i=$((i + 1))
    done
    if grep -q 'backend latency-nice' /tmp/latniced.log; then
        echo "LNTEST PASS latniced-backend"
    else
        echo "LNTEST FAIL latniced-backend: no 'backend latency-nice' in its output: $(tail -n 5 /tmp/latniced.log | tr '\n' '|')"
    fi
    sleep 1
    /bin/lntest-target 30 &
    T=$!
    i=0; v=none
    while [ $i -lt 100 ]; do
        v=$(/bin/lntest getln $T)
        [ "$v" = -10 ] && break
        sleep 0.1; i=$((i + 1))
    done
    if [ "$v" = -10 ]; then
        echo "LNTEST PASS latniced-apply"
    else
        echo "LNTEST FAIL latniced-apply: lntest-target has latency nice $v after 10 s, expected -10"
    fi
    v=$(/bin/lntest getln $T0)
    if [ "$v" = -10 ]; then
        echo "LNTEST PASS latniced-scan"
    else
        echo "LNTEST FAIL latniced-scan: lntest-target started before latniced has latency nice $v, expected -10"
    fi
    if [ -x /usr/bin/latnicectl ]; then
        /usr/bin/latnicectl status 2>&1 | sed 's/^/LATNICECTL: /' | head -n 40
        g=$(/usr/bin/latnicectl get $S0 2>&1 | head -n 1)
        case "$g" in
        *"the default; latniced did not set it"*) echo "LNTEST PASS latniced-default-not-foreign" ;;
        *) echo "LNTEST FAIL latniced-default-not-foreign: latnicectl get of an untouched sleep: $g" ;;
        esac
    fi
    kill $T $T0 $S0 2>/dev/null
    kill $LP 2>/dev/null
    sleep 0.5
    sed 's/^/LATNICED: /' /tmp/latniced.log | head -n 200
else
    echo "LNTEST SKIP latniced: --latniced not given"
fi
echo "LNTEST END"
sync
reboot -f
"""

SCX_INIT = r"""#!/bin/busybox sh
# /init of the sched_ext test VM (generated by kernel/vmtest.py): latniced on an unpatched 6.12
# (backend eevdf-slice) while scx_simple takes over the tasks and gives them back.
@MOUNTS@
echo "LNTEST BEGIN series=@SERIES@ kernel=$(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo)"
pass() { echo "LNTEST PASS $1"; }
fail() { echo "LNTEST FAIL $1: $2"; }
check() { # check NAME WHY-IF-NOT CMD...: CMD once
    n=$1; w=$2; shift 2
    if "$@" >/dev/null 2>&1; then pass "$n"; else fail "$n" "$w"; fi
}
eventually() { # eventually SECONDS CMD...: CMD until it succeeds, every 0.1 s
    t=$(($1 * 10)); shift
    while [ $t -gt 0 ]; do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1; t=$((t - 1))
    done
    return 1
}
state() { cat /sys/kernel/sched_ext/state 2>/dev/null; }
is_state() { [ "$(state)" = "$1" ]; }
slice() { /bin/lntest getslice $1; }
has_slice() { [ "$(slice $1)" = "$2" ]; }
not_slice() { [ "$(slice $1)" != "$2" ]; }
in_log() { grep -q "$1" /tmp/latniced.log; }
in_status() { latnicectl status 2>&1 | grep -q "$1"; }
in_monitor() { grep -q "$1" /tmp/monitor.log; }

check scx-sysfs "no /sys/kernel/sched_ext/state: kernel without CONFIG_SCHED_CLASS_EXT" is_state disabled
mkdir -p /run/dbus /etc/latnice.d
dbus-daemon --config-file=/etc/dbus-1/lntest-system.conf --fork --nopidfile
printf '[Process lntest-target]\nComm=lntest-target\nLatencyNice=-10\n' > /etc/latnice.d/50-test.conf
dbus-monitor --system "type='signal',interface='org.freedesktop.DBus.Properties',path='/org/latnice1'" \
    > /tmp/monitor.log 2>&1 &
MP=$!
/usr/bin/latniced --log-level debug > /tmp/latniced.log 2>&1 &
LP=$!
eventually 30 in_status 'Backend: eevdf-slice'
check latniced-backend-eevdf "latnicectl status has no 'Backend: eevdf-slice': $(latnicectl status 2>&1 | tr '\n' '|')" \
    in_status 'Backend: eevdf-slice'
BASE=$(cat /sys/kernel/debug/sched/base_slice_ns)
/bin/lntest-target 600 &
A=$!
/bin/lntest-target 600 &
B=$!
eventually 20 not_slice $A $BASE && eventually 20 not_slice $B $BASE
VAL=$(slice $A)
check latniced-apply "lntest-target has the default slice $BASE ns after 20 s" \
    eval "[ $VAL != $BASE ] && has_slice $B $VAL"
echo "LNTEST INFO default slice $BASE ns; LatencyNice=-10 gave a slice of $VAL ns"
latnicectl status 2>&1 | sed 's/^/LATNICECTL-BEFORE: /'

# ---- a BPF scheduler takes over -----------------------------------------------------------------
/bin/scx_simple > /tmp/scx.log 2>&1 &
S=$!
eventually 60 is_state enabled
check scx-enabled "state $(state) 60 s after scx_simple started: $(tail -n 3 /tmp/scx.log | tr '\n' '|')" is_state enabled
echo "LNTEST INFO sched_ext: state $(state), ops $(cat /sys/kernel/sched_ext/root/ops 2>/dev/null)"
eventually 10 in_status 'Backend: sched-ext:simple (latency nice not honoured)'
check backend-sched-ext "latnicectl status: $(latnicectl status 2>&1 | grep -i backend | tr '\n' '|')" \
    in_status 'Backend: sched-ext:simple (latency nice not honoured)'
check status-says-so "latnicectl status has no Note about the BPF scheduler" in_status 'Note: A BPF scheduler (sched_ext: simple)'
eventually 5 in_monitor 'sched-ext:simple'
check backend-signalled "no PropertiesChanged with the new Backend: $(tail -n 8 /tmp/monitor.log | tr '\n' '|')" \
    in_monitor 'sched-ext:simple (latency nice not honoured)'
check notice-once "the notice is not in latniced's log exactly once" \
    eval "[ \$(grep -c 'Matching goes on and the applied table is kept' /tmp/latniced.log) = 1 ]"
check table-kept "latnicectl list lost the targets" eval "[ \$(latnicectl list 2>/dev/null | grep -c lntest-target) -ge 2 ]"
check values-stay "the targets' slices changed under the BPF scheduler: $(slice $A), $(slice $B)" \
    eval "has_slice $A $VAL && has_slice $B $VAL"
/bin/lntest-target 600 &
C=$!
eventually 20 has_slice $C $VAL
check matching-goes-on "a target started under the BPF scheduler has slice $(slice $C), expected $VAL" has_slice $C $VAL
# What a scheduler switch or another program may do meanwhile: A loses its value, B gets another one.
/bin/lntest setslice $A 0
/bin/lntest setslice $B 7000000
check lost-and-foreign "lntest setslice did not take: A $(slice $A), B $(slice $B)" \
    eval "has_slice $A $BASE && has_slice $B 7000000"
latnicectl status 2>&1 | sed 's/^/LATNICECTL-SCX: /'
latnicectl get $C 2>&1 | sed 's/^/LATNICECTL-SCX-GET: /'

# ---- the fair class is back ---------------------------------------------------------------------
kill -INT $S
eventually 60 is_state disabled
check scx-disabled "state $(state) 60 s after SIGINT to scx_simple" is_state disabled
eventually 10 in_status 'Backend: eevdf-slice'
check backend-back "latnicectl status: $(latnicectl status 2>&1 | grep -i backend | tr '\n' '|')" in_status 'Backend: eevdf-slice'
check backend-back-signalled "no PropertiesChanged back to eevdf-slice after sched-ext" \
    eval "grep -n 'eevdf-slice\|sched-ext:simple' /tmp/monitor.log | tail -n 1 | grep -q eevdf-slice"
eventually 20 in_log "Wrote latniced's values again"
check reapply-logged "no 'fair class is back' and 'Wrote latniced's values again' in latniced's log" \
    eval "in_log 'The fair class is back' && in_log \"Wrote latniced's values again\""
check lost-value-written-again "target A has slice $(slice $A) after the BPF scheduler, expected $VAL" has_slice $A $VAL
check foreign-value-kept "target B has slice $(slice $B), expected the 7000000 somebody else set" has_slice $B 7000000
check kept-value-kept "target C has slice $(slice $C), expected $VAL" has_slice $C $VAL
check status-no-note "latnicectl status still has a BPF scheduler note" eval "! in_status 'Note: A BPF scheduler'"
latnicectl status 2>&1 | sed 's/^/LATNICECTL-AFTER: /'
kill $A $B $C $LP 2>/dev/null
sleep 0.5
kill $MP 2>/dev/null
sed 's/^/LATNICED: /' /tmp/latniced.log | grep -v 'LATNICED: .*debug' | head -n 200
grep -E 'Backend|sched-ext|eevdf' /tmp/monitor.log | sed 's/^/DBUS-MONITOR: /' | head -n 20
sed 's/^/SCX_SIMPLE: /' /tmp/scx.log | tail -n 5

# ---- scx_latnice, latnice's own BPF scheduler (scheduler/) ----------------------------------------
if [ -x /bin/scx_latnice ]; then
    /bin/lnscx /bin/scx_latnice @SCX_PHASE_MS@
    # The kernel says why it disabled a scheduler: "unregistered from user space" is the loader's stop;
    # anything else (a runnable task stall: the watchdog; an error) is an ejection.
    dmesg | grep 'sched_ext' | sed 's/^/DMESG: /' | tail -n 10
    check scx-latnice-dmesg "the kernel disabled latnice for another reason: $(dmesg | grep 'BPF scheduler "latnice" disabled' | tr '\n' '|')" \
        eval "dmesg | grep -q 'BPF scheduler \"latnice\" disabled (unregistered from user space)' && ! dmesg | grep 'BPF scheduler \"latnice\" disabled' | grep -vq 'unregistered from user space'"
    # ---- the benchmark: lnbench's loads under the fair class and under scx_latnice, one boot ----
    # Values as latniced gives them here (custom slices, -m slice). Per load the two run in the
    # order fair, latnice, latnice, fair, so that a drift over the boot hits both alike.
    if [ "@BENCH@" = 1 ]; then
        ok=1
        for load in light heavy; do
            if [ $load = light ]; then a="@BENCH_ARGS@"; else a="-g 4 @BENCH_ARGS@"; fi
            for k in 1 2 3 4; do
                if [ $k = 2 ] || [ $k = 3 ]; then
                    /bin/scx_latnice > /tmp/scx-bench.log 2>&1 &
                    SB=$!
                    eventually 60 is_state enabled || ok=0
                    /bin/lnbench -m slice -n "latnice-$load-$k" $a || ok=0
                    kill -INT $SB
                    wait $SB
                    eventually 30 is_state disabled || ok=0
                    sed 's/^/SCX_LATNICE: /' /tmp/scx-bench.log | tail -n 1
                else
                    /bin/lnbench -m slice -n "fair-$load-$k" $a || ok=0
                fi
            done
        done
        if [ $ok = 1 ]; then pass bench; else fail bench "an lnbench run or a scheduler switch failed"; fi
    fi

    # ---- latniced runs it: [Daemon] Scheduler=latnice, at the path this latniced reads ----
    if [ -n "@LATNICED_CONF@" ]; then
        mkdir -p "$(dirname @LATNICED_CONF@)"
        printf '[Daemon]\nScheduler=latnice\n' > @LATNICED_CONF@
        /usr/bin/latniced --log-level debug --scx-latnice=/bin/scx_latnice > /tmp/latniced.log 2>&1 &
        LP=$!
        eventually 60 is_state enabled
        check latniced-scheduler-enabled "state $(state), ops $(cat /sys/kernel/sched_ext/root/ops 2>/dev/null) 60 s after latniced started with Scheduler=latnice" \
            eval "is_state enabled && [ \"\$(cat /sys/kernel/sched_ext/root/ops)\" = latnice ]"
        eventually 10 in_status 'Backend: sched-ext:latnice'
        check latniced-backend-latnice "latnicectl status: $(latnicectl status 2>&1 | grep -i 'backend\|note' | tr '\n' '|')" \
            eval "in_status 'Backend: sched-ext:latnice' && ! in_status 'not honoured'"
        /bin/lntest-target 600 &
        D=$!
        eventually 20 not_slice $D $BASE
        check latniced-scheduler-apply "a target started under scx_latnice has slice $(slice $D), expected $VAL" has_slice $D $VAL
        # The scheduler honours only what latniced granted: latniced wrote the value into its map.
        granted_is() { [ "$(/bin/lnscx granted $1)" = "$2" ]; }
        eventually 20 granted_is $D -10
        check latniced-granted "scx_latnice's map grants the target $(/bin/lnscx granted $D), expected -10 (latniced's log: $(grep -i 'granted\|Told scx_latnice' /tmp/latniced.log | tail -n 2 | tr '\n' '|'))" \
            granted_is $D -10
        latnicectl status 2>&1 | sed 's/^/LATNICECTL-LATNICE: /'
        kill $LP
        wait $LP
        eventually 30 is_state disabled
        check latniced-scheduler-stopped "state $(state) after latniced stopped" is_state disabled
        check latniced-scheduler-log "latniced's log does not say it started and stopped scx_latnice" \
            eval "in_log 'Scheduler=latnice: started /bin/scx_latnice' && in_log 'exited with status 0: stopped with latniced'"
        sed 's/^/LATNICED-SCHEDULER: /' /tmp/latniced.log | grep -v 'debug\|libbpf' | grep -i 'sched\|backend\|fair' | head -n 40
        kill $D 2>/dev/null
        rm -f @LATNICED_CONF@
    else
        echo "LNTEST SKIP latniced-scheduler: where this latniced reads latniced.conf was not found in it"
    fi
else
    echo "LNTEST SKIP scx-latnice: scx_latnice not given (vmtest.py --scx-latnice; meson builds it when it can)"
fi
echo "LNTEST END"
sync
reboot -f
"""

DBUS_CONF = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=/run/dbus/system_bus_socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
"""


def latniced_conf_path(latniced):
    """Where this latniced binary reads latniced.conf (its build's sysconfdir): "" if not found."""
    if not latniced:
        return ""
    with open(latniced, "rb") as f:
        m = re.search(rb"\0(/[\x21-\x7e]*/latnice/latniced\.conf)\0", f.read())
    return m.group(1).decode() if m else ""


def make_initramfs(series, args, rundir, logfile, scx_tool=None):
    bindir = os.path.join(rundir, "bin")
    os.makedirs(bindir, exist_ok=True)
    progs = build_tests(bindir, logfile)
    busybox = shutil.which("busybox") or "/bin/busybox"
    if not os.path.exists(busybox):
        if not apt_install("busybox-static") or not shutil.which("busybox"):
            raise Skip("busybox is missing and busybox-static cannot be installed")
        busybox = shutil.which("busybox")
    c = Cpio()
    for d in ("bin", "sbin", "usr/bin", "usr/sbin", "etc", "proc", "sys", "dev", "tmp",
              "run", "root", "var/lib/dbus"):
        c.dir(d)
    c.chardev("dev/console", 5, 1)
    c.chardev("dev/null", 1, 3)
    c.add_program(busybox, "/bin/busybox")
    for name, path in progs.items():
        with open(path, "rb") as f:
            c.file("bin/" + name, f.read())
    c.file("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\nmessagebus:x:100:101::/run/dbus:/bin/false\n"
           b"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n", 0o644)
    c.file("etc/group", b"root:x:0:\nmessagebus:x:101:\nnogroup:x:65534:\n", 0o644)
    c.file("etc/machine-id", hashlib.md5(series.encode()).hexdigest().encode() + b"\n", 0o444)
    dbus = None
    if args.latniced:
        c.add_program(args.latniced, "/usr/bin/latniced")
        dbus = shutil.which("dbus-daemon")
        if dbus:
            c.add_program(dbus, "/usr/bin/dbus-daemon")
            c.file("etc/dbus-1/lntest-system.conf", DBUS_CONF.encode(), 0o644)
    if args.latnicectl:
        c.add_program(args.latnicectl, "/usr/bin/latnicectl")
    template = INIT
    if series.startswith("scx-"):
        # latniced and a BPF scheduler: the daemon, its CLI, a bus and a monitor of it are needed.
        monitor = shutil.which("dbus-monitor")
        if not (args.latniced and args.latnicectl and dbus and monitor):
            raise Skip("the sched_ext check needs --latniced, --latnicectl, dbus-daemon and dbus-monitor")
        c.add_program(monitor, "/usr/bin/dbus-monitor")
        c.add_program(scx_tool, "/bin/scx_simple")
        if args.scx_latnice:
            c.add_program(args.scx_latnice, "/bin/scx_latnice")
        template = SCX_INIT
    init = (template.replace("@MOUNTS@", VM_MOUNTS).replace("@SERIES@", series)
            .replace("@BENCH@", "1" if args.bench else "0")
            .replace("@BENCH_ARGS@", args.bench_args)
            .replace("@SCX_PHASE_MS@", str(args.scx_phase_ms))
            .replace("@LATNICED_CONF@", latniced_conf_path(args.latniced)))
    c.file("init", init.encode())
    path = os.path.join(rundir, "initramfs.cpio.gz")
    with open(path, "wb") as f:
        f.write(gzip.compress(c.close(), compresslevel=6))
    return path


# ---- boot and parse ------------------------------------------------------------

RESULT = re.compile(r"LNTEST (PASS|FAIL|SKIP) ([^:\s]+)(?::\s*(.*))?$")


# What a kernel prints when it dies; before "LNTEST BEGIN" nothing of ours has run yet.
KERNEL_DEATH = ("Kernel panic - not syncing", "Oops: ", "BUG: kernel NULL pointer")


def run_vm(cmd, args, console, echo=("LNTEST", "LNBENCH"), grace_after_end=None):
    """Runs qemu (cmd) with the console in console; returns (lines, timed out).

    A line that has LNTEST or LNBENCH in it is cut to start there (kernel
    messages may share its line). With grace_after_end, qemu is stopped
    that many seconds after "LNTEST END" if it has not powered off.

    A kernel that dies before "LNTEST BEGIN", before any of our code ran, is
    booted once more with single-threaded TCG: multi-threaded TCG (QEMU 7.2)
    now and then lets one vCPU run code that another has just patched
    (Debian's 6.12 was seen taking an int3 oops in kmem_cache_free at 8 s).
    The first console stays in console + ".first"; the retry is logged."""
    lines, timed_out = run_vm_once(cmd, args, console, echo, grace_after_end)
    began = any(l.startswith("LNTEST BEGIN") for l in lines)
    died = next((l for l in lines if any(d in l for d in KERNEL_DEATH)), None)
    if began or died is None or "-accel" in cmd:
        return lines, timed_out
    shutil.copyfile(console, console + ".first")
    log("the kernel died before the tests began (%s; console in %s.first): "
        "booting once more with -accel tcg,thread=single" % (died.strip()[:120], console))
    return run_vm_once(cmd + ["-accel", "tcg,thread=single"], args, console, echo, grace_after_end)


def run_vm_once(cmd, args, console, echo, grace_after_end):
    log("booting: " + " ".join(cmd))
    lines = []
    ended = []
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)

    def reader():
        with open(console, "wb") as f:
            for raw in p.stdout:
                f.write(raw)
                f.flush()
                line = raw.decode(errors="replace").rstrip("\r\n")
                for tag in ("LNTEST", "LNBENCH"):
                    if tag in line:
                        line = line[line.find(tag):]
                        break
                if line.startswith("LNTEST END"):
                    ended.append(time.time())
                lines.append(line)
                if args.verbose or line.startswith(echo):
                    print("  " + line, flush=True)

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    timed_out = False
    deadline = time.time() + args.timeout
    while p.poll() is None:
        if time.time() > deadline:
            timed_out = True
            break
        if grace_after_end is not None and ended and time.time() > ended[0] + grace_after_end:
            log("no power-off %d s after LNTEST END: stopping qemu" % grace_after_end)
            break
        time.sleep(0.5)
    if p.poll() is None:
        p.kill()
        p.wait()
    th.join(10)
    return lines, timed_out


def boot(qemu, image, initrd, args, rundir):
    console = os.path.join(rundir, "console.log")
    cmd = [qemu, "-nographic", "-no-reboot", "-m", "512", "-smp", smp(args.smp),
           "-kernel", image, "-initrd", initrd,
           "-append", "console=ttyS0 panic=-1 loglevel=4 rdinit=/init " + kernel_clock()]
    lines, timed_out = run_vm(cmd, args, console)
    return lines, timed_out, console


def parse_results(lines, timed_out, console, timeout):
    """The LNTEST results of a console, and a failure if the VM did not begin or end its checks."""
    results = []
    for line in lines:
        m = RESULT.search(line)
        if m:
            results.append((m.group(1), m.group(2), m.group(3) or ""))
    began = any("LNTEST BEGIN" in l for l in lines)
    ended = any("LNTEST END" in l for l in lines)
    if not began:
        results.append(("FAIL", "vm-boot", "no LNTEST BEGIN on the console (see %s)" % console))
    elif not ended:
        results.append(("FAIL", "vm-complete", "%s before LNTEST END (see %s)" %
                        ("timed out after %d s" % timeout if timed_out else "VM stopped",
                         console)))
    return results


def print_results(title, results):
    """Prints each result; returns the counts by status."""
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    print(title)
    for status, name, why in results:
        counts[status] += 1
        print("  %-4s %s%s" % (status, name, (": " + why) if why else ""))
    return counts


def setup_exit(prog, e):
    """What a run whose setup raised e (Skip or Failure) says and exits with: 77 and the reason,
    or one failure named PROG-setup."""
    if isinstance(e, Skip):
        print("%s: SKIP: %s" % (prog, e))
        return EXIT_SKIP
    print("LNTEST FAIL %s-setup: %s" % (prog, e))
    print("%s: 1 failed (setup)" % prog)
    return 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", required=True, choices=SERIES)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--timeout", type=int, default=None,
                    help="hard limit for the VM run in seconds (default 600, 1200 with --bench)")
    ap.add_argument("--bench", action="store_true", help="also run the wakeup-latency benchmark")
    ap.add_argument("--bench-args", default="", help="options for lnbench in the VM")
    ap.add_argument("--latniced", help="latniced binary to copy into the VM and check")
    ap.add_argument("--latnicectl", help="latnicectl binary to copy into the VM")
    ap.add_argument("--smp", type=int, default=2, help="virtual CPUs of the VM (default 2)")
    ap.add_argument("--scx-latnice", help="scx_latnice (scheduler/) to check in the scx-6.12 VM")
    ap.add_argument("--scx-phase-ms", type=int, default=3000,
                    help="length of each measuring phase of the scx_latnice checks")
    ap.add_argument("--keep-work", action="store_true",
                    help="keep the run directory (initramfs, console log) after success")
    ap.add_argument("--allow-offset", action="store_true",
                    help="accept hunks that apply at an offset (another Debian revision)")
    ap.add_argument("--kernel", help="boot this bzImage instead of building one "
                    "(it must carry the series)")
    ap.add_argument("--build-only", action="store_true",
                    help="build (or find in the cache) the kernel, print its path, do not boot")
    ap.add_argument("-v", "--verbose", action="store_true", help="echo the whole console")
    args = ap.parse_args()
    if args.timeout is None:
        args.timeout = 1200 if args.bench else 600
    for opt in ("latniced", "latnicectl", "scx_latnice"):
        path = getattr(args, opt)
        if path:
            if not os.access(path, os.X_OK):
                print("vmtest: --%s %s is not an executable" % (opt.replace("_", "-"), path))
                return 2
            setattr(args, opt, os.path.abspath(path))

    timings = {}
    try:
        return run_series(args, timings)
    finally:
        write_phases("vm " + args.series, timings)


def run_series(args, timings):
    work = os.path.join(WORK_ROOT, args.series)
    t0 = time.time()
    try:
        qemu = need_tool("qemu-system-x86_64", "qemu-system-x86")
        for tool, pkg in (("make", "make"), ("gcc", "gcc"), ("patch", "patch"),
                          ("tar", "tar"), ("xz", "xz-utils"), ("bc", "bc"),
                          ("flex", "flex"), ("bison", "bison")):
            need_tool(tool, pkg)
        os.makedirs(work, exist_ok=True)
        lock = open(os.path.join(work, ".lock"), "w")
        try:
            import fcntl
            fcntl.flock(lock, fcntl.LOCK_EX)
        except ImportError:
            pass
        image = args.kernel or build_kernel(args.series, args, work, timings)
        if args.build_only:
            log("series %s: kernel %s; %s" % (args.series, image, ", ".join(
                "%s %.0f s" % kv for kv in timings.items())))
            return 0
        rundir = os.path.join(work, "run")
        if os.path.exists(rundir):
            shutil.rmtree(rundir)
        os.makedirs(rundir)
        scx_tool = os.path.join(os.path.dirname(image), "scx_simple")
        if args.series.startswith("scx-") and not os.path.exists(scx_tool):
            raise Failure("no scx_simple next to %s" % image)
        initrd = make_initramfs(args.series, args, rundir, os.path.join(rundir, "tests.log"), scx_tool)
        t = time.time()
        lines, timed_out, console = boot(qemu, image, initrd, args, rundir)
        timings["boot+tests"] = time.time() - t
    except (Skip, Failure) as e:
        return setup_exit("vmtest", e)

    results = parse_results(lines, timed_out, console, args.timeout)
    if args.bench and not any(r[1] == "bench" for r in results):
        results.append(("FAIL", "bench", "no benchmark result"))

    counts = print_results("vmtest: results for series %s:" % args.series, results)
    for line in lines:
        if line.startswith("LNBENCH summary") or line.startswith("LNBENCH ratio"):
            print("  " + line)
    timings["total"] = time.time() - t0
    print("vmtest: series %s: %d passed, %d failed, %d skipped; %s" % (
        args.series, counts["PASS"], counts["FAIL"], counts["SKIP"],
        ", ".join("%s %.0f s" % kv for kv in timings.items())))
    print("vmtest: console log: %s" % console)
    if counts["FAIL"] == 0 and not args.keep_work:
        for f in os.listdir(rundir):
            if f != "console.log":
                p = os.path.join(rundir, f)
                shutil.rmtree(p) if os.path.isdir(p) else os.unlink(p)
    return min(counts["FAIL"], EXIT_SKIP - 1)


if __name__ == "__main__":
    sys.exit(main())
