/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* latnicectl's side of org.latnice1 (see ctl-bus.h). */

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/pidfd.h>
#include <sys/wait.h>

#include "ctl-bus.h"
#include "ctl-exit.h"
#include "latnice/dbus.h"

int ctl_bus_connect(sd_bus **ret, char **ret_why) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int has = 0, r;

        if (ret_why)
                *ret_why = NULL;
        r = sd_bus_open_system(&bus);
        if (r < 0) {
                if (ret_why && asprintf(ret_why, "cannot connect to the system bus (%s)", strerror(-r)) < 0)
                        *ret_why = NULL;
                return r;
        }
        r = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "NameHasOwner", &error, &reply, "s", LATNICE_BUS_NAME);
        if (r >= 0)
                r = sd_bus_message_read(reply, "b", &has);
        if (r < 0 || !has) {
                if (ret_why &&
                    asprintf(ret_why, "it is not running (%s is not on the system bus)", LATNICE_BUS_NAME) < 0)
                        *ret_why = NULL;
                return r < 0 ? r : -ESRCH;
        }
        /* Let polkit ask for a password when a person is at the terminal. */
        (void) sd_bus_set_allow_interactive_authorization(bus, isatty(STDIN_FILENO) > 0);
        *ret = TAKE_PTR(bus);
        return 0;
}

int ctl_bus_connect_or_fail(sd_bus **ret) {
        _cleanup_(freep) char *why = NULL;

        if (ctl_bus_connect(ret, &why) < 0) {
                fprintf(stderr, "Failed to connect to latniced: %s.\n", why ?: strerror(ENOMEM));
                return CTL_EXIT_FAILURE;
        }
        return CTL_EXIT_OK;
}

/* As systemctl does: pkttyagent tells us on a pipe when it is registered. */
pid_t ctl_polkit_agent_open(void) {
        int pipefd[2];
        pid_t pid;
        char fdstr[16], c;

        if (geteuid() == 0 || isatty(STDIN_FILENO) <= 0 || access("/usr/bin/pkttyagent", X_OK) < 0)
                return 0;
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return 0;
        pid = fork();
        if (pid < 0) {
                close(pipefd[0]);
                close(pipefd[1]);
                return 0;
        }
        if (pid == 0) {
                int fd = fcntl(pipefd[1], F_DUPFD, 3);

                if (fd < 0)
                        _exit(1);
                snprintf(fdstr, sizeof(fdstr), "%d", fd);
                execl("/usr/bin/pkttyagent", "pkttyagent", "--notify-fd", fdstr, "--fallback", (char *) NULL);
                _exit(127);
        }
        close(pipefd[1]);
        {
                struct pollfd p = { .fd = pipefd[0], .events = POLLIN };

                /* It writes nothing and closes the fd once registered (or dies). */
                (void) poll(&p, 1, 5000);
                (void) !read(pipefd[0], &c, 1);
        }
        close(pipefd[0]);
        return pid;
}

void ctl_polkit_agent_close(pid_t pid) {
        if (pid <= 0)
                return;
        (void) kill(pid, SIGTERM);
        (void) waitpid(pid, NULL, 0);
}

int ctl_bus_call_for_pid(sd_bus *bus, const char *method, pid_t pid, const int32_t *value, sd_bus_error *error,
                         sd_bus_message **reply) {
        _cleanup_(closep) int pidfd = pidfd_open(pid, 0);
        char name[64];
        int r;

        if (pidfd >= 0) {
                snprintf(name, sizeof(name), "%sByPIDFD", method);
                if (value)
                        r = sd_bus_call_method(bus, LATNICE_BUS_NAME, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, name,
                                               error, reply, "hi", pidfd, *value);
                else
                        r = sd_bus_call_method(bus, LATNICE_BUS_NAME, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, name,
                                               error, reply, "h", pidfd);
                /* An older latniced has only the pid methods. */
                if (r >= 0 || !sd_bus_error_has_name(error, SD_BUS_ERROR_UNKNOWN_METHOD))
                        return r;
                sd_bus_error_free(error);
        }
        if (value)
                return sd_bus_call_method(bus, LATNICE_BUS_NAME, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, method,
                                          error, reply, "ui", (uint32_t) pid, *value);
        return sd_bus_call_method(bus, LATNICE_BUS_NAME, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, method, error, reply,
                                  "u", (uint32_t) pid);
}

/* "Failed to WHAT: why", why from latniced where it said so. */
static int call_failed(const char *what, const sd_bus_error *e, int r) {
        if (sd_bus_error_is_set(e)) {
                fprintf(stderr, "Failed to %s: %s\n", what, e->message ?: e->name);
                return ctl_exit_from_bus_error(e);
        }
        fprintf(stderr, "Failed to %s: %s\n", what, strerror(-r));
        return CTL_EXIT_FAILURE;
}

int ctl_call(sd_bus *bus, const char *interface, const char *method, const char *what, sd_bus_message **reply,
             const char *types, ...) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        va_list ap;
        int r;

        va_start(ap, types);
        r = sd_bus_call_methodv(bus, LATNICE_BUS_NAME, LATNICE_BUS_PATH, interface, method, &error, reply, types, ap);
        va_end(ap);
        return r < 0 ? call_failed(what, &error, r) : CTL_EXIT_OK;
}

int ctl_call_for_pid(sd_bus *bus, const char *method, pid_t pid, const int32_t *value, const char *what,
                     sd_bus_message **reply) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        char msg[128];
        int r;

        r = ctl_bus_call_for_pid(bus, method, pid, value, &error, reply);
        if (r >= 0)
                return CTL_EXIT_OK;
        snprintf(msg, sizeof(msg), "%s PID %d", what, (int) pid);
        return call_failed(msg, &error, r);
}

/* One property's value, the variant entered. */
static int read_property(sd_bus_message *m, const CtlProperty *p, void *field) {
        const char *str;
        char *copy;
        int r;

        if (p->read)
                return p->read(m, field);
        switch (p->signature[0]) {
        case 's':
                r = sd_bus_message_read(m, "s", &str);
                if (r < 0)
                        return r;
                copy = strdup(str);
                if (!copy)
                        return -ENOMEM;
                free(*(char **) field);
                *(char **) field = copy;
                return 0;
        case 'a':
                return sd_bus_message_read_strv(m, (char ***) field);
        default:
                return sd_bus_message_read_basic(m, p->signature[0], field);
        }
}

int ctl_bus_read_properties(sd_bus_message *reply, const CtlProperty *map, size_t n, void *userdata) {
        int r;

        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                const char *name;
                size_t i;

                r = sd_bus_message_read(reply, "s", &name);
                if (r < 0)
                        return r;
                for (i = 0; i < n; i++)
                        if (strcmp(map[i].name, name) == 0)
                                break;
                if (i == n || sd_bus_message_enter_container(reply, 'v', map[i].signature) <= 0)
                        r = sd_bus_message_skip(reply, "v"); /* newer daemon, or another type */
                else {
                        r = read_property(reply, &map[i], (uint8_t *) userdata + map[i].offset);
                        if (r >= 0)
                                r = sd_bus_message_exit_container(reply); /* the variant */
                }
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply); /* the dict entry */
                if (r < 0)
                        return r;
        }
        return r;
}

void ctl_bus_properties_done(const CtlProperty *map, size_t n, void *userdata) {
        for (size_t i = 0; i < n; i++) {
                void *field = (uint8_t *) userdata + map[i].offset;

                /* What read_property() allocated, by the same signatures. */
                if (map[i].read)
                        continue;
                if (map[i].signature[0] == 's')
                        *(char **) field = mfree(*(char **) field);
                else if (map[i].signature[0] == 'a')
                        *(char ***) field = strv_free(*(char ***) field);
        }
}

void ctl_table_add_rule(Table *t, const CtlRule *rule) {
        table_add_string(t, rule->kind);
        table_add_string(t, rule->name);
        table_add_string(t, rule->file);
        table_add_uint(t, rule->line);
        table_add_int(t, rule->value);
}

int ctl_bad_reply(int r) {
        if (r == -ENOMEM)
                fprintf(stderr, "Out of memory.\n"); /* systemd's log_oom() */
        else
                fprintf(stderr, "Failed to read latniced's reply: %s\n", strerror(-r));
        return CTL_EXIT_FAILURE;
}

int ctl_table_print(Table *t) {
        int r = table_print(t);

        if (r < 0) {
                fprintf(stderr, "Failed to print the output: %s\n", strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        return CTL_EXIT_OK;
}
