#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# App= against real scopes in a contained systemd (tests/harness/lntest-systemd): a process that
# runs in a Flatpak-like scope (app-flatpak-<ID>-<N>.scope) or a Snap-like one (snap.<NAME>.*)
# gets the value of the rule naming its application ID; one in another app's scope does not;
# latnicectl explain shows the app.
#
#   test-app.sh LATNICED LATNICECTL LNSPAWN
#
# Exit: 0 pass, 1 fail, 77 skip (no contained systemd here, or no custom-slice backend).

set -uo pipefail

HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
LATNICED=$(readlink -f "${1:?usage: test-app.sh LATNICED LATNICECTL LNSPAWN}")
LATNICECTL=$(readlink -f "${2:?}")
LNSPAWN=$(readlink -f "${3:?}")
NAME=app-$$

. "$HERE/../harness/testlib.sh"

[[ $EUID == 0 ]] || { echo "SKIP: needs root"; exit 77; }
read -r BASE SLICE10 < <("$LNSPAWN" base)
if [ "${BASE:-0}" = 0 ] || ! grep -q '^se.slice' /proc/self/sched; then
        echo "SKIP: this kernel has no EEVDF custom slices"
        exit 77
fi
WORK=$(mktemp -d /tmp/lntest-app.XXXXXX) || exit 1
pids_host=()
cleanup() {
        local p
        for p in "${pids_host[@]}"; do kill "$p" 2>/dev/null; done
        [[ $started == 1 && -d $STATE ]] && "$L" stop "$NAME" --kill >/dev/null 2>&1
        rm -rf -- "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

mkdir -p "$WORK/root/etc/latnice.d" "$WORK/bin"
cp "$LATNICED" "$LATNICECTL" "$WORK/bin/"
cp /bin/sleep "$WORK/bin/lnt-game"
cat > "$WORK/root/etc/latnice.d/50-app.conf" <<'EOF2'
[Process flatpak-game]
App=org.lntest.Game
LatencyNice=-10

[Process snap-tool]
App=lntest-snap
Comm=lnt-game
LatencyNice=-10
EOF2

start_contained --bind "$WORK/root:/run/lnroot" --bind "$WORK/bin:/run/lnbin"
pass "contained systemd is up (pid $("$L" pid "$NAME"))"

# latniced as a transient service inside; Type=notify: active once it is ready
if in_ systemd-run -q --unit=lnt-latniced -p Type=notify /run/lnbin/latniced --root=/run/lnroot --no-profile \
        --no-bus --log-level=debug && eventually 10 in_ systemctl is-active -q lnt-latniced; then
        pass "latniced runs in the contained systemd"
else
        fail "latniced did not start"; in_ journalctl -u lnt-latniced --no-pager -o cat | tail -20; exit 1
fi

slice_in() { in_ awk '$1 == "se.slice" { print $3 }' "/proc/$1/sched"; }
# Starts lnt-game in a new scope of that name (systemd-run --scope execs it there) and sets P to its pid inside.
scope() { # UNIT
        local cg
        (cd / && "$L" exec "$NAME" systemd-run -q --scope --unit="$1" /run/lnbin/lnt-game 300) & pids_host+=($!)
        P=
        for _ in $(seq 50); do
                cg=$(in_ systemctl show -P ControlGroup "$1" 2>/dev/null)
                [ -n "$cg" ] && P=$(in_ head -n1 "/sys/fs/cgroup/unified$cg/cgroup.procs" 2>/dev/null)
                [ -n "$P" ] && [ "$(in_ cat "/proc/$P/comm" 2>/dev/null)" = lnt-game ] && break
                P=
                sleep 0.1
        done
        [ -n "$P" ] || fail "no lnt-game in $1"
}
expect() { # PID SLICE WHAT
        if eventually 5 test "$(slice_in "$1")" = "$2"; then pass "$3 (se.slice $2)"; else fail "$3: se.slice $(slice_in "$1"), want $2"; fi
}

scope app-flatpak-org.lntest.Game-4242.scope; F=$P
expect "$F" "$SLICE10" "a process in app-flatpak-org.lntest.Game-4242.scope matches App=org.lntest.Game"
scope snap.lntest-snap.tool-1a2b3c.scope; S=$P
expect "$S" "$SLICE10" "a process in snap.lntest-snap.tool-1a2b3c.scope matches App=lntest-snap (with Comm=)"
scope app-flatpak-org.lntest.Other-4243.scope; O=$P
sleep 0.5
if [ "$(slice_in "$O")" = "$BASE" ]; then pass "a process of another Flatpak app keeps the default"; else fail "other app changed: $(slice_in "$O")"; fi
scope lnt-plain-1.scope; N=$P
sleep 0.5
if [ "$(slice_in "$N")" = "$BASE" ]; then pass "a process in a scope of no app keeps the default"; else fail "plain scope changed: $(slice_in "$N")"; fi

out=$(in_ /run/lnbin/latnicectl --root=/run/lnroot --no-profile explain --pid="$F")
echo "$out" | sed 's/^/     /'
if grep -q '^  app:     org.lntest.Game$' <<< "$out" && grep -q 'because App=org.lntest.Game matched' <<< "$out"; then
        pass "latnicectl explain shows the app and the App= that matched"
else
        fail "explain"
fi

[[ $(in_ systemctl show -P NRestarts lnt-latniced) == 0 ]] && in_ systemctl is-active -q lnt-latniced &&
        pass "latniced kept running" || fail "latniced restarted or stopped"
stop_contained_killed
echo "$failures failed"
[ "$failures" = 0 ]
