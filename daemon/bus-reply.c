/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The shapes of org.latnice1's replies (see bus-reply.h): appending, never deciding. */

#include "bus-reply.h"
#include "match.h"
#include "util.h"

const char *bus_esc(BusEsc *e, const char *s) {
        char *buf = NULL;
        const char *v = utf8_safe(s ?: "", &buf);

        if (!v) {
                e->error = -ENOMEM;
                return "";
        }
        if (!buf)
                return v; /* valid already */
        if (e->n >= ELEMENTSOF(e->bufs)) {
                free(buf);
                e->error = -ENOBUFS;
                return "";
        }
        e->bufs[e->n++] = buf;
        return buf;
}

int bus_esc_done(BusEsc *e, int r) {
        for (unsigned i = 0; i < e->n; i++)
                free(e->bufs[i]);
        e->n = 0;
        r = r < 0 ? r : e->error;
        e->error = 0;
        return r;
}

int bus_append_str(sd_bus_message *m, const char *s) {
        _cleanup_(freep) char *buf = NULL;
        const char *v = utf8_safe(s ?: "", &buf);

        return v ? sd_bus_message_append(m, "s", v) : -ENOMEM;
}

int bus_append_rule(sd_bus_message *reply, const Rule *rule) {
        BusEsc e = {};
        int r;

        if (!rule)
                return sd_bus_message_append(reply, "(sssui)", "", "", "", 0, 0);
        r = sd_bus_message_append(reply, "(sssui)", rule_kind_to_string(rule->kind), bus_esc(&e, rule->name),
                                  bus_esc(&e, rule->file), rule->line, rule->latency_nice);
        return bus_esc_done(&e, r);
}

int bus_append_rule_keys(sd_bus_message *reply, const Rule *rule) {
        int r;

        r = sd_bus_message_open_container(reply, 'a', "s");
        for (MatchKey k = 0; r >= 0 && rule && k < _MATCH_KEY_MAX; k++) {
                _cleanup_(freep) char *s = NULL;

                if (!rule_match(rule, k))
                        continue;
                s = rule_format_key(rule, k);
                if (!s)
                        return -ENOMEM;
                r = bus_append_str(reply, s);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

int bus_append_task(sd_bus_message *reply, const TaskInfo *t) {
        _cleanup_(freep) char *cmdline = NULL, *unit = NULL, *ancestors = NULL, *app = NULL;
        char uid[16], gid[16], pid[16];
        BusEsc e = {};
        int r;

        cmdline = t->argv ? strv_join(t->argv, " ") : NULL;
        unit = cgroup_path_unit(t->cgroup);
        ancestors = task_ancestors_format(t);
        app = cgroup_path_app(t->cgroup);
        snprintf(pid, sizeof(pid), "%d", (int) t->pid);
        snprintf(uid, sizeof(uid), "%u", (unsigned) t->uid);
        snprintf(gid, sizeof(gid), "%u", (unsigned) t->gid);
        r = sd_bus_message_append(reply, "a{ss}", 13, "ancestors", bus_esc(&e, ancestors), "app", bus_esc(&e, app),
                                  "pid", pid, "comm", bus_esc(&e, t->comm), "exe", bus_esc(&e, t->exe), "cmdline",
                                  bus_esc(&e, cmdline), "parent", bus_esc(&e, t->parent_comm), "uid", uid, "user",
                                  bus_esc(&e, t->user), "gid", gid, "group", bus_esc(&e, t->group), "cgroup",
                                  bus_esc(&e, t->cgroup), "unit", bus_esc(&e, unit));
        return bus_esc_done(&e, r);
}

/* (suuttttat): one class of a statistics result. */
static int append_stats_classes(sd_bus_message *reply, const StatsResult *result) {
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(suuttttat)");
        for (size_t i = 0; r >= 0 && result && i < result->n_classes; i++) {
                const StatsClassResult *c = &result->classes[i];

                r = sd_bus_message_open_container(reply, 'r', "suuttttat");
                if (r >= 0)
                        r = bus_append_str(reply, c->name);
                if (r >= 0)
                        r = sd_bus_message_append(reply, "uutttt", c->flags, c->processes, c->hist.wakeups,
                                                  c->hist.total_ns, c->hist.max_ns, c->hist.preemptions);
                if (r >= 0)
                        r = sd_bus_message_append_array(reply, 't', c->hist.slots, sizeof(c->hist.slots));
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

int bus_append_stats_result(sd_bus_message *reply, const StatsResult *result) {
        int r;

        r = sd_bus_message_append(reply, "tt", result ? result->finished_usec : 0, result ? result->duration_usec : 0);
        if (r >= 0)
                r = bus_append_str(reply, result ? result->hook : "");
        if (r >= 0)
                r = bus_append_str(reply, result ? result->note : "");
        if (r >= 0)
                r = sd_bus_message_append(reply, "t", result ? result->missed : 0);
        if (r >= 0)
                r = append_stats_classes(reply, result);
        return r;
}
