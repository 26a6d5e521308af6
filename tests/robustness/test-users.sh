#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# 40 users with a User= named rule each (defect 2: the name cache evicting the slot it returned;
# more users than cache slots), a process of each user, under the ASan daemon: each process gets
# its own user's rule (name and value), twice (a second round after a reload, the cache warm).
# The users lntest-u1..40 are made on the host if missing and removed at the end.
NAME_PREFIX=rb-users
. "$(dirname "$(readlink -f "$0")")/lib.sh"
command -v useradd >/dev/null || skip_test "useradd is missing"
NU=40
made_users=()
robust_cleanup_extra() {
        local u
        for u in "${made_users[@]}"; do userdel "$u" >/dev/null 2>&1; done
}
for i in $(seq $NU); do
        u=lntest-u$i
        # idempotent: a user left by an interrupted run is reused, and removed at the end this time
        id -u "$u" >/dev/null 2>&1 || useradd -M -N -r -s /usr/sbin/nologin -d /nonexistent "$u" ||
                { echo "FAIL - useradd $u"; exit 1; }
        made_users+=("$u")
done
robust_setup
cp /bin/sleep "$WORK/bin/lnt-user"
# values -20..19, one per user: user i gets i - 21
for i in $(seq $NU); do
        printf '[Process u%d]\nComm=lnt-user\nUser=lntest-u%d\nLatencyNice=%d\n\n' "$i" "$i" $((i - 21))
done > "$WORK/root/etc/latnice.d/50-users.conf"
robust_start
check "all $NU user rules load (Rules $(prop Rules), RuleErrors $(in_ busctl get-property org.latnice1 /org/latnice1 org.latnice1.Manager RuleErrors))" \
        [ "$(prop Rules)" = $NU ]

round() { # round N: one process per user, then the checks
        local r=$1 i u p out good=0 bad=()
        in_ sh -c "for i in \$(seq $NU); do
                setsid -f sh -c 'echo \$\$ > $IN/u\$0.r$r.pid; exec setpriv --reuid=lntest-u\$0 --regid=100 --clear-groups $IN/bin/lnt-user 300' \$i
        done" </dev/null >/dev/null 2>&1
        sleep 2
        for i in $(seq $NU); do
                p=$(cat "$WORK/u$i.r$r.pid" 2>/dev/null)
                u=$(in_ stat -c %U "/proc/$p" 2>/dev/null)
                out=$(call GetTask u "$p")
                if [[ $u == lntest-u$i && $out == *"'rule'), dbus.String('u$i')"* ]] &&
                        wait_slice "$p" "$(S $((i - 21)))" 2 >/dev/null; then
                        pass "round $r: lntest-u$i's process $p has rule u$i, value $((i - 21)), slice $(S $((i - 21)))"
                else
                        fail "round $r: lntest-u$i's process ${p:-?} (owner ${u:-?}): want rule u$i, value $((i - 21)), slice $(S $((i - 21))); got slice $(slice_in "$p"), ${out:0:120}"
                fi
        done
}
round 1
check "Reload" bash -c "[[ \$($L exec $NAME $PY $IN/call.py Reload -) == OK* ]]"
round 2
check "same daemon, no restart (NRestarts $(restarts))" [ "$(daemon_pid)" = "$DPID" -a "$(restarts)" = 0 ]
robust_finish
