/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * latnicectl's exit status: the codes latnicectl --help and latnicectl(1)
 * document, and the two ways failures reach them (an errno from the kernel,
 * an error name from latniced), so that both paths of a verb exit alike.
 */
#pragma once

#include <systemd/sd-bus.h>

enum {
        CTL_EXIT_OK = 0,
        CTL_EXIT_FAILURE = 1,     /* errors found (check), or the operation failed */
        CTL_EXIT_USAGE = 2,       /* bad command line */
        CTL_EXIT_NO_PROCESS = 3,  /* the process does not exist (any more) */
        CTL_EXIT_UNSUPPORTED = 4, /* the kernel (or daemon) cannot do it */
        CTL_EXIT_PERMISSION = 5,  /* not allowed */
};

int ctl_exit_from_errno(int r);
int ctl_exit_from_bus_error(const sd_bus_error *e);
