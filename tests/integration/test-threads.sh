#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Thread= on this host's kernel with the real daemon: in a process of 50
# threads, the threads named data-loop* get the rule's value and the others
# keep the default, whether a thread names itself (prctl) or another thread
# names it (pthread_setname_np, /proc/self/task/TID/comm), whether it was
# named before latniced started (the start-up walk) or after (the rename
# tracepoint), and a thread created by a named thread starts with both;
# a thread renamed away goes back. What latniced set on threads comes back
# off when it stops, also after a SIGKILL and a restart (the state file).
# A process of 10,000 threads is walked in steps: an exec meanwhile is
# still decided. A storm of thread renames is coalesced per process. The
# fallbacks: the plain tracepoint, the proc connector, the /proc scan.
# Usage: test-threads.sh LATNICED LNSPAWN HELPER_THREAD_NAMES
set -uo pipefail

LATNICED=$1 LNSPAWN=$2 HELPER=$3

T=$(mktemp -d /tmp/latnice-threads-test.XXXXXX)
. "$(dirname "$0")/daemon-lib.sh"
need_btf

cp "$HELPER" "$T/lnt-tnames"
cp /bin/sleep "$T/lnt-tquick"
cp /bin/sleep "$T/lnt-tchild"
tslice() { awk '/^se.slice/ {print $3}' "/proc/$1/task/$2/sched" 2>/dev/null; } # PID TID
expect_tslice() { # PID TID SLICE WHAT
        local s
        for _ in $(seq 50); do s=$(tslice "$1" "$2"); [ "$s" = "$3" ] && break; sleep 0.05; done
        if [ "$s" = "$3" ]; then ok "$4 (se.slice $s)"; else fail "$4: se.slice ${s:-gone}, expected $3"; fi
}
# Starts the helper with N threads on fds 7 (commands) and 8 (answers); TIDS: its threads.
helper() { # N
        rm -f "$T/in" "$T/out"; mkfifo "$T/in" "$T/out"
        "$T/lnt-tnames" "$1" < "$T/in" > "$T/out" & HPID=$!; PIDS+=("$HPID")
        exec 7> "$T/in" 8< "$T/out"
        read -r -u 8 -a TIDS && [ "${TIDS[0]}" = tids ] || fail "helper did not start"
        TIDS=("${TIDS[@]:1}")
}
say() { echo "$*" >&7; read -r -u 8 REPLY; }
# The threads of the helper other than the given ones that do not have the default slice: one awk
# over every thread's sched file (a process of 10,000 threads; one awk per thread took 17 s), and a
# file without an se.slice line counts as not the default.
others_not_default() { # TID...
        # (every thread is wanted from its path, so a file that cannot be read counts too)
        awk -v skip=" $* " -v base="$BASE" '
                function tid_of(f, p, n) { n = split(f, p, "/"); return p[n - 1] }
                BEGIN { for (i = 1; i < ARGC; i++) { t = tid_of(ARGV[i]); if (index(skip, " " t " ") == 0) want[t] = 1 } }
                FNR == 1 { tid = tid_of(FILENAME) }
                $1 == "se.slice" && $3 == base { delete want[tid] }
                END { c = 0; for (t in want) c++; print c }' "/proc/$HPID/task/"*/sched 2>/dev/null
}
rules <<'CONF'
[Process data-loops]
Comm=lnt-tnames
Thread=data-loop*
LatencyNice=-10

[Process quick]
Comm=lnt-tquick
LatencyNice=-10
CONF

# --- named after latniced started: the rename tracepoint
start_daemon || exit 1
helper 50
say self 1 data-loop.0
say self 2 data-loop.1
say other 3 data-loop.2
A=${TIDS[1]} B=${TIDS[2]} C=${TIDS[3]}
expect_tslice "$HPID" "$A" "$SLICE10" "a thread that names itself data-loop.0 gets Thread=data-loop*'s"
expect_tslice "$HPID" "$B" "$SLICE10" "... and a second one"
expect_tslice "$HPID" "$C" "$SLICE10" "a thread named by another thread (pthread_setname_np) too"
say spawn 1; D=${REPLY#spawned }
expect_tslice "$HPID" "$D" "$SLICE10" "a thread created by a named thread starts with its name and value"
n=$(others_not_default "$A" "$B" "$C" "$D")
[ "$n" = 0 ] && ok "the other 47 threads and the main thread keep the default" ||
        fail "$n unnamed threads do not have the default slice"
[ "$(slice_of "$HPID")" = "$BASE" ] && ok "the process itself (its main thread) keeps the default" ||
        fail "main thread: $(slice_of "$HPID")"
say run 1 "$T/lnt-tchild"; K=${REPLY#child }; PIDS+=("$K")
expect_slice "$K" "$BASE" "a program a named thread starts, which no rule matches, gets the default back (Inherit=no)"
grep -q "lnt-tchild\[$K\]: back to LatencyNice=0" "$T/log" && ok "... reset by latniced" ||
        fail "the child's reset is not in the log: $(grep "$K" "$T/log")"
say self 2 idle
expect_tslice "$HPID" "$B" "$BASE" "a thread renamed away from data-loop* goes back to the default"
expect_tslice "$HPID" "$A" "$SLICE10" "... while the others keep theirs"
# A name is any bytes: not UTF-8, and still matched as bytes (the log gets it escaped).
printf 'self 4 data-loop\xff\n' >&7; read -r -u 8 REPLY
expect_tslice "$HPID" "${TIDS[4]}" "$SLICE10" "a thread name that is not UTF-8 matches by its bytes"
grep -qa "Thread ${TIDS[4]} 'data-loop" "$T/log" && ! LC_ALL=C grep -qa $'\xff' "$T/log" &&
        ok "... and reaches the log escaped" || fail "the log has the raw name, or not the thread"
say self 4 data-loop.3
# A reload re-decides the threads: without the rule they go back, with it they get it again.
mv "$T/root/etc/latnice.d/50-test.conf" "$T/50-test.conf"
rules <<'CONF'
[Process quick]
Comm=lnt-tquick
LatencyNice=-10
CONF
expect_tslice "$HPID" "$A" "$BASE" "a reload without the Thread= rule puts the threads back"
cp "$T/50-test.conf" "$T/root/etc/latnice.d/50-test.conf"
expect_tslice "$HPID" "$A" "$SLICE10" "a reload with it again gives them the value again"
expect_tslice "$HPID" "$C" "$SLICE10" "... all of them"
stop_daemon || fail "latniced did not stop cleanly"
n=$(others_not_default)
[ "$n" = 0 ] && ok "stopping latniced puts every thread back to the default" ||
        fail "$n threads kept a value after stop"

# --- named before latniced started: the start-up walk; a SIGKILL and a restart keep what was set
start_daemon || exit 1
expect_tslice "$HPID" "$A" "$SLICE10" "a thread named before latniced started gets its value at start-up"
expect_tslice "$HPID" "$C" "$SLICE10" "... and the other one"
expect_tslice "$HPID" "$D" "$SLICE10" "... and the one it created"
[ "$(others_not_default "$A" "$C" "$D" "${TIDS[4]}")" = 0 ] && ok "the unnamed threads keep the default" ||
        fail "unnamed threads changed"
kill -KILL "$DPID"; wait "$DPID" 2>/dev/null; DPID=
[ "$(tslice "$HPID" "$A")" = "$SLICE10" ] || fail "after SIGKILL the value is gone already"
start_daemon || exit 1
grep -q "Took over 4 processes" "$T/log" && ok "the restarted latniced takes over the 4 threads' records" ||
        fail "no records taken over: $(grep "Took over" "$T/log")"
say self 1 elsewhere
expect_tslice "$HPID" "$A" "$BASE" "after a restart, a thread renamed away still goes back"
say spawn 3; E=${REPLY#spawned }
expect_tslice "$HPID" "$E" "$SLICE10" "after a restart, a thread made by a named thread starts with its value"
stop_daemon || fail "latniced did not stop cleanly"
n=$(others_not_default)
[ "$n" = 0 ] && ok "after a SIGKILL and a restart, stopping still puts every thread back" ||
        fail "$n threads kept a value after the restarted latniced stopped"
exec 7>&- 8<&-
kill "$HPID"; wait "$HPID" 2>/dev/null

# --- 10,000 threads, one named, walked in steps while execs are still decided
helper 10000
say self 9999 data-loop.9
BIG=${TIDS[9999]}
start_daemon || exit 1
"$T/lnt-tquick" 30 & Q=$!; PIDS+=("$Q")
expect_slice "$Q" "$SLICE10" "an exec while latniced walks 10,000 threads is decided"
expect_tslice "$HPID" "$BIG" "$SLICE10" "the one named thread of 10,000 gets its value"
grep -q "Walked the 10001 threads of lnt-tnames\[$HPID\]" "$T/log" &&
        ok "the walk covered every thread" || fail "no complete walk: $(grep "threads of" "$T/log" | tail -2)"
w0=$(grep -n "Walking the threads of lnt-tnames\[$HPID\]" "$T/log" | head -1 | cut -d: -f1)
w1=$(grep -n "Walked the 10001 threads of lnt-tnames\[$HPID\]" "$T/log" | head -1 | cut -d: -f1)
q=$(grep -n "lnt-tquick\[$Q\]: LatencyNice=-10" "$T/log" | head -1 | cut -d: -f1)
echo "# walk from log line ${w0:-?} to ${w1:-?}; the exec decided at line ${q:-?}"
[ "$(others_not_default "$BIG")" = 0 ] && ok "the 9,999 unnamed threads keep the default" ||
        fail "unnamed threads of the big process changed"

# --- a storm of thread renames: coalesced per process
N=20000
c0=$(awk '{print $14 + $15}' "/proc/$DPID/stat")
t0=$(awk '{print $14 + $15}' "/proc/$HPID/task/${TIDS[5]}/stat")
say storm 5 $((N + 1)) data-loop.s storm-b
c1=$(awk '{print $14 + $15}' "/proc/$DPID/stat")
t1=$(awk '{print $14 + $15}' "/proc/$HPID/task/${TIDS[5]}/stat")
expect_tslice "$HPID" "${TIDS[5]}" "$SLICE10" "after $((N + 1)) renames ending on data-loop.s the thread has the value"
sent=$(grep -c "Thread ${TIDS[5]} of PID $HPID renamed to" "$T/log")
walks=$(grep -c "Walking the threads of lnt-tnames\[$HPID\]" "$T/log")
echo "# thread storm: $N renames, $sent records decided at once, $walks walks of the 10,001 threads;" \
        "daemon CPU $((c1 - c0)) ticks, the renaming thread's $((t1 - t0)) ticks"
[ "$sent" -ge 1 ] && [ "$sent" -lt $((N / 10)) ] && ok "thread renames are coalesced per process ($sent records)" ||
        fail "thread storm: $sent records of $N renames"
# The start-up walk only: the storm's coalesced renames were one thread's, which the sweep decides alone.
[ "$walks" = 1 ] && ok "one thread renaming in a loop does not make latniced walk the other 10,000" ||
        fail "$walks walks over the big process"
say storm 5 $N data-loop.s storm-b
sleep 0.5
expect_tslice "$HPID" "${TIDS[5]}" "$BASE" "after a storm that ends away from data-loop* the thread has the default"
# Two threads at once: only a walk tells which renamed, and walks of one process are spaced out.
c0=$(awk '{print $14 + $15}' "/proc/$DPID/stat")
h0=$(awk '{print $14 + $15}' "/proc/$HPID/stat")
w0=$(grep -c "Walking the threads of lnt-tnames\[$HPID\]" "$T/log")
say storm2 6 7 $((20 * N + 1)) data-loop.t storm-c
c1=$(awk '{print $14 + $15}' "/proc/$DPID/stat")
h1=$(awk '{print $14 + $15}' "/proc/$HPID/stat")
expect_tslice "$HPID" "${TIDS[6]}" "$SLICE10" "after two threads' storms ending on data-loop.t the first has the value"
expect_tslice "$HPID" "${TIDS[7]}" "$SLICE10" "... and the second"
w1=$(grep -c "Walking the threads of lnt-tnames\[$HPID\]" "$T/log")
echo "# two threads, $((20 * N + 1)) renames each: $((w1 - w0)) walks of the 10,001 threads;" \
        "daemon CPU $((c1 - c0)) ticks, the renaming process's $((h1 - h0)) ticks"
[ "$(others_not_default "$BIG" "${TIDS[6]}" "${TIDS[7]}")" = 0 ] && ok "the other threads still have the default" ||
        fail "other threads of the big process changed"
stop_daemon || fail "latniced did not stop cleanly"
exec 7>&- 8<&-
kill "$HPID"; wait "$HPID" 2>/dev/null

# --- the fallbacks: the plain tracepoint (it names only the renaming task itself: prctl, not
# pthread_setname_np from another thread), the proc connector, the /proc scan (names at its walks only)
if ! mountpoint -q /sys/kernel/tracing && mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null; then
        TRACEFS_MOUNTED=1
fi
for src in "--tracepoint" "--source=netlink" "--source=proc-scan --scan-interval=100"; do
        if [ "$src" = "--source=proc-scan --scan-interval=100" ]; then
                # The scan reads thread names when it meets a process (here: at start-up).
                helper 20
                say self 1 data-loop.0
                say other 3 data-loop.2
                # shellcheck disable=SC2086
                start_daemon $src || exit 1
        else
                # shellcheck disable=SC2086
                start_daemon $src || exit 1
                helper 20
                say self 1 data-loop.0
                if [ "$src" = "--tracepoint" ]; then say self 3 data-loop.2; else say other 3 data-loop.2; fi
        fi
        expect_tslice "$HPID" "${TIDS[1]}" "$SLICE10" "$src: a named thread gets its value"
        expect_tslice "$HPID" "${TIDS[3]}" "$SLICE10" "$src: ... and another one"
        [ "$(others_not_default "${TIDS[1]}" "${TIDS[3]}")" = 0 ] && ok "$src: the other threads keep the default" ||
                fail "$src: unnamed threads changed"
        if [ "$src" != "--source=proc-scan --scan-interval=100" ]; then
                say self 1 idle
                expect_tslice "$HPID" "${TIDS[1]}" "$BASE" "$src: a thread renamed away goes back"
        fi
        stop_daemon || fail "$src: latniced did not stop cleanly"
        [ "$(others_not_default)" = 0 ] && ok "$src: stopping puts the threads back" ||
                fail "$src: values left after stop"
        exec 7>&- 8<&-; kill "$HPID"; wait "$HPID" 2>/dev/null
done
[ -n "$TRACEFS_MOUNTED" ] && umount /sys/kernel/tracing && TRACEFS_MOUNTED=

[ "$FAILS" -eq 0 ] || { echo "$FAILS failed"; grep -v "^$" "$T/log" | tail -20; exit 1; }
