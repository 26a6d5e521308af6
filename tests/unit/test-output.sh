#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# latnicectl's output byte for byte: every verb that asks latniced, as text
# and as --json, against a stand-in latniced (latniced-standin.py) on a private
# bus, compared with output.expected. Names with controls, quotes and
# slashes, errors among results, and status with and without its optional
# lines. Skips (77) without dbus-daemon or python3's dbus and gi modules.
#
# Usage: test-output.sh LATNICECTL [--update]
set -uo pipefail
ctl=${1:?usage: test-output.sh LATNICECTL [--update]}
here=$(dirname "$(readlink -f "$0")")
py=/usr/bin/python3
command -v dbus-daemon >/dev/null || { echo "SKIP: no dbus-daemon"; exit 77; }
$py -c 'import dbus, gi.repository.GLib' 2>/dev/null || { echo "SKIP: $py has no dbus or gi module"; exit 77; }

t=$(mktemp -d)
bus_pid= standin_pid=
cleanup() {
        [ -n "$standin_pid" ] && kill "$standin_pid" 2>/dev/null
        [ -n "$bus_pid" ] && kill "$bus_pid" 2>/dev/null
        rm -rf "$t"
}
trap cleanup EXIT
cat > "$t/bus.conf" <<C
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>custom</type>
  <listen>unix:path=$t/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/><allow own="*"/><allow send_destination="*"/><allow receive_sender="*"/>
  </policy>
</busconfig>
C
dbus-daemon --config-file="$t/bus.conf" --nofork 2>/dev/null &
bus_pid=$!
for _ in $(seq 100); do [ -S "$t/bus" ] && break; sleep 0.1; done
$py "$here/latniced-standin.py" "unix:path=$t/bus" "$t" 2>"$t/mock.log" &
standin_pid=$!
for _ in $(seq 100); do [ -e "$t/ready" ] && break; sleep 0.1; done
[ -e "$t/ready" ] || { echo "FAIL: the stand-in latniced did not start"; cat "$t/mock.log"; exit 1; }

export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$t/bus COLUMNS=80 LC_ALL=C
run() { # run MODE ARGS...: the command, its output and its exit status
        echo "$1" > "$t/mode"
        shift
        echo "\$ latnicectl $*"
        "$ctl" "$@" 2>&1 < /dev/null
        echo "-> $?"
}
{
        for json in "" --json; do
                while read -r line; do
                        # shellcheck disable=SC2086 # words, as written
                        run full $line $json
                done <<'L'
list
list extra
rules
profile
profile quiet
profile nope
reload
get 1
get 4 2 3
get 6
set -l 5 -p 4 -p 2 9
explain 4
explain 1
explain 5
explain 7
explain 8
explain 9
status
stats --for 2s
stats --for 2s --rule game
stats --for 2s --rule nosuch
L
                run min status $json
                run scx status $json
        done
} | sed 's/[0-9]* s ago/N s ago/' > "$t/out"

if [ "${2:-}" = --update ]; then
        cp "$t/out" "$here/output.expected"
        exit 0
fi
if ! diff -u "$here/output.expected" "$t/out"; then
        echo "FAIL: latnicectl's output changed (see the diff; --update if that is meant)"
        exit 1
fi
echo "ok - $(grep -c '^\$ ' "$t/out") commands print what output.expected says"
