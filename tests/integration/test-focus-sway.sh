#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# latnice-focus against a real Sway (headless wlroots backend) with --print (no latniced): two
# Wayland clients (foot) from two processes, focus moved with swaymsg, the focused client killed, and
# Sway restarted under latnice-focus (it reconnects and follows the new Sway). A client in its own pid
# namespace (as a Flatpak app's): Sway names it by its socket's credentials, a pid here. An Xwayland
# client whose _NET_WM_PID lies: the X server's word counts, and without it nothing is boosted.
#
#   test-focus-sway.sh LATNICE_FOCUS [FOCUS_CLIENT]
#
# Exit: 0 pass, 1 fail, 77 skip (says why).
set -uo pipefail
FOCUS=$(readlink -f "$1")
FOCUS_CLIENT=${2:+$(readlink -f "$2")}
[[ $EUID == 0 ]] || { echo "SKIP: needs root (runs sway as another user)"; exit 77; }
for p in sway swaymsg foot setpriv unshare; do
        command -v $p >/dev/null || { echo "SKIP: $p is not installed (Debian: sway, foot, util-linux)"; exit 77; }
done
HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
. "$HERE/wayland-lib.sh"

SOCK=$WORK/sway.sock
printf 'output HEADLESS-1 resolution 640x480\n' > "$WORK/config"
chmod 644 "$WORK/config"
start_sway() {
        "${AS_USER[@]}" WLR_BACKENDS=headless WLR_LIBINPUT_NO_DEVICES=1 WLR_RENDERER=pixman SWAYSOCK="$SOCK" \
                sway -c "$WORK/config" >> "$WORK/sway.log" 2>&1 &
        SWAY=$!
        PIDS+=($SWAY)
        local i
        for ((i = 0; i < 100; i++)); do
                as_user swaymsg -s "$SOCK" -t get_version >/dev/null 2>&1 && return 0
                sleep 0.1
        done
        echo "SKIP: sway does not start headless here:"; tail -5 "$WORK/sway.log"; exit 77
}
start_sway
WL=$(ls "$WORK" | grep -m1 '^wayland-[0-9]*$')
[[ $WL ]] || { fail "sway made no Wayland socket"; exit 1; }

# No session bus: the Sway source alone.
"${AS_USER[@]}" SWAYSOCK="$SOCK" DBUS_SESSION_BUS_ADDRESS=unix:path=$WORK/no-bus \
        "$FOCUS" --print --debug > "$WORK/focus.out" 2> "$WORK/focus.err" &
LF=$!; PIDS+=($LF)
sleep 0.5
"${AS_USER[@]}" WAYLAND_DISPLAY=$WL foot sleep 1000 > "$WORK/client-a.log" 2>&1 &
A=$!; PIDS+=($A)
expect_focus $A sway "a new window's client is the focus ($A)"
"${AS_USER[@]}" WAYLAND_DISPLAY=$WL foot sleep 1000 > "$WORK/client-b.log" 2>&1 &
B=$!; PIDS+=($B)
expect_focus $B sway "the second client takes the focus ($B)"
as_user swaymsg -s "$SOCK" "[pid=$A] focus" >/dev/null
expect_focus $A sway "swaymsg moves the focus to a"
as_user swaymsg -s "$SOCK" "[pid=$B] focus" >/dev/null
expect_focus $B sway "swaymsg moves the focus to b"

kill $B; wait $B 2>/dev/null
expect_focus $A sway "the focused client killed, the focus is a"
n=$(grep -c "^focus $B " "$WORK/focus.out")
if [[ $n == 2 ]]; then pass "the killed client is not named again"; else fail "b named $n times, want 2"; fi

# Sway goes away and comes back on the same socket path: latnice-focus follows the new one.
kill $SWAY; wait $SWAY 2>/dev/null; kill $A 2>/dev/null
start_sway
WL=$(ls "$WORK" | grep -m1 '^wayland-[0-9]*$')
"${AS_USER[@]}" WAYLAND_DISPLAY=$WL foot sleep 1000 > "$WORK/client-c.log" 2>&1 &
C=$!; PIDS+=($C)
expect_focus $C sway "after a Sway restart latnice-focus follows the new Sway ($C)"

# A sandboxed client: foot as pid 1 of its own pid namespace.
unshare --pid --fork --mount-proc "${AS_USER[@]}" WAYLAND_DISPLAY=$WL foot sleep 1000 > "$WORK/client-s.log" 2>&1 &
SU=$!; PIDS+=($SU)
for ((i = 0; i < 50; i++)); do
        S=$(awk '{ print $1 }' /proc/$SU/task/$SU/children 2>/dev/null)
        [[ $S ]] && break
        sleep 0.1
done
echo "# sandboxed client: pid $S, $(awk '/^NSpid:/ { print $3 }' /proc/$S/status 2>/dev/null) in its namespace"
expect_focus "$S" sway "a client in its own pid namespace: Sway names its pid here ($S)"
kill -KILL "$S" 2>/dev/null # the init of its pid namespace: SIGKILL only

# An Xwayland window whose _NET_WM_PID lies (names another process of ours, T): Sway's pid for it may
# be that word (wlroots before 0.17 reads _NET_WM_PID), so latnice-focus asks the X server (X-Resource)
# which client made the window Sway names ("window"), as the X11 source does. latnice-focus learns
# Xwayland's DISPLAY as a user service does: from Sway's environment (swaymsg exec).
if [[ $FOCUS_CLIENT ]] && command -v Xwayland >/dev/null; then
        as_user swaymsg -s "$SOCK" exec "echo \$DISPLAY > $WORK/display" >/dev/null
        for ((i = 0; i < 50; i++)); do [[ -s $WORK/display ]] && break; sleep 0.1; done
        XD=$(cat "$WORK/display" 2>/dev/null)
        if [[ -z $XD ]]; then
                fail "Sway gives its children no DISPLAY (Xwayland off?)"
        else
                kill $LF; wait $LF 2>/dev/null
                echo "restarted with DISPLAY=$XD" >> "$WORK/focus.out"
                "${AS_USER[@]}" SWAYSOCK="$SOCK" DISPLAY="$XD" DBUS_SESSION_BUS_ADDRESS=unix:path=$WORK/no-bus \
                        "$FOCUS" --print --debug >> "$WORK/focus.out" 2>> "$WORK/focus.err" &
                LF=$!; PIDS+=($LF)
                sleep infinity & T=$!; PIDS+=($T)
                "${AS_USER[@]}" DISPLAY="$XD" "$FOCUS_CLIENT" liar $T > "$WORK/client-x.log" 2>&1 &
                X=$!; PIDS+=($X)
                expect_focus $X sway "an Xwayland client whose _NET_WM_PID names $T: its own pid, from the X server ($X)"
                if grep -q "^focus $T sway" "$WORK/focus.out"; then fail "  the lie ($T) was taken at its word"
                else pass "  the lie ($T) is not taken"; fi
                # Without DISPLAY latnice-focus cannot ask: the window boosts nothing rather than its word.
                kill $LF; wait $LF 2>/dev/null
                echo "restarted without DISPLAY" >> "$WORK/focus.out"
                "${AS_USER[@]}" SWAYSOCK="$SOCK" DBUS_SESSION_BUS_ADDRESS=unix:path=$WORK/no-bus \
                        "$FOCUS" --print --debug >> "$WORK/focus.out" 2>> "$WORK/focus.err" &
                LF=$!; PIDS+=($LF)
                as_user swaymsg -s "$SOCK" "[pid=$C] focus" >/dev/null
                expect_focus $C sway "  (the focus on c)"
                as_user swaymsg -s "$SOCK" "[title=liar] focus" >/dev/null
                expect_focus 0 sway "an Xwayland window without DISPLAY to ask: nothing boosted"
                if tail -1 "$WORK/focus.out" | grep -q "^focus $T "; then fail "  its word ($T) was taken"; fi
        fi
else
        echo "# no Xwayland or no focus-client: the Xwayland case is not run"
fi

echo "# latnice-focus --print:"; sed 's/^/#   /' "$WORK/focus.out"
[[ $failed == 0 ]] || { echo "# stderr:"; sed 's/^/#   /' "$WORK/focus.err"; tail -5 "$WORK/sway.log"; }
exit $failed
