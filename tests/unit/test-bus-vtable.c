/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The org.latnice1.Manager vtable over a socketpair, without a bus: argument
 * checking, named errors, introspection, properties and the match trace.
 * A server thread runs the vtable on a hand-built Manager with this
 * kernel's real backend and the real SetLatencyNice (manager-decide.c);
 * the manager's other actions (reload, set profile, the foreground boost,
 * statistics) are stubs here, so this tests the bus layer and the
 * SetLatencyNice decision. As root, a child that drops to
 * nobody connects too: it must be refused what needs authorization (a
 * direct connection has no polkit), must not see root's processes, and
 * must not lower threads of its own process by naming the main thread's
 * value (the Threads=main bypass).
 */

#include <fcntl.h>
#include <pthread.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>

#include "latnice/dbus.h"
#include "manager-bus.h"
#include "manager-decide.h"
#include "manager-foreground.h"
#include "manager-rules.h"
#include "proc.h"
#include "manager-scx.h"
#include "manager-stats.h"
#include "manager-stubs.h"
#include "tests.h"
#include "util.h"

/* ---- what the manager does not have here: tests/harness/manager-stubs.c -- */

static Backend the_backend;
static char self_comm[32];

/* ---- the server -------------------------------------------------------- */

typedef struct Server {
        Manager *m;
        sd_bus *bus;
        int listen_fd; /* extra connections (the unprivileged child), or -1 */
        volatile bool done;
} Server;

static sd_bus *server_bus_new(Manager *m, int fd) {
        sd_bus *bus = NULL;
        sd_id128_t id;

        ASSERT_EQ(sd_id128_randomize(&id), 0);
        ASSERT_EQ(sd_bus_new(&bus), 0);
        ASSERT_EQ(sd_bus_set_fd(bus, fd, fd), 0);
        ASSERT_EQ(sd_bus_set_server(bus, 1, id), 0);
        ASSERT_EQ(sd_bus_negotiate_creds(bus, 1, SD_BUS_CREDS_PID | SD_BUS_CREDS_EUID), 0);
        ASSERT_EQ(manager_bus_add_objects(m, bus), 0);
        ASSERT_EQ(sd_bus_start(bus), 0);
        return bus;
}

static void *server_thread(void *p) {
        Server *s = p;
        sd_bus *extra = NULL;

        while (!s->done) {
                int r;

                if (s->listen_fd >= 0 && !extra) {
                        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

                        if (fd >= 0)
                                extra = server_bus_new(s->m, fd);
                }
                do {
                        r = sd_bus_process(s->bus, NULL);
                } while (r > 0);
                if (extra) {
                        do {
                                r = sd_bus_process(extra, NULL);
                        } while (r > 0);
                        if (r < 0) /* the child hung up */
                                extra = sd_bus_flush_close_unref(extra);
                }
                (void) sd_bus_wait(s->bus, 20 * 1000);
        }
        sd_bus_flush_close_unref(extra);
        return NULL;
}

static sd_bus *client_new(int fd) {
        sd_bus *bus = NULL;

        ASSERT_EQ(sd_bus_new(&bus), 0);
        ASSERT_EQ(sd_bus_set_fd(bus, fd, fd), 0);
        ASSERT_EQ(sd_bus_start(bus), 0);
        return bus;
}

/* Calls a method; returns the error name ("" on success). reply may be NULL. */
static const char *call(sd_bus *bus, sd_bus_message **reply, const char *member, const char *sig, ...) {
        static char name[256];
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        va_list ap;
        int r;

        ASSERT_TRUE(sd_bus_message_new_method_call(bus, &msg, NULL, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE,
                                                   member) >= 0);
        if (sig) {
                va_start(ap, sig);
                ASSERT_TRUE(sd_bus_message_appendv(msg, sig, ap) >= 0);
                va_end(ap);
        }
        r = sd_bus_call(bus, msg, 5 * 1000 * 1000, &error, reply);
        snprintf(name, sizeof(name), "%s", r >= 0 ? "" : error.name ? error.name : "errno");
        if (r < 0 && getenv("TEST_VERBOSE"))
                fprintf(stderr, "%s: %s: %s\n", member, name, error.message ?: "");
        sd_bus_error_free(&error);
        return name;
}

/* ---- the checks -------------------------------------------------------- */

static void test_introspection(sd_bus *c) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *xml, *p;

        ASSERT_TRUE(sd_bus_call_method(c, NULL, LATNICE_BUS_PATH, "org.freedesktop.DBus.Introspectable",
                                       "Introspect", &error, &reply, NULL) >= 0);
        ASSERT_TRUE(sd_bus_message_read(reply, "s", &xml) > 0);
        ASSERT_TRUE(strstr(xml, "<interface name=\"org.latnice1.Manager\">"));
        for (const char *const *m = (const char *const[]) { "GetTask", "ListApplied", "Explain", "ListRules",
                                                              "ListProfiles", "Reload", "SetProfile",
                                                              "SetLatencyNice", "EndForeground", "GetLastStats",
                                                              NULL };
             *m; m++) {
                char needle[64];

                snprintf(needle, sizeof(needle), "<method name=\"%s\">", *m);
                ASSERT_TRUE(strstr(xml, needle));
        }
        ASSERT_TRUE(strstr(xml, "<signal name=\"Applied\">"));
        ASSERT_TRUE(strstr(xml, "<arg type=\"u\" name=\"pid\"/>"));
        /* counters say they do not emit changes; Profile does */
        p = strstr(xml, "<property name=\"EventsSeen\" type=\"t\" access=\"read\">");
        ASSERT_TRUE(p);
        ASSERT_TRUE(strstr(p, "EmitsChangedSignal\" value=\"false\"") < strstr(p, "</property>"));
        /* Profile and Backend (a BPF scheduler comes and goes) do */
        for (const char *const *name = (const char *const[]) { "Profile", "Backend", "BackendReason", NULL }; *name;
             name++) {
                char needle[96];
                const char *next, *ann;

                snprintf(needle, sizeof(needle), "<property name=\"%s\" type=\"s\"", *name);
                p = strstr(xml, needle);
                ASSERT_TRUE(p);
                next = strstr(p + 1, "<property");
                ann = strstr(p, "EmitsChangedSignal");
                ASSERT_TRUE(!ann || (next && ann > next));
        }
        /* the preemption model is read once, at start: const, with its type */
        for (const char *const *name = (const char *const[]) { "PreemptModel\" type=\"s",
                                                                 "PreemptModelSource\" type=\"s",
                                                                 "PreemptDynamic\" type=\"b",
                                                                 "KernelHZ\" type=\"u", NULL };
             *name; name++) {
                char needle[96];
                const char *next;

                snprintf(needle, sizeof(needle), "<property name=\"%s\"", *name);
                p = strstr(xml, needle);
                ASSERT_TRUE(p);
                next = strstr(p, "</property>");
                ASSERT_TRUE(next);
                p = strstr(p, "EmitsChangedSignal\" value=\"const\"");
                ASSERT_TRUE(p && p < next);
        }
        sd_bus_error_free(&error);
}

static void expect_string_property(sd_bus *c, const char *name, const char *want) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        char *s = NULL;

        ASSERT_TRUE(sd_bus_get_property_string(c, NULL, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, name, &error,
                                               &s) >= 0);
        ASSERT_STREQ(s, want);
        free(s);
        sd_bus_error_free(&error);
}

static void expect_u64_property(sd_bus *c, const char *name, uint64_t want) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t t = 0;

        ASSERT_TRUE(sd_bus_get_property_trivial(c, NULL, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, name, &error, 't',
                                                &t) >= 0);
        ASSERT_EQ(t, want);
        sd_bus_error_free(&error);
}

static void test_properties(sd_bus *c) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        char **l = NULL;

        expect_string_property(c, "Backend", backend_to_string(the_backend));
        expect_string_property(c, "Profile", "");
        expect_string_property(c, "EventSource", "proc-scan");
        expect_u64_property(c, "EventsSeen", 42);
        expect_string_property(c, "Prefilter", "on: 2 command names (1 prefixes)");
        expect_u64_property(c, "PrefilterMemory", 4096);
        /* the preemption model as values (main() set a Debian 7.3's), the sentence is latnicectl's */
        expect_string_property(c, "PreemptModel", "lazy");
        expect_string_property(c, "PreemptModelSource", "config");
        {
                uint32_t hz = 0;
                int dynamic = -1;

                ASSERT_TRUE(sd_bus_get_property_trivial(c, NULL, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE,
                                                        "KernelHZ", &error, 'u', &hz) >= 0);
                ASSERT_EQ(hz, 250);
                ASSERT_TRUE(sd_bus_get_property_trivial(c, NULL, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE,
                                                        "PreemptDynamic", &error, 'b', &dynamic) >= 0);
                ASSERT_EQ(dynamic, 1);
        }
        ASSERT_TRUE(sd_bus_get_property_strv(c, NULL, LATNICE_BUS_PATH, LATNICE_BUS_INTERFACE, "RuleErrors", &error,
                                             &l) >= 0);
        ASSERT_EQ(strv_length(l), 1);
        ASSERT_TRUE(strstr(l[0], "test.conf:11: "));
        strv_free(l);
        sd_bus_error_free(&error);
}

static void test_get_task(sd_bus *c) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *comm, *set_by, *rule, *ref, *backend;
        uint64_t start;
        int32_t value;

        ASSERT_STREQ(call(c, &reply, "GetTask", "u", (uint32_t) getpid()), "");
        ASSERT_TRUE(sd_bus_message_read(reply, "sisssst", &comm, &value, &set_by, &rule, &ref, &backend, &start) >
                    0);
        ASSERT_STREQ(set_by, LATNICE_SET_BY_RULE); /* the entry main() put in the table */
        ASSERT_STREQ(rule, "first");
        ASSERT_STREQ(backend, backend_to_string(the_backend));
        ASSERT_TRUE(start > 0);
        reply = sd_bus_message_unref(reply);
        /* 0 is the caller: over a socketpair, this process */
        ASSERT_STREQ(call(c, &reply, "GetTask", "u", (uint32_t) 0), "");
        reply = sd_bus_message_unref(reply);

        ASSERT_STREQ(call(c, NULL, "GetTask", "u", (uint32_t) 4294967295U), LATNICE_ERROR_INVALID_PID);
        ASSERT_STREQ(call(c, NULL, "GetTask", "u", (uint32_t) 0x7fffffff), LATNICE_ERROR_NO_SUCH_PROCESS);
        ASSERT_STREQ(call(c, NULL, "Explain", "u", (uint32_t) 0x7fffffff), LATNICE_ERROR_NO_SUCH_PROCESS);
        /* a wrong signature is sd-bus's InvalidArgs, never a crash */
        ASSERT_STREQ(call(c, NULL, "GetTask", "s", "1"), SD_BUS_ERROR_INVALID_ARGS);
        ASSERT_STREQ(call(c, NULL, "NoSuchMethod", NULL), SD_BUS_ERROR_UNKNOWN_METHOD);
}

static void test_explain(sd_bus *c) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *how, *kind, *name, *file, *k, *v, *comm = NULL;
        uint32_t line;
        int32_t value;
        char **because = NULL;
        unsigned n_shadowed = 0;

        ASSERT_STREQ(call(c, &reply, "Explain", "u", (uint32_t) getpid()), "");
        ASSERT_TRUE(sd_bus_message_enter_container(reply, 'a', "{ss}") > 0);
        while (sd_bus_message_read(reply, "{ss}", &k, &v) > 0)
                if (strcmp(k, "comm") == 0)
                        comm = v;
        ASSERT_STREQ(comm, self_comm);
        ASSERT_TRUE(sd_bus_message_exit_container(reply) >= 0);
        ASSERT_TRUE(sd_bus_message_read(reply, "s(sssui)", &how, &kind, &name, &file, &line, &value) > 0);
        ASSERT_STREQ(how, "process");
        ASSERT_STREQ(name, "first");
        ASSERT_EQ(line, 1);
        ASSERT_EQ(value, -3);
        ASSERT_TRUE(sd_bus_message_read_strv(reply, &because) > 0);
        ASSERT_TRUE(strncmp(because[0], "Comm=", 5) == 0);
        ASSERT_STREQ(because[0] + 5, self_comm);
        strv_free(because);
        ASSERT_TRUE(sd_bus_message_enter_container(reply, 'a', "(sssui)") > 0);
        while (sd_bus_message_read(reply, "(sssui)", &kind, &name, &file, &line, &value) > 0) {
                ASSERT_STREQ(name, "second");
                ASSERT_EQ(value, 4);
                n_shadowed++;
        }
        ASSERT_EQ(n_shadowed, 1);
}

/* Number of ListApplied entries, and whether pid is one of them. */
static unsigned list_applied(sd_bus *c, pid_t pid, bool *ret_found) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *comm, *rule, *ref;
        uint32_t p;
        int32_t v;
        unsigned n = 0;

        *ret_found = false;
        ASSERT_STREQ(call(c, &reply, "ListApplied", NULL), "");
        ASSERT_TRUE(sd_bus_message_enter_container(reply, 'a', "(usiss)") > 0);
        while (sd_bus_message_read(reply, "(usiss)", &p, &comm, &v, &rule, &ref) > 0) {
                ASSERT_TRUE(utf8_is_valid(comm));
                if ((pid_t) p == pid)
                        *ret_found = true;
                n++;
        }
        return n;
}

static void test_lists(sd_bus *c) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *name, *path;
        bool found;
        int active;
        unsigned n = 0;

        ASSERT_STREQ(call(c, &reply, "ListProfiles", NULL), "");
        ASSERT_TRUE(sd_bus_message_enter_container(reply, 'a', "(ssb)") > 0);
        while (sd_bus_message_read(reply, "(ssb)", &name, &path, &active) > 0) {
                ASSERT_TRUE(strcmp(name, "gaming") == 0 || strcmp(name, "broken") == 0);
                ASSERT_TRUE(strstr(path, name));
                n++;
        }
        ASSERT_EQ(n, 2);
        reply = sd_bus_message_unref(reply);
        ASSERT_STREQ(call(c, &reply, "ListRules", NULL), "");
        reply = sd_bus_message_unref(reply);
        /* root sees every entry: ours, and the one with a name no UTF-8 decoder takes (escaped) */
        ASSERT_EQ(list_applied(c, getpid(), &found), 2);
        ASSERT_TRUE(found);
}

/* GetTask's set_by for pid. */
static const char *set_by(sd_bus *c, pid_t pid) {
        static char buf[32];
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *comm, *by, *rule, *ref, *backend;
        uint64_t start;
        int32_t value;

        ASSERT_STREQ(call(c, &reply, "GetTask", "u", (uint32_t) pid), "");
        ASSERT_TRUE(sd_bus_message_read(reply, "sisssst", &comm, &value, &by, &rule, &ref, &backend, &start) > 0);
        snprintf(buf, sizeof(buf), "%s", by);
        return buf;
}

static void test_changes_as_root(sd_bus *c) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        uint32_t rules, errors;

        /* bad input: named errors, whoever asks */
        ASSERT_STREQ(call(c, NULL, "SetProfile", "s", "../etc/passwd"), LATNICE_ERROR_INVALID_PROFILE_NAME);
        ASSERT_STREQ(call(c, NULL, "SetProfile", "s", ""), LATNICE_ERROR_INVALID_PROFILE_NAME);
        ASSERT_STREQ(call(c, NULL, "SetProfile", "s", "nope"), LATNICE_ERROR_NO_SUCH_PROFILE);
        ASSERT_STREQ(call(c, NULL, "SetLatencyNice", "ui", (uint32_t) getpid(), (int32_t) 20),
                     LATNICE_ERROR_INVALID_VALUE);
        ASSERT_STREQ(call(c, NULL, "SetLatencyNice", "ui", (uint32_t) getpid(), (int32_t) -21),
                     LATNICE_ERROR_INVALID_VALUE);
        ASSERT_STREQ(call(c, NULL, "SetLatencyNice", "ui", (uint32_t) 4294967295U, (int32_t) 1),
                     LATNICE_ERROR_INVALID_PID);
        if (the_backend == BACKEND_NONE)
                ASSERT_STREQ(call(c, NULL, "SetLatencyNice", "ui", (uint32_t) getpid(), (int32_t) 1),
                             LATNICE_ERROR_NOT_SUPPORTED);
        else {
                /* root lowers and raises, and the value is recorded as manual */
                ASSERT_STREQ(call(c, NULL, "SetLatencyNice", "ui", (uint32_t) getpid(), (int32_t) -4), "");
                ASSERT_STREQ(set_by(c, getpid()), LATNICE_SET_BY_MANUAL);
                ASSERT_STREQ(call(c, NULL, "SetLatencyNice", "ui", (uint32_t) getpid(), (int32_t) 0), "");
                ASSERT_STREQ(set_by(c, getpid()), LATNICE_SET_BY_MANUAL);
        }

        /* CollectStats: the duration's bounds before anything is attached; then the manager's refusal */
        ASSERT_STREQ(call(c, NULL, "CollectStats", "u", (uint32_t) 0), LATNICE_ERROR_INVALID_DURATION);
        ASSERT_STREQ(call(c, NULL, "CollectStats", "u", (uint32_t) 61), LATNICE_ERROR_INVALID_DURATION);
        ASSERT_STREQ(call(c, NULL, "CollectStats", "u", (uint32_t) 4294967295U), LATNICE_ERROR_INVALID_DURATION);
        ASSERT_EQ(stub_stats_starts, 0);
        ASSERT_STREQ(call(c, NULL, "CollectStats", "u", (uint32_t) 1), LATNICE_ERROR_NOT_SUPPORTED);
        ASSERT_EQ(stub_stats_starts, 1);

        if (geteuid() != 0)
                return;
        stub_reload_result = 0;
        ASSERT_STREQ(call(c, &reply, "Reload", NULL), "");
        ASSERT_TRUE(sd_bus_message_read(reply, "uu", &rules, &errors) > 0);
        ASSERT_EQ(rules, 2);
        ASSERT_EQ(errors, 1);
        stub_reload_result = -EINVAL;
        ASSERT_STREQ(call(c, NULL, "Reload", NULL), LATNICE_ERROR_RELOAD_FAILED);
        ASSERT_STREQ(call(c, NULL, "SetProfile", "s", "gaming"), "");
        ASSERT_STREQ(stub_profile, "gaming");
        ASSERT_STREQ(call(c, NULL, "SetProfile", "s", "broken"), LATNICE_ERROR_RELOAD_FAILED);
}

static void *sleeper(void *p) {
        /* setresuid() interrupts every thread (glibc's SIGSETXID): keep pausing */
        for (;;)
                pause();
        return NULL;
}

static int thread_value(pid_t tid) {
        SchedProbe p = { .backend = the_backend };
        ThreadSched t;

        sched_probe("/sys/kernel/btf/vmlinux", &p);
        ASSERT_EQ(sched_thread_get(&p, tid, &t), 0);
        return t.latency_nice;
}

/* As nobody, on its own connection: what needs authorization is refused, other users' processes are hidden. */
static int unprivileged_child(const struct sockaddr_un *sa, socklen_t salen, pid_t root_pid) {
        pthread_t th;
        pid_t main_tid = (pid_t) syscall(SYS_gettid), other_tid = 0;
        bool found;
        sd_bus *c;
        int fd;

        /* What a Threads=main rule leaves behind: the main thread at -10 (set while still root), another at 0. */
        if (the_backend != BACKEND_NONE) {
                SchedProbe p;

                sched_probe("/sys/kernel/btf/vmlinux", &p);
                ASSERT_EQ(sched_thread_set(&p, main_tid, -10, NULL), 0);
                ASSERT_EQ(pthread_create(&th, NULL, sleeper, NULL), 0);
                for (int i = 0; i < 1000 && other_tid == 0; i++) {
                        _cleanup_(freep) pid_t *tids = NULL;
                        _cleanup_(closep) int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        int n = proc_list_tasks(proc, getpid(), &tids);

                        for (int k = 0; k < n; k++)
                                if (tids[k] != main_tid)
                                        other_tid = tids[k];
                        if (other_tid == 0)
                                usleep(1000);
                }
                ASSERT_TRUE(other_tid > 0);
                /* new threads inherit: put the other one back to 0 */
                ASSERT_EQ(sched_thread_set(&p, other_tid, 0, NULL), 0);
        }
        if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                return 2;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (const struct sockaddr *) sa, salen) < 0)
                return 3;
        c = client_new(fd);
        ASSERT_STREQ(call(c, NULL, "Reload", NULL), LATNICE_ERROR_ACCESS_DENIED);
        ASSERT_STREQ(call(c, NULL, "SetProfile", "s", "gaming"), LATNICE_ERROR_ACCESS_DENIED);
        /* bad input still gets its own name, before any authorization */
        ASSERT_STREQ(call(c, NULL, "SetProfile", "s", "no such"), LATNICE_ERROR_INVALID_PROFILE_NAME);
        ASSERT_STREQ(call(c, NULL, "SetLatencyNice", "ui", (uint32_t) getpid(), (int32_t) 99),
                     LATNICE_ERROR_INVALID_VALUE);
        /* its own processes: open */
        ASSERT_STREQ(call(c, NULL, "GetTask", "u", (uint32_t) getpid()), "");
        ASSERT_STREQ(call(c, NULL, "Explain", "u", (uint32_t) getpid()), "");
        ASSERT_STREQ(call(c, NULL, "ListProfiles", NULL), "");
        /* root's: nothing about them, by pid or by pidfd, and not in the list */
        ASSERT_STREQ(call(c, NULL, "GetTask", "u", (uint32_t) root_pid), LATNICE_ERROR_NOT_YOUR_PROCESS);
        ASSERT_STREQ(call(c, NULL, "Explain", "u", (uint32_t) root_pid), LATNICE_ERROR_NOT_YOUR_PROCESS);
        {
                _cleanup_(closep) int pidfd = pidfd_open(root_pid, 0);

                ASSERT_TRUE(pidfd >= 0);
                ASSERT_STREQ(call(c, NULL, "GetTaskByPIDFD", "h", pidfd), LATNICE_ERROR_NOT_YOUR_PROCESS);
                ASSERT_STREQ(call(c, NULL, "ExplainByPIDFD", "h", pidfd), LATNICE_ERROR_NOT_YOUR_PROCESS);
        }
        ASSERT_EQ(list_applied(c, root_pid, &found), 0);
        ASSERT_TRUE(!found);

        if (the_backend != BACKEND_NONE) {
                /* -10 is what the main thread has, but the other thread would be lowered from 0: refused */
                ASSERT_STREQ(call(c, NULL, "SetLatencyNice", "ui", (uint32_t) getpid(), (int32_t) -10),
                             LATNICE_ERROR_ACCESS_DENIED);
                ASSERT_EQ(thread_value(other_tid), 0);
                ASSERT_EQ(thread_value(main_tid), -10);
                /* the pidfd variant decides the same */
                {
                        _cleanup_(closep) int pidfd = pidfd_open(getpid(), 0);

                        ASSERT_STREQ(call(c, NULL, "SetLatencyNiceByPIDFD", "hi", pidfd, (int32_t) -10),
                                     LATNICE_ERROR_ACCESS_DENIED);
                        ASSERT_EQ(thread_value(other_tid), 0);
                        /* raising every thread needs nothing */
                        ASSERT_STREQ(call(c, NULL, "SetLatencyNiceByPIDFD", "hi", pidfd, (int32_t) 5), "");
                }
                ASSERT_EQ(thread_value(other_tid), 5);
                ASSERT_EQ(thread_value(main_tid), 5);
                /* and another user's process needs authorization even to raise */
                ASSERT_STREQ(call(c, NULL, "SetLatencyNice", "ui", (uint32_t) root_pid, (int32_t) 19),
                             LATNICE_ERROR_ACCESS_DENIED);
        }
        sd_bus_flush_close_unref(c);
        return 0;
}

int main(void) {
        static const char rules_fmt[] =
                "[Process first]\n"
                "Comm=%s\n"
                "LatencyNice=-3\n"
                "\n"
                "[Process second]\n"
                "Comm=%.3s*\n"
                "LatencyNice=4\n"
                "\n"
                "[Process third]\n"
                "Comm=x\n"
                "Bogus=1\n";
        char *rules = NULL;
        const char *dir = test_tmpdir();
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        socklen_t salen = 0;
        Server s = { .listen_fd = -1 };
        Manager *m;
        pthread_t thread;
        sd_bus *client;
        int pair[2], r;

        test_write(dir, "profiles/gaming.conf", "[Process game]\nComm=game\nLatencyNice=-5\n");
        test_write(dir, "profiles/broken.conf", "[Process x]\n");

        m = calloc(1, sizeof(Manager));
        ASSERT_TRUE(m);
        m->proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(m->proc_fd >= 0);
        m->applied = applied_table_new();
        /* The decide module defers its pruning of the table to the loop (never run here). */
        ASSERT_EQ(sd_event_new(&m->event), 0);
        /* This kernel's backend: the SetLatencyNice decision runs against real threads. */
        sched_probe("/sys/kernel/btf/vmlinux", &m->probe);
        the_backend = m->probe.backend;
        m->source = SOURCE_SCAN;
        m->events_seen = 42;
        m->prefilter = strdup("on: 2 command names (1 prefixes)");
        m->prefilter_memory = 4096;
        m->preempt = (KernelPreempt) { .model = PREEMPT_MODEL_LAZY, .source = PREEMPT_SOURCE_CONFIG,
                                       .dynamic = true, .hz = 250 };
        m->options.profile_dir = test_path(dir, "profiles");
        m->options.root = (char *) dir;
        /* match on our own name, whatever runs us (valgrind renames the process) */
        {
                FILE *f = fopen("/proc/self/comm", "re");

                ASSERT_TRUE(f && fgets(self_comm, sizeof(self_comm), f));
                fclose(f);
                self_comm[strcspn(self_comm, "\n")] = 0;
        }
        ASSERT_TRUE(asprintf(&rules, rules_fmt, self_comm, self_comm) > 0);
        r = rule_set_load_buffer("test.conf", rules, strlen(rules), &m->rules);
        free(rules);
        ASSERT_EQ(r, 0);
        ASSERT_EQ(m->rules->n_rules, 2);
        ASSERT_EQ(m->rules->n_errors, 1);
        {
                /* The table as the daemon keeps it: this (root's) process, and one named with a byte
                 * sequence that is not UTF-8 (comm cut in the middle of a character, or \xff). */
                ProcStat st;
                AppliedProcess e = {
                        .pid = getpid(), .uid = getuid(), .latency_nice = 0, .state_slot = STATE_SLOT_NONE,
                };
                AppliedProcess bad = { .pid = 0x7ffffff0, .uid = 0, .latency_nice = 3, .state_slot = STATE_SLOT_NONE };

                ASSERT_EQ(proc_stat_read(m->proc_fd, "self/stat", &st), 0);
                e.start_time = st.start_time;
                snprintf(e.comm, sizeof(e.comm), "%s", self_comm);
                e.rule = strdup("[Process first] test.conf:1");
                e.rule_name = strdup("first");
                ASSERT_EQ(applied_table_put(m->applied, &e), 0);
                memcpy(bad.comm, "ibus-engine-\xff\xc3", 15);
                bad.rule = strdup("[Process ibus] test.conf:9");
                bad.rule_name = strdup("ibus\xfe");
                ASSERT_EQ(applied_table_put(m->applied, &bad), 0);
        }

        ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair), 0);
        s.m = m;
        s.bus = server_bus_new(m, pair[0]);
        if (geteuid() == 0) {
                /* an abstract socket for the child that drops privileges */
                snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "latnice-test-bus-vtable-%d", (int) getpid());
                salen = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + strlen(sa.sun_path + 1));
                s.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                ASSERT_TRUE(s.listen_fd >= 0);
                ASSERT_EQ(bind(s.listen_fd, (struct sockaddr *) &sa, salen), 0);
                ASSERT_EQ(listen(s.listen_fd, 1), 0);
        }
        ASSERT_EQ(pthread_create(&thread, NULL, server_thread, &s), 0);
        client = client_new(pair[1]);

        test_introspection(client);
        test_properties(client);
        test_get_task(client);
        test_explain(client);
        test_lists(client);
        test_changes_as_root(client);

        if (s.listen_fd >= 0) {
                pid_t pid = fork();
                int status;

                ASSERT_TRUE(pid >= 0);
                if (pid == 0)
                        _exit(unprivileged_child(&sa, salen, getppid()));
                ASSERT_EQ(waitpid(pid, &status, 0), pid);
                ASSERT_TRUE(WIFEXITED(status));
                ASSERT_EQ(WEXITSTATUS(status), 0);
                printf("unprivileged caller: refused Reload and SetProfile, named errors for bad input\n");
        } else
                printf("not root: skipped the unprivileged-caller part\n");

        sd_bus_flush_close_unref(client);
        s.done = true;
        pthread_join(thread, NULL);
        manager_bus_on_disconnected(m);
        sd_bus_flush_close_unref(s.bus);
        if (s.listen_fd >= 0)
                close(s.listen_fd);
        free(m->prefilter);
        rule_set_free(m->rules);
        applied_table_free(m->applied);
        sd_event_source_unref(m->prune_defer);
        sd_event_unref(m->event);
        close(m->proc_fd);
        free(m);
        printf("test-bus-vtable: all checks passed\n");
        return 0;
}
