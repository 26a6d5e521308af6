#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# latnice as a user meets it: the Debian packages latnice (the daemon) and latnice-focus (the
# session side, with libxcb) are built from this tree (dpkg-buildpackage -b -uc -us, the unit suite
# included) with the build host's kernel BTF hidden, built again elsewhere to show the build is
# reproducible (the same .deb files, byte for byte), checked by lintian, held to
# tests/install/files.txt and files-focus.txt, and installed with apt into the contained systemd of
# tests/harness/, whose /etc, /usr and /var are overlays (lntest-systemd --overlay): dpkg and apt
# write there, never into the host's. Then what an administrator does: systemctl enable --now,
# status, busctl, pkaction, latnicectl as root and as a user, a drop-in picked up live, systemctl
# reload, two upgrades with latniced running (the same version again, then a bumped one), apt
# remove and apt purge.
#
#   test-package.sh SOURCE_DIR
#
# Exit: 0 pass, 1 fail, 77 skip (not root, packaging tools missing, no contained systemd here).

set -uo pipefail

HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
SRC=$(readlink -f "${1:-$HERE/../..}")
NAME=install-$$
PKG=/run/lnpkg # $WORK/debs inside

. "$SRC/tests/harness/testlib.sh"
check() { # check DESCRIPTION CMD...
        local what=$1
        shift
        if "$@"; then pass "$what"; else fail "$what"; return 1; fi
}
elapsed() { # elapsed START [END]: seconds between two $EPOCHREALTIME readings (END: now)
        local end=${2:-$EPOCHREALTIME}
        local us=$((${end/./} - ${1/./}))
        printf '%d.%02d' $((us / 1000000)) $((us % 1000000 / 10000))
}

# Never a prompt (a dpkg conffile question would be a defect: it fails on EOF).
exec </dev/null
[[ $EUID == 0 ]] || { echo "SKIP: needs root (contained systemd)"; exit 77; }
for t in dpkg-buildpackage dh lintian dpkg-deb apt-get unshare; do
        command -v "$t" >/dev/null || { echo "SKIP: $t is missing (tools/deps-test.txt: debhelper, dpkg-dev, lintian)"; exit 77; }
done
[[ $(dpkg --print-architecture) == amd64 ]] || { echo "SKIP: the package is Architecture: amd64 (BPF target x86)"; exit 77; }

t_all=$EPOCHREALTIME
WORK=$(mktemp -d /tmp/latnice-install.XXXXXX) || exit 1
chmod 755 "$WORK"
cleanup() {
        if [[ $started == 1 && -d $STATE ]]; then
                "$L" stop "$NAME" --kill >/dev/null 2>&1
        fi
        [[ -n ${again_pid:-} ]] && kill -- -"$again_pid" 2>/dev/null && wait "$again_pid" 2>/dev/null
        rm -rf --one-file-system -- "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# --- build ----------------------------------------------------------------------------------------
# From a copy of the tree as a clean clone would have it (git's files, work tree contents), so the
# build leaves nothing in the source tree and sees no build directory.
copy_tree() { # copy_tree DIR
        mkdir -p "$1"
        if git -C "$SRC" rev-parse --show-toplevel >/dev/null 2>&1; then
                (cd "$SRC" && git ls-files -z --cached --others --exclude-standard |
                        while IFS= read -r -d '' f; do [[ -e $f || -L $f ]] && printf '%s\0' "$f"; done |
                        xargs -0 cp -a --parents -t "$1")
        else
                tar -C "$SRC" --exclude='./build*' --exclude='./obj-*' --exclude=./.git --exclude=__pycache__ -cf - . |
                        tar -C "$1" -xf -
        fi
        [[ -f $1/debian/control ]] || { echo "FAIL - no debian/ in the copied tree"; exit 1; }
}
# A builder need not have the kernel's BTF, and what its kernel has must not decide what the package
# holds: the first build runs in a mount namespace of its own where a tmpfs hides /sys/kernel/btf
# (the host's stays as it is).
no_btf() { # no_btf CMD...
        unshare --mount --propagation private sh -c '
                if [ -d /sys/kernel/btf ]; then mount -t tmpfs -o ro,size=4k lntest-nobtf /sys/kernel/btf || exit 125; fi
                [ ! -e /sys/kernel/btf/vmlinux ] || exit 125
                exec "$@"' sh "$@"
}
mkdir -p "$WORK/debs"
copy_tree "$WORK/src/latnice"
# The same tree built again, at another path, with the BTF in sight, nocheck (no unit suite, and
# debian/rules leaves the tests unbuilt):
# the same packages, byte for byte (dh's SOURCE_DATE_EPOCH is debian/changelog's date), checked
# below. It runs beside the first build: each has serial steps (configure, dh's passes, dpkg-deb's
# compression) that leave a core idle.
copy_tree "$WORK/again/tree-$$"
t_again=$EPOCHREALTIME
# (its own process group, so that a test that ends early stops all of it)
# (its end time in build-again.end: the test waits for it only after the first build)
setsid bash -c 'cd "$1" && DEB_BUILD_OPTIONS=nocheck dpkg-buildpackage -b -uc -us -jauto; rc=$?
        echo "$EPOCHREALTIME" > "$2"; exit $rc' bash \
        "$WORK/again/tree-$$" "$WORK/build-again.end" > "$WORK/build-again.log" 2>&1 &
again_pid=$!
[[ -e /sys/kernel/btf/vmlinux ]] || echo "     (this host has no /sys/kernel/btf/vmlinux: nothing to hide)"
# The system mode (kernel/vmsystem.py) boots this tree's package too: this first build goes into
# its cache (kernel/debcache.py), so that it is not built a third time. The cache's lock is held
# until then, so that a system mode started beside this waits for the package instead of building
# it; if a system mode is building it already, this does not wait (and stores nothing).
deb_key=$(python3 "$SRC/kernel/debcache.py" key) && deb_lock=$(python3 "$SRC/kernel/debcache.py" lock) &&
        exec {deb_lock_fd}>"$deb_lock" && flock -n "$deb_lock_fd" ||
        { echo "     (not sharing the package with the system mode: it is building its own, or there is no cache)"
          deb_key=; }
# -jauto: ninja and the unit suite on every CPU (debhelper's default without it is one job).
t0=$EPOCHREALTIME
(cd "$WORK/src/latnice" && no_btf dpkg-buildpackage -b -uc -us -jauto) > "$WORK/build.log" {deb_lock_fd}>&- 2>&1
rc=$?
if [[ $rc != 0 ]]; then
        tail -n 60 "$WORK/build.log"
        [[ $rc == 125 ]] && echo "FAIL - could not hide /sys/kernel/btf in a mount namespace"
        echo "FAIL - dpkg-buildpackage -b -uc -us with /sys/kernel/btf hidden"
        exit 1
fi
pass "dpkg-buildpackage -b -uc -us with /sys/kernel/btf hidden ($(elapsed "$t0") s, unit suite included)"
version=$(cd "$WORK/src/latnice" && dpkg-parsechangelog -S Version)
meson_version=$(sed -n "s/^ *version : '\([^']*\)',$/\1/p" "$SRC/meson.build" | head -n1)
check "debian/changelog's version $version is meson.build's ($meson_version)" [ "$version" = "$meson_version" ]
deb=$WORK/src/latnice_${version}_amd64.deb
focus_deb=$WORK/src/latnice-focus_${version}_amd64.deb
check "latnice_${version}_amd64.deb was built" [ -f "$deb" ] || exit 1
check "latnice-focus_${version}_amd64.deb was built: the session side is a package of its own" [ -f "$focus_deb" ] || exit 1
cp "$deb" "$focus_deb" "$WORK/debs/"
if [[ -n $deb_key ]]; then
        # (the second build below shows it byte-identical to a nocheck build, which is what the
        # system mode would have made)
        if [[ $(python3 "$SRC/kernel/debcache.py" key) != "$deb_key" ]]; then
                echo "     (the tree changed during the build: not stored for the system mode)"
        elif stored=$(python3 "$SRC/kernel/debcache.py" store "$deb_key" "$deb"); then
                pass "latnice_${version}_amd64.deb stored for the system mode: $stored"
        else
                fail "latnice_${version}_amd64.deb could not be stored in the package cache"
        fi
        exec {deb_lock_fd}>&-
fi

# The second build, started beside the first.
wait "$again_pid"
rc=$?
again_pid=
if [[ $rc == 0 ]]; then
        pass "built again at another path, beside the first ($(elapsed "$t_again" "$(cat "$WORK/build-again.end")") s, nocheck)"
        for f in $(cd "$WORK/src" && ls *.deb); do
                if cmp -s "$WORK/src/$f" "$WORK/again/$f"; then
                        pass "  $f is byte-identical"
                else
                        fail "  $f differs between the two builds"
                        dpkg-deb -R "$WORK/src/$f" "$WORK/cmp-a" && dpkg-deb -R "$WORK/again/$f" "$WORK/cmp-b" &&
                                diff -rq "$WORK/cmp-a" "$WORK/cmp-b" | sed 's/^/     /'
                        rm -rf "$WORK/cmp-a" "$WORK/cmp-b"
                fi
        done
        # What the package's code embeds of its BPF: the objects (bpftool gen object) and their skeletons.
        obj=obj-$(dpkg-architecture -qDEB_HOST_GNU_TYPE)/daemon
        bpf=$(cd "$WORK/src/latnice/$obj" && ls *.linked.bpf.o *.skel.h)
        same=1
        for f in $bpf; do cmp -s "$WORK/src/latnice/$obj/$f" "$WORK/again/tree-$$/$obj/$f" || { echo "     $f differs"; same=0; }; done
        check "  the BPF objects and skeletons are byte-identical ($(echo $bpf))" [ "$same" = 1 -a -n "$bpf" ]
else
        tail -n 30 "$WORK/build-again.log"
        fail "dpkg-buildpackage again at another path"
fi

# latnice needs no X library: libxcb is latnice-focus's, which needs latnice of the same build.
depends=$(dpkg-deb -f "$deb" Depends)
focus_depends=$(dpkg-deb -f "$focus_deb" Depends)
echo "     latnice Depends: $depends"
echo "     latnice-focus Depends: $focus_depends"
no_xcb() { ! grep -q 'libxcb' <<< "$1"; }
has_dep() { tr ',' '\n' <<< "$1" | sed 's/^ *//' | grep -qx "$2"; }
check "latnice's Depends names no libxcb" no_xcb "$depends"
check "latnice-focus Depends on libxcb1" grep -q 'libxcb1' <<< "$focus_depends"
check "latnice-focus Depends on latnice (= $version)" has_dep "$focus_depends" "latnice (= $version)"

# lintian: no errors, and no warning that debian/latnice.lintian-overrides does not explain
lintian --display-info --show-overrides "$WORK/src/latnice_${version}_amd64.changes" > "$WORK/lintian.log" 2>&1
lint_rc=$?
grep -v '^running with root privileges' "$WORK/lintian.log" | sed 's/^/     /'
check "lintian ran (exit $lint_rc: 0, or 2 for error tags; 1 is its own failure)" [ "$lint_rc" = 0 -o "$lint_rc" = 2 ]
check "lintian: no errors" [ "$(grep -c '^E: ' "$WORK/lintian.log")" = 0 ]
check "lintian: no warnings that are not overridden with a reason" [ "$(grep -c '^W: ' "$WORK/lintian.log")" = 0 ]
check "lintian: the overrides are all still needed" [ "$(grep -c 'unused-override' "$WORK/lintian.log")" = 0 ]

# the same file lists as meson install (test-filelist.sh holds that to files.txt, files-focus.txt)
grep -v '^#' "$HERE/files.txt" > "$WORK/files-latnice"
grep -v '^#' "$HERE/files-focus.txt" > "$WORK/files-focus"
LC_ALL=C sort "$WORK/files-latnice" "$WORK/files-focus" > "$WORK/files"
"$HERE/list-files.py" deb "$deb" > "$WORK/deb-files"
check "latnice ships exactly files.txt (less its changelog and copyright)" \
        diff -u --label files.txt --label latnice "$WORK/files-latnice" "$WORK/deb-files"
"$HERE/list-files.py" deb "$focus_deb" > "$WORK/focus-deb-files"
check "latnice-focus ships exactly files-focus.txt (less its changelog and copyright)" \
        diff -u --label files-focus.txt --label latnice-focus "$WORK/files-focus" "$WORK/focus-deb-files"
# and the tree dpkg-buildpackage configured, installed with meson install
meson install -C "$WORK/src/latnice/obj-$(dpkg-architecture -qDEB_HOST_GNU_TYPE)" --no-rebuild --quiet --destdir "$WORK/dest" >/dev/null 2>&1
"$HERE/list-files.py" destdir "$WORK/dest" > "$WORK/dest-files"
LC_ALL=C sort "$WORK/deb-files" "$WORK/focus-deb-files" > "$WORK/debs-files"
check "meson install of the packages' own build tree installs the same files" \
        diff -u --label packages --label "meson install" "$WORK/debs-files" "$WORK/dest-files"
check "conffiles: /etc/latnice/latniced.conf" \
        [ "$(dpkg-deb --ctrl-tarfile "$deb" | tar -xOf - ./conffiles)" = /etc/latnice/latniced.conf ]

# A newer version for the upgrade: the same contents under a bumped number (what an upgrade does
# to a running latniced depends on the maintainer scripts and systemd, not on the code).
bumped=${version%.*}.$((${version##*.} + 1))
dpkg-deb -R "$deb" "$WORK/bump"
sed -i "s/^Version: .*/Version: $bumped/" "$WORK/bump/DEBIAN/control"
dpkg-deb --root-owner-group -b "$WORK/bump" "$WORK/debs/latnice_${bumped}_amd64.deb" >/dev/null
dpkg-deb -R "$focus_deb" "$WORK/bump-focus"
sed -i "s/^Version: .*/Version: $bumped/; s/latnice (= $version)/latnice (= $bumped)/" "$WORK/bump-focus/DEBIAN/control"
dpkg-deb --root-owner-group -b "$WORK/bump-focus" "$WORK/debs/latnice-focus_${bumped}_amd64.deb" >/dev/null
check "latnice_${bumped}_amd64.deb and latnice-focus_${bumped}_amd64.deb for the upgrade" \
        dpkg --compare-versions "$bumped" gt "$version"

# --- the contained systemd with an overlay root -------------------------------------------------
host_had_latniced=0
[[ -e /usr/sbin/latniced ]] && host_had_latniced=1
# What of the package's paths the host has already (its own /etc/latnice.d, an earlier install): the
# overlay shows them from below whatever the package does, so they are no leftover of this test.
host_has=()
while read -r f; do [[ -e ${f%/} ]] && host_has+=("${f%/}"); done < "$WORK/files"
from_host() { local h; for h in "${host_has[@]}"; do [[ ${1%/} == "$h" ]] && return 0; done; return 1; }
not_from_host() { local f; while read -r f; do from_host "$f" || echo "$f"; done; }
host_status=$(dpkg-query -W -f='${Status} ${Version}' latnice 2>/dev/null)
host_policy=$(sha256sum /usr/sbin/policy-rc.d 2>/dev/null)
mkdir "$WORK/overlay"
start_contained --overlay "$WORK/overlay" --bind "$WORK/debs:$PKG"
pass "contained systemd with /etc, /usr, /var overlaid is up (pid $("$L" pid "$NAME"))"
# A container image's "start no services" (docker's policy-rc.d exits 101): a real system has
# none, and the package's postinst must be seen starting latniced. Gone in the overlay only.
if in_ test -e /usr/sbin/policy-rc.d; then
        check "the image's /usr/sbin/policy-rc.d is removed in the overlay" in_ rm /usr/sbin/policy-rc.d
fi

apt_() { in_ env DEBIAN_FRONTEND=noninteractive apt-get -q -y --no-install-recommends "$@" > "$WORK/apt.log" 2>&1 ||
        { sed 's/^/     /' "$WORK/apt.log"; return 1; }; }
unit() { in_ systemctl show -P "$1" latniced.service; }
prop() { in_ busctl get-property org.latnice1 /org/latnice1 org.latnice1.Manager "$1" | cut -d' ' -f2- | tr -d '"'; }
jcount() { in_ journalctl -u latniced.service --no-pager -o cat | grep -c "$1"; }
slice_of() { in_ awk '$1 == "se.slice" { print $3 }' "/proc/$1/sched"; }
mainpid() { in_ systemctl show -P MainPID "$1"; }
has_slice() { # has_slice UNIT SLICE_NS: every thread of the unit's main process
        local p
        p=$(mainpid "$1")
        [[ -n $p && $p != 0 ]] || { echo "    $1 has no main process"; return 1; }
        in_ sh -c 'for t in /proc/$1/task/*; do
                        s=$(awk "\$1 == \"se.slice\" { print \$3 }" $t/sched)
                        [ "$s" = "$2" ] || { echo "    $t: se.slice $s, want $2"; exit 1; }
                done' sh "$p" "$2"
}
running_ok() { [[ $(unit ActiveState) == active && $(unit SubState) == running ]]; }
reloads_gt() { [[ $(prop Reloads) -gt $1 ]]; }
profile_is() { [[ $(prop Profile) == "$1" ]]; }
restarted_from() { [[ $(unit SubState) == running && $(unit MainPID) != "$1" ]]; }
counts_are() { [[ $(jcount '^Stopped latniced.service') == "$1" && $(jcount '^Started latniced.service') == "$2" ]]; }
both_at() { has_slice lnt-before.service "$1" && has_slice lnt-after.service "$1"; }
# The paths of files.txt that exist inside.
existing() { in_ sh -c 'for f; do [ -e "${f%/}" ] && echo "$f"; done; true' sh "$@"; }

# --- install ----------------------------------------------------------------------------------------
t0=$EPOCHREALTIME
check "apt-get install ./latnice_${version}_amd64.deb ./latnice-focus_${version}_amd64.deb" \
        apt_ install "$PKG/latnice_${version}_amd64.deb" "$PKG/latnice-focus_${version}_amd64.deb" || exit 1
echo "     (apt install took $(elapsed "$t0") s)"
check "dpkg: latnice $version is installed" \
        [ "$(in_ dpkg-query -W -f='${Status} ${Version}' latnice)" = "install ok installed $version" ]
check "dpkg: latnice-focus $version is installed" \
        [ "$(in_ dpkg-query -W -f='${Status} ${Version}' latnice-focus)" = "install ok installed $version" ]
check "postinst enabled latniced.service (Debian's default)" [ "$(in_ systemctl is-enabled latniced.service)" = enabled ]
# latnice-focus.service is each user's to enable (systemctl --user enable), not every user's at once.
check "latnice-focus's postinst did not enable latnice-focus.service for every user" \
        in_ sh -c '! ls /etc/systemd/user/*.wants/latnice-focus.service >/dev/null 2>&1 &&
                [ "$(systemctl --global is-enabled latnice-focus.service 2>&1)" = disabled ]'
check "postinst started it" eventually 10 running_ok
check "the enablement link is in the overlay's /etc, not the host's" \
        [ -L "$WORK/overlay/etc/upper/systemd/system/multi-user.target.wants/latniced.service" -a \
          ! -e /etc/systemd/system/multi-user.target.wants/latniced.service ]
# Not overlayfs's whiteouts (character devices 0:0): removing a path the host has (its own /etc/latnice.d)
# leaves one in the upper directory, and that is the removal, not a leftover; nor a directory the host
# has, copied up when dpkg touched it.
named_latnice() {
        local p rel
        find "$WORK"/overlay/{etc,usr,var}/upper \( -name '*latnice*' -o -name 'latniced*' -o -name 'org.latnice1*' \) \
                ! -type c 2>/dev/null | while read -r p; do
                rel=${p#"$WORK"/overlay/}
                rel=/${rel%%/upper*}${rel#*/upper}
                [[ -d $p ]] && from_host "$rel" && continue
                echo "$p"
        done
}
check "what dpkg wrote is in the overlay ($(named_latnice | wc -l) paths named after latnice)" [ -n "$(named_latnice)" ]
check "systemctl enable --now latniced" in_ systemctl enable --now latniced.service
check "latniced.service is active (running)" running_ok || {
        in_ journalctl -u latniced.service --no-pager -o cat | tail -n 30; exit 1; }
status=$(in_ systemctl status --no-pager latniced.service)
check "systemctl status says active (running), exit 0" grep -q 'Active: active (running)' <<< "$status"
sed -n '1,4p' <<< "$status" | sed 's/^/     /'
check "the unit is the package's (/lib/systemd/system/latniced.service)" \
        [ "$(unit FragmentPath)" = /lib/systemd/system/latniced.service ]
check "it runs the package's /usr/sbin/latniced" grep -q 'path=/usr/sbin/latniced ' <<< "$(unit ExecStart)"
check "it owns org.latnice1 (the policy in /usr/share/dbus-1/system.d)" eventually 10 in_ busctl status org.latnice1 >/dev/null
intro=$(in_ busctl introspect org.latnice1 /org/latnice1)
check "busctl introspect org.latnice1 /org/latnice1 shows org.latnice1.Manager" grep -q '^org\.latnice1\.Manager  *interface' <<< "$intro"
actions=$(in_ pkaction 2>&1)
for a in $(grep -o 'action id="[^"]*"' "$SRC/conf/polkit-1/actions/org.latnice1.policy" | cut -d'"' -f2); do
        check "pkaction lists $a" grep -qx "$a" <<< "$actions"
done
st_root=$(in_ latnicectl status 2>&1)
rc=$?
check "latnicectl status as root" [ $rc = 0 ] && sed -n '1,3p' <<< "$st_root" | sed 's/^/     /'
st_user=$(in_ setpriv --reuid=65534 --regid=65534 --clear-groups latnicectl status 2>&1)
rc=$?
check "latnicectl status as an unprivileged user" [ $rc = 0 ] || echo "$st_user"
check "  reports the profile of /etc/latnice/latniced.conf (desktop)" grep -q 'Profile: desktop' <<< "$st_user"

# --- a drop-in in /etc/latnice.d, live; systemctl reload -----------------------------------------
base=$(in_ awk '$1 == "se.slice" { print $3 }' /proc/self/sched)
[[ -n $base ]] || { echo "SKIP: /proc/PID/sched shows no se.slice (not an EEVDF kernel)"; exit 77; }
S5=$((base * 1024 / 335)) # daemon/sched-map.c: slice(5) = base * 1024 / weight(5)
in_ cp /bin/sleep /run/lntest-proc
check "a process started before the drop-in" in_ systemd-run -q --unit=lnt-before /run/lntest-proc 600
check "  has the default slice ($base ns)" has_slice lnt-before.service "$base"
reloads0=$(prop Reloads)
in_ sh -c 'cat > /etc/latnice.d/50-lntest.conf' <<'EOF'
[Process lntest-proc]
Comm=lntest-proc
LatencyNice=5
EOF
check "a drop-in /etc/latnice.d/50-lntest.conf: latniced reloads by itself" eventually 10 reloads_gt "$reloads0"
check "  the process started before gets LatencyNice=5 ($S5 ns)" eventually 10 has_slice lnt-before.service "$S5"
check "  a process started after it too" in_ systemd-run -q --unit=lnt-after /run/lntest-proc 600
check "  ... at $S5 ns" eventually 10 has_slice lnt-after.service "$S5"

pid0=$(unit MainPID)
reloads0=$(prop Reloads)
in_ sed -i 's/^Profile=desktop$/Profile=gaming/' /etc/latnice/latniced.conf
check "the administrator switches /etc/latnice/latniced.conf to Profile=gaming" \
        in_ grep -qx 'Profile=gaming' /etc/latnice/latniced.conf
check "systemctl reload latniced" in_ systemctl reload latniced.service
check "  the profile is gaming" eventually 10 profile_is gaming
check "  the same latniced (pid $pid0), reloaded (Reloads $reloads0 -> $(prop Reloads))" \
        [ "$(unit MainPID)" = "$pid0" -a "$(prop Reloads)" -gt "$reloads0" ]

# --- the installed unit's sandbox -------------------------------------------------------------------
sec=$(in_ systemd-analyze security --no-pager latniced.service 2>&1)
score=$(sed -n 's/.*Overall exposure level for latniced.service: \([0-9.]*\) \(.*\)$/\1 \2/p' <<< "$sec")
echo "     systemd-analyze security latniced.service (installed): ${score:-?}"
check "systemd-analyze security: exposure ${score%% *} <= 2.0 (as tests/units requires of the unit)" \
        awk -v s="${score%% *}" 'BEGIN { exit !(s != "" && s <= 2.0) }'

# --- upgrades with latniced running -------------------------------------------------------------
# One restart per upgrade (postinst's restart, no stop in prerm): one stop, so one restore of
# what latniced set, and one start, whose start-up scan gives the values back.
upgrade() { # upgrade DESCRIPTION VERSION APT-ARGS...
        local what=$1 want=$2 pid started stopped
        shift 2
        pid=$(unit MainPID)
        started=$(jcount '^Started latniced.service')
        stopped=$(jcount '^Stopped latniced.service')
        check "$what" apt_ "$@" || return 1
        check "  dpkg: latnice and latnice-focus $want are installed" \
                [ "$(in_ dpkg-query -W -f='${Status} ${Version}\n' latnice latnice-focus | sort -u)" = "install ok installed $want" ]
        check "  latniced is running, a new process (pid $pid -> $(unit MainPID))" eventually 10 restarted_from "$pid"
        # (eventually: journald may not have written PID 1's last lines yet; counts only grow)
        check "  stopped once and started once: no restart storm" eventually 5 counts_are $((stopped + 1)) $((started + 1))
        echo "     (stops $stopped -> $(jcount '^Stopped latniced.service'), starts $started -> $(jcount '^Started latniced.service'))"
        check "  the values are back: lnt-before and lnt-after at LatencyNice=5" eventually 10 both_at "$S5"
        check "  the modified conffile is kept (Profile=gaming), no question asked" \
                in_ grep -qx 'Profile=gaming' /etc/latnice/latniced.conf
        check "  latniced runs the gaming profile" eventually 10 profile_is gaming
        check "  the drop-in is still there" in_ test -f /etc/latnice.d/50-lntest.conf
        check "  still enabled" [ "$(in_ systemctl is-enabled latniced.service)" = enabled ]
        local owned
        owned=$(in_ latnicectl list 2>&1 | grep -c lntest-proc)
        check "  latnicectl list shows the two lntest-proc once each ($owned)" [ "$owned" = 2 ]
}
upgrade "the same version again: apt-get install --reinstall ./latnice_${version}_amd64.deb ./latnice-focus_..." "$version" \
        install --reinstall "$PKG/latnice_${version}_amd64.deb" "$PKG/latnice-focus_${version}_amd64.deb"
upgrade "an upgrade: apt-get install ./latnice_${bumped}_amd64.deb ./latnice-focus_${bumped}_amd64.deb" "$bumped" \
        install "$PKG/latnice_${bumped}_amd64.deb" "$PKG/latnice-focus_${bumped}_amd64.deb"
check "  latnice-focus.service is still not enabled for every user" \
        in_ sh -c '[ "$(systemctl --global is-enabled latnice-focus.service 2>&1)" = disabled ]'

# --- remove, purge ------------------------------------------------------------------------------------
check "apt-get remove latnice (and latnice-focus, which needs it)" apt_ remove latnice
check "  latnice-focus is removed with it" \
        [ "$(in_ dpkg-query -W -f='${Status}' latnice-focus 2>/dev/null | cut -d' ' -f1)" = deinstall ]
check "  latniced is stopped" [ "$(unit ActiveState)" = inactive ]
check "  every value restored: lnt-before and lnt-after at the default slice" both_at "$base"
check "  dpkg: only the configuration is left" \
        [ "$(in_ dpkg-query -W -f='${Status}' latnice)" = "deinstall ok config-files" ]
mapfile -t paths < <(grep -v '^/etc/' "$WORK/files")
left=$(existing "${paths[@]}")
check "  every file but the configuration is gone${left:+ (left: $left)}" [ -z "$left" ]
check "  the configuration stays: latniced.conf as the administrator left it, the drop-in" \
        in_ sh -c 'grep -qx Profile=gaming /etc/latnice/latniced.conf && test -f /etc/latnice.d/50-lntest.conf'

check "  /run/latnice stays (RuntimeDirectoryPreserve=yes, for a reinstall)" in_ test -d /run/latnice
in_ rm /etc/latnice.d/50-lntest.conf # the administrator's own file: purge leaves those
check "apt-get purge latnice latnice-focus" apt_ purge latnice latnice-focus
check "  dpkg knows no latnice, no latnice-focus" \
        [ -z "$(in_ dpkg-query -W -f='${Status}\n' latnice latnice-focus 2>/dev/null | grep -v '^unknown ok not-installed$')" ]
mapfile -t paths < <(not_from_host < "$WORK/files")
left=$(existing "${paths[@]}")
check "  no path of files.txt exists (/etc/latnice, /etc/latnice.d too)${left:+ (left: $left)}" [ -z "$left" ]
check "  /run/latnice (what latniced remembered) is gone" in_ test ! -e /run/latnice
left=$(in_ find /etc/systemd /var/lib/systemd /lib/systemd/system -name 'latniced*' 2>/dev/null)
check "  no unit, enablement link or deb-systemd-helper state${left:+ (left: $left)}" [ -z "$left" ]
# everything dpkg and apt wrote went to the overlay: nothing there may still be named after us
left=$(named_latnice)
check "  nothing named after latnice left in /etc, /usr, /var${left:+ (left: $left)}" [ -z "$left" ]
check "  lnt-before and lnt-after still at the default slice" both_at "$base"

stop_contained_killed

# --- the host -------------------------------------------------------------------------------------
check "the host's dpkg is untouched (latnice: '${host_status:-not known}')" \
        [ "$(dpkg-query -W -f='${Status} ${Version}' latnice 2>/dev/null)" = "$host_status" ]
if [[ $host_had_latniced == 0 ]]; then
        check "the host has no /usr/sbin/latniced" [ ! -e /usr/sbin/latniced ]
fi
check "the host's /usr/sbin/policy-rc.d is as it was" [ "$(sha256sum /usr/sbin/policy-rc.d 2>/dev/null)" = "$host_policy" ]

echo "install test: $(elapsed "$t_all") s"
if ((failures)); then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all checks passed"
exit 0
