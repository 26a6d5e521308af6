#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# latnicectl import-ananicy end to end: a rule tree in ananicy's shapes
# (hundreds of files, 15,000 names, types, comments, a broken line), the
# file it writes checked by `latnicectl check`, exit statuses, --out.
set -euo pipefail
ctl=${1:?usage: test-import-ananicy.sh LATNICECTL}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$t/tree/00-types" "$t/tree/00-cgroups"
cat > "$t/tree/00-types/types.types" <<'T'
# ananicy types
{ "type": "Game", "nice": -5, "ioclass": "best-effort" }
{ "type": "BG_CPUIO", "nice": 16, "sched": "idle", "ioclass": "idle" }
{ "type": "LowLatency_RT", "sched": "rr", "rtprio": 10 }
T
echo '{ "cgroup": "cpu80", "CPUQuota": 80 }' > "$t/tree/00-cgroups/cpu.cgroups"
types=(Game BG_CPUIO LowLatency_RT)
for d in $(seq 0 349); do
        mkdir -p "$t/tree/app$d"
        {
                echo "# rules of app$d"
                for i in $(seq 0 42); do
                        n=$((d * 43 + i))
                        [ $n -lt 15000 ] || break
                        echo "{ \"name\": \"p$n\", \"type\": \"${types[$((n % 3))]}\" }"
                done
        } > "$t/tree/app$d/app.rules"
done

start=$(date +%s%N)
"$ctl" import-ananicy --out "$t/imported.conf" "$t/tree" 2> "$t/report" || fail "clean import exited $?: $(cat "$t/report")"
end=$(date +%s%N)
echo "import of 15000 names from 351 files: $(( (end - start) / 1000000 )) ms"
grep -q "Imported 15000 program names into 3 rules from 352 files" "$t/report" || fail "summary: $(cat "$t/report")"
"$ctl" check "$t/imported.conf" > "$t/check" 2>&1 || fail "check of the import: $(cat "$t/check")"
grep -q "^3 rules from 1 file, 0 errors" "$t/check" || fail "check: $(cat "$t/check")"
grep -q "^\[Process ananicy Game\]$" "$t/imported.conf" || fail "no Game section"
grep -q "^LatencyNice=-15$" "$t/imported.conf" || fail "sched rr not -15"
awk 'length($0) >= 200 { exit 1 }' "$t/imported.conf" || fail "a line of 200 bytes or more"

# A file over the size limit is skipped with a message, also as the last file read; the rest is still imported.
head -c $((17 * 1024 * 1024)) /dev/zero | tr '\0' '#' > "$t/tree/zz-huge.rules"
"$ctl" import-ananicy --out "$t/imported.conf" "$t/tree" 2> "$t/report" || fail "a huge file stopped the import: $(cat "$t/report")"
grep -q "Failed to read .*huge.rules: File too large, ignoring" "$t/report" || fail "huge file not reported: $(cat "$t/report")"
grep -q "Imported 15000 program names into 3 rules" "$t/report" || fail "summary with a huge file: $(cat "$t/report")"
rm "$t/tree/zz-huge.rules"

# A broken line: reported as file:line, the rest still written, exit status 1.
echo '{ "name": "broken", "type": ' >> "$t/tree/app7/app.rules"
echo '{ "name": "lost", "type": "NoSuchType" }' >> "$t/tree/app8/app.rules"
rc=0
"$ctl" import-ananicy "$t/tree" > "$t/stdout.conf" 2> "$t/report" || rc=$?
[ $rc -eq 1 ] || fail "broken tree exited $rc, want 1"
grep -q "app7/app.rules:45: error: broken JSON" "$t/report" || fail "no file:line for the broken line: $(cat "$t/report")"
grep -q "app8/app.rules:45: warning: \"lost\": type \"NoSuchType\" is not defined" "$t/report" || fail "unknown type not reported"
"$ctl" check "$t/stdout.conf" > /dev/null 2>&1 || fail "the partial import does not check"

# --out replaces the file whole; a missing tree and a bad option change nothing.
cp "$t/imported.conf" "$t/before"
rc=0; "$ctl" import-ananicy --out "$t/imported.conf" "$t/no-such-dir" 2> /dev/null || rc=$?
[ $rc -eq 1 ] || fail "missing tree exited $rc, want 1"
cmp -s "$t/before" "$t/imported.conf" || fail "a failed import touched --out"
rc=0; "$ctl" import-ananicy --bogus "$t/tree" > /dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "unknown option exited $rc, want 2"
"$ctl" import-ananicy --help | grep -q "^latnicectl import-ananicy \[--out=FILE\] \[DIR...\]" || fail "--help synopsis"
[ -z "$(find "$t" -name 'imported.conf.*')" ] || fail "a temporary file was left behind"
echo "ok"
