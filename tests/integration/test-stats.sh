#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# latnicectl stats on this host's kernel, through latniced on a real system bus with polkitd in the
# contained systemd of tests/harness/lntest-systemd: a task under a rule with LatencyNice=-10 and one
# without, both waking every 2 ms against busy loops; the histograms, the JSON and its sums; the
# bounds of the duration; a second caller and the Busy limit; an unprivileged caller; a rule
# removed during a collection; the plain tracepoints; a kernel where nothing attaches; and no
# sched program left attached afterwards (bpftool).
#
#   test-stats.sh BUILD_DIR SOURCE_DIR HELPER_WAKER
#
# LATNICE_STATS_DAEMON=PATH runs another latniced build (the ASan+UBSan one: the robustness suite),
# and then also requires the sanitizers to have reported nothing.
# Exit: 0 pass, 1 fail, 77 skip (the harness says why).

set -uo pipefail

HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
SRC=$(readlink -f "${2:-$HERE/../..}")
BUILD=$(readlink -f "${1:-$SRC/build}")
WAKER=$(readlink -f "${3:-$BUILD/tests/helper-waker}")
LATNICED_BIN=${LATNICE_STATS_DAEMON:-$BUILD/daemon/latniced}
CTL_BIN=$BUILD/ctl/latnicectl
NAME=stats-$$
IN=/run/latnice-stats-test
PY=/usr/bin/python3

. "$HERE/../harness/testlib.sh"

exec </dev/null
[[ $EUID == 0 ]] || { echo "SKIP: needs root (contained systemd, BPF)"; exit 77; }
for f in "$LATNICED_BIN" "$CTL_BIN" "$WAKER"; do
        [[ -x $f ]] || { echo "FAIL - $f is not built"; exit 1; }
done
command -v bpftool >/dev/null || { echo "SKIP: bpftool is missing (apt-get install bpftool)"; exit 77; }
[[ -x /usr/lib/polkit-1/polkitd ]] || { echo "SKIP: polkitd is not installed (apt-get install polkitd)"; exit 77; }
$PY -c 'import dbus' 2>/dev/null || { echo "SKIP: python3-dbus is missing"; exit 77; }
[[ -e /sys/kernel/btf/vmlinux ]] || { echo "SKIP: no kernel BTF: the statistics' tp_btf hooks cannot load"; exit 77; }
SAN=0
grep -q __asan_init "$LATNICED_BIN" && SAN=1

make_work latnice-stats-test

mkdir -p "$WORK/root/etc/latnice.d" "$WORK/policy" "$WORK/actions" "$WORK/polkit-rules" "$WORK/bin" "$WORK/san"
cp "$LATNICED_BIN" "$WORK/bin/latniced"
cp "$CTL_BIN" "$WORK/bin/latnicectl"
cp "$WAKER" "$WORK/bin/lnst-fast"   # the rule's task
cp "$WAKER" "$WORK/bin/lnst-plain"  # the same, without a rule
cp "$WAKER" "$WORK/bin/lnst-burn"   # what they wake against
LATNICED=$IN/bin/latniced
CTL=$IN/bin/latnicectl
rules_with_fast() {
        cat > "$WORK/root/etc/latnice.d/50-stats.conf" <<'EOF'
[Process fast-waker]
Comm=lnst-fast
LatencyNice=-10
EOF
}
rules_with_fast
install_bus_policy
chmod -R a+rX "$WORK"
cat > "$WORK/call.py" <<'EOF'
import sys, dbus
method, args = sys.argv[1], [dbus.UInt32(int(a)) for a in sys.argv[2:]]
o = dbus.Interface(dbus.SystemBus().get_object("org.latnice1", "/org/latnice1"), "org.latnice1.Manager")
try:
    r = o.get_dbus_method(method)(*args, timeout=120)
    print("OK", int(r[0]), int(r[1]))   # finished_usec duration_usec
except dbus.DBusException as e:
    print("ERROR", e.get_dbus_name(), "|", e.get_dbus_message())
EOF

start_contained --policy-dir "$WORK/policy" --bind "$WORK:$IN" \
        --bind "$WORK/actions:/usr/share/polkit-1/actions" \
        --bind "$WORK/polkit-rules:/etc/polkit-1/rules.d"
pass "contained systemd up"

UNIT=latniced
start_latniced() { # extra latniced options...
        UNIT=latniced-$((++n_starts))
        in_ systemd-run -q --unit=$UNIT -p Type=notify -p BusName=org.latnice1 \
                -E "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:log_path=$IN/san/asan" \
                -E "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$IN/san/ubsan" \
                "$LATNICED" --root "$IN/root" --no-profile "$@" &&
                eventually 20 in_ busctl status org.latnice1
}
n_starts=0
stop_latniced() {
        in_ systemctl stop "$UNIT.service"
        # Stopped cleanly: a sanitizer's report (abort_on_error) would have made it fail.
        local res
        res=$(in_ systemctl show -P Result "$UNIT.service")
        [[ $res == success || $res == "" ]]
}
prop() { in_ busctl get-property org.latnice1 /org/latnice1 org.latnice1.Manager "$1"; }
# The sched programs this test's latniced holds (its prog and link fds, read inside the namespace):
# another latniced collecting on the same machine holds its own and is not counted.
sched_progs() {
        local main ids id out n=0
        main=$(in_ systemctl show -P MainPID "$UNIT.service")
        [[ $main && $main != 0 ]] || { echo "no-daemon"; return; }
        ids=$(in_ sh -c "grep -h '^prog_id:' /proc/$main/fdinfo/* 2>/dev/null" | awk '{print $2}' | sort -u)
        # bpftool's whole answer first: "bpftool | grep -q" under pipefail fails whenever grep has its match
        # and exits before bpftool has written the rest (EPIPE), which a loaded machine makes happen.
        for id in $ids; do
                out=$(bpftool prog show id "$id" 2>&1)
                echo "$out" >> "$WORK/bpftool.log"
                [[ $out =~ \ name\ (switch_btf|wakeup_btf|wakeup_new_btf|switch_tp|wakeup_tp|wakeup_new_tp)\  ]] &&
                        n=$((n + 1))
        done
        echo "-- $n of ids: $(echo $ids)" >> "$WORK/bpftool.log"
        echo $n
}
wait_collecting() { # until N callers wait for the collection under way
        eventually 20 sh -c "[ \"\$($L exec $NAME busctl get-property org.latnice1 /org/latnice1 \
                org.latnice1.Manager StatsWaiting)\" = 'u $1' ]"
}

check "latniced starts" start_latniced
for i in 1 2 3; do
        in_ systemd-run -q --unit=burn$i "$IN/bin/lnst-burn" burn
done
in_ systemd-run -q --unit=fast "$IN/bin/lnst-fast" wake 2000
in_ systemd-run -q --unit=plain "$IN/bin/lnst-plain" wake 2000
FAST=$(in_ systemctl show -P MainPID fast.service)
check "the rule gave lnst-fast its value" eventually 10 sh -c "$L exec $NAME $CTL list | grep -q 'fast-waker'"
check "no sched program is attached before a collection" [ "$(sched_progs)" = 0 ]

# --- one collection: text ------------------------------------------------------------------------
# 8 s: the checks below run while it collects, through lntest-systemd exec, slow on a loaded machine (asan).
in_ "$CTL" stats --for 8s > "$WORK/text" 2>"$WORK/text.err" &
cpid=$!
wait_collecting 1
n=$(sched_progs)
check "while collecting, the three sched programs are attached (bpftool: $n)" [ "$n" = 3 ]
[ "$n" = 3 ] || sed 's/^/     | /' "$WORK/bpftool.log"
wait $cpid
rc=$?
check "stats --for 8s succeeds (exit $rc)" [ $rc = 0 ]
sed 's/^/     | /' "$WORK/text"
check "  it names the rule" grep -q '^rule fast-waker: 1 process' "$WORK/text"
check "  the rule's histogram has wakeups" grep -qE '^  [1-9][0-9]* wakeups: p50 ' "$WORK/text"
check "  the comparison class comes last" sh -c "grep -E '^(rule|everything else)' '$WORK/text' | tail -1 |
        grep -q '^everything else'"
check "  a runqlat-style histogram is drawn" grep -qE '^ +[0-9]+ -> [0-9]+ +: [0-9]+ +\|\**' "$WORK/text"
n=$(sched_progs)
check "after the collection no sched program stays attached (bpftool: $n)" [ "$n" = 0 ]
status=$(in_ "$CTL" status)
check "status shows the last collection's p99 per rule" grep -qE '^ +rule fast-waker: p99 .* against ' <<< "$status"

# --- JSON ------------------------------------------------------------------------------------------
in_ "$CTL" stats --for 2s --json > "$WORK/json"
check "stats --json: parses, the rule and the comparison last, buckets add up to the totals" $PY - "$WORK/json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
cl = d["classes"]
assert d["hook"] == "tp_btf", d["hook"]
assert cl[-1]["comparison"] and not any(c["comparison"] for c in cl[:-1])
fast = [c for c in cl if c["rule"] == "fast-waker"]
assert len(fast) == 1 and fast[0]["wakeups"] > 0 and fast[0]["processes"] == 1, fast
assert cl[-1]["wakeups"] > 0
for c in cl:
    assert len(c["buckets"]) == 27 and sum(c["buckets"]) == c["wakeups"], c
    assert c["p50_us"] <= c["p90_us"] <= c["p99_us"]
EOF
check "--rule filters (the comparison stays)" sh -c "$L exec $NAME $CTL stats --for 1s --json --rule nosuchrule |
        $PY -c 'import json,sys; c=json.load(sys.stdin)[\"classes\"]; sys.exit(0 if len(c)==1 and c[0][\"comparison\"] else 1)'"

# --- bounds ----------------------------------------------------------------------------------------
for d in 0s 61s 99999999999999999999999 10x ""; do
        in_ "$CTL" stats --for "$d" >/dev/null 2>"$WORK/err"
        rc=$?
        check "stats --for '$d': usage error, exit 2 (got $rc: $(head -c 80 "$WORK/err"))" [ $rc = 2 ]
done
for s in 0 61 4294967295; do
        out=$(in_ $PY "$IN/call.py" CollectStats $s)
        check "CollectStats($s): InvalidDuration (got: $out)" grep -q '^ERROR org.latnice1.Error.InvalidDuration' <<< "$out"
done
check "no collection was started by them" [ "$(sched_progs)" = 0 ]

# --- a second caller, and the limit -------------------------------------------------------------
in_ $PY "$IN/call.py" CollectStats 3 > "$WORK/first" &
p1=$!
wait_collecting 1
in_ $PY "$IN/call.py" CollectStats 1 > "$WORK/second" &
p2=$!
wait_collecting 2
wait $p1 $p2
f=$(cat "$WORK/first") s=$(cat "$WORK/second")
check "a second caller gets the same result as the first (first: $f; second: $s)" \
        sh -c "[ '${f%% *}' = OK ] && [ '$f' = '$s' ]"
# --- who may -----------------------------------------------------------------------------------
act=$(in_ pkaction --verbose --action-id org.latnice1.collect-stats 2>&1)
check "polkit: collect-stats is yes for the active session" grep -q 'implicit active: *yes' <<< "$act"
check "polkit: collect-stats is auth_admin for any other" grep -q 'implicit any: *auth_admin$' <<< "$act"
as_nobody "$CTL" stats --for 1s >/dev/null 2>"$WORK/err"
rc=$?
check "nobody (no session) is refused: exit 5 (got $rc: $(head -c 100 "$WORK/err"))" [ $rc = 5 ]
check "  and nothing was attached for it" [ "$(sched_progs)" = 0 ]
# The last result names the rules and counts their processes: root and the active session's user only.
summary_only() { # a LastStats with when and how long, no class: its array of classes is empty
        grep -qE '^\(ttssta\(suuttttat\)\) [1-9][0-9]* [1-9][0-9]* ".*" [0-9]+ 0$' <<< "$1" && ! grep -q fast-waker <<< "$1"
}
out=$(as_nobody busctl get-property org.latnice1 /org/latnice1 org.latnice1.Manager LastStats 2>&1)
check "nobody reads LastStats: when and how long, no rule in it (got: ${out:0:120})" summary_only "$out"
out=$(in_ busctl get-property org.latnice1 /org/latnice1 org.latnice1.Manager LastStats 2>&1)
check "root reads LastStats: no rule in it either (got: ${out:0:120})" summary_only "$out"
out=$(as_nobody busctl call org.latnice1 /org/latnice1 org.latnice1.Manager GetLastStats 2>&1)
check "nobody (no session): GetLastStats is refused by polkit (got: ${out:0:120})" \
        eval '! grep -q fast-waker <<< "$out" && grep -q "collect-stats needs authentication" <<< "$out"'
out=$(in_ busctl call org.latnice1 /org/latnice1 org.latnice1.Manager GetLastStats 2>&1)
check "root: GetLastStats names the rule (got: ${out:0:120})" grep -q '"fast-waker"' <<< "$out"
out=$(as_nobody "$CTL" status 2>&1)
check "nobody: latnicectl status says when it was collected, not the rules' numbers" \
        eval 'grep -q "root or the active session" <<< "$out" && ! grep -q fast-waker <<< "$out"'

# --- a rule's value changes during a collection --------------------------------------------------
# The process is applied again (a new value; or its unit's event after its exec): still one process.
in_ "$CTL" stats --for 3s --json > "$WORK/changed" &
cpid=$!
wait_collecting 1
sed -i 's/^LatencyNice=-10$/LatencyNice=-5/' "$WORK/root/etc/latnice.d/50-stats.conf"
in_ "$CTL" reload >/dev/null
check "  the new value applies during the collection" eventually 10 sh -c \
        "$L exec $NAME $CTL list | grep fast-waker | grep -q -- '-5'"
wait $cpid
check "a process applied again during the collection is counted once" $PY - "$WORK/changed" <<'EOF'
import json, sys
fast = [c for c in json.load(open(sys.argv[1]))["classes"] if c["rule"] == "fast-waker"]
assert len(fast) == 1 and fast[0]["processes"] == 1, fast
EOF
rules_with_fast
in_ "$CTL" reload >/dev/null
check "  the rule's value is back after a reload" eventually 10 sh -c \
        "$L exec $NAME $CTL list | grep fast-waker | grep -q -- '-10'"

# --- a rule removed during a collection --------------------------------------------------------
# Each step through lntest-systemd exec takes seconds on a loaded machine (CI's, with kernels building
# beside it): the collection is long enough for the reload to land inside it, and the log says if not.
in_ "$CTL" stats --for 12s --json > "$WORK/removed" &
cpid=$!
wait_collecting 1
sleep 1 # the rule's task gets some wakeups in first
: > "$WORK/root/etc/latnice.d/50-stats.conf"
in_ "$CTL" reload >/dev/null
check "  the rule is gone after the reload" eventually 10 sh -c "! $L exec $NAME $CTL list | grep -q 'fast-waker'"
[ "$($L exec $NAME busctl get-property org.latnice1 /org/latnice1 org.latnice1.Manager StatsWaiting)" = 'u 1' ] ||
        echo "     (the reload came after the 12 s collection had ended: a machine too slow for the next check)"
wait $cpid
before=$failures
check "a rule removed during the collection: reported as removed, with what it counted" $PY - "$WORK/removed" <<'EOF'
import json, sys
cl = json.load(open(sys.argv[1]))["classes"]
fast = [c for c in cl if c["rule"] == "fast-waker"]
assert len(fast) == 1 and fast[0]["rule_removed"] and fast[0]["wakeups"] > 0, fast
EOF
if [ "$failures" != "$before" ]; then
        head -c 2000 "$WORK/removed" | sed 's/^/     /'
        in_ journalctl --no-pager -o cat -u "$UNIT.service" | grep -E 'statistics|fast-waker|lnst-fast|Reload' |
                tail -n 30 | sed 's/^/     | /'
fi
rules_with_fast
in_ "$CTL" reload >/dev/null
check "  the rule is back after a reload" eventually 10 sh -c "$L exec $NAME $CTL list | grep -q 'fast-waker'"

# --- callers that hang up ------------------------------------------------------------------------
# Eight callers on eight connections of their own take every waiter slot, then close their connections
# without waiting for the answer: their slots are freed, and with nobody left waiting the collection
# they started ends (nothing stays attached); the next caller is not Busy.
cat > "$WORK/hangup.py" <<'PYEOF'
import sys, time, dbus, dbus.lowlevel
conns = []
for i in range(8):
    c = dbus.bus.BusConnection(dbus.bus.BUS_SYSTEM)
    m = dbus.lowlevel.MethodCallMessage("org.latnice1", "/org/latnice1", "org.latnice1.Manager", "CollectStats")
    m.append(dbus.UInt32(60))
    c.send_message(m)
    conns.append(c)
props = dbus.Interface(dbus.SystemBus().get_object("org.latnice1", "/org/latnice1"), "org.freedesktop.DBus.Properties")
for _ in range(600):
    n = int(props.Get("org.latnice1.Manager", "StatsWaiting"))
    if n == 8:
        break
    time.sleep(0.1)
print("waiting", n)
for c in conns:
    c.close()
PYEOF
last_before=$(prop LastStats | awk '{print $2}')
out=$(in_ $PY "$IN/hangup.py" 2>&1)
check "eight callers on their own connections wait for a collection (got: $out)" [ "$out" = "waiting 8" ]
check "  they hang up: their slots are freed (StatsWaiting: $(prop StatsWaiting))" \
        eventually 20 sh -c "[ \"\$($L exec $NAME busctl get-property org.latnice1 /org/latnice1 \
                org.latnice1.Manager StatsWaiting)\" = 'u 0' ]"
# Freed when they hung up, not when their 60 s ran out: that collection left no result.
last_after=$(prop LastStats | awk '{print $2}')
check "  the collection they started was dropped, not finished (LastStats finished at $last_before, now $last_after)" \
        [ "$last_before" = "$last_after" ]
check "  latniced says why it ended" sh -c "$L exec $NAME journalctl --no-pager -o cat -u $UNIT.service |
        grep -q 'Nobody waits for the scheduler statistics any more'"
for ((i = 0; i < 200; i++)); do n=$(sched_progs); [ "$n" = 0 ] && break; sleep 0.1; done
check "  nobody waits: the collection ends, nothing stays attached (bpftool: $n)" [ "$n" = 0 ]
out=$(in_ $PY "$IN/call.py" CollectStats 1)
check "  the next caller is not Busy (got: $out)" grep -q '^OK ' <<< "$out"

# --- the limit, and the daemon stops during a collection --------------------------------------
# A long first collection: the callers join it through lntest-systemd exec, which takes seconds on a
# loaded machine, and all eight must still be waiting when the ninth calls. Then latniced stops
# under them all: nobody waits the 30 s out.
in_ "$CTL" stats --for 30s > /dev/null 2>&1 &
cpid=$!
wait_collecting 1
pids=()
for i in 2 3 4 5 6 7 8; do
        in_ $PY "$IN/call.py" CollectStats 5 > "$WORK/joined$i" &
        pids+=($!)
done
wait_collecting 8
out=$(in_ $PY "$IN/call.py" CollectStats 5)
check "the ninth caller gets Busy (got: $out)" grep -q '^ERROR org.latnice1.Error.Busy' <<< "$out"
check "latniced stops cleanly during a collection" stop_latniced
wait $cpid
rc=$?
check "  latnicectl, the first caller, gets an error, not a hang (exit $rc)" [ $rc != 0 ]
wait "${pids[@]}"
joined=$(cat "$WORK"/joined?)
n=$(grep -c '^ERROR ' <<< "$joined")
check "  the seven callers that joined get an error each, not a result ($n: $(tr '\n' ';' <<< "$joined" | head -c 160))" \
        [ "$n" = 7 ]
# Its programs and links were its fds (latniced pins nothing): they went with its process.
check "  nothing stays attached: its process is gone" [ "$(sched_progs)" = no-daemon ]

# --- the plain tracepoints -------------------------------------------------------------------
check "latniced starts with --tracepoint" start_latniced --tracepoint
check "  the rule applies again" eventually 10 sh -c "$L exec $NAME $CTL list | grep -q 'fast-waker'"
in_ "$CTL" stats --for 3s --json > "$WORK/tp"
check "  stats uses the tracepoints, and the rule's task is classed" $PY - "$WORK/tp" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["hook"] == "tracepoint", d["hook"]
fast = [c for c in d["classes"] if c["rule"] == "fast-waker"]
assert len(fast) == 1 and fast[0]["wakeups"] > 0, fast
for c in d["classes"]:
    assert sum(c["buckets"]) == c["wakeups"], c
EOF
check "  nothing stays attached" [ "$(sched_progs)" = 0 ]
check "  latniced stops cleanly" stop_latniced

# --- nothing can attach ---------------------------------------------------------------------------
check "latniced starts with --test-stats-fail" start_latniced --test-stats-fail
in_ "$CTL" stats --for 1s > /dev/null 2>"$WORK/err"
rc=$?
check "stats where nothing attaches: exit 4 with one sentence (got $rc: $(cat "$WORK/err"))" \
        sh -c "[ $rc = 4 ] && [ \$(wc -l < '$WORK/err') = 1 ] && grep -q 'Cannot collect scheduler statistics here: its BPF programs do not attach' '$WORK/err'"
check "  latniced keeps running" in_ busctl status org.latnice1
check "  latniced stops cleanly" stop_latniced

if ((SAN)); then
        check "the sanitizers reported nothing" sh -c "! ls $WORK/san | grep -q ."
        ls "$WORK/san" | while read -r f; do sed 's/^/     | /' "$WORK/san/$f" | head -40; done
fi
in_ systemctl stop burn1 burn2 burn3 fast plain 2>/dev/null

if ((failures)); then
        echo "--- latniced journal"
        in_ journalctl --no-pager -n 60 | grep -i latniced
        echo "$failures check(s) failed"
        exit 1
fi
echo "all checks passed"
exit 0
