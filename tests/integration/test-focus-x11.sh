#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# latnice-focus against a real X server (Xvfb) and window manager (i3), with
# --print (no latniced): two clients from two processes, focus moved with
# xdotool, the focused client exiting, and a focus storm that collapses into
# few calls and ends on the right process. A client in its own pid namespace
# (as a Flatpak app's), whose _NET_WM_PID is a pid of that namespace, and a
# client whose _NET_WM_PID names another process: the pid reported is the
# one the X server knows from the client's socket (X-Resource).
#
#   test-focus-x11.sh LATNICE_FOCUS FOCUS_CLIENT
#
# Exit: 0 pass, 1 fail, 77 skip (says why).

set -uo pipefail
FOCUS=$1
CLIENT=$2
failures=0
pass() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }

for p in Xvfb i3 xdotool xdpyinfo unshare; do
        command -v $p >/dev/null || { echo "SKIP: $p is not installed"; exit 77; }
done

WORK=$(mktemp -d /tmp/latnice-focus-test.XXXXXX) || exit 1
pids=()
cleanup() {
        local p
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
        wait 2>/dev/null
        rm -rf -- "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# A display number nobody uses: Xvfb picks one and writes it to fd 3.
exec 3>"$WORK/display"
Xvfb -displayfd 3 -screen 0 800x600x24 -nolisten tcp > "$WORK/xvfb.log" 2>&1 &
pids+=($!)
exec 3>&-
for ((i = 0; i < 100; i++)); do [[ -s $WORK/display ]] && break; sleep 0.1; done
[[ -s $WORK/display ]] || { cat "$WORK/xvfb.log"; echo "FAIL - Xvfb did not start"; exit 1; }
export DISPLAY=:$(head -1 "$WORK/display")

printf 'font pango:monospace 8\nfocus_follows_mouse no\n' > "$WORK/i3.conf"
i3 -c "$WORK/i3.conf" > "$WORK/i3.log" 2>&1 &
pids+=($!)
for ((i = 0; i < 100; i++)); do xprop -root _NET_SUPPORTING_WM_CHECK 2>/dev/null | grep -q 'window id' && break; sleep 0.1; done

"$FOCUS" --print > "$WORK/focus.out" 2> "$WORK/focus.err" &
fpid=$!
pids+=($fpid)

# wait_focus PID: until latnice-focus has printed that pid last (or 10 s).
last_focus() { tail -1 "$WORK/focus.out" | sed -n 's/^focus \([0-9]*\) x11$/\1/p'; }
wait_focus() {
        for ((i = 0; i < 100; i++)); do [[ $(last_focus) == "$1" ]] && return 0; sleep 0.1; done
        return 1
}

start_client() { # start_client NAME: sets cpid and cwin
        "$CLIENT" "$1" > "$WORK/$1.win" &
        cpid=$!
        pids+=($cpid)
        for ((i = 0; i < 100; i++)); do [[ -s $WORK/$1.win ]] && break; sleep 0.1; done
        cwin=$(head -1 "$WORK/$1.win")
}

start_client a; apid=$cpid; awin=$cwin
if wait_focus "$apid"; then pass "a new window's client is the focus ($apid)"; else fail "a new window's client is the focus: got '$(last_focus)', want $apid"; fi
start_client b; bpid=$cpid; bwin=$cwin
if wait_focus "$bpid"; then pass "the second client takes the focus ($bpid)"; else fail "the second client takes the focus: got '$(last_focus)', want $bpid"; fi

xdotool windowactivate --sync "$awin" 2>/dev/null || xdotool windowfocus --sync "$awin"
if wait_focus "$apid"; then pass "xdotool moves the focus back to a"; else fail "xdotool moves the focus back to a: got '$(last_focus)'"; fi
xdotool windowactivate --sync "$bwin" 2>/dev/null || xdotool windowfocus --sync "$bwin"
if wait_focus "$bpid"; then pass "xdotool moves the focus to b"; else fail "xdotool moves the focus to b: got '$(last_focus)'"; fi

# A storm: 200 switches back and forth, ending on a.
before=$(wc -l < "$WORK/focus.out")
for ((k = 0; k < 100; k++)); do
        xdotool windowactivate "$bwin" windowactivate "$awin" 2>/dev/null
done
xdotool windowactivate --sync "$awin" 2>/dev/null
if wait_focus "$apid"; then pass "after a focus storm the focus is a"; else fail "after a focus storm the focus is a: got '$(last_focus)'"; fi
after=$(wc -l < "$WORK/focus.out")
echo "# storm: 200 switches, $((after - before)) focus changes reported"
if (( after - before <= 201 )); then pass "a storm reports at most one change per switch"; else fail "a storm reports $((after - before)) changes for 200 switches"; fi

# A sandboxed client: its own pid namespace, in which it is pid 1 and sets _NET_WM_PID to 1. The
# X server knows its pid here from its socket (X-Resource's LocalClientPID), and that one counts.
exts=$(xdpyinfo -queryExtensions 2>/dev/null)
if grep -q 'X-Resource' <<< "$exts"; then
        unshare --pid --fork --mount-proc "$CLIENT" sandboxed > "$WORK/sandboxed.win" 2> "$WORK/sandboxed.err" &
        upid=$!
        pids+=($upid)
        for ((i = 0; i < 100; i++)); do [[ -s $WORK/sandboxed.win ]] && break; sleep 0.1; done
        spid=$(cat /proc/$upid/task/$upid/children 2>/dev/null | awk '{ print $1 }')
        swin=$(head -1 "$WORK/sandboxed.win")
        echo "# sandboxed client: pid $spid here, $(awk '/^NSpid:/ { print $3 }' /proc/$spid/status) in its namespace"
        if wait_focus "$spid"; then
                pass "a sandboxed client (its _NET_WM_PID is 1, of its own pid namespace): its pid here ($spid)"
        else fail "a sandboxed client: got '$(last_focus)', want its pid here $spid"; fi
        # unshare waits for its child, and the init of a pid namespace takes no SIGTERM from outside.
        kill -KILL "$spid" 2>/dev/null
        wait "$upid" 2>/dev/null
        # A client whose _NET_WM_PID names this shell: the X server's word wins.
        "$CLIENT" liar $$ > "$WORK/liar.win" &
        lpid=$!
        pids+=($lpid)
        if wait_focus "$lpid"; then pass "a client whose _NET_WM_PID names another process ($$): its own pid ($lpid)"
        else fail "a client whose _NET_WM_PID is $$: got '$(last_focus)', want its own pid $lpid"; fi
        kill "$lpid"
        xdotool windowactivate --sync "$bwin" 2>/dev/null || xdotool windowfocus --sync "$bwin"
        wait_focus "$bpid" || fail "focus back to b: got '$(last_focus)'"
        xdotool windowactivate --sync "$awin" 2>/dev/null || xdotool windowfocus --sync "$awin"
        wait_focus "$apid" || fail "focus back to a: got '$(last_focus)'"
else
        echo "# this X server has no X-Resource extension: the sandboxed client's check is left out"
fi

# The focused client exits: i3 focuses the other one.
kill "$apid"
if wait_focus "$bpid"; then pass "when the focused client exits, the focus moves to b"; else fail "when the focused client exits: got '$(last_focus)'"; fi
kill "$bpid"
if wait_focus 0; then pass "with no window left the focus is 0 (nobody)"; else fail "with no window left: got '$(last_focus)'"; fi

# No polling: idle, latnice-focus does not wake up (its CPU time does not move).
t1=$(awk '{print $14 + $15}' /proc/$fpid/stat)
sleep 1
t2=$(awk '{print $14 + $15}' /proc/$fpid/stat)
if [[ $t1 == "$t2" ]]; then pass "latnice-focus sleeps while nothing changes"; else fail "latnice-focus used CPU while idle ($t1 -> $t2 ticks)"; fi

kill "$fpid"
wait "$fpid"
rc=$?
if [[ $rc == 0 ]]; then pass "latnice-focus exits cleanly on SIGTERM"; else fail "latnice-focus exits with $rc on SIGTERM"; cat "$WORK/focus.err"; fi
cat "$WORK/focus.err" | sed 's/^/# /'

[[ $failures == 0 ]] || { echo "$failures failed"; exit 1; }
