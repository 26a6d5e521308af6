/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Names of latniced's D-Bus API, shared by the daemon and its clients. */
#pragma once

#define LATNICE_BUS_NAME "org.latnice1"
#define LATNICE_BUS_PATH "/org/latnice1"
#define LATNICE_BUS_INTERFACE "org.latnice1.Manager"
#define LATNICE_BUS_ERROR_PREFIX "org.latnice1.Error."

#define LATNICE_ERROR_NO_SUCH_PROCESS LATNICE_BUS_ERROR_PREFIX "NoSuchProcess"
#define LATNICE_ERROR_INVALID_VALUE LATNICE_BUS_ERROR_PREFIX "InvalidValue"
#define LATNICE_ERROR_NO_SUCH_PROFILE LATNICE_BUS_ERROR_PREFIX "NoSuchProfile"
#define LATNICE_ERROR_NOT_SUPPORTED LATNICE_BUS_ERROR_PREFIX "NotSupported"
#define LATNICE_ERROR_RELOAD_FAILED LATNICE_BUS_ERROR_PREFIX "ReloadFailed"
#define LATNICE_ERROR_ACCESS_DENIED LATNICE_BUS_ERROR_PREFIX "AccessDenied"
#define LATNICE_ERROR_PROCESS_CHANGED LATNICE_BUS_ERROR_PREFIX "ProcessChanged"
