#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# kill -9, then Restart=on-failure (defect 6): the second daemon (same state dir, the unit's
# /run/latnice) recognizes the values the first one set as its own: GetTask says "rule", an
# Inherit=no reset still happens for a child of a process the first daemon set, and on a clean
# stop of the second daemon every value goes back to what it was before the first one: a foreign
# slice for one process (the rule had Override=yes), the default for the others.
# Reparented descendants (issue 52, item 1): what a process the first daemon set passed on through fork
# to a child that then left the tree (a subshell that forked it and exited) is still known as ours after
# the restart: the child's exec of an unmatched program resets it (Inherit=no), and the stop restores
# another such child that never execs.
NAME_PREFIX=rb-restart
. "$(dirname "$(readlink -f "$0")")/lib.sh"
robust_setup
I=$IN/bin
cp /bin/sleep "$WORK/bin/lnt-k9"
cp /bin/sleep "$WORK/bin/lnt-child"
cp /bin/bash "$WORK/bin/lnt-k9p"
mkdir -m 777 "$WORK/nb" # what nobody writes
cp /bin/sleep "$WORK/bin/lnt-exep"
cp /bin/bash "$WORK/bin/lnt-anc"
cp /bin/sleep "$WORK/bin/lnt-kid"
cp /bin/bash "$WORK/bin/lnt-k9r"
cp /bin/bash "$WORK/bin/lnt-k9w"
cat > "$WORK/root/etc/latnice.d/50-k9.conf" <<CONF
[Process k9]
Comm=lnt-k9
LatencyNice=-7
Override=yes

[Process k9p]
Comm=lnt-k9p
LatencyNice=-3

# By path, for another user's processes: /proc/PID/exe is closed to the unit (no CAP_SYS_PTRACE).
[Process by-path]
Exe=$I/lnt-exep
LatencyNice=-5

# Parent=: the forks of lnt-k9r (named as it is) are not the rule's, only what they inherited
[Process k9r]
Comm=lnt-k9r
Parent=lnt-k9w
LatencyNice=-6

[Process by-ancestor]
Ancestor=$I/lnt-anc
Comm=lnt-kid
LatencyNice=-4
CONF
mkfifo -m 666 "$WORK/fifo" "$WORK/fifo-r" "$WORK/fifo-r1" "$WORK/fifo-r2"
robust_start
BASE=$BASE_SLICE
PRE=$(S 2)
p1=$(spawn k9a $PY "$IN/setslice.py" "$PRE" "$I/lnt-k9" 300)   # a foreign value before the first daemon
p2=$(spawn k9b "$I/lnt-k9" 300)
pp=$(spawn k9p "$I/lnt-k9p" -c "read x < $IN/fifo; $I/lnt-child 300 & echo \$! > $IN/child.pid; wait")
check "first daemon: $p1 (foreign $PRE before) gets -7 ($(wait_slice "$p1" "$(S -7)" 2>&1))" wait_slice "$p1" "$(S -7)"
check "first daemon: $p2 gets -7" wait_slice "$p2" "$(S -7)"
check "first daemon: the parent $pp gets -3" wait_slice "$pp" "$(S -3)"
pe=$(spawn exep setpriv --reuid=65534 --regid=65534 --clear-groups "$I/lnt-exep" 300)
check "first daemon: nobody's $pe gets Exe=$I/lnt-exep's -5 ($(wait_slice "$pe" "$(S -5)" 2>&1))" \
        wait_slice "$pe" "$(S -5)"
pa=$(spawn anc setpriv --reuid=65534 --regid=65534 --clear-groups "$I/lnt-anc" -c "$I/lnt-kid 300 & echo \$! > $IN/nb/kid.pid; wait")
for ((i = 0; i < 50; i++)); do [[ -s $WORK/nb/kid.pid ]] && break; sleep 0.1; done
pk=$(cat "$WORK/nb/kid.pid")
check "nobody's $pk below $I/lnt-anc gets Ancestor=$I/lnt-anc's -4 ($(wait_slice "$pk" "$(S -4)" 2>&1))" \
        wait_slice "$pk" "$(S -4)"
# Two grandchildren of lnt-k9r, forked once it has its value, reparented at once (their subshell exits):
# r1 waits to exec an unmatched program after the restart, r2 never execs.
spawn k9w "$I/lnt-k9w" -c "$I/lnt-k9r -c 'echo \$\$ > $IN/k9r.pid; read x < $IN/fifo-r
( ( echo \$BASHPID > $IN/r1.pid; read y < $IN/fifo-r1; exec $I/lnt-child 300 ) & )
( ( echo \$BASHPID > $IN/r2.pid; read y < $IN/fifo-r2 ) & )
read z < $IN/fifo-r'; :" >/dev/null
for ((i = 0; i < 50; i++)); do [[ -s $WORK/k9r.pid ]] && break; sleep 0.1; done
pr=$(cat "$WORK/k9r.pid")
check "first daemon: $pr gets -6" wait_slice "$pr" "$(S -6)"
timeout 20 bash -c "echo go > $WORK/fifo-r"
for ((i = 0; i < 50; i++)); do [[ -s $WORK/r1.pid && -s $WORK/r2.pid ]] && break; sleep 0.1; done
r1=$(cat "$WORK/r1.pid")
r2=$(cat "$WORK/r2.pid")
check "reparented grandchildren $r1 $r2 inherited -6 ($(slice_in "$r1") $(slice_in "$r2"))" \
        [ "$(slice_in "$r1")" = "$(S -6)" -a "$(slice_in "$r2")" = "$(S -6)" ]
note "state dir of the first daemon: $(in_ ls -l /run/latnice 2>&1 | tail -n +2 | tr '\n' ' ')"
# The same-boot check: the unit's ProcSubset=pid hides /proc/sys, yet the state file must name this boot.
BOOT=$(cat /proc/sys/kernel/random/boot_id)
check "the state file is keyed to this boot ($BOOT), under the unit's sandbox" in_ grep -qaF "$BOOT" /run/latnice/applied

check "kill -9 the first daemon ($DPID)" in_ systemctl kill -s KILL --kill-who=main latniced.service
for ((i = 0; i < 100; i++)); do
        d=$(daemon_pid)
        [[ $d != 0 && $d != "$DPID" ]] && in_ busctl status org.latnice1 >/dev/null 2>&1 && break
        sleep 0.1
done
check "Restart=on-failure started a second daemon (pid $d, NRestarts $(restarts))" [ "$d" != "$DPID" -a "$(restarts)" = 1 ]
DPID=$d
sleep 1
note "second daemon on the record of forks: $(in_ journalctl --no-pager -q -u latniced -o cat | grep -i 'through fork from\|record of processes\|file descriptor' | tr '\n' ' ')"
check "the values stay ($(slice_in "$p1") $(slice_in "$p2") $(slice_in "$pp"))" \
        [ "$(slice_in "$p1")" = "$(S -7)" -a "$(slice_in "$p2")" = "$(S -7)" -a "$(slice_in "$pp")" = "$(S -3)" ]
check "nobody's $pe keeps Exe='s -5 after the restart ($(slice_in "$pe"))" [ "$(slice_in "$pe")" = "$(S -5)" ]
check "nobody's $pk keeps Ancestor='s -4 after the restart ($(slice_in "$pk"))" [ "$(slice_in "$pk")" = "$(S -4)" ]
out=$(call GetTask u "$pe")
check "second daemon: GetTask $pe says rule by-path (${out:0:90})" grep -q "'rule'), dbus.String('by-path')" <<< "$out"
for p in "$p1" "$p2"; do
        out=$(call GetTask u "$p")
        check "second daemon: GetTask $p says its own rule k9 (${out:0:90})" grep -q "'rule'), dbus.String('k9')" <<< "$out"
done
echo go > "$WORK/fifo" &
fw=$!
for ((i = 0; i < 50; i++)); do [[ -s $WORK/child.pid ]] && break; sleep 0.1; done
wait $fw
c=$(cat "$WORK/child.pid")
check "Inherit=no after the restart: the child $c execing an unmatched program is reset to the default ($(wait_slice "$c" "$BASE" 2>&1))" \
        wait_slice "$c" "$BASE"

timeout 20 bash -c "echo go > $WORK/fifo-r1" &
fw=$!
check "Inherit=no after the restart for a reparented grandchild: $r1 execing an unmatched program is reset ($(wait_slice "$r1" "$BASE" 2>&1))" \
        wait_slice "$r1" "$BASE"
wait $fw

check "clean stop of the second daemon" in_ systemctl stop latniced.service
check "it stopped with success (exit under ASan, leak check included)" \
        [ "$(in_ systemctl show -P Result latniced.service)" = success ]
check "restored $p1 to the foreign value it had before the first daemon ($(slice_in "$p1"), want $PRE)" \
        [ "$(slice_in "$p1")" = "$PRE" ]
check "restored $p2 to the default ($(slice_in "$p2"))" [ "$(slice_in "$p2")" = "$BASE" ]
check "restored the parent $pp to the default ($(slice_in "$pp"))" [ "$(slice_in "$pp")" = "$BASE" ]
check "restored the reparented grandchild $r2, which inherited from a process the first daemon set ($(slice_in "$r2"))" \
        [ "$(slice_in "$r2")" = "$BASE" ]
robust_finish
