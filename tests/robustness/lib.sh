# SPDX-License-Identifier: LGPL-2.1-or-later
# Shared by the robustness tests: a contained systemd (tests/harness/lntest-systemd)
# running the installed latniced.service with the ASan+UBSan build of the daemon, a rule tree and
# a work directory bound in at /run/lnrobust, and the checks on the sanitizer logs.
#
# A test sets NAME_PREFIX, sources this with the meson arguments
#   LATNICED_ASAN LATNICECTL LATNICED_SERVICE SOURCE_ROOT
# then calls robust_setup, writes rules into $WORK/root/etc/latnice.d, robust_start, and ends
# with robust_finish (clean stop of the daemon, sanitizer logs, summary, exit code).

set -uo pipefail

RHERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
ASAN_BIN=$(readlink -f "${1:?usage: TEST LATNICED_ASAN LATNICECTL LATNICED_SERVICE SOURCE_ROOT}")
CTL_BIN=$(readlink -f "${2:?}")
SERVICE=$(readlink -f "${3:?}")
SRC=$(readlink -f "${4:-$RHERE/../..}")
NAME=${NAME_PREFIX:-robust}-$$
IN=/run/lnrobust        # $WORK as seen inside
PY=/usr/bin/python3
SAN_OPTS_ASAN="detect_leaks=1:abort_on_error=1:log_path=$IN/san/asan${SAN_EXTRA:+:$SAN_EXTRA}"
SAN_OPTS_UBSAN="halt_on_error=1:print_stacktrace=1:log_path=$IN/san/ubsan"
T0=$EPOCHSECONDS
host_pids=()

. "$SRC/tests/harness/testlib.sh"
# pass/fail from testlib print "ok   - "; the suite's lines are "ok - " / "FAIL - "
pass() { echo "ok - $*"; }
check() { # check DESCRIPTION CMD...: CMD's output is kept out of the log
        local what=$1
        shift
        if "$@" >/dev/null 2>&1; then pass "$what"; else fail "$what"; return 1; fi
}
note() { echo "     $*"; }
skip_test() { echo "SKIP: $*"; exit 77; }

exec </dev/null
[[ $EUID == 0 ]] || skip_test "needs root (contained systemd, BPF, sched_setattr on other users' tasks)"
[[ -x $ASAN_BIN ]] || { echo "FAIL - $ASAN_BIN is not built"; exit 1; }
command -v busctl >/dev/null || skip_test "busctl is missing"
$PY -c 'import dbus' 2>/dev/null || skip_test "python3-dbus is missing"
grep -q '^se.slice' /proc/self/sched || skip_test "this kernel has no EEVDF custom slices (no se.slice in /proc/PID/sched)"

# The sanitizer runtime must work here at all (shadow memory mapping, no conflicting
# ulimit -v): a daemon that cannot even print its version under ASan says nothing.
san_probe=$(ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1 \
        "$ASAN_BIN" --version 2>&1) ||
        skip_test "the ASan+UBSan runtime does not work here: $(head -c 300 <<< "$san_probe")"
grep -q __asan_init "$ASAN_BIN" || { echo "FAIL - $ASAN_BIN is not an ASan build"; exit 1; }

WORK=$(mktemp -d /tmp/lnrobust.XXXXXX) || exit 1
chmod 755 "$WORK"
robust_cleanup() {
        local p
        for p in "${host_pids[@]}"; do kill "$p" 2>/dev/null; done
        if [[ $started == 1 && -d $STATE ]]; then
                "$L" stop "$NAME" --kill >/dev/null 2>&1
        fi
        # after the container: its processes are gone (userdel refuses users with processes)
        [[ $(type -t robust_cleanup_extra) == function ]] && robust_cleanup_extra
        rm -rf -- "$WORK"
}
trap robust_cleanup EXIT
trap 'exit 1' INT TERM

# S LN: the slice the daemon sets for latency nice LN (the mapping in daemon/sched-map.c).
BASE_SLICE=$(awk '$1 == "se.slice" { print $3 }' /proc/self/sched)
WEIGHTS=(88761 71755 56483 46273 36291 29154 23254 18705 14949 11916 9548 7620 6100 4904 3906
        3121 2501 1991 1586 1277 1024 820 655 526 423 335 272 215 172 137 110 87 70 56 45 36 29 23 18 15)
S() {
        local s
        (($1 == 0)) && { echo "$BASE_SLICE"; return; }
        s=$((BASE_SLICE * 1024 / WEIGHTS[$1 + 20]))
        ((s < 100000)) && s=100000
        ((s > 100000000)) && s=100000000
        echo "$s"
}
# slice of a pid inside (namespace pid), or of one of its threads: slice_in PID [TID]
slice_in() { in_ awk '$1 == "se.slice" { print $3 }' "/proc/$1/task/${2:-$1}/sched" 2>/dev/null; }
# wait_slice PID SLICE [SECONDS]: the slice becomes SLICE
wait_slice() {
        local i s
        for ((i = 0; i < ${3:-5} * 10; i++)); do
                s=$(slice_in "$1")
                [[ $s == "$2" ]] && return 0
                sleep 0.1
        done
        echo "slice of $1 is ${s:-gone}, expected $2"
        return 1
}

robust_setup() {
        mkdir -p "$WORK/root/etc/latnice.d" "$WORK/units/latniced.service.d" "$WORK/policy" \
                "$WORK/bin" "$WORK/san" "$WORK/state"
        chmod 1777 "$WORK/san"
        cp "$ASAN_BIN" "$WORK/bin/latniced"
        cp "$CTL_BIN" "$WORK/bin/latnicectl"
        cp "$SERVICE" "$WORK/units/latniced.service"
        # The installed unit with its hardening and WatchdogSec=, running the ASan build. Two
        # relaxations, both for the sanitizer runtime only: LeakSanitizer stops the process with
        # ptrace(2) at exit (@debug is filtered, so no SystemCallFilter=), and the logs need a
        # writable place.
        cat > "$WORK/units/latniced.service.d/50-robust.conf" <<-UNIT
	[Service]
	ExecStart=
	ExecStart=$IN/bin/latniced --root=$IN/root --no-profile --log-level=debug ${DAEMON_ARGS:-}
	Environment=ASAN_OPTIONS=$SAN_OPTS_ASAN UBSAN_OPTIONS=$SAN_OPTS_UBSAN
	SystemCallFilter=
	ReadWritePaths=$IN/san
	UNIT
        cp "$SRC/conf/dbus-1/system.d/org.latnice1.conf" "$WORK/policy/"
        cat > "$WORK/call.py" <<'PYEOF'
# call.py METHOD SIG ARGS...: one org.latnice1.Manager call, prints "OK <reply>" or
# "ERROR <name> | <message>"; a timeout of 10 s.
import sys, os, dbus
method, sig, args = sys.argv[1], sys.argv[2], sys.argv[3:]
def conv(c, a):
    if c == "u": return dbus.UInt32(int(a))
    if c == "i": return dbus.Int32(int(a))
    if c == "h":  # "pid:N": a pidfd of N; else an fd number
        return dbus.types.UnixFd(os.pidfd_open(int(a[4:])) if a.startswith("pid:") else int(a))
    return a
vals = [conv(c, a) for c, a in zip(sig, args)]
o = dbus.Interface(dbus.SystemBus().get_object("org.latnice1", "/org/latnice1", introspect=False),
                   "org.latnice1.Manager")
try:
    r = getattr(o, method)(*vals, signature=sig if sig != "-" else "", timeout=10)
    print("OK", repr(r))
except dbus.DBusException as e:
    print("ERROR", e.get_dbus_name(), "|", e.get_dbus_message())
PYEOF

        # setslice.py SLICE_NS PROG ARGS...: a foreign custom slice on itself, then exec PROG
        # setslice.py SLICE_NS --pid PID: the same on a running process (its main thread)
        cat > "$WORK/setslice.py" <<'PYEOF'
import ctypes, os, struct, sys
attr = struct.pack("=IIQiIQQQ", 48, 0, 0, 0, 0, int(sys.argv[1]), 0, 0)
libc = ctypes.CDLL(None, use_errno=True)
pid = int(sys.argv[3]) if sys.argv[2] == "--pid" else 0
if libc.syscall(314, pid, ctypes.c_char_p(attr), 0) != 0:  # SYS_sched_setattr on x86_64
    sys.exit("sched_setattr: " + os.strerror(ctypes.get_errno()))
if not pid:
    os.execv(sys.argv[2], sys.argv[2:])
PYEOF
        chmod -R a+rX "$WORK"
}

# spawn NAME CMD...: CMD runs inside, detached (its parent is the container's systemd), as the
# same process (exec); its namespace pid is printed and kept in $WORK/NAME.pid.
spawn() {
        local f=$1 i
        shift
        rm -f "$WORK/$f.pid"
        in_ setsid -f sh -c 'echo $$ > "$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' "$IN/$f.pid" "$@" \
                </dev/null >/dev/null 2>&1
        for ((i = 0; i < 50; i++)); do
                [[ -s $WORK/$f.pid ]] && break
                sleep 0.1
        done
        cat "$WORK/$f.pid"
}

call() { in_ $PY "$IN/call.py" "$@"; }
call_nobody() { as_nobody $PY "$IN/call.py" "$@"; }
prop() { in_ busctl get-property org.latnice1 /org/latnice1 org.latnice1.Manager "$1" | awk '{ print $2 }'; }
daemon_pid() { in_ systemctl show -P MainPID latniced.service; }
restarts() { in_ systemctl show -P NRestarts latniced.service; }
rss_kb() { in_ awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

robust_start() { # robust_start [extra lntest-systemd start options]
        start_contained --unit-dir "$WORK/units" --policy-dir "$WORK/policy" --bind "$WORK:$IN" "$@"
        # no polkitd: refusals are latniced's own (AccessDenied), never a polkit prompt
        in_ systemctl mask -q --runtime polkit.service >/dev/null 2>&1
        if ! in_ systemctl start latniced.service; then
                fail "latniced.service (ASan build) starts"
                in_ journalctl --no-pager -u latniced -n 40
                robust_finish
        fi
        check "latniced.service (ASan build) is active and owns org.latnice1" \
                eventually 10 in_ busctl status org.latnice1
        DPID=$(daemon_pid)
}

# san_clean: no sanitizer report in the logs (files $WORK/san/*, and the journal).
san_reports() {
        cat "$WORK"/san/* 2>/dev/null
        in_ journalctl --no-pager -q -u latniced -o cat 2>/dev/null |
                grep -E 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:' || :
}
san_clean() {
        local r
        r=$(san_reports)
        [[ -z $r ]] && return 0
        echo "--- sanitizer report"
        head -n 80 <<< "$r"
        return 1
}

robust_finish() {
        if [[ $started == 1 && -d $STATE ]]; then
                if in_ systemctl is-active -q latniced.service; then
                        # a clean stop: LeakSanitizer runs at exit, the restore runs
                        check "latniced stops cleanly (exit 0 under ASan, leak check included)" \
                                in_ systemctl stop latniced.service
                        local res
                        res=$(in_ systemctl show -P Result latniced.service)
                        [[ $res == success ]] || fail "latniced.service result after stop: $res"
                fi
                if san_clean; then pass "no ASan/UBSan/LSan report"; else fail "no ASan/UBSan/LSan report"; fi
                if ((failures)); then
                        echo "--- latniced journal (last 60 lines)"
                        in_ journalctl --no-pager -u latniced -n 60 -o short-monotonic
                fi
        fi
        echo "     $(basename "$0"): $((EPOCHSECONDS - T0)) s"
        if ((failures)); then
                echo "$failures check(s) failed"
                exit 1
        fi
        echo "all checks passed"
        exit 0
}
