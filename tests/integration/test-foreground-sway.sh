#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The foreground boost end to end on Wayland, in the contained systemd of tests/harness/ (real system
# bus, polkitd, systemd-logind, a user manager): a user logged in with pam_systemd (an active local
# session, XDG_SESSION_TYPE=wayland), a headless Sway in that session, two foot terminals, and
# latnice-focus as the shipped user unit following Sway's IPC. Checks: the focused terminal gets
# [Foreground] LatencyNice= and, with Cover=tree, its shell's children too; the other terminal gets
# its default back; focus moved with swaymsg; the focused terminal killed, and its pid taken by a
# new process of the same user (ns_last_pid in the contained pid namespace), which must not inherit
# the boost; latnice-focus stopped, and the boost ends.
#
#   test-foreground-sway.sh BUILD_DIR [SOURCE_DIR]
#
# Exit: 0 pass, 1 fail, 77 skip (says why).

set -uo pipefail

HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
. "$HERE/fg-lib.sh" # BUILD_DIR [SOURCE_DIR]: SRC, BUILD, L
fg_require sway swaymsg foot setpriv
fg_prepare
# A batch job that a focused terminal's shell runs: its rule's value is not the terminal's to take.
cp /bin/sleep "$WORK/bin/lnbatch"
cat > "$WORK/root/etc/latnice.d/50-batch.conf" <<'EOF2'
[Process batch]
Comm=lnbatch
LatencyNice=19
EOF2
# The session: a headless Sway (no seat, no GPU: pixman), and then it waits for the test to end it.
cat > "$WORK/session.sh" <<'EOF2'
#!/bin/sh
printf 'output HEADLESS-1 resolution 640x480\n' > $HOME/sway.conf
WLR_BACKENDS=headless WLR_LIBINPUT_NO_DEVICES=1 WLR_RENDERER=pixman SWAYSOCK=$HOME/sway.sock \
        sway -c $HOME/sway.conf > $HOME/sway.log 2>&1 &
i=0
while ! swaymsg -s $HOME/sway.sock -t get_version > /dev/null 2>&1; do
        i=$((i + 1)); [ $i -lt 200 ] || exit 1
        sleep 0.1
done
ls $XDG_RUNTIME_DIR | grep -m1 '^wayland-[0-9]*$' > $HOME/wayland
echo $XDG_SESSION_ID > $HOME/session
exec sleep infinity
EOF2
SESSION_TYPE=wayland
fg_start
SOCK=/tmp/home-$U/sway.sock
WL=$(in_ cat /tmp/home-$U/wayland)
[[ $WL ]] || { fail "Sway made no Wayland socket in U's runtime directory"; exit 1; }
SESSION_ENV=(SWAYSOCK=$SOCK WAYLAND_DISPLAY=$WL)
echo "# SWAYSOCK=$SOCK WAYLAND_DISPLAY=$WL"
userctl set-environment SWAYSOCK=$SOCK WAYLAND_DISPLAY=$WL
check "the shipped latnice-focus.service links into U's manager" userctl link "$IN/latnice-focus.service"
check "latnice-focus starts as U's user unit" userctl start latnice-focus.service

# start_term NAME: a foot running a shell that runs sleep and the batch job; sets tpid (foot), cpid
# (sleep), jpid (lnbatch)
start_term() {
        as_u sh -c "foot sh -c 'sleep 1000 & echo \$! > /tmp/home-$U/$1.child; $IN/bin/lnbatch 1000 &
                echo \$! > /tmp/home-$U/$1.job; wait' > /tmp/home-$U/$1.log 2>&1 & echo \$! > /tmp/home-$U/$1.pid"
        eventually 10 in_ test -s /tmp/home-$U/$1.job >/dev/null
        tpid=$(in_ cat /tmp/home-$U/$1.pid)
        cpid=$(in_ cat /tmp/home-$U/$1.child)
        jpid=$(in_ cat /tmp/home-$U/$1.job)
}
start_term a; A=$tpid; AC=$cpid; AJ=$jpid
wait_value "terminal a, mapped and focused, gets the boost -10" "$A" "-10 foreground"
wait_value "  with Cover=tree the sleep its shell started too" "$AC" "-10 foreground"
wait_value "  but not the batch job its shell started: its rule's 19 stays" "$AJ" "19 rule"
start_term b; B=$tpid; BC=$cpid
echo "# terminal a: foot $A, sleep $AC; terminal b: foot $B, sleep $BC"
wait_value "terminal b, mapped last, takes the boost" "$B" "-10 foreground"
wait_value "  a has its default back" "$A" "0 none"
wait_value "  and so has a's sleep" "$AC" "0 none"
echo "# latnicectl list, b focused:"
in_ "$IN/bin/latnicectl" list | sed 's/^/#   /'
# moved_ms PID "VALUE SET_BY": after swaymsg returned, the ms until GetTask shows it (reported, not judged:
# each look is a busctl through nsenter, itself some ms).
moved_ms() {
        local t0=$1 i
        for ((i = 0; i < 500; i++)); do
                is_value "$2" "$3" && { echo $(( ($(date +%s%N) - t0) / 1000000 )); return; }
        done
        echo never
}
as_u swaymsg -s "$SOCK" "[pid=$A] focus" > /dev/null
echo "# swaymsg focus a: latniced's value moved $(moved_ms "$(date +%s%N)" "$A" "-10 foreground") ms after swaymsg returned"
wait_value "swaymsg moves the focus to a: a gets -10" "$A" "-10 foreground"
wait_value "  a's batch job keeps its rule's 19" "$AJ" "19 rule"
wait_value "  b has its default back" "$B" "0 none"
as_u swaymsg -s "$SOCK" "[pid=$B] focus" > /dev/null
echo "# swaymsg focus b: latniced's value moved $(moved_ms "$(date +%s%N)" "$B" "-10 foreground") ms after swaymsg returned"
wait_value "swaymsg moves the focus to b: b gets -10" "$B" "-10 foreground"

# --- the focused terminal dies, and its pid comes back as somebody else ------------------------
in_ kill -KILL "$B" "$BC" "$jpid"
wait_value "b killed while focused; Sway focuses a: a gets -10" "$A" "-10 foreground"
# The next pid in the contained pid namespace is b's again: a process of the same user that is no
# window of Sway's and must not be taken for the one latnice-focus named.
# (The contained /proc/sys is read-only: a proc of its own, in a mount namespace of its own, is not.)
R=$(in_ unshare -m sh -c "mount -t proc proc /proc && echo $((B - 1)) > /proc/sys/kernel/ns_last_pid;
        setpriv --reuid=$UID_U --regid=$UID_U --init-groups sleep 1000 > /dev/null 2>&1 & echo \$!")
echo "# a new process of U's at pid $R (b was $B)"
if [[ $R == "$B" ]]; then
        sleep 1 # what a stale boost would need to reach it
        wait_value "  the process that took b's pid has the default, not b's boost" "$R" "0 none"
        out=$(in_ "$IN/bin/latnicectl" list)
        check "  latnicectl list does not name it" bash -c '! grep -qw "$1" <<< "$2"' _ "$R" "$out"
else
        echo "# pid $B was taken by another process first: the reuse check did not run"
fi
in_ kill "$R" 2>/dev/null

# --- the focus service goes away ------------------------------------------------------------------
check "stop latnice-focus" userctl stop latnice-focus.service
wait_value "  a's boost ends with it" "$A" "0 none"
wait_value "  and its sleep's" "$AC" "0 none"

stop_contained_killed
[[ $failures == 0 ]] || { echo "$failures failed"; exit 1; }
echo "all passed"
