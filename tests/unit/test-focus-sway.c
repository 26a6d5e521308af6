/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Sway IPC parsers (session/focus-sway.c) on recorded messages of the documented format and on
 * hostile ones: no focus change, no pid, a pid out of range, broken or deeply nested JSON, bytes
 * that are not UTF-8, a message above the size bound.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "focus-source.h"
#include "tests.h"


static int failed;

static void check_event_x11(const char *what, const char *json, int want_r, pid_t want_pid, uint32_t want_x11) {
        pid_t pid = -7;
        uint32_t x11 = 7;
        int r = sway_event_focus_pid(json, strlen(json), &pid, &x11);

        if (r != want_r || (r == 0 && (pid != want_pid || x11 != want_x11))) {
                printf("not ok - %s: r=%d pid=%d x11=%" PRIu32 ", want r=%d pid=%d x11=%" PRIu32 "\n", what, r,
                       (int) pid, x11, want_r, (int) want_pid, want_x11);
                failed = 1;
        } else
                printf("ok - %s\n", what);
}

static void check_event(const char *what, const char *json, int want_r, pid_t want_pid) {
        check_event_x11(what, json, want_r, want_pid, 0);
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

        /* Xwayland views: Sway's pid for them may be _NET_WM_PID (the client's word, wlroots without
         * X-Resource); the X window is named instead, for the X server to say whose it is. */
        check_event_x11("an Xwayland view names its X window, not its pid",
                        "{\"change\":\"focus\",\"container\":{\"pid\":1,\"shell\":\"xwayland\",\"window\":4194304}}",
                        0, 0, 4194304);
        check_event_x11("an Xwayland view without a window names nobody",
                        "{\"change\":\"focus\",\"container\":{\"pid\":1,\"shell\":\"xwayland\"}}", 0, 0, 0);
        check_event_x11("an Xwayland view with window 0 names nobody",
                        "{\"change\":\"focus\",\"container\":{\"pid\":1,\"shell\":\"xwayland\",\"window\":0}}", 0, 0, 0);
        check_event_x11("an Xwayland view with a window above 32 bits names nobody",
                        "{\"change\":\"focus\",\"container\":{\"pid\":1,\"shell\":\"xwayland\",\"window\":4294967296}}",
                        0, 0, 0);
        check_event_x11("an Xwayland view with its window as text names nobody",
                        "{\"change\":\"focus\",\"container\":{\"pid\":1,\"shell\":\"xwayland\",\"window\":\"5\"}}",
                        0, 0, 0);
        check_event_x11("an xdg_shell view's window field is ignored",
                        "{\"change\":\"focus\",\"container\":{\"pid\":99,\"shell\":\"xdg_shell\",\"window\":5}}",
                        0, 99, 0);

        deep = test_nested_brackets(100000);
        check_event("nesting deeper than the bound is refused", deep, -EINVAL, 0);
        free(deep);

        n = 2 * 1024 * 1024;
        big = calloc(1, n + 1);
        if (!big)
                return 1;
        memset(big, ' ', n);
        r = sway_event_focus_pid(big, n, &pid, &(uint32_t) { 0 });
        printf("%s - a message above the size bound is refused (r=%d)\n", r == -E2BIG ? "ok" : "not ok", r);
        failed |= r != -E2BIG;
        free(big);

        {
                uint32_t x11 = 7;
                const char *tree = "{\"nodes\":[{\"nodes\":[{\"focused\":false,\"pid\":5},"
                                   "{\"floating_nodes\":[{\"focused\":true,\"pid\":77}]}]}]}";
                const char *xtree = "{\"nodes\":[{\"focused\":true,\"pid\":1,\"shell\":\"xwayland\",\"window\":6}]}";

                r = sway_tree_focus_pid(tree, strlen(tree), &pid, &x11);
                printf("%s - the tree's focused node is found (r=%d pid=%d)\n",
                       r == 0 && pid == 77 && x11 == 0 ? "ok" : "not ok", r, (int) pid);
                failed |= !(r == 0 && pid == 77 && x11 == 0);
                r = sway_tree_focus_pid(xtree, strlen(xtree), &pid, &x11);
                printf("%s - the tree's focused Xwayland node names its X window (r=%d pid=%d x11=%" PRIu32 ")\n",
                       r == 0 && pid == 0 && x11 == 6 ? "ok" : "not ok", r, (int) pid, x11);
                failed |= !(r == 0 && pid == 0 && x11 == 6);
        }
        return failed;
}
