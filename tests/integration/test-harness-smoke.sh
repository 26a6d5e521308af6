#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Integration test of lntest-systemd: boots a contained systemd, checks what the daemon tests rely
# on (units, namespace-relative cgroups, the v1 cpu hierarchy, the system bus, a Type=notify unit
# from a unit dir, a D-Bus policy from a policy dir, daemon-reexec, dbus restart, pid namespaces),
# checks the host was left alone, stops it and checks its cgroups are gone.
# Exit: 0 pass, 1 fail, 77 skip.

set -uo pipefail

HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
NAME=smoke-$$
PY=/usr/bin/python3

. "$HERE/../harness/testlib.sh"
check() { # check DESCRIPTION CMD...
        local what=$1
        shift
        if "$@" >/dev/null; then pass "$what"; else fail "$what"; fi
}
elapsed() {
        local us=$((${EPOCHREALTIME/./} - ${1/./}))
        printf '%d.%02d' $((us / 1000000)) $((us % 1000000 / 10000))
}

WORK=$(mktemp -d /tmp/lntest-smoke.XXXXXX) || exit 1
CANARY=$WORK/canary
cleanup() {
        if [[ $started == 1 && -d $STATE ]]; then
                "$L" stop "$NAME" --kill >/dev/null 2>&1
        fi
        rm -rf -- "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# What must not change on the host. The unit and policy dirs live in the host's /tmp on purpose:
# the harness must reach them although the container has its own /tmp.
head -c 32 /dev/urandom | base64 > "$CANARY"
canary_sum=$(sha256sum < "$CANARY")
host_hostname=$(cat /proc/sys/kernel/hostname)
host_sysctl=$(cat /proc/sys/fs/file-max /proc/sys/fs/nr_open /proc/sys/net/unix/max_dgram_qlen)
host_pidns=$(stat -L -c %i /proc/self/ns/pid)
# paths the container creates in its own /run, /tmp and /dev: none may appear on the host
watched=(/run/systemd/private /run/systemd/container /run/systemd/system/lntest.target
         /run/dbus/system_bus_socket /run/log/journal /run/mount/utab /run/lntest-smoke
         /dev/log /dev/hugepages /dev/mqueue)
declare -A existed=()
for p in "${watched[@]}"; do
        [[ -e $p || -L $p ]] && existed[$p]=1
done

mkdir "$WORK/units" "$WORK/policy" "$WORK/bind"
echo "from the host" > "$WORK/bind/hello"
# Type=notify: the main process sends READY=1 itself (systemd-notify from a shell races with
# systemd's lookup of the sender's cgroup when the helper exits first).
cat > "$WORK/units/lntest-notify.service" <<EOF
[Unit]
Description=lntest Type=notify test service
[Service]
Type=notify
ExecStart=$PY -c 'import os, socket, time; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.connect(os.environ["NOTIFY_SOCKET"]); s.send(b"STATUS=lntest up"); s.send(b"READY=1"); time.sleep(3600)'
EOF
# ... and the shell way, which needs NotifyAccess=all
cat > "$WORK/units/lntest-shnotify.service" <<'EOF'
[Unit]
Description=lntest Type=notify shell service
[Service]
Type=notify
NotifyAccess=all
ExecStart=/bin/sh -c 'systemd-notify --ready --status="shell up"; exec sleep 3600'
EOF
# Type=dbus: can only become active if the extra policy lets it own its name.
cat > "$WORK/units/lntest-busname.service" <<EOF
[Unit]
Description=lntest bus name test service
[Service]
Type=dbus
BusName=org.lntest.Smoke
ExecStart=$PY -c 'import dbus, time; b = dbus.SystemBus(); assert b.request_name("org.lntest.Smoke") == 1; time.sleep(3600)'
EOF
cat > "$WORK/policy/org.lntest.Smoke.conf" <<'EOF'
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <policy user="root">
    <allow own="org.lntest.Smoke"/>
  </policy>
</busconfig>
EOF

t0=$EPOCHREALTIME
start_contained --unit-dir "$WORK/units" --policy-dir "$WORK/policy" --bind "$WORK/bind:/run/lntest-smoke"
start_time=$(elapsed "$t0")
PID=$("$L" pid "$NAME")
pass "start ($start_time s, pid $PID)"

# --- the container ---
state=$(in_ systemctl is-system-running)
check "system is running or degraded (is: $state)" [ "$state" = running -o "$state" = degraded ]
check "its systemd is pid 1 of its pid namespace" grep -qE '^NSpid:\s+[0-9]+\s+1$' "/proc/$PID/status"
check "exec propagates the exit code" [ "$(in_ sh -c 'exit 7'; echo $?)" = 7 ]
check "the container has its own /tmp" in_ test ! -e "$CANARY"
check "a --bind source in the host's /tmp is visible inside" [ "$(in_ cat /run/lntest-smoke/hello)" = "from the host" ]
check "the D-Bus policy dir holds the host's and the extra files" \
        in_ sh -c 'test -f /etc/dbus-1/system.d/org.lntest.Smoke.conf'
check "the extra policy is not in the host's /etc" [ ! -e /etc/dbus-1/system.d/org.lntest.Smoke.conf ]

# transient units, namespace-relative cgroups
check "systemd-run --slice=game.slice makes a unit" in_ systemd-run -q --slice=game.slice --unit=x sleep 300
check "x.service is active" in_ systemctl is-active -q x.service
cg=$(in_ systemctl show -P ControlGroup x.service)
check "ControlGroup is namespace-relative (is: $cg)" [ "$cg" = /game.slice/x.service ]
mainpid=$(in_ systemctl show -P MainPID x.service)
check "x's MainPID is a namespace pid visible in /proc inside" in_ test -d "/proc/$mainpid"
cgname=$(cat "$STATE/cgroup-name")
unified=$(grep '/unified/' "$STATE/cgroups" || grep -m1 . "$STATE/cgroups")
hostpid=$(cat "$unified/game.slice/x.service/cgroup.procs" 2>/dev/null | head -n1)
check "on the host x.service is $cgname/game.slice/x.service, its pid $hostpid is $mainpid inside" \
        grep -qE "^NSpid:\s+${hostpid:-none}\s+$mainpid$" "/proc/${hostpid:-none}/status"
nspidns=$(in_ stat -L -c %i /proc/self/ns/pid)
check "a process inside has its own pid namespace (inode $nspidns, host $host_pidns)" \
        [ -n "$nspidns" -a "$nspidns" != "$host_pidns" ]

# the v1 cpu hierarchy, when the host has one
if grep -q '/cpu/' "$STATE/cgroups"; then
        check "game.slice is not in the cpu hierarchy before CPUAccounting" in_ test ! -d /sys/fs/cgroup/cpu/game.slice
        check "set-property --runtime game.slice CPUAccounting=yes" \
                in_ systemctl set-property --runtime game.slice CPUAccounting=yes
        check "game.slice gets a directory in the cpu hierarchy" in_ test -d /sys/fs/cgroup/cpu/game.slice
        check "x's process is in it (cpu:/game.slice)" \
                in_ grep -qE '^[0-9]+:([^:]*,)?cpu(,[^:]*)?:/game\.slice(/x\.service)?$' "/proc/$mainpid/cgroup"
        check "systemd-run -p CPUAccounting=yes" \
                in_ systemd-run -q --slice=game.slice --unit=y -p CPUAccounting=yes sleep 300
        ypid=$(in_ systemctl show -P MainPID y.service)
        check "y.service gets its own directory in the cpu hierarchy" \
                in_ grep -qx "$ypid" /sys/fs/cgroup/cpu/game.slice/y.service/cgroup.procs
        cpu_host=$(grep '/cpu/' "$STATE/cgroups")
        check "which is $cgname/game.slice/y.service on the host" test -d "$cpu_host/game.slice/y.service"
else
        echo "skip - no v1 cpu hierarchy on this host"
fi

# the system bus
busver() { in_ busctl call org.freedesktop.systemd1 /org/freedesktop/systemd1 \
        org.freedesktop.DBus.Properties Get ss org.freedesktop.systemd1.Manager Version; }
check "busctl reaches systemd on the system bus" busver
check "a Type=notify unit from the unit dir starts" in_ systemctl start lntest-notify.service
check "its READY/STATUS arrived" [ "$(in_ systemctl show -P StatusText lntest-notify.service)" = "lntest up" ]
check "a Type=notify shell service using systemd-notify starts" in_ systemctl start lntest-shnotify.service
check "its STATUS arrived" [ "$(in_ systemctl show -P StatusText lntest-shnotify.service)" = "shell up" ]
check "a Type=dbus unit owns a name allowed by the extra policy" in_ systemctl start lntest-busname.service
check "busctl sees the name" in_ busctl status org.lntest.Smoke

check "systemctl daemon-reexec" in_ systemctl daemon-reexec
check "running again after reexec" eventually 10 in_ sh -c 'case $(systemctl is-system-running) in running|degraded) ;; *) exit 1;; esac'
check "units survive reexec" in_ systemctl is-active -q x.service lntest-notify.service lntest-shnotify.service
check "systemctl restart dbus" in_ systemctl restart dbus.service
check "systemd is back on the bus after the restart" eventually 10 busver
check "the service gets its name back after the restart" \
        eventually 10 in_ sh -c 'systemctl restart lntest-busname.service && busctl status org.lntest.Smoke'

# --- the host ---
check "the canary in the host's /tmp survived" [ "$(sha256sum < "$CANARY" 2>/dev/null)" = "$canary_sum" ]
for p in "${watched[@]}"; do
        [[ -n ${existed[$p]:-} ]] && continue
        check "the host has no $p" [ ! -e "$p" -a ! -L "$p" ]
done
check "the hostname is unchanged" [ "$(cat /proc/sys/kernel/hostname)" = "$host_hostname" ]
check "fs.file-max, fs.nr_open, net.unix.max_dgram_qlen unchanged" \
        [ "$(cat /proc/sys/fs/file-max /proc/sys/fs/nr_open /proc/sys/net/unix/max_dgram_qlen)" = "$host_sysctl" ]
check "the console went to console.log, not the host's console" grep -q 'Reached target' "$STATE/console.log"

# --- stop ---
mapfile -t cgroups < "$STATE/cgroups"
pid_start=$(cat "$STATE/pid.start")
t0=$EPOCHREALTIME
check "stop" "$L" stop "$NAME"
stop_time=$(elapsed "$t0")
started=0
echo "     stop took $stop_time s"
check "its pid 1 is gone" [ "$(cut -d' ' -f22 "/proc/$PID/stat" 2>/dev/null)" != "$pid_start" ]
for dir in "${cgroups[@]}"; do
        check "$dir is gone" [ ! -e "$dir" ]
done
check "its state dir is gone" [ ! -e "$STATE" ]
check "the canary is still there after stop" [ "$(sha256sum < "$CANARY" 2>/dev/null)" = "$canary_sum" ]

echo "start: $start_time s, stop: $stop_time s"
if ((failures)); then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all checks passed"
exit 0
