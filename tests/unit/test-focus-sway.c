/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Sway IPC parsers (session/focus-sway.c) on recorded messages of the documented format and on
 * hostile ones: no focus change, no pid, a pid out of range, broken or deeply nested JSON, bytes
 * that are not UTF-8, a message above the size bound.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "focus-source.h"
#include "tests.h"


static int failed;

static void check_event(const char *what, const char *json, int want_r, pid_t want_pid) {
        pid_t pid = -7;
        int r = sway_event_focus_pid(json, strlen(json), &pid);

        if (r != want_r || (r == 0 && pid != want_pid)) {
                printf("not ok - %s: r=%d pid=%d, want r=%d pid=%d\n", what, r, (int) pid, want_r, (int) want_pid);
                failed = 1;
        } else
                printf("ok - %s\n", what);
}

int main(void) {
        pid_t pid = -7;
        char *big, *deep;
        size_t n;
        int r;

        check_event("focus change names container.pid",
                    "{\"change\":\"focus\","
                    "\"container\":{\"id\":4,\"type\":\"con\",\"pid\":1234,\"app_id\":\"foot\"}}",
                    0, 1234);
        check_event("a title change is no focus change", "{\"change\":\"title\",\"container\":{\"pid\":1234}}",
                    -EINVAL, 0);
        check_event("focus without pid names nobody", "{\"change\":\"focus\",\"container\":{\"id\":4}}", 0, 0);
        check_event("a pid as text is not taken", "{\"change\":\"focus\",\"container\":{\"pid\":\"1234\"}}", 0, 0);
        check_event("a negative pid names nobody", "{\"change\":\"focus\",\"container\":{\"pid\":-1}}", 0, 0);
        check_event("a pid above INT32_MAX names nobody",
                    "{\"change\":\"focus\",\"container\":{\"pid\":4294967297}}", 0, 0);
        check_event("broken JSON", "{\"change\":\"focus\",\"container\":{\"pid\":12", -EINVAL, 0);
        check_event("not an object", "[1,2,3]", -EINVAL, 0);
        check_event("non-UTF-8 in a title is tolerated",
                    "{\"change\":\"focus\",\"container\":{\"name\":\"\xff\xfe\x80\",\"pid\":99}}", 0, 99);

        deep = test_nested_brackets(100000);
        check_event("nesting deeper than the bound is refused", deep, -EINVAL, 0);
        free(deep);

        n = 2 * 1024 * 1024;
        big = calloc(1, n + 1);
        if (!big)
                return 1;
        memset(big, ' ', n);
        r = sway_event_focus_pid(big, n, &pid);
        printf("%s - a message above the size bound is refused (r=%d)\n", r == -E2BIG ? "ok" : "not ok", r);
        failed |= r != -E2BIG;
        free(big);

        r = sway_tree_focus_pid("{\"nodes\":[{\"nodes\":[{\"focused\":false,\"pid\":5},"
                                "{\"floating_nodes\":[{\"focused\":true,\"pid\":77}]}]}]}", 96, &pid);
        printf("%s - the tree's focused node is found (r=%d pid=%d)\n", r == 0 && pid == 77 ? "ok" : "not ok", r,
               (int) pid);
        failed |= !(r == 0 && pid == 77);
        return failed;
}
