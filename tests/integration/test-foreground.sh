#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The foreground boost end to end, in the contained systemd of tests/harness/ (real system bus,
# polkitd, systemd-logind, a user manager): a user logged in with pam_systemd (an active local
# session, XDG_SESSION_TYPE=x11), Xvfb and i3 in that session, two X clients from two processes,
# latnice-focus as the shipped user unit, focus moved with xdotool. Checks: the focused client
# gets [Foreground] LatencyNice=, the other gets its own value back (a rule's 5, or the default);
# a value somebody set meanwhile is left alone; a client that exits while focused; a focus storm; a
# client in its own pid namespace (as a Flatpak app), whose _NET_WM_PID is a pid of that namespace;
# an unprivileged caller naming another user's process, and a user with no session; descendants of a
# boosted shell that leave its tree ("(exec sleep 1003 &)"); latniced killed and restarted while a boost
# is active; latniced stopping cleanly (LATNICE_FG_DAEMON: another build, see fg-lib.sh).
#
#   test-foreground.sh BUILD_DIR [SOURCE_DIR]
#
# Exit: 0 pass, 1 fail, 77 skip (says why).

set -uo pipefail

HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
. "$HERE/fg-lib.sh" # BUILD_DIR [SOURCE_DIR]: SRC, BUILD, L
fg_require Xvfb i3 xdotool
[[ -e $BUILD/tests/focus-client ]] || { echo "FAIL - $BUILD/tests/focus-client is not built"; exit 1; }
fg_prepare
cp "$BUILD/tests/focus-client" "$WORK/bin/fclient-a"
cp "$BUILD/tests/focus-client" "$WORK/bin/fclient-b"
cp "$BUILD/tests/focus-client" "$WORK/bin/fclient-s"
cat > "$WORK/root/etc/latnice.d/50-focus.conf" <<'EOF2'
[Process b]
Comm=fclient-b
LatencyNice=5
EOF2
# The session: X, the window manager, and then it waits for the test to end it.
cat > "$WORK/session.sh" <<EOF2
#!/bin/sh
exec 3>\$HOME/display
Xvfb -displayfd 3 -screen 0 800x600x24 -nolisten tcp >\$HOME/xvfb.log 2>&1 &
exec 3>&-
while [ ! -s \$HOME/display ]; do sleep 0.1; done
export DISPLAY=:\$(head -1 \$HOME/display)
printf 'font pango:monospace 8\nfocus_follows_mouse no\n' > \$HOME/i3.conf
i3 -c \$HOME/i3.conf >\$HOME/i3.log 2>&1 &
echo \$XDG_SESSION_ID > \$HOME/session
exec sleep infinity
EOF2
SESSION_TYPE=x11
fg_start
DISPLAY_N=$(in_ cat /tmp/home-$U/display)
SESSION_ENV=(DISPLAY=:$DISPLAY_N)
echo "# DISPLAY=:$DISPLAY_N"
check "i3 manages the display" eventually 20 as_u sh -c 'xprop -root _NET_SUPPORTING_WM_CHECK | grep -q "window id"'
userctl set-environment DISPLAY=:$DISPLAY_N
check "the shipped latnice-focus.service links into U's manager" userctl link "$IN/latnice-focus.service"

start_client() { # start_client NAME: sets cpid, cwin
        in_ runuser -u $U -- env DISPLAY=:$DISPLAY_N sh -c "$IN/bin/$1 $1 > /tmp/$1.win 2>&1 & echo \$! > /tmp/$1.pid"
        eventually 10 in_ test -s /tmp/$1.win >/dev/null
        cpid=$(in_ cat /tmp/$1.pid)
        cwin=$(in_ head -1 /tmp/$1.win)
}
focus() { as_u xdotool windowactivate --sync "$1" >/dev/null 2>&1 || as_u xdotool windowactivate "$1"; }

start_client fclient-a; A=$cpid; AW=$cwin
start_client fclient-b; B=$cpid; BW=$cwin
echo "# client a: pid $A window $AW; client b: pid $B window $BW"
wait_value "b has its rule's 5 before any focus service runs" "$B" "5 rule"
wait_value "a has the default" "$A" "0 none"

echo "# latnicectl list, before latnice-focus runs:"
in_ "$IN/bin/latnicectl" list | sed 's/^/#   /'
check "latnice-focus starts as U's user unit" userctl start latnice-focus.service
wait_value "b, focused (mapped last), gets the boost -10" "$B" "-10 foreground"
wait_value "a keeps the default" "$A" "0 none"
echo "# latnicectl list, b focused:"
in_ "$IN/bin/latnicectl" list | sed 's/^/#   /'
focus "$AW"
wait_value "focus to a (xdotool): a gets -10" "$A" "-10 foreground"
wait_value "  b gets its rule's 5 back" "$B" "5 rule"
echo "# latnicectl list, a focused:"
in_ "$IN/bin/latnicectl" list | sed 's/^/#   /'
out=$(in_ "$IN/bin/latnicectl" status)
check "latnicectl status shows the boost (Foreground: ... 1 boost, 1 process)" grep -q 'Foreground: LatencyNice=-10 Cover=tree: 1 boost, 1 process' <<< "$out"
grep Foreground <<< "$out" | sed 's/^/#   /'
out=$(in_ "$IN/bin/latnicectl" explain "$A")
check "latnicectl explain names the foreground boost" grep -q '^Now: *the foreground boost' <<< "$out"
out=$(in_ "$IN/bin/latnicectl" get "$A")
check "latnicectl get names [Foreground]" grep -q 'set by latniced: \[Foreground\] LatencyNice=-10' <<< "$out"

# --- what unrelated bus traffic and a repeated request cost ----------------------------------------
# Every connection to the system bus is a NameOwnerChanged: latnice-focus (as its unit runs it, without
# --print) must hear only org.latnice1's, and the same boost asked again must not ask polkit again.
in_ sh -c 'exec dbus-monitor --system "type=method_call,member=SetForeground" \
        "type=method_call,member=CheckAuthorization"' > "$WORK/monitor.log" 2>&1 &
MON=$!
eventually 10 grep -q "NameAcquired" "$WORK/monitor.log" >/dev/null 2>&1
for i in $(seq 100); do
        in_ runuser -u $V -- busctl --system call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus GetId \
                >/dev/null 2>&1
done
for i in 1 2 3; do
        as_u busctl --system call org.latnice1 /org/latnice1 org.latnice1.Manager SetForeground u "$A" >/dev/null 2>&1
done
sleep 1
kill "$MON" 2>/dev/null
wait "$MON" 2>/dev/null
n_set=$(grep -c "member=SetForeground" "$WORK/monitor.log")
n_auth=$(grep -c "member=CheckAuthorization" "$WORK/monitor.log")
echo "# 100 unrelated connections, then 3 SetForeground(a) of U's own: $n_set SetForeground calls, $n_auth polkit checks"
check "100 unrelated bus connections: latnice-focus sends nothing (SetForeground calls: $n_set, want 3: ours)" \
        test "$n_set" = 3
check "the boost asked again (3 times): polkit is not asked (CheckAuthorization calls: $n_auth)" test "$n_auth" = 0
wait_value "  a keeps the boost" "$A" "-10 foreground"

# --- somebody changes a boosted value meanwhile: it stays theirs --------------------------------
check "root sets a's value to 2 by hand while a is boosted" in_ busctl call org.latnice1 /org/latnice1 \
        org.latnice1.Manager SetLatencyNice ui "$A" 2
focus "$BW"
wait_value "focus to b: b gets -10" "$B" "-10 foreground"
wait_value "  a keeps the 2 set meanwhile (not put back)" "$A" "2 manual"
focus "$AW"
wait_value "focus to a again: a's manual 2 is left alone" "$A" "2 manual"
wait_value "  b gets 5 back" "$B" "5 rule"
# a's value is root's explicit choice now, for as long as a runs: a new a for the rest.
in_ kill "$A"
start_client fclient-a; A=$cpid; AW=$cwin
echo "# a new client a: pid $A window $AW"
wait_value "the new a, mapped and focused, gets -10" "$A" "-10 foreground"
wait_value "  b gets 5 back" "$B" "5 rule"

# --- a storm --------------------------------------------------------------------------------------
moves0=$(in_ busctl get-property org.latnice1 /org/latnice1 org.latnice1.Manager Foreground)
for ((k = 0; k < 100; k++)); do as_u xdotool windowactivate "$BW" windowactivate "$AW" >/dev/null 2>&1; done
focus "$BW"
wait_value "after 200 focus changes ending on b: b has -10" "$B" "-10 foreground"
wait_value "  a has its own value back (the default)" "$A" "0 none"
moves1=$(in_ busctl get-property org.latnice1 /org/latnice1 org.latnice1.Manager Foreground)
echo "# storm: before $moves0; after $moves1"
out=$(in_ "$IN/bin/latnicectl" list)
check "  after the storm only b carries the boost" [ "$(grep -c '\[Foreground\]' <<< "$out")" = 1 ]
check "  latniced is still there" in_ busctl status org.latnice1

# --- a sandboxed client -----------------------------------------------------------------------------
# U's client in its own pid namespace, where it is pid 1 and says so in _NET_WM_PID (pid 1 here is
# systemd, root's). latnice-focus asks the X server (X-Resource) which process the window's client is.
in_ sh -c "unshare --pid --fork --mount-proc setpriv --reuid=$U --regid=$U --init-groups -- env DISPLAY=:$DISPLAY_N \
        $IN/bin/fclient-s fclient-s > /tmp/fclient-s.win 2>&1 & echo \$! > /tmp/fclient-s.pid"
eventually 10 in_ test -s /tmp/fclient-s.win >/dev/null
SU=$(in_ cat /tmp/fclient-s.pid)
S=$(in_ cat /proc/$SU/task/$SU/children | awk '{ print $1 }')
echo "# sandboxed client: pid $S, $(in_ awk '/^NSpid:/ { print $3 }' /proc/$S/status) in its namespace"
wait_value "the sandboxed client, mapped and focused: its pid here gets -10" "$S" "-10 foreground"
wait_value "  b gets 5 back" "$B" "5 rule"
in_ kill -KILL "$S" # the init of its pid namespace: SIGKILL only
focus "$BW"
wait_value "focus to b again: b gets -10" "$B" "-10 foreground"

# --- who may ------------------------------------------------------------------------------------
call_as() { # call_as USER METHOD SIG ARGS...: "OK ..." or "ERROR name"
        local who=$1
        shift
        in_ runuser -u "$who" -- busctl call org.latnice1 /org/latnice1 org.latnice1.Manager "$@" 2>&1 |
                sed 's/^Call failed: /ERROR /'
}
VPID=$(in_ runuser -u $V -- sh -c 'sleep 1000 >/dev/null 2>&1 & echo $!')
out=$(call_as $U SetForeground u "$VPID")
check "U naming V's process: refused, NotYourProcess (got: $out)" grep -q 'belongs to another user' <<< "$out"
wait_value "  V's process is untouched" "$VPID" "0 none"
out=$(call_as $V SetForeground u "$A")
check "V naming U's process: refused (got: $out)" grep -q 'belongs to another user' <<< "$out"
out=$(call_as $V SetForeground u "$VPID")
check "V (no session) naming its own process: refused, no session to bind it to (got: $out)" \
        grep -q 'has no active session' <<< "$out"
wait_value "  V's process is untouched" "$VPID" "0 none"
out=$(call_as $U SetForeground u 1)
check "U naming pid 1 (root's): refused" grep -q 'belongs to another user' <<< "$out"

# --- descendants that leave the tree ------------------------------------------------------------------
# A boosted shell runs "(exec sleep 1003 &)": the subshell forks the sleep and exits, the sleep is
# reparented and is in no tree of the boost. latniced is stopped (SIGSTOP) meanwhile, so that the subshell
# is gone before latniced reads the exec: then no chain of processes leads from the sleep to the shell. A
# second subshell of a subshell never execs at all (it waits on a FIFO nobody writes) and is reparented the
# same way. When the boost ends (SetForeground(0)) or moves to another window, both must be back at the
# default, as the shell is.
DPID=$(in_ systemctl show -P MainPID latniced.service)
in_ sh -c 'rm -f /tmp/fg-*; mkfifo -m 666 /tmp/fg-go /tmp/fg-never'
# polkit asks for a caller in the active session: a transient unit of U's user manager is one.
set_fg() { # set_fg PID, or set_fg end: EndForeground()
        if [[ $1 == end ]]; then
                as_u systemd-run --user --wait -q busctl --system call org.latnice1 /org/latnice1 \
                        org.latnice1.Manager EndForeground
        else
                as_u systemd-run --user --wait -q busctl --system call org.latnice1 /org/latnice1 \
                        org.latnice1.Manager SetForeground u "$1"
        fi; }
fork_round() { # fork_round PID DESCRIPTION: SetForeground(PID) ends the shell's boost
        local sh sl sub
        in_ rm -f /tmp/fg-sh /tmp/fg-sleep /tmp/fg-sub
        in_ runuser -u $U -- sh -c "bash -c 'read x < /tmp/fg-go; (exec sleep 1003 & echo \$! > /tmp/fg-sleep); \
                ( (echo \$BASHPID > /tmp/fg-sub; read y < /tmp/fg-never) & ); read z < /tmp/fg-never' \
                >/dev/null 2>&1 & echo \$! > /tmp/fg-sh"
        sh=$(in_ cat /tmp/fg-sh)
        check "$2: SetForeground(shell) from U's user manager (in the session, as latnice-focus)" set_fg "$sh"
        wait_value "$2: a shell, set as the foreground, gets -10" "$sh" "-10 foreground"
        in_ kill -STOP "$DPID"
        in_ sh -c 'echo go > /tmp/fg-go'
        eventually 10 in_ test -s /tmp/fg-sleep >/dev/null && eventually 10 in_ test -s /tmp/fg-sub >/dev/null
        sl=$(in_ cat /tmp/fg-sleep)
        sub=$(in_ cat /tmp/fg-sub)
        is_orphan() { [[ $(in_ ps -o ppid= -o comm= -p "$1" | awk '{ print $1, $2 }') == "1 $2" ]]; }
        check "  the sleep ($sl) runs, reparented to PID 1, before latniced reads its exec" \
                eventually 10 is_orphan "$sl" sleep
        check "  the subshell that never execs ($sub) is reparented to PID 1" eventually 10 is_orphan "$sub" bash
        in_ kill -CONT "$DPID"
        [[ $(value "$sub") == "-10 "* ]] && pass "  the subshell carries the boost's -10 while it lasts" ||
                fail "  the subshell carries the boost's -10 while it lasts (is: '$(value "$sub")')"
        echo "# $2: shell $sh, sleep $sl, subshell $sub: after latniced read the exec: $(value "$sl") / $(value "$sub")"
        check "  $([[ $1 == end ]] && echo "EndForeground()" || echo "SetForeground($1)") from U's user manager" \
                set_fg "$1"
        wait_value "  $2: the shell is back at the default" "$sh" "0 none"
        wait_value "  $2: the reparented sleep is back at the default" "$sl" "0 none"
        wait_value "  $2: the reparented subshell is back at the default" "$sub" "0 none"
        in_ kill "$sl" "$sub" "$sh"
}
# The boost moves first: latnice-focus's bus name keeps it alive between the calls (the caller of a
# boost that began with a transient unit's call is gone as soon as the call is).
fork_round "$A" "the boost moves to a"
wait_value "  a has the boost" "$A" "-10 foreground"
fork_round 0 "SetForeground(0)"
# As it was before: b focused and boosted, by latnice-focus.
focus "$AW"
focus "$BW"
wait_value "focus to a and back to b: b has the boost again" "$B" "-10 foreground"
# EndForeground(): the same as SetForeground(0), under a name that does not make 0 mean two things
# (0 is "the caller" in GetTask, Explain and SetLatencyNice).
fork_round end "EndForeground()"
focus "$AW"
focus "$BW"
wait_value "focus to a and back to b: b has the boost again" "$B" "-10 foreground"

# --- the focused client exits -----------------------------------------------------------------------
in_ kill "$B"
wait_value "b exits while focused; i3 focuses a: a gets -10" "$A" "-10 foreground"
out=$(in_ "$IN/bin/latnicectl" list)
check "  latnicectl list has no trace of b" [ -z "$(grep -w "$B" <<< "$out")" ]

# --- latniced restarts while a boost is active -------------------------------------------------------
FPID=$(userctl show -P MainPID latnice-focus.service)
in_ kill -STOP "$FPID" # so that it cannot tell the new latniced before we look
check "kill -9 latniced while a is boosted" in_ systemctl kill -s KILL latniced.service
eventually 10 sh -c "! $L exec $NAME systemctl is-active -q latniced.service" >/dev/null
in_ systemctl reset-failed latniced.service 2>/dev/null
# latnicectl get without latniced reads the kernel: the TID row's LATNICE column.
[[ $(in_ "$IN/bin/latnicectl" get "$A" 2>/dev/null | awk -v p="$A" '$1 == p { print $5 }') == -10 ]] &&
        pass "  the kernel says a is at -10 while latniced is down" || fail "  the kernel says a is at -10 while latniced is down"
check "latniced starts again (same state dir)" start_daemon
check "  it owns org.latnice1" eventually 10 in_ busctl status org.latnice1
wait_value "  the stale boost is gone: a has the default again" "$A" "0 none"
in_ kill -CONT "$FPID"
wait_value "latnice-focus tells the new latniced: a gets -10 again" "$A" "-10 foreground"

# --- the focus service goes away ------------------------------------------------------------------------
check "stop latnice-focus" userctl stop latnice-focus.service
wait_value "  a's boost ends with it" "$A" "0 none"
check "latnice-focus starts again" userctl start latnice-focus.service
wait_value "  a is boosted again" "$A" "-10 foreground"
FPID=$(userctl show -P MainPID latnice-focus.service)
in_ kill -KILL "$FPID"
wait_value "latnice-focus killed (-9): latniced sees its bus name go and ends the boost" "$A" "0 none"

# --- latniced stops --------------------------------------------------------------------------------------
check "latniced stops cleanly" in_ systemctl stop latniced.service
res=$(in_ systemctl show -P Result latniced.service)
check "  its result is success (got: $res)" test "$res" = success -o -z "$res"
fg_san_clean

stop_contained_killed
[[ $failures == 0 ]] || { echo "$failures failed"; exit 1; }
echo "all passed"
