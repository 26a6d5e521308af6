#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The shipped GNOME Shell extension and KWin script on the desktops of Debian 13 (GNOME Shell 48,
# KWin 6), which this Debian 12 host does not have: a trixie root made by trixie-root.sh (cached), and
# in it, in a mount and pid namespace of their own (chroot; /proc, /dev, /sys and private /tmp, /run),
# the same tests as on the host: test-focus-gnome.sh (the ES-module extension: the shell's state for
# it, the focus it sends) and test-focus-kwin.sh (KWin 6's windowActivated, an Xwayland window by its
# X id), with latnice-focus and focus-client of this build.
#
#   test-focus-trixie.sh BUILD_DIR SOURCE_DIR
#   test-focus-trixie.sh --prepare-only     only make (or find) the root: tools/run-tests builds it
#                                           beside the other suites, as it does the VM images
#
# Exit: 0 pass, 1 fail, 77 skip (says why: no mmdebstrap, the archive cannot be reached).
set -uo pipefail
prepare_only=0
[[ ${1:-} == --prepare-only ]] && prepare_only=1
BUILD=$(readlink -f "$1")
SRC=$(readlink -f "$2")
HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
[[ $EUID == 0 ]] || { echo "SKIP: needs root (mmdebstrap, chroot, namespaces)"; exit 77; }
command -v unshare >/dev/null || { echo "SKIP: unshare is not installed"; exit 77; }
PACKAGES=(gnome-shell kwin-wayland dbus dbus-bin libglib2.0-bin dconf-gsettings-backend weston xwayland util-linux
          systemd libxcb1 libxcb-res0 libjson-c5 libsystemd0 libgl1-mesa-dri libegl-mesa0 fonts-cantarell)
t0=$(date +%s)
ROOT=$("$HERE/trixie-root.sh" desktops "${PACKAGES[@]}")
r=$?
[[ $r == 77 ]] && { echo "SKIP: no trixie root (see above)"; exit 77; }
[[ $r == 0 && -x $ROOT/usr/bin/gnome-shell ]] || { echo "not ok - the trixie root could not be made"; exit 1; }
[[ $prepare_only == 1 ]] && { echo "trixie root $ROOT ($(( $(date +%s) - t0 )) s)"; exit 0; }
echo "# trixie root $ROOT ($(( $(date +%s) - t0 )) s; built in $(cat "$ROOT/../build-seconds" 2>/dev/null || echo ?) s)"
grep -E "^(gnome-shell|kwin-wayland|mutter-common|gjs|xwayland) " "$ROOT/packages.txt" | sed 's/^/#   /'

# Inside: the root's own mounts, the build's two programs, the sources read-only.
inner() {
        set -e
        mount --make-rprivate /
        mount -t proc proc "$ROOT/proc"
        mount --rbind /dev "$ROOT/dev"
        mount --rbind -o ro /sys "$ROOT/sys"
        mount -t tmpfs -o mode=1777 tmpfs "$ROOT/tmp"
        mount -t tmpfs -o mode=755 tmpfs "$ROOT/run"
        mkdir -m 1777 "$ROOT/tmp/.X11-unix"
        mkdir -p "$ROOT/run/lnsrc" "$ROOT/run/lnbin"
        mount --bind -o ro "$SRC" "$ROOT/run/lnsrc"
        cp "$BUILD/session/latnice-focus" "$BUILD/tests/focus-client" "$ROOT/run/lnbin/"
        set +e
        local failed=0 ran=0 t r
        for t in "test-focus-gnome.sh /run/lnbin/latnice-focus /run/lnsrc" \
                 "test-focus-kwin.sh /run/lnbin/latnice-focus /run/lnsrc /run/lnbin/focus-client"; do
                echo "# --- in trixie: $t"
                # shellcheck disable=SC2086
                chroot "$ROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
                        /bin/bash /run/lnsrc/tests/integration/$t 2>&1 | sed 's/^/    /'
                r=${PIPESTATUS[0]}
                echo "# exit $r"
                if [[ $r == 0 ]]; then ran=1; elif [[ $r != 77 ]]; then failed=1; ran=1; fi
        done
        [[ $failed == 1 ]] && return 1
        [[ $ran == 1 ]] && return 0
        return 77
}
export -f inner
export ROOT BUILD SRC
nice -n 19 unshare --mount --pid --fork --kill-child bash -c inner
r=$?
# The lines of the tests inside, as this test's own (TAP: ok / not ok).
exit $r
