/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* latnicectl's exit status (see ctl-exit.h). */

#include <errno.h>

#include "ctl-exit.h"
#include "latnice/dbus.h"

int ctl_exit_from_errno(int r) {
        switch (r) {
        case 0:
                return CTL_EXIT_OK;
        case -ESRCH:
        case -ENOENT:
                return CTL_EXIT_NO_PROCESS;
        case -EPERM:
        case -EACCES:
                return CTL_EXIT_PERMISSION;
        case -EOPNOTSUPP:
                return CTL_EXIT_UNSUPPORTED;
        default:
                return CTL_EXIT_FAILURE;
        }
}

int ctl_exit_from_bus_error(const sd_bus_error *e) {
        if (sd_bus_error_has_names(e, LATNICE_ERROR_NO_SUCH_PROCESS, LATNICE_ERROR_PROCESS_CHANGED))
                return CTL_EXIT_NO_PROCESS;
        if (sd_bus_error_has_names(e, LATNICE_ERROR_ACCESS_DENIED, LATNICE_ERROR_NOT_YOUR_PROCESS,
                                   LATNICE_ERROR_INTERACTIVE_AUTH_REQUIRED, SD_BUS_ERROR_ACCESS_DENIED))
                return CTL_EXIT_PERMISSION;
        if (sd_bus_error_has_names(e, LATNICE_ERROR_NOT_SUPPORTED, LATNICE_ERROR_KERNEL_THREAD))
                return CTL_EXIT_UNSUPPORTED;
        if (sd_bus_error_has_names(e, LATNICE_ERROR_INVALID_VALUE, LATNICE_ERROR_INVALID_PID,
                                   LATNICE_ERROR_INVALID_PROFILE_NAME, LATNICE_ERROR_INVALID_DURATION))
                return CTL_EXIT_USAGE;
        return CTL_EXIT_FAILURE;
}
