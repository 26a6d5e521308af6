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

cat > "$WORK/users-view.py" <<'PYEOF'
# users-view.py I:PID...: per process "I PID OWNER RULE SLICE" (GetTask as root, /proc)
import os, pwd, sys, dbus
o = dbus.Interface(dbus.SystemBus().get_object("org.latnice1", "/org/latnice1", introspect=False),
                   "org.latnice1.Manager")
for a in sys.argv[1:]:
    i, pid = a.split(":")
    try:
        owner = pwd.getpwuid(os.stat(f"/proc/{pid}").st_uid).pw_name
        r = o.GetTask(dbus.UInt32(int(pid)), timeout=10)
        rule, ln = str(r[3]) or "-", int(r[1])
        sl = next(l.split()[2] for l in open(f"/proc/{pid}/sched") if l.startswith("se.slice"))
    except Exception as e:
        owner, rule, ln, sl = "?", "error:" + type(e).__name__, 0, "?"
    print(i, pid, owner, rule, ln, sl)
PYEOF
chmod a+r "$WORK/users-view.py"
round() { # round N: one process per user, then the checks
        local r=$1 i p args=() owner rule ln sl
        in_ sh -c "for i in \$(seq $NU); do
                setsid -f sh -c 'echo \$\$ > $IN/u\$0.r$r.pid; exec setpriv --reuid=lntest-u\$0 --regid=100 --clear-groups $IN/bin/lnt-user 300' \$i
        done" </dev/null >/dev/null 2>&1
        sleep 3
        for i in $(seq $NU); do args+=("$i:$(cat "$WORK/u$i.r$r.pid" 2>/dev/null)"); done
        while read -r i p owner rule ln sl; do
                # GetTask's value is the kernel's, read back: -20..-12 all clamp to the 0.1 ms slice
                if [[ $owner == lntest-u$i && $rule == u$i && $sl == "$(S $((i - 21)))" &&
                      ($ln == $((i - 21)) || $sl == 100000) ]]; then
                        pass "round $r: lntest-u$i's process $p has rule u$i, value $ln, slice $sl"
                else
                        fail "round $r: lntest-u$i's process $p (owner $owner): want rule u$i, value $((i - 21)), slice $(S $((i - 21))); got $rule, $ln, $sl"
                fi
        done < <(in_ $PY "$IN/users-view.py" "${args[@]}")
}
round 1
check "Reload" bash -c "[[ \$($L exec $NAME $PY $IN/call.py Reload -) == OK* ]]"
round 2
check "same daemon, no restart (NRestarts $(restarts))" [ "$(daemon_pid)" = "$DPID" -a "$(restarts)" = 0 ]
robust_finish
