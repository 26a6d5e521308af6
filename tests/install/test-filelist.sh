#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# `meson install` into a DESTDIR puts exactly tests/install/files.txt on disk (with files-focus.txt
# and files-scx.txt where those are built): nothing missing, nothing more. test-package.sh holds the
# Debian packages to the same lists, so a file one of them installs and the other does not fails one
# of the two.
#
#   test-filelist.sh BUILD_DIR
#
# Exit: 0 pass, 1 fail, 77 skip (a build configured for another prefix: the list is for
# --prefix=/usr --sysconfdir=/etc, as tools/setup and debian/rules configure it).

set -uo pipefail

HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
BUILD=$(readlink -f "${1:?usage: test-filelist.sh BUILD_DIR}")

opts=$(meson introspect --buildoptions "$BUILD") || { echo "FAIL - meson introspect $BUILD"; exit 1; }
read -r prefix sysconfdir < <(python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print(o["prefix"], o["sysconfdir"])' <<< "$opts")
if [[ $prefix != /usr || ( $sysconfdir != /etc && $sysconfdir != etc ) ]]; then
        echo "SKIP: $BUILD is configured with --prefix=$prefix --sysconfdir=$sysconfdir; files.txt is for /usr and /etc"
        exit 77
fi

WORK=$(mktemp -d /tmp/latnice-filelist.XXXXXX) || exit 1
trap 'rm -rf -- "$WORK"' EXIT
if ! meson install -C "$BUILD" --no-rebuild --quiet --destdir "$WORK/dest" > "$WORK/install.log" 2>&1; then
        cat "$WORK/install.log"
        echo "FAIL - meson install --destdir"
        exit 1
fi
"$HERE/list-files.py" destdir "$WORK/dest" > "$WORK/got" || exit 1
grep -v '^#' "$HERE/files.txt" > "$WORK/want"
# latnice-focus is built only where libxcb is (session/meson.build), scx_latnice only where its
# sched_ext kernel's BTF is found (scheduler/meson.build): their files are in the list when they
# are built, and must be absent when they are not.
if [[ -x $BUILD/session/latnice-focus ]]; then
        grep -v '^#' "$HERE/files-focus.txt" >> "$WORK/want"
        echo "# latnice-focus is built: files-focus.txt too"
fi
if [[ -x $BUILD/scheduler/scx_latnice ]]; then
        grep -v '^#' "$HERE/files-scx.txt" >> "$WORK/want"
        echo "# scx_latnice is built: files-scx.txt too"
fi
LC_ALL=C sort -o "$WORK/want" "$WORK/want"
if ! diff -u --label files.txt --label "meson install" "$WORK/want" "$WORK/got"; then
        echo "FAIL - meson install differs from tests/install/files.txt (- missing, + not in the list)"
        exit 1
fi
echo "ok   - meson install --destdir installs the $(wc -l < "$WORK/want") paths of files.txt, nothing else"
