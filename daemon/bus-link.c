/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The system bus connection (see bus-link.h). */

#include "bus-link.h"
#include "event-util.h"
#include "log.h"
#include "manager-scheduler.h"

static int bus_link_on_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        manager_leave_realtime(m);
        (void) bus_link_connect(m);
        return 0;
}

/* Reconnects with a backoff: 1 s, doubling up to 30 s. */
static void bus_link_schedule_retry(Manager *m) {
        int r;

        m->bus_retry_usec = m->bus_retry_usec ? m->bus_retry_usec * 2 : 1000 * 1000;
        if (m->bus_retry_usec > 30 * 1000 * 1000)
                m->bus_retry_usec = 30 * 1000 * 1000;
        r = event_reset_time_relative(m->event, &m->bus_retry_timer, CLOCK_MONOTONIC, m->bus_retry_usec, 100 * 1000,
                                      bus_link_on_retry, m, "bus-reconnect", true);
        if (r < 0)
                log_warning_errno(r, "Failed to schedule a bus reconnection: %m");
}

void bus_link_layers_down(Manager *m) {
        if (m->hooks.units_disconnected)
                m->hooks.units_disconnected(m);
        if (m->hooks.bus_api_disconnected)
                m->hooks.bus_api_disconnected(m);
}

static void bus_link_drop(Manager *m) {
        bus_link_layers_down(m);
        /* Freeing the source that is being dispatched is fine: sd-event keeps it until the callback returns. */
        m->bus_io_source = sd_event_source_disable_unref(m->bus_io_source);
        m->bus_time_source = sd_event_source_disable_unref(m->bus_time_source);
        m->bus = sd_bus_flush_close_unref(m->bus);
}

static int bus_link_on_disconnected(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;

        log_warning("Disconnected from the system bus; reconnecting. Process rules keep working meanwhile.");
        bus_link_drop(m);
        m->bus_retry_usec = 0;
        bus_link_schedule_retry(m);
        return 0;
}

/*
 * The bus joins the loop through sources of our own rather than
 * sd_bus_attach_event(), only so that every message (parsing included) is
 * handled as a normal task and never at SCHED_FIFO (manager.c says why:
 * manager_leave_realtime()). They do what sd-bus's own do: one sd_bus_process()
 * per dispatch, the fd's events and the next timeout updated before the
 * loop sleeps (sd_bus_get_timeout() says "now" while messages are queued).
 */
static void bus_link_process(Manager *m) {
        int r;

        manager_leave_realtime(m);
        r = sd_bus_process(m->bus, NULL);
        if (r < 0 && m->bus) {
                log_warning_errno(r, "Failed to process the system bus, reconnecting: %m");
                bus_link_drop(m);
                m->bus_retry_usec = 0;
                bus_link_schedule_retry(m);
        }
}

static int bus_link_on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        bus_link_process(userdata);
        return 0;
}

static int bus_link_on_time(sd_event_source *s, uint64_t usec, void *userdata) {
        bus_link_process(userdata);
        return 0;
}

static int bus_link_on_prepare(sd_event_source *s, void *userdata) {
        Manager *m = userdata;
        uint64_t until;
        int e, r;

        if (!m->bus)
                return 0;
        e = sd_bus_get_events(m->bus);
        if (e >= 0)
                r = sd_event_source_set_io_events(m->bus_io_source, (uint32_t) e);
        else
                r = e;
        if (r >= 0)
                r = sd_bus_get_timeout(m->bus, &until);
        if (r > 0) {
                /* A deadline (0: messages already queued, e.g. read while a synchronous call waited,
                 * which need no EPOLLIN to be dispatched): the timer must stay on. */
                r = sd_event_source_set_time(m->bus_time_source, until);
                if (r >= 0)
                        r = 1;
        }
        if (r >= 0)
                r = sd_event_source_set_enabled(m->bus_time_source, r > 0 ? SD_EVENT_ONESHOT : SD_EVENT_OFF);
        if (r < 0)
                /* The connection is gone: its Disconnected message comes with the next process call. */
                (void) sd_event_source_set_enabled(m->bus_time_source, SD_EVENT_ONESHOT);
        return 0;
}

static int bus_link_attach(Manager *m, sd_bus *bus) {
        int fd, r;

        fd = sd_bus_get_fd(bus);
        if (fd < 0)
                return fd;
        r = sd_event_add_io(m->event, &m->bus_io_source, fd, 0, bus_link_on_io, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(m->bus_io_source, "system-bus");
        r = sd_event_source_set_prepare(m->bus_io_source, bus_link_on_prepare);
        if (r < 0)
                return r;
        /* Off until bus_link_on_prepare() sets sd-bus's deadline. */
        return event_add_timer(m->event, &m->bus_time_source, CLOCK_MONOTONIC, 0, 0, bus_link_on_time, m,
                               "system-bus-timeout", SD_EVENT_OFF);
}

int bus_link_connect(Manager *m) {
        _cleanup_(sd_bus_unrefp) sd_bus *bus = NULL;
        int r;

        r = sd_bus_open_system(&bus);
        if (r >= 0)
                r = bus_link_attach(m, bus);
        if (r >= 0)
                r = sd_bus_match_signal_async(bus, NULL, "org.freedesktop.DBus.Local", NULL,
                                              "org.freedesktop.DBus.Local", "Disconnected",
                                              bus_link_on_disconnected, NULL, m);
        if (r < 0) {
                m->bus_io_source = sd_event_source_disable_unref(m->bus_io_source);
                m->bus_time_source = sd_event_source_disable_unref(m->bus_time_source);
                if (m->bus_retry_usec == 0)
                        log_warning_errno(r, "Failed to connect to the system bus, retrying (no D-Bus API and no "
                                          "unit rules until it is there; process rules work): %m");
                bus_link_schedule_retry(m);
                return r;
        }
        m->bus = TAKE_PTR(bus);
        m->bus_retry_usec = 0;
        r = m->hooks.bus_api_connected ? m->hooks.bus_api_connected(m) : 0;
        if (r < 0)
                log_warning_errno(r, "Failed to publish org.latnice1: %m");
        r = m->hooks.units_connected ? m->hooks.units_connected(m) : 0;
        if (r < 0)
                log_warning_errno(r, "Failed to watch systemd units: %m");
        manager_scheduler_on_bus(m);
        return 0;
}

void bus_link_done(Manager *m) {
        m->bus_io_source = sd_event_source_disable_unref(m->bus_io_source);
        m->bus_time_source = sd_event_source_disable_unref(m->bus_time_source);
        m->bus_retry_timer = sd_event_source_unref(m->bus_retry_timer);
        m->bus = sd_bus_flush_close_unref(m->bus);
}
