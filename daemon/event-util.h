/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sd-event helpers. No logging, no globals: callers say what a failure means. */
#pragma once

#include <stdbool.h>
#include <systemd/sd-event.h>

/*
 * Adds the timer *s, usec from now, with its description, and leaves it
 * enabled as asked (SD_EVENT_OFF, SD_EVENT_ON, or SD_EVENT_ONESHOT as
 * sd-event makes it).
 */
int event_add_timer(sd_event *e, sd_event_source **s, clockid_t clock, uint64_t usec, uint64_t accuracy,
                    sd_event_time_handler_t callback, void *userdata, const char *description, int enabled);

/*
 * Arms the one-shot timer *s to fire usec from now, creating it (with its
 * description) the first time. A timer that is still pending is moved only
 * with force_reset: true restarts a debounce, false keeps the earlier
 * deadline (a retry already on its way).
 */
int event_reset_time_relative(sd_event *e, sd_event_source **s, clockid_t clock, uint64_t usec, uint64_t accuracy,
                              sd_event_time_handler_t callback, void *userdata, const char *description,
                              bool force_reset);
