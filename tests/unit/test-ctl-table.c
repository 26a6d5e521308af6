/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-table.c: latnicectl's text columns as printf lays them out, its JSON as json-c prints it, made valid UTF-8. */

#include <stdio.h>
#include <unistd.h>

#include "ctl-table.h"
#include "tests.h"

/* What fn printed on stdout. */
static char *capture(void (*fn)(bool json), bool json) {
        static char buf[4096];
        FILE *f = tmpfile();
        int saved = dup(STDOUT_FILENO);
        size_t n;

        ASSERT_TRUE(f && saved >= 0);
        fflush(stdout);
        ASSERT_TRUE(dup2(fileno(f), STDOUT_FILENO) >= 0);
        fn(json);
        fflush(stdout);
        ASSERT_TRUE(dup2(saved, STDOUT_FILENO) >= 0);
        close(saved);
        rewind(f);
        n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = 0;
        fclose(f);
        return buf;
}

static const TableColumn list_columns[] = {
        { "PID", "pid", TABLE_UINT, 8 },
        { "COMM", "comm", TABLE_STRING, -15 },
        { "LATNICE", "latency_nice", TABLE_INT, 7 },
        { NULL, "rule", TABLE_STRING },
        { "RULE", "rule_ref", TABLE_STRING },
};

static void list(bool json) {
        Table *t = table_new(list_columns, ELEMENTSOF(list_columns), json);
        char *files[] = { (char *) "/etc/a.conf", (char *) "b\"c", NULL };

        ASSERT_TRUE(t);
        table_add_uint(t, 12);
        table_add_string(t, "pipewire");
        table_add_int(t, -10);
        table_add_string(t, "audio");
        table_add_string(t, "[Process audio] /etc/latnice.d/a.conf:3");
        table_add_uint(t, 4000000);
        table_add_string(t, "bad\xff\x01name");
        table_add_int(t, 19);
        table_add_string(t, "");
        table_add_string(t, "manual");
        ASSERT_EQ(table_rows(t), 2);
        ASSERT_EQ(table_print(t), 0);
        table_text(t, "\n%zu processes.\n", table_rows(t));
        table_free(t);

        /* A vertical table: labels right-aligned, further lines under the value, NULL no line. */
        static const TableColumn vertical[] = {
                { "", NULL, TABLE_STRING, 0 },
                { "Backend", "backend", TABLE_STRING, 12 },
                { "Note", NULL, TABLE_STRING, 12 },
                { "Rules", "rule_files", TABLE_STRV, 12 },
                { NULL, "ratio", TABLE_DOUBLE, 0, 1 },
                { NULL, "stats", TABLE_JSON },
        };
        t = table_new_vertical(vertical, ELEMENTSOF(vertical), json);
        ASSERT_TRUE(t);
        table_add_string(t, "latniced 1 on org.latnice1");
        table_add_string(t, "eevdf-slice\nthe reason");
        table_add_string(t, NULL);
        table_add_strv(t, files);
        table_add_double(t, 12.34);
        table_add_json(t, NULL);
        ASSERT_EQ(table_print(t), 0);
        ASSERT_TRUE(table_add_string(t, "one row only") < 0);
        table_free(t);
}

TEST(text_as_printf) {
        ASSERT_STREQ(capture(list, false),
                     "     PID  COMM             LATNICE  RULE\n"
                     "      12  pipewire             -10  [Process audio] /etc/latnice.d/a.conf:3\n"
                     " 4000000  bad\xff\x01name             19  manual\n"
                     "\n2 processes.\n"
                     "latniced 1 on org.latnice1\n"
                     "     Backend: eevdf-slice\n"
                     "              the reason\n"
                     "       Rules: /etc/a.conf b\"c\n");
}

TEST(json_plain_utf8) {
        ASSERT_STREQ(capture(list, true),
                     "[{\"pid\":12,\"comm\":\"pipewire\",\"latency_nice\":-10,\"rule\":\"audio\","
                     "\"rule_ref\":\"[Process audio] /etc/latnice.d/a.conf:3\"},"
                     "{\"pid\":4000000,\"comm\":\"bad\xef\xbf\xbd\\u0001name\",\"latency_nice\":19,\"rule\":\"\","
                     "\"rule_ref\":\"manual\"}]\n"
                     "{\"backend\":\"eevdf-slice\\nthe reason\",\"rule_files\":[\"/etc/a.conf\",\"b\\\"c\"],"
                     "\"ratio\":12.3,\"stats\":null}\n");
}
