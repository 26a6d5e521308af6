# SPDX-License-Identifier: LGPL-2.1-or-later
# Shared by the foreground tests end to end (test-foreground.sh: X11 and i3; test-foreground-sway.sh:
# Wayland and Sway): the contained systemd of tests/systemd with a real system bus, polkitd and
# systemd-logind, latniced, user U logged in with pam_systemd running $WORK/session.sh (the caller
# writes it: it starts the display and writes $HOME/session), latnice-focus as the shipped user unit,
# and the helpers that read a task's value. Set SESSION_TYPE (x11, wayland) before fg_start, and
# FG_SEAT=seat0 for a session on a seat (without VTs: see fg_start).
# Sourced with the test's arguments, BUILD_DIR [SOURCE_DIR], and $HERE set.
# LATNICE_FG_DAEMON=PATH runs another latniced build (the ASan+UBSan one: the robustness suite); its
# sanitizers write their reports to $WORK/san, which fg_san_clean checks.
SRC=${2:-$(readlink -f "$HERE/../..")}
BUILD=$(readlink -f "${1:-$SRC/build}")
exec </dev/null
NAME=fg-$$
IN=/run/latnice-fg-test
U=lnfga   # the user at the screen
V=lnfgb   # another user, with no session
UID_U=1531
UID_V=1532

. "$HERE/../harness/testlib.sh"

# fg_require TOOL...: the shared requirements and the caller's, or exit 77 saying which is missing.
fg_require() {
        local f p
        [[ $EUID == 0 ]] || { echo "SKIP: needs root (contained systemd)"; exit 77; }
        for f in ${LATNICE_FG_DAEMON:+_}daemon/latniced ctl/latnicectl session/latnice-focus \
                session/latnice-focus.service; do
                [[ $f == _* ]] && continue
                [[ -e $BUILD/$f ]] || { echo "FAIL - $BUILD/$f is not built"; exit 1; }
        done
        for p in busctl useradd "$@"; do
                command -v "$p" >/dev/null || { echo "SKIP: $p is not installed"; exit 77; }
        done
        [[ -x /usr/lib/polkit-1/polkitd ]] || { echo "SKIP: polkitd is not installed"; exit 77; }
        [[ -x /lib/systemd/systemd-logind ]] || { echo "SKIP: systemd-logind is not installed"; exit 77; }
        grep -qs pam_systemd /etc/pam.d/common-session ||
                { echo "SKIP: pam_systemd is not in common-session"; exit 77; }
}

# fg_prepare: the work directory with the daemon, the rules, latniced.conf and the polkit files.
fg_prepare() {
        make_work latnice-fg-test
        DAEMON_CONF=$WORK/root$(build_daemon_conf "$BUILD")
        mkdir -p "$WORK/bin" "$WORK/root/etc/latnice.d" "${DAEMON_CONF%/*}" "$WORK/policy" "$WORK/actions" \
                "$WORK/overlay" "$WORK/state" "$WORK/polkit-rules" "$WORK/san"
        cp "${LATNICE_FG_DAEMON:-$BUILD/daemon/latniced}" "$WORK/bin/latniced"
        cp "$BUILD/ctl/latnicectl" "$BUILD/session/latnice-focus" "$WORK/bin/"
        # A peer that stands in for the compositor on the session bus (only its connection is heard).
        [[ -x $BUILD/tests/focus-caller ]] && cp "$BUILD/tests/focus-caller" "$WORK/bin/"
        # The shipped user unit, run from the work directory.
        sed "s|^ExecStart=.*|ExecStart=$IN/bin/latnice-focus|" "$BUILD/session/latnice-focus.service" \
                > "$WORK/latnice-focus.service"
        cat > "$DAEMON_CONF" <<'EOF2'
[Daemon]
Profile=none-here
[Foreground]
LatencyNice=-10
Cover=tree
EOF2
        install_bus_policy
        # polkit counts a session as local only when it has a seat, and a seat here would mean the
        # host's VTs: so the shipped allow_active=yes (active and local) cannot decide here. This rule
        # stands in for it without the seat: an active session says yes; everything else falls to the
        # shipped defaults (allow_any=no, allow_inactive=no). It also shows that polkit places a user
        # unit (latnice-focus.service) in its user's display session.
        cat > "$WORK/polkit-rules/50-latnice-fg-test.rules" <<'EOF2'
polkit.addRule(function(action, subject) {
        if (action.id == "org.latnice1.set-foreground" && subject.active)
                return polkit.Result.YES;
});
EOF2
}

LATNICED_ARGS=(--root "$IN/root" --state-dir "$IN/state" --no-profile)
start_daemon() {
        in_ systemd-run -q --unit=latniced -p Type=notify -p BusName=org.latnice1 \
                -E "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:log_path=$IN/san/asan" \
                -E "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$IN/san/ubsan" \
                "$IN/bin/latniced" "${LATNICED_ARGS[@]}"
}
# fg_san_clean: with a sanitizer build, one check that its sanitizers reported nothing (and the reports).
fg_san_clean() {
        grep -q __asan_init "$WORK/bin/latniced" || return 0
        check "the sanitizers reported nothing" sh -c "! ls $WORK/san | grep -q ."
        ls "$WORK/san" | while read -r f; do sed 's/^/     | /' "$WORK/san/$f" | head -40; done
}

# fg_start: the contained systemd, the users, logind, polkit's view, latniced, and U's session
# ($WORK/session.sh) up to its user manager; sets SESSION.
fg_start() {
        chmod 755 "$WORK/session.sh"
        chmod -R a+rX "$WORK"
        # An overlay root: the test users exist only in it.
        start_contained --overlay "$WORK/overlay" --policy-dir "$WORK/policy" --bind "$WORK:$IN" \
                --bind "$WORK/actions:/usr/share/polkit-1/actions" --bind "$WORK/polkit-rules:/etc/polkit-1/rules.d"
        pass "contained systemd up"
        # Homes in the container's own /tmp: /home is the host's.
        in_ useradd -m -d /tmp/home-$U -u $UID_U -s /bin/sh $U &&
                in_ useradd -m -d /tmp/home-$V -u $UID_V -s /bin/sh $V || { fail "useradd"; exit 1; }
        if [[ ${FG_SEAT:-} ]]; then
                # logind gives seat0 VTs when it can read the console's active VT, and the console here
                # is the host's. Hidden, seat0 has no VTs: the newest session on it is its active one,
                # and `loginctl activate` switches, as on a seat with a display manager.
                in_ mount -t tmpfs -o mode=755 lntest-no-vt /sys/class/tty || { fail "hide the VTs"; exit 1; }
        fi
        check "systemd-logind runs" in_ systemctl start systemd-logind.service
        # What systemd-tmpfiles (masked in the harness) makes at boot: without it polkitd's
        # sd_login_monitor_new() fails and polkit sees no sessions at all.
        in_ mkdir -p /run/systemd/machines
        local act sess
        act=$(in_ pkaction --verbose --action-id org.latnice1.set-foreground 2>&1)
        check "polkit: set-foreground is allow_any=no" grep -q "implicit any: *no" <<< "$act"
        check "polkit: set-foreground is allow_inactive=no" grep -q "implicit inactive: *no" <<< "$act"
        check "polkit: set-foreground is allow_active=yes" grep -q "implicit active: *yes" <<< "$act"
        check "latniced starts" start_daemon
        check "it owns org.latnice1" eventually 10 in_ busctl status org.latnice1

        # A login of U with pam_systemd, as a display manager would make it.
        in_ env XDG_SESSION_TYPE=$SESSION_TYPE XDG_SESSION_CLASS=user ${FG_SEAT:+XDG_SEAT=$FG_SEAT} \
                runuser -l $U -c "$IN/session.sh" \
                > "$WORK/session.log" 2>&1 &
        if eventually 20 in_ test -s /tmp/home-$U/session >/dev/null 2>&1; then
                pass "the session is up ($SESSION_TYPE)"
        else
                fail "the session is up ($SESSION_TYPE)"; cat "$WORK/session.log"; in_ sh -c "tail -5 /tmp/home-$U/*.log"
                exit 1
        fi
        SESSION=$(in_ cat /tmp/home-$U/session)
        sess=$(in_ loginctl show-session "$SESSION" -p Active -p Remote -p Type -p Class)
        echo "# session $SESSION"
        echo "$sess" | sed 's/^/#   /'
        check "the session is active and local" grep -qx Active=yes <<< "$sess"
        check "U's user manager answers" eventually 20 userctl is-system-running --wait
}

# SESSION_ENV: what U's programs need to reach the display (the caller fills it in).
SESSION_ENV=()
as_u() { in_ runuser -u $U -- env XDG_RUNTIME_DIR=/run/user/$UID_U "${SESSION_ENV[@]}" "$@"; }
userctl() { as_u systemctl --user "$@"; }

# value PID: "VALUE SET_BY" from GetTask (as root)
value() {
        in_ busctl call org.latnice1 /org/latnice1 org.latnice1.Manager GetTask u "$1" 2>/dev/null |
                sed -n 's/^sissssta(ussiitb) "[^"]*" \(-\?[0-9]*\) "\([a-z]*\)".*/\1 \2/p'
}
is_value() { [[ $(value "$1") == "$2" ]]; }
wait_value() { # wait_value DESCRIPTION PID "VALUE SET_BY"
        if eventually 10 is_value "$2" "$3" >/dev/null 2>&1; then pass "$1"; else
                fail "$1 (is: '$(value "$2")', want '$3')"
        fi
}
