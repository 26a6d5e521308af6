#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# On a kernel without sched_ext nothing changes and nothing is followed:
# latniced looks for /sys/kernel/sched_ext once at start, opens none of
# its files, no uevent socket, never looks again, and applies its rules as
# before. (The kernel with sched_ext is the VM test kernel-vm-scx-6.12.)
# Usage: test-no-sched-ext.sh LATNICED LNSPAWN
set -uo pipefail

LATNICED=$1 LNSPAWN=$2
if [ -e /sys/kernel/sched_ext ]; then echo "this kernel has sched_ext (/sys/kernel/sched_ext): not the case tested here"; exit 77; fi
command -v strace >/dev/null || { echo "strace is not installed"; exit 77; }

T=$(mktemp -d /tmp/latnice-noscx-test.XXXXXX)
. "$(dirname "$0")/daemon-lib.sh"

rules <<'R'
[Process noscx]
Comm=lnt-noscx
LatencyNice=-10
R
# latniced under strace: every file and socket call of every thread, for the whole run.
: > "$T/log"
strace -f -qq -o "$T/trace" -e trace=%file,socket,bind \
        "$LATNICED" --root "$T/root" --state-dir "$T/state" --no-profile --no-bus --log-level debug >"$T/log" 2>&1 &
SPID=$!
for _ in $(seq 600); do grep -q "^Ready:" "$T/log" && break; kill -0 "$SPID" 2>/dev/null || break; sleep 0.05; done
DPID=$(ps -o pid= --ppid "$SPID" | tr -d ' ')
if ! grep -q "^Ready:" "$T/log" || [ -z "$DPID" ]; then echo "latniced did not get ready:"; cat "$T/log"; exit 1; fi

cp "$(command -v sleep)" "$T/lnt-noscx"
bg "$T/lnt-noscx" 30
expect_slice "$LAST" "$SLICE10" "a rule applies as before"
# Longer than the poll interval latniced would use without uevents (5 s), and its settling reads.
sleep 6
stop_daemon
wait "$SPID" 2>/dev/null

looks=$(grep -c '"/sys/kernel/sched_ext"' "$T/trace")
if [ "$looks" = 1 ] && grep '"/sys/kernel/sched_ext"' "$T/trace" | grep -q ENOENT; then
        ok "looked for /sys/kernel/sched_ext once, at start (ENOENT)"
else
        fail "looked for /sys/kernel/sched_ext $looks times: $(grep sched_ext "$T/trace" | head -n 5 | tr '\n' '|')"
fi
if grep -q '/sys/kernel/sched_ext/' "$T/trace"; then
        fail "read sched_ext's files: $(grep '/sys/kernel/sched_ext/' "$T/trace" | head -n 3 | tr '\n' '|')"
else
        ok "opened none of sched_ext's files"
fi
if grep -q 'NETLINK_KOBJECT_UEVENT' "$T/trace"; then
        fail "opened a uevent socket: $(grep NETLINK_KOBJECT_UEVENT "$T/trace" | head -n 1)"
else
        # The trace works: the first check saw the stat.
        ok "no uevent socket"
fi
if grep -q "Scheduler backend eevdf-slice" "$T/log" && ! grep -qi "BPF scheduler\|sched-ext:" "$T/log"; then
        ok "the backend reads eevdf-slice, and no BPF scheduler is mentioned"
else
        fail "the log: $(grep -i 'backend\|sched_ext\|BPF scheduler' "$T/log" | head -n 5 | tr '\n' '|')"
fi

echo "$FAILS failed"
[ "$FAILS" = 0 ]
