#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# [Unit] rules and latniced.service against a real systemd and a real system bus
# (tests/harness/lntest-systemd): the installed unit (hardening and all) runs the build tree's
# latniced on a rule tree bound into the container at /run/lnroot, and every task of the units
# is checked in /proc/PID/task/TID/sched (this kernel has no cgroup knob: values go per task as
# EEVDF slices, the mapping of daemon/sched-map.c). Then latniced without systemd on its bus, on the host.
#
#   test-units.sh LATNICED LATNICECTL LATNICED_SERVICE
#
# Exit: 0 pass, 1 fail, 77 skip (no contained systemd here, or no custom-slice backend).

set -uo pipefail

HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
LATNICED=$(readlink -f "${1:?usage: test-units.sh LATNICED LATNICECTL LATNICED_SERVICE}")
LATNICECTL=$(readlink -f "${2:?}")
SERVICE=$(readlink -f "${3:?}")
SRC=$(readlink -f "$HERE/../..")
NAME=units-$$
pids_host=()

. "$HERE/../harness/testlib.sh"
check() { # check DESCRIPTION CMD...
        local what=$1
        shift
        if "$@"; then pass "$what"; else fail "$what"; return 1; fi
}

[[ $EUID == 0 ]] || { echo "SKIP: needs root"; exit 77; }
WORK=$(mktemp -d /tmp/lntest-units.XXXXXX) || exit 1
cleanup() {
        local p
        if [[ $started == 1 && -d $STATE ]]; then
                "$L" stop "$NAME" --kill >/dev/null 2>&1
        fi
        for p in "${pids_host[@]}"; do
                kill "$p" 2>/dev/null
        done
        rm -rf -- "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# daemon/sched-map.c: slice(ln) = base * 1024 / weight(ln), clamped to 0.1..100 ms; base is the default slice.
base=$(awk '$1 == "se.slice" { print $3 }' /proc/self/sched)
[[ -n $base ]] || { echo "SKIP: /proc/PID/sched shows no se.slice (not an EEVDF kernel)"; exit 77; }
declare -A weight=([-10]=9548 [-5]=3121 [3]=526 [5]=335 [7]=214)
S() { echo $((base * 1024 / weight[$1])); }
echo "     default slice $base ns; -10 -> $(S -10), -5 -> $(S -5), 3 -> $(S 3), 5 -> $(S 5)"

# --- the rule tree, the units, the D-Bus policy ---------------------------------------------------
mkdir -p "$WORK/root/etc/latnice.d" "$WORK/units/latniced.service.d" "$WORK/policy" "$WORK/bin"
cp "$SERVICE" "$WORK/units/latniced.service"
# the installed unit, run from the build tree; --root: the rules below are /run/lnroot inside
cat > "$WORK/units/latniced.service.d/50-test.conf" <<EOF
[Service]
ExecStart=
ExecStart=/run/lnbin/latniced --root=/run/lnroot --no-profile --log-level=debug
EOF
cat > "$WORK/units/lntest-svc.service" <<'EOF'
[Unit]
Description=latnice test service
[Service]
ExecStart=/bin/sleep 300
EOF
cp "$SRC/conf/dbus-1/system.d/org.latnice1.conf" "$WORK/policy/"
cp /bin/sleep "$WORK/bin/lntest-proc"
# The container has its own /tmp and /run: the binaries go in through a bind mount, wherever the
# build tree is.
cp "$LATNICED" "$LATNICECTL" "$WORK/bin/"
write_rules() { # write_rules GAME_VALUE
        cat > "$WORK/root/etc/latnice.d/50-units.conf" <<EOF
# a process rule decides its process, even inside a unit with a rule
[Process lntest-proc]
Comm=lntest-proc
LatencyNice=3

[Unit game.slice]
LatencyNice=$1

[Unit lntest-svc.service]
LatencyNice=5

# no such unit when latniced starts: applies when it appears
[Unit later-*.slice]
LatencyNice=-5

# many followed units (bus match limits)
[Unit lnt-many-*.service]
LatencyNice=5
EOF
}
write_rules -10

start_contained --unit-dir "$WORK/units" --policy-dir "$WORK/policy" \
        --bind "$WORK/root:/run/lnroot" --bind "$WORK/bin:/run/lnbin"
pass "contained systemd is up (pid $("$L" pid "$NAME"))"

# --- helpers that look inside -------------------------------------------------------------------
# Every task (thread) of every process in a cgroup subtree has se.slice $2. Prints the odd ones.
tasks_have() { # tasks_have CGROUP SLICE_NS
        in_ sh -c '
                n=0 bad=0
                for procs in $(find "/sys/fs/cgroup/unified$1" -name cgroup.procs); do
                        for p in $(cat "$procs"); do
                                for t in /proc/$p/task/*; do
                                        s=$(awk "\$1 == \"se.slice\" { print \$3 }" "$t/sched" 2>/dev/null) || continue
                                        [ -n "$s" ] || continue
                                        n=$((n + 1))
                                        if [ "$s" != "$2" ]; then
                                                echo "    $t ($(cat $t/comm 2>/dev/null)): se.slice $s, want $2"
                                                bad=1
                                        fi
                                done
                        done
                done
                [ $n -gt 0 ] || { echo "    no tasks in $1"; exit 1; }
                [ $bad = 0 ] && echo "    $n tasks in $1 at $2"
                exit $bad' sh "$1" "$2"
}
pid_has() { # pid_has PID SLICE_NS: every thread of PID
        in_ sh -c 'for t in /proc/$1/task/*; do
                        s=$(awk "\$1 == \"se.slice\" { print \$3 }" $t/sched)
                        [ "$s" = "$2" ] || { echo "    $t: se.slice $s, want $2"; exit 1; }
                done' sh "$1" "$2"
}
all_have() { # all_have SLICE_NS CGROUP...
        local v=$1 cg
        shift
        for cg; do
                tasks_have "$cg" "$v" || return 1
        done
}
mainpid() { in_ systemctl show -P MainPID "$1"; }
daemon_ok() { # active, never restarted
        [[ $(in_ systemctl show -P ActiveState latniced.service) == active &&
           $(in_ systemctl show -P NRestarts latniced.service) == 0 ]]
}
journal() { in_ journalctl -u latniced.service --no-pager -o cat | grep -v '^libbpf: '; }
run() { in_ systemd-run -q "$@"; }

# --- start ----------------------------------------------------------------------------------------
check "systemctl start latniced (Type=notify: active only after READY=1)" in_ systemctl start latniced.service
if ! check "latniced.service is active" [ "$(in_ systemctl show -P ActiveState latniced.service)" = active ]; then
        in_ journalctl -u latniced.service --no-pager -o cat | tail -n 40
        exit 1
fi
status=$(in_ systemctl show -P StatusText latniced.service)
check "its STATUS= arrived ($status)" [ -n "$status" ]
check "it owns org.latnice1 (D-Bus policy installed)" eventually 5 in_ busctl status org.latnice1
# defect 12: the securebits the unit asks for are the ones set, and MEMLOCK is raised by systemd
# (systemd shows the bits as a number: 1 is noroot, 2 noroot-locked)
sb=$(in_ systemctl show -P SecureBits latniced.service)
check "SecureBits= sets noroot, not only its lock (got: $sb)" sh -c "[ \$(( $sb & 3 )) = 3 ]"
lpid=$(in_ systemctl show -P MainPID latniced.service)
memlock=$(in_ awk '/^Max locked memory/ { print $4 }' "/proc/$lpid/limits")
check "the unit asks for LimitMEMLOCK=infinity" [ "$(in_ systemctl show -P LimitMEMLOCK latniced.service)" = infinity ]
if (( $(awk '/^CapEff/ { print $2 }' /proc/self/status | sed 's/^/0x/') >> 24 & 1 )); then
        check "RLIMIT_MEMLOCK of latniced is unlimited (got: $memlock)" [ "$memlock" = unlimited ]
else
        echo "     this machine cannot raise RLIMIT_MEMLOCK (no CAP_SYS_RESOURCE here): latniced has $memlock"
fi
capeff=$(in_ awk '/^CapEff/ { print $2 }' "/proc/$lpid/status")
# CAP_SYS_NICE (23), CAP_PERFMON (38), CAP_BPF (39)
check "latniced has CAP_SYS_NICE, CAP_BPF, CAP_PERFMON and nothing else (CapEff $capeff)" \
        [ "$((16#$capeff))" = "$(( (1 << 23) | (1 << 38) | (1 << 39) ))" ]

# --- slices, services, processes ----------------------------------------------------------------
threads='import threading, time; [threading.Thread(target=time.sleep, args=(300,)).start() for _ in range(3)]; time.sleep(300)'
check "systemd-run --slice=game.slice (a process with 4 threads)" run --slice=game.slice --unit=lnt-g1 /usr/bin/python3 -c "$threads"
check "every task of lnt-g1 gets LatencyNice=-10 ($(S -10) ns)" eventually 10 tasks_have /game.slice/lnt-g1.service "$(S -10)"
check "a unit started in the slice later (two processes)" \
        run --slice=game.slice --unit=lnt-g2 sh -c 'sleep 300 & exec sleep 301'
check "every task of lnt-g2 gets it too" eventually 10 tasks_have /game.slice/lnt-g2.service "$(S -10)"
check "a process rule in the slice" run --slice=game.slice --unit=lnt-g3 /run/lnbin/lntest-proc 300
check "the process rule decides its process: LatencyNice=3, not the slice's -10" \
        eventually 10 tasks_have /game.slice/lnt-g3.service "$(S 3)"
gpid=$(mainpid lnt-g1.service)
explain=$(in_ /run/lnbin/latnicectl --root=/run/lnroot --no-profile explain --pid="$gpid")
check "latnicectl explain names the unit rule for a game.slice task" \
        grep -q 'Matched:  \[Unit game.slice\].*LatencyNice=-10, through the unit' <<< "$explain"
explain=$(in_ /run/lnbin/latnicectl --root=/run/lnroot --no-profile explain --pid="$(mainpid lnt-g3.service)")
check "... and the process rule, with the unit rule second, for lntest-proc" \
        grep -q 'Unit:     \[Unit game.slice\]' <<< "$explain"

check "systemctl start lntest-svc.service (not loaded when latniced started)" in_ systemctl start lntest-svc.service
check "the unit rule for the service applies: LatencyNice=5" \
        eventually 10 tasks_have /system.slice/lntest-svc.service "$(S 5)"

# a process that moves into the slice without an exec: StartTransientUnit with PIDs=
check "a process outside the slice" run --unit=lnt-outside sleep 300
opid=$(mainpid lnt-outside.service)
check "  has the default slice" pid_has "$opid" "$base"
check "  moved into game.slice (a new scope with PIDs=$opid)" \
        in_ busctl call org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager \
        StartTransientUnit 'ssa(sv)a(sa(sv))' lnt-moved.scope fail 2 PIDs au 1 "$opid" Slice s game.slice 0 \
        >/dev/null
check "  gets LatencyNice=-10 (rescan after JobRemoved)" eventually 10 pid_has "$opid" "$(S -10)"

# --- systemd and the bus restart ----------------------------------------------------------------
check "systemctl daemon-reexec" in_ systemctl daemon-reexec
check "a new unit in the slice after the reexec" eventually 10 run --slice=game.slice --unit=lnt-g4 sleep 300
check "  is applied" eventually 10 tasks_have /game.slice/lnt-g4.service "$(S -10)"
check "systemctl daemon-reload" in_ systemctl daemon-reload
check "systemctl restart dbus" in_ systemctl restart dbus.service
check "the slice keeps its values meanwhile" tasks_have /game.slice/lnt-g1.service "$(S -10)"
check "a new unit in the slice after the bus restart" eventually 15 run --slice=game.slice --unit=lnt-g5 sleep 300
check "  is applied once latniced is back on the bus" eventually 15 tasks_have /game.slice/lnt-g5.service "$(S -10)"
check "latniced is back on the bus" eventually 15 in_ busctl status org.latnice1
check "latniced never restarted" daemon_ok

# --- bad input ------------------------------------------------------------------------------------
check "a unit that did not exist at start: systemd-run --slice=later-x.slice" \
        run --slice=later-x.slice --unit=lnt-later sleep 300
check "  gets [Unit later-*.slice]'s LatencyNice=-5" eventually 10 tasks_have /later.slice/later-x.slice "$(S -5)"
# units that vanish while latniced applies: short-lived units, stopped while they start
for i in $(seq 1 15); do
        in_ systemd-run -q --no-block --slice=game.slice --unit="lnt-flap-$i" sh -c 'sleep 0.0$RANDOM' &
        in_ systemctl stop --no-block "lnt-flap-$((i - 1)).service" >/dev/null 2>&1 &
done
wait
sleep 1
check "units vanishing mid-apply: latniced is fine" daemon_ok

# --- many followed units, unrelated jobs ------------------------------------------------------------
# The bus limits matches per connection (dbus-daemon 512, dbus-broker 256): one match per followed
# unit runs into it. latniced's match count must not grow with the units it follows.
lnowner() { in_ busctl call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus GetNameOwner s org.latnice1 |
        awk '{ gsub(/"/, "", $2); print $2 }'; }
lnmatches() { in_ busctl call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus.Debug.Stats \
        GetConnectionStats s "$(lnowner)" | grep -o '"MatchRules" u [0-9]*' | awk '{ print $3 }'; }
lnprop() { in_ busctl get-property org.latnice1 /org/latnice1 org.latnice1.Manager "$1" | awk '{ print $2 }'; }
m0=$(lnmatches)
check "latniced's bus matches can be counted (Debug.Stats: ${m0:-none})" [ -n "$m0" ]
for i in $(seq 1 40); do
        in_ systemd-run -q --no-block --unit="lnt-many-$i" sleep 300
done
check "40 more followed units (lnt-many-*.service) get LatencyNice=5" \
        eventually 20 tasks_have /system.slice/lnt-many-40.service "$(S 5)"
m1=$(lnmatches)
check "  latniced's bus matches did not grow with them ($m0 -> $m1)" [ -n "$m1" ] && [ "$m1" -le "$((m0 + 2))" ]
# A finished job of a unit no rule names cannot have put a process into a followed unit without
# an exec: it must not walk the followed units' cgroups (UnitWalks counts the walks).
w0=$(lnprop UnitWalks)
for i in $(seq 1 20); do
        in_ systemd-run -q --wait --unit="lnt-unrelated-$i" true
done
sleep 1
w1=$(lnprop UnitWalks)
check "20 jobs of unrelated units walked no followed unit (UnitWalks $w0 -> $w1)" [ -n "$w1" ] && [ "$w1" = "$w0" ]
for i in $(seq 1 40); do
        in_ systemctl stop --no-block "lnt-many-$i.service"
done

# --- reload ---------------------------------------------------------------------------------------
write_rules -5
check "systemctl reload latniced (game.slice now -5)" in_ systemctl reload latniced.service
check "every task in the slice follows" eventually 10 tasks_have /game.slice/lnt-g1.service "$(S -5)"
check "  lnt-g2, lnt-g4, lnt-g5 and the moved process too" eventually 10 all_have "$(S -5)" \
        /game.slice/lnt-g2.service /game.slice/lnt-g4.service /game.slice/lnt-g5.service /game.slice/lnt-moved.scope
check "  the process rule still decides lntest-proc" tasks_have /game.slice/lnt-g3.service "$(S 3)"

# --- security -------------------------------------------------------------------------------------
sec=$(in_ systemd-analyze security --no-pager latniced.service 2>&1)
score=$(sed -n 's/.*Overall exposure level for latniced.service: \([0-9.]*\).*/\1/p' <<< "$sec")
echo "$sec" | grep -E '^[✗✓]|^  *[✗✓]' | grep '✗' | sed 's/^/     /'
echo "     systemd-analyze security latniced.service: ${score:-?}"
check "systemd-analyze security: exposure ${score:-?} <= 2.0" awk -v s="${score:-99}" 'BEGIN { exit !(s <= 2.0) }'

# --- stop: values still ours are restored, a foreign one is left -------------------------------
fpid=$(in_ sh -c 'for p in $(cat /sys/fs/cgroup/unified/game.slice/lnt-g2.service/cgroup.procs); do
        [ "$(cat /proc/$p/comm)" = sleep ] && [ "$(cat /proc/$p/task/*/stat | wc -l)" = 1 ] && { echo $p; exit; }; done')
# somebody else sets a value on one task (sched_setattr directly, as any tool would)
check "a foreign value on $fpid (LatencyNice=7)" in_ /usr/bin/python3 -c "
import ctypes, os, struct, sys
attr = struct.pack('IIQiIQQQ', 48, 0, 0, 0, 0, $(S 7), 0, 0)
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
if libc.syscall(314, int(sys.argv[1]), attr, 0) != 0:
        sys.exit('sched_setattr: ' + os.strerror(ctypes.get_errno()))" "$fpid"
check "systemctl stop latniced" in_ systemctl stop latniced.service
check "every task of lnt-g1 is back at the default slice" tasks_have /game.slice/lnt-g1.service "$base"
check "lnt-g4, lnt-g5, the moved process, the service, the later slice and lntest-proc too" all_have "$base" \
        /game.slice/lnt-g4.service /game.slice/lnt-g5.service /game.slice/lnt-moved.scope \
        /system.slice/lntest-svc.service /later.slice/later-x.slice /game.slice/lnt-g3.service
check "the foreign value is left alone" pid_has "$fpid" "$(S 7)"
stopped=$(journal | grep -c 'Restored the previous values')
check "latniced said it restored" [ "$stopped" -ge 1 ]

if ((failures)); then
        echo "--- latniced's journal (contained systemd)"
        journal | head -n 60
        echo "..."
        journal | tail -n 40
fi

# --- stop the container: the test kills its systemd and removes the cgroups it left -------------
stop_contained_killed

# --- systemd not on the bus (on the host, with a private bus that has no systemd) --------------
mkdir -p "$WORK/nosd/etc/latnice.d"
cat > "$WORK/nosd/etc/latnice.d/50-units.conf" <<EOF
[Process lntest-proc]
Comm=lntest-proc
LatencyNice=3

[Unit game.slice]
LatencyNice=-10
EOF
dbus-daemon --session --address="unix:path=$WORK/bus" --nofork --nopidfile >/dev/null 2>&1 &
pids_host+=($!)
eventually 5 test -S "$WORK/bus" >/dev/null
DBUS_SYSTEM_BUS_ADDRESS="unix:path=$WORK/bus" "$LATNICED" --root="$WORK/nosd" --state-dir="$WORK/nosd-state" --no-profile \
        > "$WORK/nosd.log" 2>&1 &
lpid=$!
pids_host+=($lpid)
check "latniced starts without systemd on its bus" eventually 10 grep -q 'Ready:' "$WORK/nosd.log"
"$WORK/bin/lntest-proc" 300 &
ppid_=$!
pids_host+=($ppid_)
check "  process rules work: lntest-proc gets LatencyNice=3" eventually 10 sh -c \
        "awk '\$1 == \"se.slice\" { print \$3 }' /proc/$ppid_/sched | grep -qx $(S 3)"
check "  it says unit rules are inactive" eventually 10 grep -q '\[Unit\] rules are inactive' "$WORK/nosd.log"
kill "$lpid"
wait "$lpid"
rc=$?
check "  and it stops cleanly (exit status $rc)" [ "$rc" = 0 ]
check "  restoring lntest-proc" sh -c "awk '\$1 == \"se.slice\" { print \$3 }' /proc/$ppid_/sched | grep -qx $base"
if [[ $failures != 0 && -f $WORK/nosd.log ]]; then
        echo "--- latniced without systemd"
        cat "$WORK/nosd.log"
fi

if ((failures)); then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all checks passed"
exit 0
