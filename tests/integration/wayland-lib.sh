# SPDX-License-Identifier: LGPL-2.1-or-later
# Shared by the Wayland focus tests: an unprivileged user (nobody: compositors refuse root or
# need no privilege) with its own XDG_RUNTIME_DIR in a private directory, latnice-focus --print
# following what the compositor reports, and a wait for the focus it printed last.
U_ID=65534
U_GID=65534
WORK=$(mktemp -d /tmp/latnice-wl-test.XXXXXX) || exit 1
chown $U_ID:$U_GID "$WORK" && chmod 700 "$WORK"
PIDS=()
FOCUS_ENV=() # more of latnice-focus's environment (start_focus)
wl_cleanup() {
        local p
        for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
        wait 2>/dev/null
        [[ ${KEEP:-} ]] || rm -rf -- "$WORK"
}
trap wl_cleanup EXIT
trap 'exit 1' INT TERM
failed=0
pass() { echo "ok - $*"; }
fail() { echo "not ok - $*"; failed=1; }
# "${AS_USER[@]}" CMD...: CMD as nobody in the test's runtime directory. An array, not a function:
# "${AS_USER[@]}" CMD & forks once and setpriv and env exec, so $! is CMD's own pid.
AS_USER=(setpriv --reuid=$U_ID --regid=$U_GID --clear-groups env XDG_RUNTIME_DIR="$WORK" HOME="$WORK")
as_user() { "${AS_USER[@]}" "$@"; }
# last_focus SOURCE: the pid latnice-focus printed last for SOURCE.
last_focus() { tail -1 "$WORK/focus.out" 2>/dev/null | sed -n "s/^focus \([0-9]*\) $1\$/\1/p"; }
# wait_focus PID SOURCE: until latnice-focus printed PID last (or 10 s); prints the wait in ms.
wait_focus() {
        local i t0=$(date +%s%N)
        for ((i = 0; i < 1000; i++)); do
                if [[ $(last_focus "$2") == "$1" ]]; then
                        echo "# focus $1 printed after $(( ($(date +%s%N) - t0) / 1000000 )) ms"
                        return 0
                fi
                sleep 0.01
        done
        return 1
}
# expect_focus PID SOURCE WHAT: pass WHAT if latnice-focus prints PID for SOURCE (wait_focus), else fail
# it with what was printed last.
expect_focus() {
        if wait_focus "$1" "$2"; then pass "$3"; else fail "$3: got '$(last_focus "$2")', want $1"; fi
}
# start_focus: latnice-focus --print as the user on the session bus $BUS (the KWin and GNOME
# tests), with FOCUS_ENV, until it owns org.latnice1.Focus; $LF is its pid.
start_focus() {
        "${AS_USER[@]}" DBUS_SESSION_BUS_ADDRESS=$BUS "${FOCUS_ENV[@]}" "$FOCUS" --print --debug \
                >> "$WORK/focus.out" 2>> "$WORK/focus.err" &
        LF=$!
        PIDS+=($LF)
        for ((i = 0; i < 100; i++)); do
                as_user env DBUS_SESSION_BUS_ADDRESS=$BUS busctl --user status org.latnice1.Focus >/dev/null 2>&1 && return
                sleep 0.1
        done
        fail "latnice-focus does not own org.latnice1.Focus"; cat "$WORK/focus.err"; exit 1
}
# restart_focus: latnice-focus stopped and started again, the restart marked in its output.
restart_focus() {
        kill $LF
        wait $LF 2>/dev/null
        echo "restarted" >> "$WORK/focus.out"
        start_focus
}
