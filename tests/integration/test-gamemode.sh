#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The GameMode example end to end, in the contained systemd of tests/harness/ (real system bus,
# polkitd, systemd-logind, a user manager): the shipped conf/gamemode/50-latnice-gamemode.rules in
# /etc/polkit-1/rules.d, the shipped org.latnice1 policy and action, and the start= and end=
# commands read from the shipped conf/gamemode/gamemode.ini, run the way gamemoded runs them: as a
# child of a user unit of a user logged in with pam_systemd (an active session). Checks: the group
# member switches to gaming and back without a password; the same user may not pick another
# profile; a user of an active session who is not in the group, and a member with no session at
# all, may do neither; the profile really changes the value of a matching process.
#
#   test-gamemode.sh BUILD_DIR [SOURCE_DIR]
#
# Exit: 0 pass, 1 fail, 77 skip (says why).

set -uo pipefail

HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
SRC=${2:-$(readlink -f "$HERE/../..")}
BUILD=$(readlink -f "${1:-$SRC/build}")
NAME=gm-$$
IN=/run/latnice-gm-test
G=lngma   # plays games: in the group "gamemode", logged in
H=lngmb   # logged in, not in the group
N=lngmc   # in the group, never logged in
UID_G=1541
UID_H=1542
UID_N=1543

. "$HERE/../harness/testlib.sh"

exec </dev/null
[[ $EUID == 0 ]] || { echo "SKIP: needs root (contained systemd)"; exit 77; }
for f in daemon/latniced ctl/latnicectl; do
        [[ -e $BUILD/$f ]] || { echo "FAIL - $BUILD/$f is not built"; exit 1; }
done
for p in busctl useradd groupadd pkaction; do
        command -v $p >/dev/null || { echo "SKIP: $p is not installed"; exit 77; }
done
[[ -x /usr/lib/polkit-1/polkitd ]] || { echo "SKIP: polkitd is not installed"; exit 77; }
[[ -x /lib/systemd/systemd-logind ]] || { echo "SKIP: systemd-logind is not installed"; exit 77; }
grep -qs pam_systemd /etc/pam.d/common-session || { echo "SKIP: pam_systemd is not in common-session"; exit 77; }

# The commands exactly as the example ships them.
INI=$SRC/conf/gamemode/gamemode.ini
START=$(sed -n 's/^start=//p' "$INI")
END=$(sed -n 's/^end=//p' "$INI")
[[ -n $START && -n $END ]] || { echo "FAIL - $INI has no start= and end="; exit 1; }
echo "# gamemode.ini: start=$START"
echo "# gamemode.ini: end=$END"

make_work latnice-gm-test

DAEMON_CONF=$WORK/root$(build_daemon_conf "$BUILD")
mkdir -p "$WORK/bin" "$WORK/root/etc/latnice.d" "${DAEMON_CONF%/*}" "$WORK/policy" "$WORK/actions" \
        "$WORK/overlay" "$WORK/state" "$WORK/polkit-rules" "$WORK/profiles"
cp "$BUILD/daemon/latniced" "$BUILD/ctl/latnicectl" "$WORK/bin/"
cp /bin/sleep "$WORK/bin/fossilize_repla" # gaming has a rule for it (shader-compilers, by name), desktop none
cp "$SRC"/conf/profiles/*.conf "$WORK/profiles/"
cp "$SRC/conf/latniced.conf" "$DAEMON_CONF"
install_bus_policy
cp "$SRC/conf/gamemode/50-latnice-gamemode.rules" "$WORK/polkit-rules/"
chmod -R a+rX "$WORK"

start_contained --overlay "$WORK/overlay" --policy-dir "$WORK/policy" --bind "$WORK:$IN" \
        --bind "$WORK/actions:/usr/share/polkit-1/actions" --bind "$WORK/polkit-rules:/etc/polkit-1/rules.d"
pass "contained systemd up"
# Homes in the container's own /tmp: /home is the host's. The users and the group exist only in
# the overlay root.
in_ groupadd -r -f gamemode &&
        in_ useradd -m -d /tmp/home-$G -u $UID_G -G gamemode -s /bin/sh $G &&
        in_ useradd -m -d /tmp/home-$H -u $UID_H -s /bin/sh $H &&
        in_ useradd -m -d /tmp/home-$N -u $UID_N -G gamemode -s /bin/sh $N || { fail "groupadd, useradd"; exit 1; }
check "systemd-logind runs" in_ systemctl start systemd-logind.service
# What systemd-tmpfiles (masked in the harness) makes at boot: without it polkitd's sd_login_monitor_new()
# fails and polkit sees no sessions at all.
in_ mkdir -p /run/systemd/machines
act=$(in_ pkaction --verbose --action-id org.latnice1.set-profile 2>&1)
check "polkit: set-profile asks an administrator, even of an active user" grep -q "implicit active: *auth_admin_keep" <<< "$act"

start_daemon() {
        in_ systemd-run -q --unit=latniced -p Type=notify -p BusName=org.latnice1 "$IN/bin/latniced" \
                --root "$IN/root" --profile-dir "$IN/profiles" --state-dir "$IN/state"
}
check "latniced starts (latniced.conf as shipped: Profile=desktop)" start_daemon
check "it owns org.latnice1" eventually 10 in_ busctl status org.latnice1

profile() { in_ busctl get-property org.latnice1 /org/latnice1 org.latnice1.Manager Profile 2>/dev/null; }
is_profile() { [[ $(profile) == "s \"$1\"" ]]; }
check_profile() { # check_profile DESCRIPTION NAME
        if eventually 5 is_profile "$2" >/dev/null 2>&1; then pass "$1"; else fail "$1 (is: $(profile))"; fi
}
check_profile "the profile is desktop" desktop

# A process the two profiles treat differently: gaming's shader-compilers rule gives fossilize_repla 10.
in_ systemd-run -q --unit=gm-shader "$IN/bin/fossilize_repla" infinity
main_pid() { local p; p=$(in_ systemctl show -P MainPID "$1"); [[ $p != 0 ]] && echo "$p"; }
eventually 10 main_pid gm-shader.service >/dev/null
WPID=$(main_pid gm-shader.service)
value() {
        in_ busctl call org.latnice1 /org/latnice1 org.latnice1.Manager GetTask u "$1" 2>/dev/null |
                sed -n 's/^sissssta(ussiitb) "[^"]*" \(-\?[0-9]*\) "\([a-z]*\)".*/\1/p'
}
is_value() { [[ -n $1 && $(value "$1") == "$2" ]]; }
W_DESKTOP=$(value "$WPID")
check "fossilize_repla runs, and under desktop it is not 10" test -n "$WPID" -a -n "$W_DESKTOP" -a "$W_DESKTOP" != 10
echo "# fossilize_repla (pid $WPID) under desktop: ${W_DESKTOP:-?}"

# The shipped desktop profile grants its negative values by the file root installed, never by a name:
# an unprivileged user's copy of /bin/sleep named pipewire gets nothing (it got audio-servers' -18).
# Its exec is decided before that of a copy named rsync started after it (events in order), whose
# name gives it the backups rule's 19 (positive values go by name): once that has its value, so has it.
in_ install -d -o 65534 -g 65534 /tmp/nb
in_ systemd-run -q --unit=gm-nb-pipewire --uid=65534 --gid=65534 \
        sh -c 'cp /bin/sleep /tmp/nb/pipewire && exec /tmp/nb/pipewire infinity'
comm_is() { local p; p=$(main_pid "$1") && [[ $(in_ cat /proc/$p/comm 2>/dev/null) == "$2" ]]; }
check "nobody runs its own copy of /bin/sleep named pipewire" eventually 10 comm_is gm-nb-pipewire.service pipewire
in_ systemd-run -q --unit=gm-nb-rsync --uid=65534 --gid=65534 \
        sh -c 'cp /bin/sleep /tmp/nb/rsync && exec /tmp/nb/rsync infinity'
eventually 10 comm_is gm-nb-rsync.service rsync >/dev/null
NB_RSYNC=$(main_pid gm-nb-rsync.service)
check "  a copy named rsync started after it gets the backups rule's 19 (by name)" eventually 10 is_value "$NB_RSYNC" 19
NB_PW=$(main_pid gm-nb-pipewire.service)
check "  the copy named pipewire gets no value under desktop (has: $(value "$NB_PW"))" is_value "$NB_PW" 0
# The decision in the journal, with the fields that let a log tool find it (include/latnice/journal.h).
APPLIED_ID=$(sed -n 's/^#define LATNICE_MESSAGE_APPLIED "\([0-9a-f]\{32\}\)"$/\1/p' "$SRC/include/latnice/journal.h" 2>/dev/null)
jr=$(in_ journalctl -u latniced --no-pager -o export "MESSAGE_ID=${APPLIED_ID:-none}" "TARGET_PID=$NB_RSYNC" 2>&1)
check "  the journal has its decision by MESSAGE_ID and TARGET_PID, with RULE=backups and LATENCY_NICE=19" \
        eval 'grep -qx "RULE=backups" <<< "$jr" && grep -qx "LATENCY_NICE=19" <<< "$jr" &&
                grep -q "^MESSAGE=rsync\[$NB_RSYNC\]: LatencyNice=19 from" <<< "$jr"'

# Logins with pam_systemd, as a display manager makes them; each waits for the test to end it.
login() { # login USER TYPE
        in_ env XDG_SESSION_TYPE=$2 XDG_SESSION_CLASS=user runuser -l "$1" -c \
                'echo $XDG_SESSION_ID > $HOME/session; exec sleep infinity' > "$WORK/session-$1.log" 2>&1 &
        eventually 20 in_ test -s "/tmp/home-$1/session" >/dev/null 2>&1
}
check "$G logs in (a wayland session)" login $G wayland
check "$H logs in (a wayland session)" login $H wayland
for u in $G $H; do
        s=$(in_ cat "/tmp/home-$u/session" 2>/dev/null)
        check "  $u's session ${s:-?} is active" eval "in_ loginctl show-session '$s' -p Active | grep -qx Active=yes"
        check "  $u's user manager answers" eventually 20 in_ runuser -u "$u" -- env XDG_RUNTIME_DIR=/run/user/$(in_ id -u "$u") \
                systemctl --user is-system-running --wait
done

# as_gamemode USER COMMAND: COMMAND as gamemoded runs it, a child of a user unit of USER.
as_gamemode() {
        local u=$1 uid
        uid=$(in_ id -u "$u")
        in_ runuser -u "$u" -- env XDG_RUNTIME_DIR=/run/user/$uid PATH="$IN/bin:/usr/bin:/bin" \
                systemd-run --user --wait --pipe -q -E PATH="$IN/bin:/usr/bin:/bin" sh -c "$2"
}

out=$(as_gamemode $G "$START" 2>&1); rc=$?
echo "$out" | sed 's/^/#   /'
check "$G (group gamemode, active session) runs start=: it succeeds" test "$rc" = 0
check_profile "  the profile is gaming" gaming
check "  fossilize_repla gets the gaming profile's 10 (it had ${W_DESKTOP:-?})" eventually 5 is_value "$WPID" 10
out=$(in_ "$IN/bin/latnicectl" status 2>&1)
check "  latnicectl status says Profile: gaming" grep -q "Profile: gaming" <<< "$out"

out=$(as_gamemode $G "$END" 2>&1); rc=$?
echo "$out" | sed 's/^/#   /'
check "$G runs end=: it succeeds" test "$rc" = 0
check_profile "  the profile is desktop again" desktop
check "  fossilize_repla has its value under desktop again (${W_DESKTOP:-?})" eventually 5 is_value "$WPID" "$W_DESKTOP"

out=$(as_gamemode $G "latnicectl profile audio" 2>&1); rc=$?
echo "$out" | sed 's/^/#   /'
check "$G may not switch to another profile (audio): it fails" test "$rc" != 0
check "  and says it needs authentication" grep -q "set-profile needs authentication" <<< "$out"
check_profile "  the profile stays desktop" desktop

out=$(as_gamemode $H "$START" 2>&1); rc=$?
echo "$out" | sed 's/^/#   /'
check "$H (active session, not in the group) runs start=: it fails" test "$rc" != 0
check "  and says it needs authentication" grep -q "set-profile needs authentication" <<< "$out"
check_profile "  the profile stays desktop" desktop

out=$(in_ runuser -u $N -- env PATH="$IN/bin:/usr/bin:/bin" sh -c "$START" 2>&1); rc=$?
echo "$out" | sed 's/^/#   /'
check "$N (in the group, no session) runs start=: it fails" test "$rc" != 0
check_profile "  the profile stays desktop" desktop

in_ journalctl -u latniced --no-pager -q 2>/dev/null | grep -i "profile" | sed 's/^/#   /'

stop_contained_killed
[[ $failures == 0 ]] || { echo "$failures failed"; exit 1; }
echo "all passed"
