#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# [Daemon] Scheduler=latnice under a real systemd (tests/harness/lntest-systemd) and without one:
# the scheduler must not speak for latniced.service. A stand-in for scx_latnice (this kernel has
# no sched_ext) records its environment and cgroup, says READY=1 and a STATUS=, and, when told,
# STOPPING=1 and exits 1 as scx_latnice does after an ejection. latniced.service runs with
# NotifyAccess=all here (a drop-in), where a message from any process of its cgroup counts:
#  - under systemd the scheduler runs as scx_latnice.service, with nothing of latniced.service's
#    notify socket, watchdog or listen fds; latniced.service stays active with its own STATUS
#    after the scheduler's STATUS, STOPPING=1 and exit; `systemctl stop latniced` stops it too;
#  - latniced.service's sandbox lets it fill the scheduler's map of granted values: a map of that
#    layout pinned by hand where scx_latnice pins it gets the value of a process a rule matched;
#  - without systemd (latniced --no-bus, forking the scheduler itself) the child's environment
#    has no NOTIFY_SOCKET, WATCHDOG_* or LISTEN_* of latniced's.
#
#   test-scheduler-unit.sh LATNICED LATNICED_SERVICE SCX_LATNICE_SERVICE BUILD_DIR
#
# Exit: 0 pass, 1 fail, 77 skip (no contained systemd here).

set -uo pipefail

HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
LATNICED=$(readlink -f "${1:?usage: test-scheduler-unit.sh LATNICED LATNICED_SERVICE SCX_LATNICE_SERVICE BUILD_DIR}")
SERVICE=$(readlink -f "${2:?}")
SCX_SERVICE=$3
BUILD=$(readlink -f "${4:?}")
NAME=scxunit-$$
DPID=

. "$HERE/../harness/testlib.sh"
[[ $EUID == 0 ]] || { echo "SKIP: needs root"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: the stand-in scheduler is a python3 script"; exit 77; }
make_work lntest-scxunit
cleanup_all() {
        [[ -n $DPID ]] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
        work_cleanup
}
trap cleanup_all EXIT
CONF=$(build_daemon_conf "$BUILD")

# --- the stand-in scheduler: writes ../lnout/{env,cgroup} next to itself ------------------------
mkdir -p "$WORK/bin" "$WORK/lnout" "$WORK/root/$(dirname "$CONF")" "$WORK/root/etc/latnice.d" "$WORK/units"
cat > "$WORK/bin/scx-standin" <<'EOF'
#!/usr/bin/python3
# A stand-in for scx_latnice: records what it was given, speaks sd_notify, exits 1 when told.
import os, socket, sys, time
out = os.path.join(os.path.dirname(os.path.realpath(sys.argv[0])), "..", "lnout")
def notify(msg):
    addr = os.environ.get("NOTIFY_SOCKET")
    if not addr:
        return
    if addr[0] == "@":
        addr = "\0" + addr[1:]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        s.connect(addr)
        s.send(msg.encode())
    finally:
        s.close()
with open(os.path.join(out, "cgroup"), "w") as f:
    f.write(open("/proc/self/cgroup").read())
with open(os.path.join(out, "env.tmp"), "w") as f:
    for k, v in sorted(os.environ.items()):
        f.write("%s=%s\n" % (k, v))
os.rename(os.path.join(out, "env.tmp"), os.path.join(out, "env"))
notify("READY=1\nSTATUS=stand-in scheduler running")
while not os.path.exists(os.path.join(out, "go")):
    time.sleep(0.1)
notify("STATUS=stand-in scheduler ejected\nSTOPPING=1")
open(os.path.join(out, "done"), "w").close()
sys.exit(1)
EOF
chmod 755 "$WORK/bin/scx-standin"
cp "$LATNICED" "$WORK/bin/"
printf '[Daemon]\nScheduler=latnice\n' > "$WORK/root/$CONF"
printf '[Process lntest-granted]\nComm=lntest-granted\nLatencyNice=-5\n' > "$WORK/root/etc/latnice.d/50-test.conf"
cp "$(command -v sleep)" "$WORK/bin/lntest-granted"

# The environment the stand-in was given: nothing of latniced's. Under systemd NOTIFY_SOCKET is
# systemd's one socket for every unit: it may be there only outside latniced.service's cgroup
# (its own unit's, whose messages are its own); without systemd (own-unit=no) not at all.
env_clean() { # env_clean WHERE OWN-UNIT
        local bad
        bad=$(grep -E '^(WATCHDOG_USEC|WATCHDOG_PID|LISTEN_FDS|LISTEN_PID|LISTEN_FDNAMES)=' "$WORK/lnout/env")
        if grep -q '^NOTIFY_SOCKET=' "$WORK/lnout/env" &&
                { [[ $2 == no ]] || grep -q 'latniced\.service' "$WORK/lnout/cgroup"; }; then
                bad+=" $(grep '^NOTIFY_SOCKET=' "$WORK/lnout/env") in $(grep -m1 latniced "$WORK/lnout/cgroup")"
        fi
        if [[ -z $bad ]]; then
                pass "$1: the scheduler's environment has no notify socket, watchdog or listen fds of latniced's"
        else
                fail "$1: the scheduler's environment has $(echo $bad)"
        fi
}

# --- under systemd ------------------------------------------------------------------------------
cp "$SERVICE" "$WORK/units/latniced.service"
mkdir -p "$WORK/units/latniced.service.d"
cat > "$WORK/units/latniced.service.d/50-test.conf" <<EOF
[Service]
ExecStart=
ExecStart=/run/lnbin/latniced --root=/run/lnroot --no-profile --log-level=debug --scx-latnice=/run/lnbin/scx-standin
NotifyAccess=all
ReadWritePaths=/run/lnout
EOF
if [[ -f $SCX_SERVICE ]]; then
        cp "$SCX_SERVICE" "$WORK/units/scx_latnice.service"
        mkdir -p "$WORK/units/scx_latnice.service.d"
        # This kernel has no sched_ext: the unit's condition is lifted for the stand-in.
        cat > "$WORK/units/scx_latnice.service.d/50-test.conf" <<EOF
[Unit]
ConditionPathExists=
[Service]
ExecStart=
ExecStart=/run/lnbin/scx-standin
ReadWritePaths=/run/lnout
EOF
else
        echo "     no scx_latnice.service given ($SCX_SERVICE)"
fi
mkdir -p "$WORK/policy"
cp "$HERE/../../conf/dbus-1/system.d/org.latnice1.conf" "$WORK/policy/"
start_contained --unit-dir "$WORK/units" --policy-dir "$WORK/policy" \
        --bind "$WORK/root:/run/lnroot" --bind "$WORK/bin:/run/lnbin" --bind "$WORK/lnout:/run/lnout"
pass "contained systemd is up (pid $("$L" pid "$NAME"))"

prop() { in_ systemctl show -P "$1" "$2"; }
journal() { in_ journalctl -u latniced.service -u scx_latnice.service --no-pager -o cat | grep -v '^libbpf: ' | tail -n 30; }

# The map scx_latnice would pin (include/latnice/granted.h: key 16 bytes, value 8, BPF_F_NO_PREALLOC), made by
# hand in the container's bpffs before latniced starts; a process the rule matches, running before it.
have_map=0
if command -v bpftool >/dev/null; then
        in_ sh -c 'mountpoint -q /sys/fs/bpf || mount -t bpf -o mode=0700 bpf /sys/fs/bpf'
        if in_ mkdir -p /sys/fs/bpf/latnice &&
                in_ bpftool map create /sys/fs/bpf/latnice/granted type hash key 16 value 8 entries 131072 \
                        name granted flags 1; then
                have_map=1
        else
                fail "cannot pin a map in the container's bpffs"
        fi
else
        echo "     no bpftool: the map of granted values is not checked"
fi
in_ systemd-run -q --unit=lntest-granted /run/lnbin/lntest-granted 300
gpid=$(prop MainPID lntest-granted.service)

check "systemctl start latniced" in_ systemctl start latniced.service
if [[ $have_map == 1 ]]; then
        # key: pid (u32 LE), 0 (u32), start time in ticks (u64 LE); value -5 (s32 LE), flags 0.
        le() { local v=$1 n=$2 i; for ((i = 0; i < n; i++)); do printf '%02x ' $(((v >> (8 * i)) & 255)); done; }
        start=$(in_ awk '{ sub(/.*\) /, ""); print $20 }' "/proc/$gpid/stat")
        key="$(le "$gpid" 4)$(le 0 4)$(le "$start" 8)"
        lookup() { in_ bpftool -j map lookup pinned /sys/fs/bpf/latnice/granted key hex $key 2>&1; }
        granted() { lookup | tr -d ' \n' | grep -q '"value":\["0xfb","0xff","0xff","0xff","0x00","0x00","0x00","0x00"\]'; }
        if eventually 20 granted >/dev/null; then
                pass "latniced.service filled the pinned map: pid $gpid (start $start) is granted -5"
        else
                fail "the pinned map has no -5 for pid $gpid (start $start): $(lookup | tr -d '\n ' | head -c 300)"
                journal
        fi
fi
if ! eventually 30 test -s "$WORK/lnout/env" >/dev/null; then
        fail "the scheduler was not started within 30 s"
        journal
        exit 1
fi
pass "Scheduler=latnice started the scheduler"
env_clean "under systemd" yes
if grep -q 'scx_latnice\.service' "$WORK/lnout/cgroup"; then
        pass "under systemd the scheduler runs as scx_latnice.service"
else
        fail "under systemd the scheduler runs in $(grep -m1 -E '^0::|name=systemd' "$WORK/lnout/cgroup"), not scx_latnice.service"
fi
# The stand-in's STATUS= was sent before it wrote env: systemd has it by now (a query follows the message).
status=$(prop StatusText latniced.service)
if [[ -n $status && $status != *stand-in* ]]; then
        pass "latniced.service's STATUS is latniced's: $status"
else
        fail "latniced.service's STATUS is '$status'"
fi

# The scheduler says STOPPING=1 and exits 1, as after an ejection.
touch "$WORK/lnout/go"
eventually 30 test -e "$WORK/lnout/done" >/dev/null || fail "the stand-in did not end"
# systemd reads its notify socket before the bus: the queries below see the messages sent.
eventually 30 in_ sh -c "! pgrep -f /run/lnbin/[s]cx-standin" >/dev/null
state=$(prop ActiveState latniced.service)/$(prop SubState latniced.service)
status=$(prop StatusText latniced.service)
if [[ $state == active/running && $(prop NRestarts latniced.service) == 0 ]]; then
        pass "latniced.service stays active after the scheduler's STOPPING=1 and exit"
else
        fail "latniced.service is $state (restarts $(prop NRestarts latniced.service)) after the scheduler's STOPPING=1 and exit"
        journal
fi
if [[ -n $status && $status != *stand-in* ]]; then
        pass "latniced.service keeps its own STATUS after the scheduler's: $status"
else
        fail "latniced.service's STATUS is '$status' after the scheduler's"
fi

# systemctl stop latniced takes the scheduler along.
rm -f "$WORK/lnout/"{env,cgroup,go,done}
in_ systemctl reset-failed scx_latnice.service 2>/dev/null
check "systemctl restart latniced" in_ systemctl restart latniced.service
if eventually 30 test -s "$WORK/lnout/env" >/dev/null; then
        pass "the scheduler runs again after latniced restarted"
        check "systemctl stop latniced" in_ systemctl stop latniced.service
        if eventually 30 in_ sh -c "! pgrep -f /run/lnbin/[s]cx-standin" >/dev/null; then
                pass "systemctl stop latniced stopped the scheduler too"
        else
                fail "the scheduler still runs after systemctl stop latniced"
        fi
        if [[ $have_map == 1 ]]; then
                if granted; then
                        fail "the map still grants pid $gpid -5 after latniced stopped and restored its value"
                else
                        pass "latniced's stop took the value it restored out of the map"
                fi
        fi
else
        fail "the scheduler was not started again after latniced restarted"
fi
stop_contained_killed

# --- without systemd: latniced forks the scheduler ---------------------------------------------
rm -f "$WORK/lnout/"{env,cgroup,go,done}
touch "$WORK/lnout/go" # the stand-in ends at once
NOTIFY_SOCKET=/run/lntest-scxunit-nonexistent WATCHDOG_USEC=30000000 WATCHDOG_PID=$$ LISTEN_FDS=1 LISTEN_PID=$$ \
        "$LATNICED" --root "$WORK/root" --state-dir "$WORK/state" --no-profile --no-bus --log-level debug \
        --scx-latnice="$WORK/bin/scx-standin" >"$WORK/log" 2>&1 &
DPID=$!
if eventually 30 test -s "$WORK/lnout/env" >/dev/null; then
        env_clean "without systemd" no
else
        fail "without systemd: the scheduler was not started within 30 s"
        tail -n 20 "$WORK/log"
fi
kill "$DPID" 2>/dev/null
wait "$DPID" 2>/dev/null
DPID=

[[ $failures == 0 ]] || { echo "$failures failures"; exit 1; }
echo "all passed"
