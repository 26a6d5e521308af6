#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The shipped KWin script against a real KWin (kwin_wayland --virtual, offscreen Qt platform) on a
# private session bus, with latnice-focus --print: KWin loads the script from its package
# directory by its metadata alone (EnabledByDefault), the script's callDBus() reaches
# org.latnice1.Focus, and the focus moves as two Wayland clients appear and the focused one
# exits. latnice-focus is restarted under KWin: KWin runs the script again (the active window is
# sent at once), and the next activation reaches the new one. An Xwayland window whose _NET_WM_PID
# lies is named by the X server's word.
#
#   test-focus-kwin.sh LATNICE_FOCUS SOURCE_DIR [FOCUS_CLIENT]
#
# Exit: 0 pass, 1 fail, 77 skip (says why).
set -uo pipefail
FOCUS=$(readlink -f "$1")
SRC=$(readlink -f "$2")
FOCUS_CLIENT=${3:+$(readlink -f "$3")}
[[ $EUID == 0 ]] || { echo "SKIP: needs root (runs kwin as another user)"; exit 77; }
for p in kwin_wayland weston-simple-shm dbus-daemon setpriv; do
        command -v $p >/dev/null || { echo "SKIP: $p is not installed (Debian: kwin-wayland, weston, dbus)"; exit 77; }
done
HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
. "$HERE/wayland-lib.sh"

# Debian gives kwin_wayland cap_sys_resource: where the bounding set lacks it, exec fails (EPERM).
# A copy without file capabilities runs the same code.
cp /usr/bin/kwin_wayland "$WORK/kwin_wayland" && chmod 755 "$WORK/kwin_wayland"
# The script as installed, in the user's data directory (KWin looks there and in /usr/share).
mkdir -p "$WORK/.local/share/kwin/scripts"
cp -r "$SRC/session/kwin/latnice-focus" "$WORK/.local/share/kwin/scripts/"
chown -R $U_ID:$U_GID "$WORK"

"${AS_USER[@]}" dbus-daemon --session --nofork --address=unix:path=$WORK/bus > "$WORK/dbus.log" 2>&1 &
PIDS+=($!)
for ((i = 0; i < 100; i++)); do [[ -S $WORK/bus ]] && break; sleep 0.1; done
BUS=unix:path=$WORK/bus
start_focus
# With Xwayland: KWin runs the command given once Xwayland is up, with its DISPLAY (as Plasma hands it
# to the user's services): latnice-focus learns it from there.
"${AS_USER[@]}" DBUS_SESSION_BUS_ADDRESS=$BUS QT_QPA_PLATFORM=offscreen \
        "$WORK/kwin_wayland" --virtual --xwayland --no-lockscreen --socket wl-kwin \
        "sh -c 'echo \$DISPLAY > $WORK/display'" > "$WORK/kwin.log" 2>&1 &
KWIN=$!
PIDS+=($KWIN)
for ((i = 0; i < 200; i++)); do [[ -S $WORK/wl-kwin ]] && break; sleep 0.1; done
[[ -S $WORK/wl-kwin ]] || { echo "SKIP: kwin_wayland --virtual does not start here:"; tail -5 "$WORK/kwin.log"; exit 77; }
# No window yet: the script's first call names 0, which is no change to print. The clients below
# are what shows the script loaded and calling.

"${AS_USER[@]}" WAYLAND_DISPLAY=wl-kwin weston-simple-shm > "$WORK/client-a.log" 2>&1 &
A=$!; PIDS+=($A)
expect_focus $A session-bus "a new window's client is the focus ($A)"
"${AS_USER[@]}" WAYLAND_DISPLAY=wl-kwin weston-simple-shm > "$WORK/client-b.log" 2>&1 &
B=$!; PIDS+=($B)
expect_focus $B session-bus "the second client takes the focus ($B)"
kill $B; wait $B 2>/dev/null
expect_focus $A session-bus "the focused client exits, the focus is a"

# latnice-focus restarted: it asks KWin to run the script again, which sends the active window at
# once; and the script's next call reaches the new one (no failure sticks).
restart_focus
if wait_focus $A session-bus; then pass "after a latnice-focus restart KWin's script sends the active window again ($A)"
else fail "after restart, no new focus: got '$(tail -1 "$WORK/focus.out")', want $A"; fi
"${AS_USER[@]}" WAYLAND_DISPLAY=wl-kwin weston-simple-shm > "$WORK/client-c.log" 2>&1 &
C=$!; PIDS+=($C)
expect_focus $C session-bus "after a latnice-focus restart the script reaches it ($C)"

# An Xwayland window whose _NET_WM_PID lies (names T, another process of ours): KWin's pid for it is
# that word; the script names the X window and latnice-focus asks the X server whose it is.
if [[ $FOCUS_CLIENT ]]; then
        for ((i = 0; i < 100; i++)); do [[ -s $WORK/display ]] && break; sleep 0.1; done
        XD=$(cat "$WORK/display" 2>/dev/null)
        if [[ -z $XD ]]; then
                echo "# KWin started no Xwayland here: the Xwayland case is not run"; tail -3 "$WORK/kwin.log"
        else
                kill $LF; wait $LF 2>/dev/null
                echo "restarted with DISPLAY=$XD" >> "$WORK/focus.out"
                FOCUS_ENV=(DISPLAY="$XD" WAYLAND_DISPLAY=wl-kwin) # as in a Plasma session: not the X11 source
                start_focus
                sleep infinity & T=$!; PIDS+=($T)
                "${AS_USER[@]}" DISPLAY="$XD" "$FOCUS_CLIENT" liar $T > "$WORK/client-x.log" 2>&1 &
                X=$!; PIDS+=($X)
                # KWin 5.27 gives scripts an X11 window's id: the X server names its client. KWin 6 gives
                # neither the id nor whether a window is an X11 one, and its pid is the lie: latnice-focus
                # finds the window that claims it (_NET_CLIENT_LIST) and boosts nothing (0, or the focus
                # stays: either way not T).
                KWIN_MAJOR=$(as_user "$WORK/kwin_wayland" --version 2>/dev/null |
                        sed -n 's/^kwin\(_wayland\)\{0,1\} \([0-9]*\).*/\2/p')
                echo "# kwin_wayland --version: $(as_user "$WORK/kwin_wayland" --version 2>/dev/null | head -1)"
                if [[ ${KWIN_MAJOR:-5} -lt 6 ]]; then
                        expect_focus $X session-bus \
                                "an Xwayland client whose _NET_WM_PID names $T: its own pid, from the X server ($X)"
                fi
                # A Wayland client after it: once its focus is printed, the X client's is behind us.
                "${AS_USER[@]}" WAYLAND_DISPLAY=wl-kwin weston-simple-shm > "$WORK/client-d.log" 2>&1 &
                D=$!; PIDS+=($D)
                expect_focus $D session-bus "  then a Wayland client's ($D)"
                if grep -q "^focus $T " "$WORK/focus.out"
                then fail "  KWin ${KWIN_MAJOR:-5}: the lie ($T) was taken at its word"
                else pass "  KWin ${KWIN_MAJOR:-5}: the lie ($T) is not taken"; fi
        fi
fi

echo "# latnice-focus --print:"; sed 's/^/#   /' "$WORK/focus.out"
[[ $failed == 0 ]] || { echo "# stderr:"; sed 's/^/#   /' "$WORK/focus.err"; tail -5 "$WORK/kwin.log"; }
exit $failed
