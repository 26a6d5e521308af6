#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Fuzz the rule parser (tests/unit/fuzz/fuzz-rules.c) with libFuzzer under ASan+UBSan (not in CI).
#
#   bench/fuzz-rules.sh OUT_DIR [SECONDS] [BUILD_DIR]
#
# Builds with clang and -Dfuzz=true in BUILD_DIR (default: build-fuzz in the source tree), runs
# for SECONDS (default 600) on a copy of tests/unit/fuzz/corpus plus what earlier runs kept in
# OUT_DIR/corpus, and keeps every new corpus entry in OUT_DIR/corpus and every crash, leak or
# timeout in OUT_DIR/crashes. OUT_DIR must be outside the source tree. Prints the executions,
# the corpus size and the crashes; exits 1 when there was a crash.

set -uo pipefail
SRC=$(readlink -f "$(dirname "$0")/..")
OUT=${1:?usage: fuzz-rules.sh OUT_DIR [SECONDS] [BUILD_DIR]}
SECS=${2:-600}
BUILD=${3:-$SRC/build-fuzz}
mkdir -p "$OUT" || exit 1
OUT=$(readlink -f "$OUT")
case $OUT/ in
"$SRC"/*) echo "OUT_DIR must be outside the source tree ($SRC)" >&2; exit 2 ;;
esac
command -v clang >/dev/null || { echo "clang is needed for -fsanitize=fuzzer" >&2; exit 77; }

if [[ ! -d $BUILD ]]; then
        CC=clang meson setup "$BUILD" "$SRC" -Dfuzz=true --buildtype=debugoptimized >/dev/null ||
                { echo "meson setup failed" >&2; exit 1; }
fi
ninja -C "$BUILD" tests/fuzz-rules >/dev/null || { echo "building fuzz-rules failed" >&2; exit 1; }

W=$(mktemp -d /tmp/fuzz-rules.XXXXXX) || exit 1
trap 'rm -rf -- "$W"' EXIT
mkdir -p "$W/corpus" "$OUT/corpus" "$OUT/crashes"
cp "$SRC"/tests/unit/fuzz/corpus/* "$W/corpus/"
cp "$OUT"/corpus/* "$W/corpus/" 2>/dev/null
n0=$(ls "$W/corpus" | wc -l)
c0=$(ls "$OUT/crashes" | wc -l)
echo "fuzz-rules: $SECS s, start corpus $n0 entries ($(ls "$OUT/corpus" | wc -l) kept from earlier runs)"
"$BUILD/tests/fuzz-rules" -max_total_time="$SECS" -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$OUT/crashes/" -max_len=65536 "$W/corpus" > "$W/log" 2>&1
rc=$?
# keep what is new (libFuzzer names entries by content hash: same name, same content)
new=0
for f in "$W"/corpus/*; do
        b=${f##*/}
        [[ -e $SRC/tests/unit/fuzz/corpus/$b || -e $OUT/corpus/$b ]] && continue
        cp "$f" "$OUT/corpus/" && new=$((new + 1))
done
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$W/log")
crashes=$(($(ls "$OUT/crashes" | wc -l) - c0))
echo "fuzz-rules: exit $rc, execs ${execs:-?} ($(sed -n 's/^stat::average_exec_per_sec: *//p' "$W/log")/s)," \
        "corpus $(ls "$W/corpus" | wc -l) entries ($new new, kept in $OUT/corpus), crashes $crashes" \
        "(in $OUT/crashes), peak RSS $(sed -n 's/^stat::peak_rss_mb: *//p' "$W/log") MB"
grep -E '^(==[0-9]+==ERROR|SUMMARY:)' "$W/log" | head -5
if ((crashes > 0 || (rc != 0 && rc != 77))); then
        tail -n 40 "$W/log"
        exit 1
fi
exit 0
