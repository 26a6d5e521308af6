#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Ancestor= on this host's kernel with real process trees: everything a
# Steam-like launcher (lnt-reaper) starts gets the rule's value, however
# deep, up to 32 levels; what it did not start does not; the prefilter
# keeps checking in the kernel; latnicectl explain shows the chain.
# Usage: test-ancestors.sh LATNICED LATNICECTL LNSPAWN
set -uo pipefail

LATNICED=$1 LATNICECTL=$2 LNSPAWN=$3
if [ "$(id -u)" -ne 0 ]; then echo "needs root (BPF, sched_setattr on other processes)"; exit 77; fi
if [ ! -e /sys/kernel/btf/vmlinux ]; then echo "no kernel BTF at /sys/kernel/btf/vmlinux"; exit 77; fi

T=$(mktemp -d /tmp/latnice-ancestor-test.XXXXXX)
DPID= PIDS=() FAILS=0
cleanup() {
        [ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
        for p in "${PIDS[@]}"; do pkill_tree "$p"; done
        wait 2>/dev/null
        rm -rf "$T"
}
# Ends a tree we started, by pid: children first.
pkill_tree() {
        local c
        for c in $(cat "/proc/$1/task/"*/children 2>/dev/null); do pkill_tree "$c"; done
        kill "$1" 2>/dev/null
}
trap cleanup EXIT

read -r BASE SLICE10 < <("$LNSPAWN" base)
if [ "${BASE:-0}" = 0 ] || ! grep -q '^se.slice' /proc/self/sched; then
        echo "this kernel has no EEVDF custom slices (sched_getattr reports no slice, or no se.slice in /proc/PID/sched)"
        exit 77
fi
cp /bin/bash "$T/lnt-reaper"
cp /bin/sleep "$T/lnt-game"
# lnt-nest N CMD...: N levels of processes (each a child of the one before), then CMD; writes CMD's pid to $T/pid.
cat > "$T/lnt-nest" <<EOS
#!/bin/sh
if [ "\$1" -gt 0 ]; then n=\$((\$1 - 1)); shift; "\$0" \$n "\$@" & wait; else shift; echo \$\$ > $T/pid.tmp; mv $T/pid.tmp $T/pid; exec "\$@"; fi
EOS
chmod 755 "$T/lnt-nest"

ok() { echo "ok - $*"; }
fail() { echo "FAIL - $*"; FAILS=$((FAILS + 1)); }
slice_of() { awk '/^se.slice/ {print $3}' "/proc/$1/sched" 2>/dev/null; }
expect_slice() { # PID SLICE WHAT
        local s
        for _ in $(seq 50); do s=$(slice_of "$1"); [ "$s" = "$2" ] && break; sleep 0.05; done
        if [ "$s" = "$2" ]; then ok "$3 (se.slice $s)"; else fail "$3: se.slice ${s:-gone}, expected $2"; fi
}
start_daemon() {
        "$LATNICED" --root "$T/root" --state-dir "$T/state" --no-profile --no-bus --log-level debug "$@" >"$T/log" 2>&1 &
        DPID=$!
        for _ in $(seq 600); do grep -q "^Ready:" "$T/log" && return 0; kill -0 "$DPID" 2>/dev/null || break; sleep 0.05; done
        echo "latniced did not get ready:"; cat "$T/log"; return 1
}
stop_daemon() { kill -TERM "$DPID"; wait "$DPID"; DPID=; }
# Starts "lnt-reaper -c 'lnt-nest N lnt-game 30'" and sets GAME to the game's pid, TOP to the reaper's.
tree() { # LEVELS [LAUNCHER]
        rm -f "$T/pid"
        "${2:-$T/lnt-reaper}" -c "$T/lnt-nest $1 $T/lnt-game 30; :" & TOP=$!; PIDS+=("$TOP")
        for _ in $(seq 100); do [ -s "$T/pid" ] && break; sleep 0.05; done
        GAME=$(cat "$T/pid")
}

mkdir -p "$T/root/etc/latnice.d"
cat > "$T/root/etc/latnice.d/50-test.conf" <<'CONF'
[Process steam-tree]
Ancestor=lnt-reaper
LatencyNice=-10
CONF

for src in bpf netlink; do
        start_daemon --source=$src || exit 1
        [ $src = bpf ] && { grep -q "Prefilter on: .*, 1 ancestor names" "$T/log" && ok "the prefilter checks Ancestor= in the kernel" ||
                fail "prefilter: $(grep Prefilter "$T/log")"; }
        tree 2; G=$GAME
        expect_slice "$G" "$SLICE10" "$src: a game started three levels below lnt-reaper gets Ancestor=lnt-reaper's value"
        [ "$(slice_of "$TOP")" = "$BASE" ] && ok "$src: lnt-reaper itself is not its own ancestor" ||
                fail "$src: lnt-reaper changed: $(slice_of "$TOP")"
        "$T/lnt-game" 30 & O=$!; PIDS+=("$O")
        sleep 0.3
        [ "$(slice_of "$O")" = "$BASE" ] && ok "$src: a game not started by lnt-reaper keeps the default" ||
                fail "$src: unrelated game changed: $(slice_of "$O")"
        pkill_tree "$TOP"; kill "$O"
        # The bound: the nearest 32 ancestors count (31 lnt-nest levels, then lnt-reaper), the 33rd does not.
        tree 31; G=$GAME
        expect_slice "$G" "$SLICE10" "$src: lnt-reaper as the 32nd ancestor still counts"
        pkill_tree "$TOP"
        tree 32; G=$GAME
        sleep 0.5
        [ "$(slice_of "$G")" = "$BASE" ] && ok "$src: lnt-reaper as the 33rd ancestor is beyond the bound" ||
                fail "$src: 33rd ancestor matched: $(slice_of "$G")"
        pkill_tree "$TOP"
        stop_daemon
done

# explain shows the chain that matched, read from /proc by latnicectl (--root: the files on disk)
tree 1; G=$GAME
out=$("$LATNICECTL" explain --root="$T/root" --no-profile --pid="$G" 2>&1)
echo "$out" | sed 's/^/# /'
echo "$out" | grep -q "^  ancestors: lnt-nest\[[0-9]*\] <- lnt-reaper\[$TOP\] <- " && ok "explain lists the ancestors, nearest first" ||
        fail "explain: no chain"
echo "$out" | grep -q "because Ancestor=lnt-reaper (lnt-reaper\[$TOP\], 2 levels up) matched" &&
        ok "explain says which ancestor matched" || fail "explain: no matched ancestor"
pkill_tree "$TOP"

[ "$FAILS" -eq 0 ] || { echo "$FAILS failed"; tail -20 "$T/log"; exit 1; }
