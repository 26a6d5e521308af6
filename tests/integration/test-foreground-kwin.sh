#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The foreground boost end to end on KDE's compositor, in the contained systemd of tests/harness/ (real
# system bus, polkitd, systemd-logind, a user manager with its own session bus): a user logged in with
# pam_systemd (XDG_SESSION_TYPE=wayland), kwin_wayland --virtual in that session with the shipped KWin
# script in the user's data directory, latnice-focus as the shipped user unit waiting for the script's
# calls on the user's session bus, two Wayland clients. Checks: the script's calls move latniced's
# boost; the focused client exits and the boost goes to the one KWin focuses next; latnice-focus
# started again under KWin: the script sends the active window at once, and its next call reaches it.
#
#   test-foreground-kwin.sh BUILD_DIR [SOURCE_DIR]
#
# Exit: 0 pass, 1 fail, 77 skip (says why).

set -uo pipefail

HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
. "$HERE/fg-lib.sh" # BUILD_DIR [SOURCE_DIR]: SRC, BUILD, L
fg_require kwin_wayland weston-simple-shm
[[ -e /usr/lib/systemd/user/dbus.socket ]] ||
        { echo "SKIP: no session bus for the user manager (apt-get install dbus-user-session)"; exit 77; }
fg_prepare
# Debian gives kwin_wayland cap_sys_resource: where the bounding set lacks it, exec fails (EPERM).
# A copy without file capabilities runs the same code.
cp /usr/bin/kwin_wayland "$WORK/bin/kwin_wayland"
cp -r "$SRC/session/kwin/latnice-focus" "$WORK/kwin-script"
# The session: the script where KWin looks for a user's scripts, the user manager's session bus, then
# KWin, and then it waits for the test to end it.
cat > "$WORK/session.sh" <<EOF2
#!/bin/sh
mkdir -p \$HOME/.local/share/kwin/scripts
cp -r $IN/kwin-script \$HOME/.local/share/kwin/scripts/latnice-focus
i=0
while [ ! -S \$XDG_RUNTIME_DIR/bus ]; do
        i=\$((i + 1)); [ \$i -lt 200 ] || exit 1
        sleep 0.1
done
DBUS_SESSION_BUS_ADDRESS=unix:path=\$XDG_RUNTIME_DIR/bus QT_QPA_PLATFORM=offscreen \\
        $IN/bin/kwin_wayland --virtual --no-lockscreen --socket wl-kwin > \$HOME/kwin.log 2>&1 &
i=0
while [ ! -S \$XDG_RUNTIME_DIR/wl-kwin ]; do
        i=\$((i + 1)); [ \$i -lt 300 ] || exit 1
        sleep 0.1
done
echo \$XDG_SESSION_ID > \$HOME/session
exec sleep infinity
EOF2
SESSION_TYPE=wayland
fg_start
SESSION_ENV=(WAYLAND_DISPLAY=wl-kwin DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/$UID_U/bus)
check "the shipped latnice-focus.service links into U's manager" userctl link "$IN/latnice-focus.service"
check "latnice-focus starts as U's user unit" userctl start latnice-focus.service
check "  it owns org.latnice1.Focus on U's session bus" eventually 10 as_u busctl --user status org.latnice1.Focus

start_client() { # start_client NAME: a Wayland client of U's; sets cpid
        as_u sh -c "weston-simple-shm > /tmp/home-$U/$1.log 2>&1 & echo \$! > /tmp/home-$U/$1.pid"
        eventually 10 in_ test -s /tmp/home-$U/$1.pid >/dev/null
        cpid=$(in_ cat /tmp/home-$U/$1.pid)
}
start_client a; A=$cpid
wait_value "client a, mapped and activated by KWin: the script's call gives it -10" "$A" "-10 foreground"
start_client b; B=$cpid
echo "# client a: pid $A; client b: pid $B"
wait_value "client b, mapped last, takes the boost" "$B" "-10 foreground"
wait_value "  a has its default back" "$A" "0 none"
in_ kill "$B"
wait_value "b exits while focused; KWin activates a: a gets -10" "$A" "-10 foreground"
echo "# latnicectl list, a focused:"
in_ "$IN/bin/latnicectl" list | sed 's/^/#   /'

# latnice-focus stopped and started again under KWin: the boost ends with the old one; the new one
# asks KWin to run the script again, which sends the active window at once (no activation needed);
# and the script's next call (the next activation) reaches it too: one failed call stops nothing.
check "latnice-focus stops" userctl stop latnice-focus.service
wait_value "  a's boost ends with it" "$A" "0 none"
check "latnice-focus starts again" userctl start latnice-focus.service
wait_value "  KWin's script sends the active window again: a gets -10 with no focus change" "$A" "-10 foreground"
start_client c; C=$cpid
wait_value "a new client c after the restart: the script reached the new latnice-focus, c gets -10" \
        "$C" "-10 foreground"
echo "# U's journal of latnice-focus:"
as_u journalctl --user -u latnice-focus.service --no-pager -n 20 2>/dev/null | sed 's/^/#   /'

stop_contained_killed
[[ $failures == 0 ]] || { echo "$failures failed"; in_ tail -20 /tmp/home-$U/kwin.log 2>/dev/null; exit 1; }
echo "all passed"
