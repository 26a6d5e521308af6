# SPDX-License-Identifier: LGPL-2.1-or-later
# Shared by the tests that run latniced on this host (test-daemon.sh,
# test-renames.sh, test-ancestors.sh): source it right after making $T
# (the test's directory), with $LATNICED and $LNSPAWN set. It owns the EXIT
# trap: the daemon, the processes in $PIDS (kill_pid, which a test may
# redefine), a tracefs mounted for the test, a test's own cleanup_extra,
# then $T go. The summary is the caller's, from $FAILS.

FAILS=0 DPID= PIDS=() TRACEFS_MOUNTED=
kill_pid() { kill "$1" 2>/dev/null; }
lib_cleanup() {
        [ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
        [ -n "$TRACEFS_MOUNTED" ] && umount /sys/kernel/tracing
        for p in "${PIDS[@]}"; do kill_pid "$p"; done
        wait 2>/dev/null
        if declare -F cleanup_extra >/dev/null; then cleanup_extra; fi
        rm -rf "$T"
}
trap lib_cleanup EXIT

# Every test here runs latniced and sets values on other processes; need_btf: the test needs the BPF
# source (CO-RE), not only whatever source latniced falls back to.
[ "$(id -u)" -eq 0 ] || { echo "needs root (BPF, sched_setattr on other processes)"; exit 77; }
# latniced here runs in the host's pid namespace and sees every process of the machine: two copies of
# one test at once (two checkouts' suites on one machine) apply each other's rules to each other's
# processes and fail ("values left after stop", "no records taken over"). One copy of each test at a
# time, machine-wide; the tests differ in their names and rules, so different ones still run together.
mkdir -p /run/lock
exec {LIB_LOCK_FD}>"/run/lock/latnice-test-${0##*/}.lock"
flock -w 200 "$LIB_LOCK_FD" ||
        { echo "FAIL - waited 200 s for another copy of ${0##*/} to end (its lock in /run/lock)"; exit 1; }
need_btf() { [ -e /sys/kernel/btf/vmlinux ] || { echo "no kernel BTF at /sys/kernel/btf/vmlinux"; exit 77; }; }

# The checks read what latniced set in /proc/PID/sched's se.slice: EEVDF custom slices (Linux >= 6.12).
read -r BASE SLICE10 < <("$LNSPAWN" base)   # default slice, slice of LatencyNice=-10
if [ "${BASE:-0}" = 0 ] || ! grep -q '^se.slice' /proc/self/sched; then
        echo "this kernel has no EEVDF custom slices (sched_getattr reports no slice, or no se.slice in /proc/PID/sched)"
        exit 77
fi

ok() { echo "ok - $*"; }
fail() { echo "FAIL - $*"; FAILS=$((FAILS + 1)); }
slice_of() { awk '/^se.slice/ {print $3}' "/proc/$1/sched" 2>/dev/null; }
expect_slice() { # PID SLICE WHAT
        local s
        for _ in $(seq 50); do s=$(slice_of "$1"); [ "$s" = "$2" ] && break; sleep 0.05; done
        if [ "$s" = "$2" ]; then ok "$3 (se.slice $s)"; else fail "$3: se.slice ${s:-gone}, expected $2"; fi
}
bg() { "$@" & PIDS+=($!); LAST=$!; }

start_daemon() { # extra args...
        : > "$T/log"
        "$LATNICED" --root "$T/root" --state-dir "$T/state" --no-profile --no-bus --log-level debug "$@" >"$T/log" 2>&1 &
        DPID=$!
        for _ in $(seq 600); do grep -q "^Ready:" "$T/log" && return 0; kill -0 "$DPID" 2>/dev/null || break; sleep 0.05; done
        echo "latniced did not get ready:"; cat "$T/log"; return 1
}
stop_daemon() {
        kill -TERM "$DPID"; wait "$DPID"; local rc=$?; DPID=
        return $rc
}
rules() { mkdir -p "$T/root/etc/latnice.d"; cat > "$T/root/etc/latnice.d/50-test.conf"; }
rules_add() { cat >> "$T/root/etc/latnice.d/50-test.conf"; } # more of them, after those rules() wrote
