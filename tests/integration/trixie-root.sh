#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A Debian 13 (trixie) root directory for tests that need the desktops of today (GNOME Shell 48),
# built with mmdebstrap (the host stays Debian 12: nothing is added to its apt sources) and cached
# under $LATNICE_ROOTFS_CACHE (/var/cache/latnice/rootfs), keyed by a hash of the package list and
# of this script. Prints the root's path on stdout; what mmdebstrap says goes to the cache's log.
#
#   trixie-root.sh NAME PACKAGE...
#
# Exit: 0 the root is there, 77 the archive cannot be reached or mmdebstrap is missing (says why),
# 1 the build failed.
set -uo pipefail
NAME=$1
shift
CACHE=${LATNICE_ROOTFS_CACHE:-/var/cache/latnice/rootfs}
MIRROR=${LATNICE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
command -v mmdebstrap >/dev/null || { echo "SKIP: mmdebstrap is not installed (apt-get install mmdebstrap)" >&2; exit 77; }
KEY=$( { printf '%s\n' "$MIRROR" "$@"; cat "${BASH_SOURCE[0]}"; } | sha256sum | cut -c1-16)
DIR=$CACHE/trixie-$NAME-$KEY
mkdir -p "$CACHE" || exit 1
exec 9> "$CACHE/.lock-trixie-$NAME"
flock 9
if [[ -e $DIR/done ]]; then
        echo "$DIR/root"
        exit 0
fi
rm -rf -- "$DIR.tmp"
mkdir -p "$DIR.tmp"
t0=$(date +%s)
echo "# mmdebstrap trixie into $DIR.tmp/root (log: $DIR.tmp/mmdebstrap.log)" >&2
# At nice 19: the machine's other work (builds, the lab) goes first.
if ! nice -n 19 ionice -c 3 mmdebstrap --variant=apt --mode=root --format=directory \
        --include="$(IFS=,; echo "$*")" \
        --customize-hook='chroot "$1" dpkg-query -W -f "\${Package} \${Version}\n" > "$1/packages.txt"' \
        trixie "$DIR.tmp/root" "deb $MIRROR trixie main" > "$DIR.tmp/mmdebstrap.log" 2>&1; then
        if grep -qE "Could not resolve|Temporary failure resolving|Failed to fetch|Unable to connect" \
                "$DIR.tmp/mmdebstrap.log"; then
                echo "SKIP: the Debian archive cannot be reached ($MIRROR):" >&2
                grep -m3 -E "Could not resolve|Temporary failure|Failed to fetch|Unable to connect" \
                        "$DIR.tmp/mmdebstrap.log" >&2
                exit 77
        fi
        echo "mmdebstrap failed:" >&2
        tail -20 "$DIR.tmp/mmdebstrap.log" >&2
        exit 1
fi
echo "$(( $(date +%s) - t0 ))" > "$DIR.tmp/build-seconds"
touch "$DIR.tmp/done"
rm -rf -- "$DIR"
mv "$DIR.tmp" "$DIR"
echo "# built $DIR in $(cat "$DIR/build-seconds") s" >&2
echo "$DIR/root"
