/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Names of latniced's D-Bus API, shared by the daemon and its clients
 * (latnicectl, tests). The API itself is documented in latniced(8) and in
 * the introspection data of /org/latnice1.
 */
#pragma once

#define LATNICE_BUS_NAME "org.latnice1"
#define LATNICE_BUS_PATH "/org/latnice1"
#define LATNICE_BUS_INTERFACE "org.latnice1.Manager"
#define LATNICE_BUS_ERROR_PREFIX "org.latnice1.Error."

/* Named errors: bad input never comes back as a generic failure. */
#define LATNICE_ERROR_NO_SUCH_PROCESS LATNICE_BUS_ERROR_PREFIX "NoSuchProcess"
#define LATNICE_ERROR_INVALID_VALUE LATNICE_BUS_ERROR_PREFIX "InvalidValue"
#define LATNICE_ERROR_INVALID_PID LATNICE_BUS_ERROR_PREFIX "InvalidPID"
#define LATNICE_ERROR_NO_SUCH_PROFILE LATNICE_BUS_ERROR_PREFIX "NoSuchProfile"
#define LATNICE_ERROR_INVALID_PROFILE_NAME LATNICE_BUS_ERROR_PREFIX "InvalidProfileName"
#define LATNICE_ERROR_NOT_SUPPORTED LATNICE_BUS_ERROR_PREFIX "NotSupported"
#define LATNICE_ERROR_KERNEL_THREAD LATNICE_BUS_ERROR_PREFIX "KernelThread"
#define LATNICE_ERROR_RELOAD_FAILED LATNICE_BUS_ERROR_PREFIX "ReloadFailed"
#define LATNICE_ERROR_ACCESS_DENIED LATNICE_BUS_ERROR_PREFIX "AccessDenied"
#define LATNICE_ERROR_NOT_YOUR_PROCESS LATNICE_BUS_ERROR_PREFIX "NotYourProcess"
#define LATNICE_ERROR_PROCESS_CHANGED LATNICE_BUS_ERROR_PREFIX "ProcessChanged"
#define LATNICE_ERROR_INTERACTIVE_AUTH_REQUIRED "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired"
#define LATNICE_ERROR_BUSY LATNICE_BUS_ERROR_PREFIX "Busy"
#define LATNICE_ERROR_INVALID_DURATION LATNICE_BUS_ERROR_PREFIX "InvalidDuration"

/* polkit actions (conf/polkit-1/actions/org.latnice1.policy). */
#define LATNICE_POLKIT_RELOAD "org.latnice1.reload"
#define LATNICE_POLKIT_SET_PROFILE "org.latnice1.set-profile"
#define LATNICE_POLKIT_LOWER "org.latnice1.set-latency-nice"      /* lower the value of one's own process */
#define LATNICE_POLKIT_ANY "org.latnice1.set-latency-nice-any"    /* any process of another user */
#define LATNICE_POLKIT_FOREGROUND "org.latnice1.set-foreground"   /* boost one's own focused window (active session) */
#define LATNICE_POLKIT_STATS "org.latnice1.collect-stats"        /* attach the scheduler statistics for a while */

/* GetTask's "set by" values. */
#define LATNICE_SET_BY_RULE "rule"       /* a process rule of the running rule set */
#define LATNICE_SET_BY_UNIT "unit"       /* a unit rule, applied per task */
#define LATNICE_SET_BY_MANUAL "manual"   /* SetLatencyNice through the daemon */
#define LATNICE_SET_BY_FOREGROUND "foreground" /* the foreground boost (SetForeground) */
#define LATNICE_SET_BY_INHERITED "inherited" /* carried through fork from a process latniced set */
#define LATNICE_SET_BY_FOREIGN "foreign" /* a value latniced did not set */
#define LATNICE_SET_BY_NONE "none"       /* the default value, nobody set anything */
