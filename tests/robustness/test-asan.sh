#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The suite's daemon is an ASan+UBSan build, and the checks on its logs can fail: a sanity case.
NAME_PREFIX=rb-asan
. "$(dirname "$(readlink -f "$0")")/lib.sh"
robust_setup
cat > "$WORK/root/etc/latnice.d/50-test.conf" <<'CONF'
[Process lnt-sleep]
Comm=lnt-sleep
LatencyNice=5
CONF
robust_start
check "the running daemon is the ASan build" in_ grep -q libasan "/proc/$DPID/maps"
check "ASan sees ASAN_OPTIONS in the daemon" in_ grep -qz '^ASAN_OPTIONS=.*detect_leaks=1' "/proc/$DPID/environ"
cp /bin/sleep "$WORK/bin/lnt-sleep"
in_ systemd-run -q --unit=s1 "$IN/bin/lnt-sleep" 300
P=$(in_ systemctl show -P MainPID s1.service)
check "a rule applies under ASan ($(wait_slice "$P" "$(S 5)"))" wait_slice "$P" "$(S 5)"
# The log check is live: a report-shaped line in the log dir is caught (then removed again).
echo "==1==ERROR: AddressSanitizer: test" > "$WORK/san/asan.canary"
if san_clean >/dev/null; then fail "a planted sanitizer report is detected"; else pass "a planted sanitizer report is detected"; fi
rm -f "$WORK/san/asan.canary"
robust_finish
