/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sd-event helpers (see event-util.h). */

#include "event-util.h"

int event_add_timer(sd_event *e, sd_event_source **s, clockid_t clock, uint64_t usec, uint64_t accuracy,
                    sd_event_time_handler_t callback, void *userdata, const char *description, int enabled) {
        int r;

        r = sd_event_add_time_relative(e, s, clock, usec, accuracy, callback, userdata);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(*s, description);
        return sd_event_source_set_enabled(*s, enabled);
}

int event_reset_time_relative(sd_event *e, sd_event_source **s, clockid_t clock, uint64_t usec, uint64_t accuracy,
                              sd_event_time_handler_t callback, void *userdata, const char *description,
                              bool force_reset) {
        int r;

        if (!*s)
                return event_add_timer(e, s, clock, usec, accuracy, callback, userdata, description,
                                       SD_EVENT_ONESHOT);
        if (!force_reset && sd_event_source_get_enabled(*s, NULL) > 0)
                return 0;
        r = sd_event_source_set_time_relative(*s, usec);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(*s, SD_EVENT_ONESHOT);
}
