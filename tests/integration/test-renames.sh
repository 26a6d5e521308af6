#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# latniced follows renames after exec on this host's kernel: a Wine-like
# program (starts as wine64-preloader, renames itself to Game.exe with
# prctl(PR_SET_NAME), carries the .exe in argv) gets the value of a
# Comm=Game.exe rule, through BPF (tp_btf and the plain tracepoint), the
# proc connector and the /proc scan; renames to names no rule mentions do
# not reach user space (the BPF counters say how many did); an exe path
# of exactly 1023 characters still makes a record.
# Usage: test-renames.sh LATNICED LNSPAWN HELPER_RENAME
set -uo pipefail

LATNICED=$1 LNSPAWN=$2 HELPER=$3
command -v bpftool >/dev/null || [ -x /usr/sbin/bpftool ] || { echo "bpftool is needed to read the BPF counters"; exit 77; }
BPFTOOL=$(command -v bpftool || echo /usr/sbin/bpftool)

T=$(mktemp -d /tmp/latnice-rename-test.XXXXXX)
. "$(dirname "$0")/daemon-lib.sh"
need_btf

cp "$HELPER" "$T/wine64-preloader"
cp "$HELPER" "$T/lnt-wine"
cp "$HELPER" "$T/lnt-leaver"
cp "$HELPER" "$T/lnt-plain"
# Starts a helper and waits for it to say it renamed itself.
wine() { # PROGRAM NAME [WORD...]
        local prog=$1 name=$2; shift 2
        coproc HP { exec "$prog" rename "$name" 30 "$@"; }
        LAST=$HP_PID; PIDS+=("$LAST")
        read -r -u "${HP[0]}" line && [ "$line" = renamed ] || fail "$prog did not rename itself"
}
# The daemon's BPF counters (exec.bpf.c: execs, events, dropped, renames, rename events, renames dropped,
# renames coalesced), summed over CPUs.
counters() {
        local id
        for fd in /proc/"$DPID"/fdinfo/*; do
                id=$(awk '/^map_id:/ {print $2}' "$fd" 2>/dev/null)
                [ -n "$id" ] || continue
                "$BPFTOOL" -j map show id "$id" 2>/dev/null | grep -q '"name":"counters"' || continue
                "$BPFTOOL" -j map dump id "$id" | python3 -c '
import json, sys
sums = {}
for e in json.load(sys.stdin):
    k = e.get("key", e.get("formatted", {}).get("key"))
    vals = e.get("formatted", {}).get("values") or e.get("values")
    k = k if isinstance(k, int) else int.from_bytes(bytes(int(x, 16) for x in k), "little")
    total = 0
    for v in vals:
        v = v["value"]
        total += v if isinstance(v, int) else int.from_bytes(bytes(int(x, 16) for x in v), "little")
    sums[k] = total
print(" ".join(str(sums.get(i, 0)) for i in range(7)))'
                return
        done
        echo "no counters map found" >&2
}
cputime() { awk '{print $14 + $15}' "/proc/$DPID/stat"; } # utime + stime, clock ticks

rules <<'CONF'
[Process game]
Comm=Game.exe
LatencyNice=-10

[Process wine-cmdline]
Exe=lnt-wine
Cmdline=Other.exe
LatencyNice=-10

[Process leaver]
Comm=lnt-leaver
LatencyNice=-10
CONF

# --- BPF, tp_btf
start_daemon || exit 1
grep -q "Event source bpf: BPF exec tracepoint (tp_btf)" "$T/log" && ok "BPF source (tp_btf)" ||
        fail "BPF source: $(grep 'Event source' "$T/log")"
wine "$T/wine64-preloader" Game.exe 'Z:\games\Game.exe'; G=$LAST
expect_slice "$G" "$SLICE10" "a Wine-like process renamed to Game.exe gets Comm=Game.exe's value"
grep -q "PID $G renamed itself to 'Game.exe'" "$T/log" && ok "the rename reached the daemon" || fail "rename of $G not seen"
wine "$T/wine64-preloader" Unrelated.exe 'Z:\games\Unrelated.exe'; U=$LAST
wine "$T/lnt-wine" Other.exe 'Z:\games\Other.exe'; O=$LAST
expect_slice "$O" "$SLICE10" "Exe=lnt-wine Cmdline=Other.exe matches the .exe in a Windows path in argv"
[ "$(slice_of "$U")" = "$BASE" ] && ok "a rename to a name no rule has keeps the default" ||
        fail "unmatched rename changed: $(slice_of "$U")"
grep -q "PID $U renamed itself" "$T/log" && fail "a rename to Unrelated.exe reached user space" ||
        ok "a rename to Unrelated.exe did not reach user space"
wine "$T/lnt-leaver" elsewhere; L=$LAST
expect_slice "$L" "$BASE" "a process that renames itself away from its rule's name right after exec is back to the default"
grep -q "lnt-leaver\[$L\]: LatencyNice=-10" "$T/log" && ok "... after its exec had been given the value" ||
        fail "lnt-leaver's exec was not applied: $(grep "$L" "$T/log")"
coproc HP { exec "$T/lnt-plain" rename-from-thread Game.exe 30; }
P=$HP_PID; PIDS+=("$P")
read -r -u "${HP[0]}" line && [ "$line" = renamed ] || fail "lnt-plain did not rename itself"
expect_slice "$P" "$SLICE10" "a rename of the process written to /proc/self/comm by another of its threads counts too"
kill "$G" "$U" "$O" "$L" "$P" 2>/dev/null

# The cost of renames: a storm between two names no rule has, then one between a rule's name and another.
N=20000
read -r _ _ d0 r0 e0 l0 k0 < <(counters)
c0=$(cputime)
[ "$("$HELPER" storm $N storm-a storm-b)" = $N ] || fail "storm helper"
read -r _ _ d1 r1 e1 l1 k1 < <(counters)
c1=$(cputime)
# What of the storm reached user space, by its names in the debug log: the counters are the whole machine's,
# and another process that carries a value (set by another latniced, say) passes with each of its renames.
sleep 0.3
passed=$(grep -c "renamed itself to 'storm-[ab]'" "$T/log")
# An odd count ends on Game.exe: the process must have its value when the storm is over.
coproc HP { exec "$HELPER" storm $((N + 1)) Game.exe storm-b 30; }
S=$HP_PID; PIDS+=("$S")
read -r -u "${HP[0]}" line && [ "$line" = $((N + 1)) ] || fail "storm helper"
expect_slice "$S" "$SLICE10" "after a storm of renames to and from Game.exe the process has Game.exe's value"
read -r _ _ d2 r2 e2 l2 k2 < <(counters)
c2=$(cputime)
kill "$S"
# The storm's records, by its pid in the debug log (the counters are the whole machine's).
sent=$(grep -c "PID $S renamed itself" "$T/log")
echo "# unmatched storm: $((r1 - r0)) renames seen in the kernel, $((e1 - e0)) sent to user space, daemon CPU $((c1 - c0)) ticks"
echo "# matched storm:   $((r2 - r1)) renames seen in the kernel, $sent records of it, $((k2 - k1)) coalesced, $((l2 - l1)) did not fit, daemon CPU $((c2 - c1)) ticks"
[ $((r1 - r0)) -ge $N ] && ok "the kernel side saw all $N renames" || fail "renames seen: $((r1 - r0)) of $N"
[ "$passed" -lt $((N / 100)) ] && ok "renames to unmatched names stay in the kernel ($passed of $N passed)" ||
        fail "unmatched renames reached user space: $passed of $N"
# One record per process per sweep (20 ms): the storm would have to last 40 s to send a tenth of its renames.
[ "$sent" -ge 1 ] && [ "$sent" -lt $((N / 10)) ] && [ $((k2 - k1)) -ge $((N - N / 10)) ] &&
        ok "renames to and from a rule's name are coalesced per process ($sent records, $((k2 - k1)) coalesced)" ||
        fail "matched storm: $sent records of $N renames, $((k2 - k1)) coalesced"
[ $((d2 - d0)) -eq 0 ] && ! grep -q "rescanning" "$T/log" && ok "a rename storm does not make latniced rescan every process" ||
        fail "the storm lost exec events ($((d2 - d0))) or made latniced rescan"
# An even count ends on storm-b: the last renames were coalesced, the sweep must still take the value away.
coproc HP { exec "$HELPER" storm $N Game.exe storm-b 30; }
S=$HP_PID; PIDS+=("$S")
read -r -u "${HP[0]}" line && [ "$line" = $N ] || fail "storm helper"
sleep 0.5 # the first rename was decided at once, the rest waits for the sweep
expect_slice "$S" "$BASE" "after a storm of renames that ends away from Game.exe the process is back to the default"
kill "$S"
stop_daemon

# --- an execve() path of exactly 1023 characters (1024 bytes with its NUL: the record's limit)
D=$T NAME=lnt-leaver
while [ $(( ${#D} + 1 + 200 + 1 + ${#NAME} )) -le 1023 ]; do D=$D/$(printf 'd%.0s' $(seq 200)); done
PAD=$((1023 - ${#D} - 1 - 1 - ${#NAME}))
[ "$PAD" -ge 1 ] && D=$D/$(printf 'p%.0s' $(seq $PAD))
mkdir -p "$D"
cp /bin/sleep "$D/$NAME"
LONG=$D/$NAME
[ ${#LONG} -eq 1023 ] || fail "test setup: path of ${#LONG} characters"
start_daemon || exit 1
"$LONG" 30 & X=$!; PIDS+=("$X")
expect_slice "$X" "$SLICE10" "an exec through a path of exactly 1023 characters is decided"
kill "$X"
stop_daemon

# --- the fallbacks: the plain tracepoint, the proc connector, the /proc scan
if ! mountpoint -q /sys/kernel/tracing && mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null; then
        TRACEFS_MOUNTED=1
fi
for src in "--tracepoint" "--source=netlink" "--source=proc-scan --scan-interval=100"; do
        # shellcheck disable=SC2086
        start_daemon $src || exit 1
        wine "$T/wine64-preloader" Game.exe 'Z:\games\Game.exe'; G=$LAST
        expect_slice "$G" "$SLICE10" "$src: a Wine-like process renamed to Game.exe gets its value"
        wine "$T/wine64-preloader" Unrelated.exe; U=$LAST
        sleep 0.3
        [ "$(slice_of "$U")" = "$BASE" ] && ok "$src: a rename to another name keeps the default" ||
                fail "$src: unmatched rename changed: $(slice_of "$U")"
        kill "$G" "$U"
        # Coalesced renames (in the kernel, or the proc connector's gate) still end on the last name.
        for n in $((N + 1)) $N; do
                coproc HP { exec "$HELPER" storm $n Game.exe storm-b 30; }
                S=$HP_PID; PIDS+=("$S")
                read -r -u "${HP[0]}" line && [ "$line" = $n ] || fail "storm helper"
                sleep 0.5
                if [ $((n % 2)) = 1 ]; then want=$SLICE10 last=Game.exe; else want=$BASE last=storm-b; fi
                expect_slice "$S" "$want" "$src: after $n renames ending on $last the process has its value"
                kill "$S"
        done
        stop_daemon
done
[ -n "$TRACEFS_MOUNTED" ] && umount /sys/kernel/tracing && TRACEFS_MOUNTED=

[ "$FAILS" -eq 0 ] || { echo "$FAILS failed"; grep -v "^$" "$T/log" | tail -20; exit 1; }
