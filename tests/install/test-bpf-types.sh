#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# latniced's BPF programs are built from daemon/bpf/kernel-types.h, not from the build host's BTF
# (so the package builds anywhere, the same way): that header must hold on every kernel latniced
# runs on. tools/check-bpf-types holds it to each kernel's BTF there is here: the running kernel's,
# and the test kernels vmtest.py built (6.1 and 6.12 with the latency-nice series, 6.12 with
# sched_ext), read from their bzImage. The vm suite then loads the objects on those kernels.
#
#   test-bpf-types.sh BUILD_DIR
#
# Exit: 0 pass, 1 fail, 77 skip (no kernel BTF here at all, or clang or bpftool missing).

set -uo pipefail

HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
SRC=$(readlink -f "$HERE/../..")
BUILD=$(readlink -f "${1:?usage: test-bpf-types.sh BUILD_DIR}")
CACHE=${LATNICE_KERNEL_CACHE:-/var/cache/latnice/kernel}

command -v clang >/dev/null || { echo "SKIP: no clang (tools/deps-build.txt)"; exit 77; }
command -v bpftool >/dev/null || [[ -x /usr/sbin/bpftool ]] || { echo "SKIP: no bpftool (tools/deps-build.txt)"; exit 77; }
export PATH=$PATH:/usr/sbin

btfs=()
[[ -r /sys/kernel/btf/vmlinux ]] && btfs+=(/sys/kernel/btf/vmlinux) && echo "# /sys/kernel/btf/vmlinux: Linux $(uname -r)"
for k in "$CACHE"/*/bzImage; do
        [[ -f $k ]] || continue
        btfs+=("$k")
        echo "# $k: $(sed -n 's/^# Linux\/x86 \([^ ]*\) Kernel Configuration$/Linux \1/p' "${k%/bzImage}/config" 2>/dev/null)"
done
((${#btfs[@]})) || { echo "SKIP: no kernel BTF here (/sys/kernel/btf/vmlinux, $CACHE/*/bzImage)"; exit 77; }

objects=("$BUILD"/daemon/*.linked.bpf.o)
[[ -f ${objects[0]} ]] || { echo "FAIL - no BPF objects in $BUILD/daemon"; exit 1; }
if "$SRC/tools/check-bpf-types" --objects "${objects[@]}" "${btfs[@]}"; then
        echo "ok   - kernel-types.h holds on the ${#btfs[@]} kernels here"
        exit 0
fi
echo "FAIL - kernel-types.h does not hold on every kernel here (tools/check-bpf-types above)"
exit 1
