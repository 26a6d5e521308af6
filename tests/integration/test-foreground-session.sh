#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# What a foreground boost is bound to, end to end in the contained systemd of tests/harness/ (real
# system bus, polkitd, systemd-logind, a user manager with its session bus): user U logged in with
# pam_systemd on seat0 (a seat without VTs: the newest session on it is the active one), latnice-focus
# as U's user unit, called on U's session bus as the KWin script and the GNOME extension call it, and
# a target in a user unit of U's (systemd-run --user: no session of its own). Checks: the target is
# boosted while U's session is active; another user's session takes the seat, U's goes inactive, and
# the boost is dropped although latnice-focus stays on the bus; a call while U's session is inactive
# is refused; the seat back to U, boosted again without a focus change; U's session terminated (U lingers: the user manager,
# latnice-focus and the target stay), the boost is dropped; a call with no session of U's is refused.
#
#   test-foreground-session.sh BUILD_DIR [SOURCE_DIR]
#
# Exit: 0 pass, 1 fail, 77 skip (says why).

set -uo pipefail

HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
. "$HERE/fg-lib.sh" # BUILD_DIR [SOURCE_DIR]: SRC, BUILD, L
fg_require loginctl
[[ -e /usr/lib/systemd/user/dbus.socket ]] ||
        { echo "SKIP: no session bus for the user manager (apt-get install dbus-user-session)"; exit 77; }
fg_prepare
cat > "$WORK/session.sh" <<'EOF2'
#!/bin/sh
echo $XDG_SESSION_ID > $HOME/session
exec sleep infinity
EOF2
SESSION_TYPE=x11
FG_SEAT=seat0
fg_start
SESSION_ENV=(DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/$UID_U/bus)
session_prop() { in_ loginctl show-session "$1" -P "$2" 2>/dev/null; }
active_is() { [[ $(session_prop "$1" Active) == "$2" ]]; } # active_is SESSION yes|no
check "U's session is on seat0" test "$(session_prop "$SESSION" Seat)" = seat0
# The user manager, latnice-focus and the target outlive U's session: only the session ends.
check "U lingers" in_ loginctl enable-linger $U
check "the shipped latnice-focus.service links into U's manager" userctl link "$IN/latnice-focus.service"
check "latnice-focus starts as U's user unit (no display: the session bus only)" userctl start latnice-focus.service
check "  it owns org.latnice1.Focus on U's session bus" eventually 10 as_u busctl --user status org.latnice1.Focus
check "a target in a user unit of U's" as_u systemd-run --user -q --unit=lnfg-app -p Type=exec sleep infinity
T=$(userctl show -P MainPID lnfg-app.service)
echo "# target: pid $T, $(in_ cat /proc/$T/cgroup | grep -m1 '^0::')"
check "  it is in no session" sh -c "! $L exec $NAME loginctl session-status $T >/dev/null 2>&1"

# As GNOME Shell calls it: latnice-focus hears only the owner of org.gnome.Shell (or org.kde.KWin).
focus() { printf 'own org.gnome.Shell\nfocus %s\n' "$1" | as_u "$IN/bin/focus-caller" | tail -1 | grep -qx ok; }
call_u() { # call_u METHOD SIG ARGS...: "OK ..." or "ERROR message", as U in no session (as latnice-focus is)
        as_u busctl call org.latnice1 /org/latnice1 org.latnice1.Manager "$@" 2>&1 | sed 's/^Call failed: /ERROR /'
}

check "focus on the target" focus "$T"
wait_value "U's session active: the target in a user unit is boosted" "$T" "-10 foreground"

# --- another user's session takes the seat --------------------------------------------------------
in_ env XDG_SESSION_TYPE=x11 XDG_SESSION_CLASS=user XDG_SEAT=seat0 runuser -l $V -c "$IN/session.sh" \
        > "$WORK/session-v.log" 2>&1 &
check "V's session on seat0 is up" eventually 20 in_ test -s /tmp/home-$V/session
SESSION_V=$(in_ cat /tmp/home-$V/session)
check "  it is seat0's active session" eventually 10 active_is "$SESSION_V" yes
check "  U's session is inactive" active_is "$SESSION" no
check "  latnice-focus is still on the bus" userctl is-active -q latnice-focus.service
wait_value "U's session inactive: the boost is dropped" "$T" "0 none"
out=$(call_u SetForeground u "$T")
check "U asks again while its session is inactive: refused, the session named (got: $out)" \
        grep -q "session $SESSION .*is not active" <<< "$out"
wait_value "  the target is not boosted" "$T" "0 none"

# --- the seat back to U ---------------------------------------------------------------------------
check "loginctl activate U's session" in_ loginctl activate "$SESSION"
check "  U's session is active" eventually 10 active_is "$SESSION" yes
wait_value "  latnice-focus asks again (the focus has not changed): the target is boosted again" "$T" \
        "-10 foreground"
echo "# latnicectl list:"
in_ "$IN/bin/latnicectl" list | sed 's/^/#   /'

# --- U's session ends ---------------------------------------------------------------------------
check "loginctl terminate-session U's session" in_ loginctl terminate-session "$SESSION"
check "  it is gone" eventually 20 sh -c "! $L exec $NAME loginctl show-session $SESSION >/dev/null 2>&1"
check "  latnice-focus is still on the bus (U lingers)" userctl is-active -q latnice-focus.service
check "  the target still runs" in_ kill -0 "$T"
wait_value "U's session gone: the boost is dropped" "$T" "0 none"
out=$(call_u SetForeground u "$T")
check "U asks with no session: refused, no active session (got: $out)" grep -q "no active session" <<< "$out"
wait_value "  the target is not boosted" "$T" "0 none"
echo "# latniced's journal:"
in_ journalctl -u latniced.service --no-pager -o cat 2>/dev/null | grep -i 'foreground\|session' | tail -8 |
        sed 's/^/#   /'

stop_contained_killed
[[ $failures == 0 ]] || { echo "$failures failed"; exit 1; }
echo "all passed"
