#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The static analyzer stays clean on the daemon and the CLI.
# varFuncNullUB is off: sd-bus's variadic APIs take NULL as their sentinel,
# which is well defined with glibc's NULL ((void *) 0).
set -u
src=${1:?source root}
command -v cppcheck >/dev/null || { echo "cppcheck is not installed"; exit 77; }
cd "$src" || exit 1
exec cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability --inline-suppr --std=c11 \
        -D_GNU_SOURCE --suppress=missingIncludeSystem --suppress=varFuncNullUB \
        --include=/usr/include/systemd/sd-bus-vtable.h -I include -I daemon \
        daemon/*.c ctl/*.c
