#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Ancestor= on this host's kernel with real process trees: everything a
# Steam-like launcher (lnt-reaper) starts gets the rule's value, however
# deep, up to 32 levels; what it did not start does not; the prefilter
# keeps checking in the kernel; latnicectl explain shows the chain.
# Usage: test-ancestors.sh LATNICED LATNICECTL LNSPAWN
set -uo pipefail

LATNICED=$1 LATNICECTL=$2 LNSPAWN=$3

T=$(mktemp -d /tmp/latnice-ancestor-test.XXXXXX)
. "$(dirname "$0")/daemon-lib.sh"
need_btf
# Ends a tree we started, by pid: children first.
kill_tree() {
        local c
        for c in $(cat "/proc/$1/task/"*/children 2>/dev/null); do kill_tree "$c"; done
        kill "$1" 2>/dev/null
}
kill_pid() { kill_tree "$1"; }

cp /bin/bash "$T/lnt-reaper"
cp /bin/sleep "$T/lnt-game"
# lnt-nest N CMD...: N levels of processes (each a child of the one before), then CMD; writes CMD's pid to $T/pid.
cat > "$T/lnt-nest" <<EOS
#!/bin/sh
if [ "\$1" -gt 0 ]; then n=\$((\$1 - 1)); shift; "\$0" \$n "\$@" & wait; else shift; echo \$\$ > $T/pid.tmp; mv $T/pid.tmp $T/pid; exec "\$@"; fi
EOS
chmod 755 "$T/lnt-nest"

# Starts "lnt-reaper -c 'lnt-nest N lnt-game 30'" and sets GAME to the game's pid, TOP to the reaper's.
tree() { # LEVELS [LAUNCHER]
        rm -f "$T/pid"
        "${2:-$T/lnt-reaper}" -c "$T/lnt-nest $1 $T/lnt-game 30; :" & TOP=$!; PIDS+=("$TOP")
        for _ in $(seq 100); do [ -s "$T/pid" ] && break; sleep 0.05; done
        GAME=$(cat "$T/pid")
}

rules <<'CONF'
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
        kill_tree "$TOP"; kill "$O"
        # The bound: the nearest 32 ancestors count (31 lnt-nest levels, then lnt-reaper), the 33rd does not.
        tree 31; G=$GAME
        expect_slice "$G" "$SLICE10" "$src: lnt-reaper as the 32nd ancestor still counts"
        kill_tree "$TOP"
        tree 32; G=$GAME
        sleep 0.5
        [ "$(slice_of "$G")" = "$BASE" ] && ok "$src: lnt-reaper as the 33rd ancestor is beyond the bound" ||
                fail "$src: 33rd ancestor matched: $(slice_of "$G")"
        kill_tree "$TOP"
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
kill_tree "$TOP"

[ "$FAILS" -eq 0 ] || { echo "$FAILS failed"; tail -20 "$T/log"; exit 1; }
