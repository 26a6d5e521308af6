/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A peer on the session bus for the focus trust test: it reads commands on stdin, one a line, and
 * answers each with one line on stdout, so that a test can stand in for a compositor (own its
 * well-known name, call org.latnice1.Focus) or for any other peer, in any order:
 *   own NAME       -> "ok" once NAME is ours, "error MESSAGE" otherwise
 *   release NAME   -> "ok"
 *   focus PID      -> Focus(u PID): "ok", or "error NAME MESSAGE"
 *   text STRING    -> FocusText(s STRING): the same
 *   pid            -> our pid, as our own pid namespace sees it
 * Connects to $DBUS_SESSION_BUS_ADDRESS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <systemd/sd-bus.h>

static void call(sd_bus *bus, const char *method, const char *sig, const char *arg) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        int r;

        if (sig[0] == 'u')
                r = sd_bus_call_method(bus, "org.latnice1.Focus", "/org/latnice1/Focus", "org.latnice1.Focus", method,
                                       &e, NULL, "u", (uint32_t) strtoul(arg, NULL, 10));
        else
                r = sd_bus_call_method(bus, "org.latnice1.Focus", "/org/latnice1/Focus", "org.latnice1.Focus", method,
                                       &e, NULL, "s", arg);
        if (r < 0)
                printf("error %s %s\n", e.name ?: "-", e.message ?: strerror(-r));
        else
                printf("ok\n");
        sd_bus_error_free(&e);
}

int main(void) {
        sd_bus *bus = NULL;
        char line[4096];
        int r;

        r = sd_bus_open_user(&bus);
        if (r < 0) {
                fprintf(stderr, "Cannot connect to the session bus: %s\n", strerror(-r));
                return 1;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        while (fgets(line, sizeof(line), stdin)) {
                char *arg;

                line[strcspn(line, "\n")] = '\0';
                arg = strchr(line, ' ');
                if (arg)
                        *arg++ = '\0';
                if (strcmp(line, "own") == 0 && arg) {
                        r = sd_bus_request_name(bus, arg, 0);
                        if (r < 0)
                                printf("error %s\n", strerror(-r));
                        else
                                printf("ok\n");
                } else if (strcmp(line, "release") == 0 && arg) {
                        (void) sd_bus_release_name(bus, arg);
                        printf("ok\n");
                } else if (strcmp(line, "focus") == 0 && arg)
                        call(bus, "Focus", "u", arg);
                else if (strcmp(line, "text") == 0 && arg)
                        call(bus, "FocusText", "s", arg);
                else if (strcmp(line, "pid") == 0)
                        printf("%d\n", (int) getpid());
                else
                        printf("error unknown command\n");
        }
        sd_bus_flush_close_unref(bus);
        return 0;
}
