#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# An exec flood at this machine's maximum rate (one fork+exec worker per CPU, a static no-op
# program) for 60 s (LNROBUST_FLOOD_SECONDS) with a Cmdline= rule present (the biggest records),
# against the ASan daemon as the installed unit, whose WatchdogSec= is armed (defects 4, 5).
# Meanwhile a loop of GetTask calls (10 s D-Bus timeout each) must keep being answered; the max
# latency is reported, not judged. Afterwards: no restart, no watchdog timeout, the guard keeps
# its value; EventsSeen/EventsLost/Rescans are printed.
NAME_PREFIX=rb-flood
. "$(dirname "$(readlink -f "$0")")/lib.sh"
SECS=${LNROBUST_FLOOD_SECONDS:-60}
LNSPAWN=${LATNICE_LNSPAWN:?} LNNOP=${LATNICE_LNNOP:?}
robust_setup
cp "$LNSPAWN" "$WORK/bin/lnspawn"
cp "$LNNOP" "$WORK/bin/lnnop"
cp /bin/sleep "$WORK/bin/lnt-fguard"
cat > "$WORK/root/etc/latnice.d/50-flood.conf" <<'CONF'
[Process flood-cmdline]
Cmdline=--lnt-flood-marker
LatencyNice=3

[Process guard]
Comm=lnt-fguard
LatencyNice=-4
CONF
cat > "$WORK/gettask-loop.py" <<'PYEOF'
# gettask-loop.py SECONDS PID: GetTask(PID) in a loop, each call with a 10 s timeout
import sys, time, dbus
secs, pid = float(sys.argv[1]), int(sys.argv[2])
bus = dbus.SystemBus()
n = errs = 0
worst = 0.0
names = {}
end = time.monotonic() + secs
while time.monotonic() < end:
    t = time.monotonic()
    try:
        bus.call_blocking("org.latnice1", "/org/latnice1", "org.latnice1.Manager", "GetTask", "u",
                          [dbus.UInt32(pid)], timeout=10)
    except dbus.DBusException as e:
        errs += 1
        names[e.get_dbus_name()] = names.get(e.get_dbus_name(), 0) + 1
    worst = max(worst, time.monotonic() - t)
    n += 1
    time.sleep(0.05)
print(f"gettask: calls {n} errors {errs} max latency {worst * 1000:.1f} ms {names if names else ''}")
sys.exit(1 if errs else 0)
PYEOF
chmod -R a+rX "$WORK"
robust_start
wd=$(in_ systemctl show -P WatchdogUSec latniced.service)
check "the watchdog is armed for latniced.service (WatchdogUSec=$wd)" [ -n "$wd" -a "$wd" != 0 -a "$wd" != infinity ]
check "the daemon got WATCHDOG_USEC" in_ grep -qz '^WATCHDOG_USEC=' "/proc/$DPID/environ"
g=$(spawn guard "$IN/bin/lnt-fguard" 1000)
check "the guard $g gets -4" wait_slice "$g" "$(S -4)"
counters() { echo "EventsSeen $(prop EventsSeen) EventsLost $(prop EventsLost) Rescans $(prop Rescans)"; }
note "before the flood: $(counters)"

in_ $PY "$IN/gettask-loop.py" "$((SECS + 2))" "$g" > "$WORK/gettask.out" 2>&1 &
gl=$!
n=$(nproc)
storm=$(in_ "$IN/bin/lnspawn" storm "$SECS" "$n" 0 0 /dev/null "$IN/bin/lnnop" "$IN/bin/lnnop" 0)
note "flood: $n workers, $SECS s: $storm (execs, execs/s)"
wait $gl
grc=$?
note "$(cat "$WORK/gettask.out")"
check "GetTask kept answering during the flood (every call within its 10 s timeout)" [ $grc = 0 ]
note "after the flood: $(counters)"
check "the flood ran ($(awk '{ print $1 }' <<< "$storm") execs)" [ "$(awk '{ print $1 }' <<< "${storm:-0}")" -gt 0 ]
check "the daemon did not restart (pid $(daemon_pid), was $DPID; NRestarts $(restarts))" \
        [ "$(daemon_pid)" = "$DPID" -a "$(restarts)" = 0 ]
check "no watchdog timeout in the journal" bash -c "! $L exec $NAME journalctl --no-pager -q -u latniced | grep -qi 'watchdog timeout'"
check "the guard still has -4 ($(slice_in "$g"))" [ "$(slice_in "$g")" = "$(S -4)" ]
p=$(spawn after "$IN/bin/lnt-fguard" 1000)
check "a new matching exec after the flood is applied" wait_slice "$p" "$(S -4)"
robust_finish
