#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Who may name the focus on org.latnice1.Focus: latnice-focus --print on a private session bus, and
# peers (tests/helpers/focus-caller) standing in for a compositor and for anything else. Only the
# connection that owns org.kde.KWin or org.gnome.Shell is heard, followed as the names change owner
# (also an owner from before latnice-focus started); a peer of another pid namespace is not heard
# even there (its "1" is not our pid 1). latnice-focus prints a focus before it answers the call,
# so a refused call is checked at its answer, without waiting.
#
#   test-focus-trust.sh LATNICE_FOCUS FOCUS_CALLER
#
# Exit: 0 pass, 1 fail, 77 skip (says why).
set -uo pipefail
FOCUS=$(readlink -f "$1")
CALLER=$(readlink -f "$2")
command -v dbus-daemon >/dev/null || { echo "SKIP: dbus-daemon is not installed"; exit 77; }
command -v busctl >/dev/null || { echo "SKIP: busctl is not installed"; exit 77; }
WORK=$(mktemp -d /tmp/latnice-focus-trust.XXXXXX) || exit 1
PIDS=()
cleanup() {
        local p
        # The peers end at the end of their input (unshare --fork ignores SIGTERM).
        [[ ${PEER[1]:-} ]] && exec {PEER[1]}>&-
        [[ ${NSPEER[1]:-} ]] && exec {NSPEER[1]}>&-
        for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
        wait 2>/dev/null
        [[ ${KEEP:-} ]] || rm -rf -- "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
failed=0
pass() { echo "ok - $*"; }
fail() { echo "not ok - $*"; failed=1; }

dbus-daemon --session --nofork --address=unix:path=$WORK/bus > "$WORK/dbus.log" 2>&1 &
PIDS+=($!)
for ((i = 0; i < 100; i++)); do [[ -S $WORK/bus ]] && break; sleep 0.1; done
export DBUS_SESSION_BUS_ADDRESS=unix:path=$WORK/bus
unset DISPLAY WAYLAND_DISPLAY SWAYSOCK HYPRLAND_INSTANCE_SIGNATURE NIRI_SOCKET

start_focus() {
        "$FOCUS" --print --debug >> "$WORK/focus.out" 2>> "$WORK/focus.err" &
        LF=$!
        PIDS+=($LF)
        for ((i = 0; i < 100; i++)); do
                busctl --user status org.latnice1.Focus >/dev/null 2>&1 && return
                sleep 0.1
        done
        echo "not ok - latnice-focus does not own org.latnice1.Focus"; cat "$WORK/focus.err"; exit 1
}
last() { tail -1 "$WORK/focus.out"; }
# ask COPROC LINE: the peer's one-line answer, in $ans.
ask() {
        local -n cp=$1
        echo "$2" >&"${cp[1]}"
        ans=
        read -r -t 10 ans <&"${cp[0]}" || ans="(no answer)"
}
# A process of ours to name, two of them.
sleep infinity & T1=$!; PIDS+=($T1)
sleep infinity & T2=$!; PIDS+=($T2)

start_focus
coproc PEER { exec "$CALLER"; }
PIDS+=($PEER_PID)

ask PEER "focus $T1"
[[ $ans == "error org.freedesktop.DBus.Error.AccessDenied "* ]] && pass "a peer that is no compositor is refused ($ans)" ||
        fail "a peer that is no compositor: got '$ans', want AccessDenied"

[[ $(last) != "focus $T1 session-bus" ]] && pass "  and names no focus" || fail "  it named the focus: $(last)"

ask PEER "own org.gnome.Shell"
[[ $ans == ok ]] || fail "the peer cannot own org.gnome.Shell: $ans"
ask PEER "focus $T1"
[[ $ans == ok ]] && pass "the owner of org.gnome.Shell is heard (Focus)" || fail "the owner of org.gnome.Shell: got '$ans'"
for ((i = 0; i < 100; i++)); do [[ $(last) == "focus $T1 session-bus" ]] && break; sleep 0.05; done
[[ $(last) == "focus $T1 session-bus" ]] && pass "  the focus is $T1" || fail "  the focus: '$(last)', want $T1"
ask PEER "text $T2"
[[ $ans == ok && $(last) == "focus $T2 session-bus" ]] && pass "  and with FocusText ($T2)" ||
        fail "  FocusText: got '$ans', focus '$(last)', want $T2"

ask PEER "release org.gnome.Shell"
ask PEER "focus $T1"
[[ $ans == "error org.freedesktop.DBus.Error.AccessDenied "* ]] &&
        pass "the name released, the same connection is refused" || fail "after release: got '$ans'"

[[ $(last) == "focus $T2 session-bus" ]] && pass "  the focus stays $T2" || fail "  the focus moved: $(last)"

# A peer of another pid namespace: "1" is itself there, the host's init here.
NS=(unshare --pid --fork --kill-child --mount-proc)
[[ $EUID == 0 ]] || NS=(unshare --user --map-root-user --pid --fork --kill-child --mount-proc)
coproc NSPEER { exec "${NS[@]}" "$CALLER"; }
PIDS+=($NSPEER_PID)
ask NSPEER pid
if [[ $ans != 1 ]]; then
        echo "# unshare --pid does not work here ($ans): the pid namespace case is not checked"
else
        ask NSPEER "own org.kde.KWin"
        [[ $ans == ok ]] || fail "the peer in a pid namespace cannot own org.kde.KWin: $ans"
        ask NSPEER "focus 1"
        [[ $ans == "error org.freedesktop.DBus.Error.AccessDenied "* ]] &&
                pass "the owner of org.kde.KWin in another pid namespace is refused ($ans)" ||
                fail "Focus 1 from another pid namespace: got '$ans', want AccessDenied"

        [[ $(last) != "focus 1 session-bus" ]] && pass "  our pid 1 is not the focus" || fail "  the focus is our pid 1"
        ask NSPEER "release org.kde.KWin"
fi

# The compositor was there first: latnice-focus asks who owns the names when it starts.
ask PEER "own org.kde.KWin"
[[ $ans == ok ]] || fail "the peer cannot own org.kde.KWin: $ans"
kill $LF; wait $LF 2>/dev/null
echo restarted >> "$WORK/focus.out"
start_focus
ask PEER "focus $T1"
[[ $ans == ok ]] && pass "the owner of org.kde.KWin from before latnice-focus started is heard" ||
        fail "the owner of org.kde.KWin from before the start: got '$ans'"
for ((i = 0; i < 100; i++)); do [[ $(last) == "focus $T1 session-bus" ]] && break; sleep 0.05; done
[[ $(last) == "focus $T1 session-bus" ]] && pass "  the focus is $T1" || fail "  the focus: '$(last)', want $T1"

echo "# latnice-focus --print:"; sed 's/^/#   /' "$WORK/focus.out"
[[ $failed == 0 ]] || { echo "# stderr:"; sed 's/^/#   /' "$WORK/focus.err"; }
exit $failed
