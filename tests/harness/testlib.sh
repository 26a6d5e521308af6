# SPDX-License-Identifier: LGPL-2.1-or-later
# Shared by the tests that run in a contained systemd: source it after
# setting NAME (this run's instance); it sets L (the lntest-systemd script
# next to it) and STATE (the instance's state directory, as lntest-systemd
# keeps it). The caller's cleanup trap looks at $started; the summary at $failures.

L=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lntest-systemd
STATE=${LNTEST_STATE:-/run/lntest}/$NAME
failures=0
started=0

pass() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }
check() { # check DESCRIPTION CMD...: pass if CMD succeeds (its output hidden)
        local what=$1
        shift
        if "$@" >/dev/null 2>&1; then pass "$what"; else fail "$what"; fi
}

# build_daemon_conf BUILD_DIR: where that build's latniced reads latniced.conf (its --sysconfdir:
# /etc, or /usr/local/etc for a plain `meson setup`), from its config.h; below --root in the tests.
build_daemon_conf() {
        local c
        c=$(sed -n 's/^#define LATNICE_DAEMON_CONF "\(.*\)"$/\1/p' "$1/config.h" 2>/dev/null)
        echo "${c:-/etc/latnice/latniced.conf}"
}

# make_work PREFIX: WORK=a new directory below /tmp, readable by the container's users, removed on exit
# with the contained systemd (if it was started).
make_work() {
        WORK=$(mktemp -d "/tmp/$1.XXXXXX") || exit 1
        chmod 755 "$WORK"
        trap work_cleanup EXIT
        trap 'exit 1' INT TERM
}
work_cleanup() {
        if [[ $started == 1 && -d $STATE ]]; then
                "$L" stop "$NAME" --kill >/dev/null 2>&1
        fi
        rm -rf -- "$WORK"
}

# install_bus_policy: org.latnice1's D-Bus policy into $WORK/policy (for --policy-dir), and the
# host's polkit actions plus ours into $WORK/actions (to bind over /usr/share/polkit-1/actions).
install_bus_policy() {
        cp "$SRC/conf/dbus-1/system.d/org.latnice1.conf" "$WORK/policy/" &&
                cp -a /usr/share/polkit-1/actions/. "$WORK/actions/" &&
                cp "$SRC/conf/polkit-1/actions/org.latnice1.policy" "$WORK/actions/"
}

# A command as nobody inside (no session, no group).
as_nobody() { in_ setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# Runs a command inside, from / : the caller's directory may be below the
# host's /tmp, which the container does not share.
in_() { (cd / && "$L" exec "$NAME" "$@"); }

# Retries a command for up to $1 seconds (the bus comes back asynchronously);
# the last try's output is shown.
eventually() {
        local t=$1 i
        shift
        for ((i = 0; i < t * 10; i++)); do
                "$@" >/dev/null 2>&1 && return 0
                sleep 0.1
        done
        "$@"
}

# start_contained ARGS...: boots the contained systemd with lntest-systemd's
# start options. Exits the test with 77 (and the harness's reason) where it
# cannot run here, with 1 where it fails to start.
start_contained() {
        local out rc

        out=$("$L" start "$NAME" "$@" 2>&1)
        rc=$?
        if [[ $rc == 77 ]]; then
                echo "$out"
                echo "SKIP: no contained systemd here"
                exit 77
        fi
        started=1
        if [[ $rc != 0 ]]; then
                echo "$out"
                echo "FAIL - start the contained systemd"
                exit 1
        fi
}

# stop_contained_killed: stops the contained systemd (--kill) and checks that every cgroup it
# had is gone afterwards, one check each.
stop_contained_killed() {
        local -a cgroups
        local dir

        mapfile -t cgroups < "$STATE/cgroups"
        if "$L" stop "$NAME" --kill >/dev/null 2>&1; then pass "stop the contained systemd"; else fail "stop the contained systemd"; fi
        started=0
        for dir in "${cgroups[@]}"; do
                if [ ! -e "$dir" ]; then pass "$dir is gone"; else fail "$dir is gone"; fi
        done
}
