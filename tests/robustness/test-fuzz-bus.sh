#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# D-Bus fuzzing of org.latnice1 (fuzz-bus.py) as root and as nobody, ~60 s each
# (LNROBUST_FUZZ_SECONDS), against the ASan daemon. Afterwards the daemon is alive, was not
# restarted, answers GetTask, its RSS is back within a bound of what it was, and the values it
# had set on rule-matched processes are all still there.
NAME_PREFIX=rb-fuzz
# A small ASan quarantine (default 256 MB): freed 1 MiB messages go back to the system soon
# enough for the RSS comparison to say something; use-after-free within 16 MB is still caught.
SAN_EXTRA=quarantine_size_mb=16
. "$(dirname "$(readlink -f "$0")")/lib.sh"
SECS=${LNROBUST_FUZZ_SECONDS:-60}
robust_setup
cp "$RHERE/fuzz-bus.py" "$WORK/"
for i in 1 2 3; do cp /bin/sleep "$WORK/bin/lnt-guard$i"; done
cat > "$WORK/root/etc/latnice.d/50-guards.conf" <<'CONF'
[Process guard1]
Comm=lnt-guard1
LatencyNice=-5

[Process guard2]
Comm=lnt-guard2
LatencyNice=7

[Process guard3]
Comm=lnt-guard3
LatencyNice=3
CONF
robust_start

# the guards: two of root's, one of nobody's (the nobody fuzzer may legitimately raise its own)
in_ systemd-run -q --unit=g1 "$IN/bin/lnt-guard1" 1000
in_ systemd-run -q --unit=g2 "$IN/bin/lnt-guard2" 1000
in_ systemd-run -q --unit=g3 --uid=65534 "$IN/bin/lnt-guard3" 1000
declare -A want=()
G=()
for i in 1 2 3; do
        G+=("$(in_ systemctl show -P MainPID g$i.service)")
done
want[${G[0]}]=$(S -5) want[${G[1]}]=$(S 7) want[${G[2]}]=$(S 3)
for p in "${G[@]}"; do
        check "guard $p gets its rule's slice ${want[$p]}" wait_slice "$p" "${want[$p]}"
done

# A profile name too long and not ASCII: the error message that shows it must still be valid
# UTF-8 (cut at a character boundary), or sd-bus cannot send it and the caller never gets an answer.
out=$(call SetProfile s "$(printf '\u4e2d%.0s' {1..100})")
check "SetProfile(300 bytes of U+4E2D) is answered with InvalidProfileName (got: ${out:0:80})" \
        grep -q "^ERROR org.latnice1.Error.InvalidProfileName" <<< "$out"

# warm-up: every method once, so that RSS "before" includes what the first calls allocate
in_ $PY "$IN/fuzz-bus.py" 3 1 "${G[@]}" >/dev/null 2>&1
sleep 1
rss0=$(rss_kb "$DPID")
note "latniced VmRSS before fuzzing: $rss0 kB"

out=$(in_ timeout $((SECS + 60)) $PY "$IN/fuzz-bus.py" "$SECS" $RANDOM "${G[@]}" 2>&1)
rc=$?
sed 's/^/     /' <<< "$out"
check "fuzzing as root: every call answered (no timeout, no lost name; exit $rc)" [ $rc = 0 ]
check "the daemon is alive after root's fuzzing" in_ kill -0 "$DPID"

# nobody: the guards are not nobody's except g3, which nobody may only raise; keep them all protected
out=$(as_nobody timeout $((SECS + 60)) $PY "$IN/fuzz-bus.py" "$SECS" $RANDOM "${G[@]}" 2>&1)
rc=$?
sed 's/^/     /' <<< "$out"
check "fuzzing as nobody: every call answered (no timeout, no lost name; exit $rc)" [ $rc = 0 ]

# settle: a few seconds idle, then RSS again
sleep 3
rss1=$(rss_kb "$DPID")
note "latniced VmRSS after fuzzing and 3 s idle: $rss1 kB (before: $rss0 kB)"
check "same daemon, no restart (pid $DPID, NRestarts $(restarts))" \
        [ "$(daemon_pid)" = "$DPID" -a "$(restarts)" = 0 ]
out=$(call GetTask u "${G[0]}")
check "GetTask still answers ($(cut -c1-60 <<< "$out"))" grep -q "^OK .*'rule'.*'guard1'" <<< "$out"
# ASan keeps freed memory in a quarantine (quarantine_size_mb, 256 MB by default): the bound is a
# generous ratio, and leaks proper are LeakSanitizer's job at the stop below.
check "RSS back within 2x of before ($rss0 -> $rss1 kB)" [ "$rss1" -le $((rss0 * 2)) ]
for p in "${G[@]}"; do
        s=$(slice_in "$p")
        check "guard $p still has its slice ${want[$p]} (has ${s:-gone})" [ "$s" = "${want[$p]}" ]
done
robust_finish
