/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The niri event-stream parser (session/focus-niri.c) and the line framing under it
 * (session/focus-lines.c), on a stored event stream and on hostile lines. The stream,
 * tests/unit/data/niri-25.11.jsonl, is written after niri-ipc 25.11's types (serde's JSON of
 * its Event enum), not captured from a running niri: niri is not packaged for Debian 12. Its
 * .expected file lists the focus changes it must give, one pid a line (0: nobody).
 *
 * The stream is replayed in every chunk size from 1 byte up, so each line is split across
 * reads at every position; then: focus to nothing, the focused window closed, an over-long
 * line, broken JSON, NUL and non-UTF-8 bytes, two values on a line, deep nesting, a windows
 * list beyond NIRI_WINDOWS_MAX, unknown events, niri refusing the request.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "focus-source.h"
#include "tests.h"
#include "util.h"


/* What the source does with a line: the focus changes it gives, repeated values collapsed as
 * focus_set() collapses them. */
typedef struct Replay {
        NiriState state;
        pid_t got[64];
        size_t n_got;
        pid_t last;
        int errors;
} Replay;

static int replay_on_line(const char *line, size_t len, void *userdata) {
        Replay *rp = userdata;
        pid_t pid;
        int r = niri_state_line(&rp->state, line, len, &pid);

        if (r < 0)
                rp->errors++;
        if (r == 1 && pid != rp->last && rp->n_got < 64)
                rp->got[rp->n_got++] = rp->last = pid;
        return 0;
}

static void replay_stream(const char *stream, size_t len, const pid_t *want, size_t n_want) {
        size_t chunks[] = { 1, 2, 3, 5, 7, 13, 64, 1000, len };
        int all_ok = 1;

        for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
                Replay rp = { .last = -1 };
                LineBuffer lb;
                int ok;

                line_buffer_init(&lb, 4 * 1024 * 1024);
                for (size_t off = 0; off < len; off += chunks[c])
                        (void) line_buffer_feed(&lb, stream + off, len - off < chunks[c] ? len - off : chunks[c],
                                                replay_on_line, &rp);
                ok = rp.errors == 0 && lb.len == 0 && rp.n_got == n_want &&
                     memcmp(rp.got, want, n_want * sizeof(pid_t)) == 0;
                if (!ok) {
                        printf("# chunk %zu: %d errors, %zu changes:", chunks[c], rp.errors, rp.n_got);
                        for (size_t i = 0; i < rp.n_got; i++)
                                printf(" %d", (int) rp.got[i]);
                        printf("\n");
                }
                all_ok &= ok;
                line_buffer_done(&lb);
                niri_state_done(&rp.state);
        }
        test_check("the stored stream gives its focus changes, read in chunks of every size from 1 byte", all_ok);
}

static int line(NiriState *st, const char *l, pid_t *ret_pid) {
        return niri_state_line(st, l, strlen(l), ret_pid);
}

/* Lines fed one after the other to the state: each must give its r, and for r == 1 the pid (value). */
static void steps(NiriState *st, const TestLineCase *c, size_t n) {
        for (size_t i = 0; i < n; i++) {
                pid_t pid = -7;
                int r = niri_state_line(st, c[i].line, test_line_len(&c[i]), &pid);

                test_check(c[i].what, r == c[i].r && (r != 1 || (unsigned long long) pid == c[i].value));
        }
}

static int count_on_line(const char *l, size_t len, void *userdata) {
        (void) l, (void) len;
        (*(int *) userdata)++;
        return 0;
}

int main(void) {
        NiriState st = {};
        LineBuffer lb;
        pid_t want[64], pid = -7;
        size_t len, n_want = 0;
        char *stream, *expected, *p, *big;
        int r, lines = 0;

        stream = test_read_source("tests/unit/data/niri-25.11.jsonl", &len);
        expected = test_read_source("tests/unit/data/niri-25.11.expected", &(size_t) { 0 });
        for (p = strtok(expected, "\n"); p && n_want < 64; p = strtok(NULL, "\n"))
                want[n_want++] = (pid_t) atoi(p);
        replay_stream(stream, len, want, n_want);
        free(stream);
        free(expected);

        /* One at a time, against the state. */
        static const TestLineCase focus_steps[] = {
                { "{\"WindowsChanged\":{\"windows\":[{\"id\":7,\"pid\":70,\"is_focused\":false},"
                  "{\"id\":8,\"pid\":80,\"is_focused\":true}]}}", 0, 1, 80, "WindowsChanged names its focused window" },
                { "{\"WindowFocusChanged\":{\"id\":null}}", 0, 1, 0, "focus to nothing names nobody" },
                { "{\"WindowFocusChanged\":{\"id\":7}}", 0, 1, 70, "focus by id names the window's pid" },
                { "{\"WindowClosed\":{\"id\":8}}", 0, 0, 0, "closing a window without the focus changes nothing" },
                { "{\"WindowClosed\":{\"id\":7}}", 0, 1, 0, "closing the focused window: nobody has it" },
                { "{\"WindowFocusChanged\":{\"id\":7}}", 0, 1, 0, "a closed window's id names nobody" },
                { "{\"WindowFocusChanged\":{\"id\":99}}", 0, 1, 0, "an unknown id names nobody" },
                { "{\"WindowOpenedOrChanged\":{\"window\":{\"id\":9,\"pid\":null,\"is_focused\":true}}}", 0, 1, 0,
                  "a window without a pid (a portal's) names nobody" },
                { "{\"WindowOpenedOrChanged\":{\"window\":{\"id\":9,\"pid\":90,\"is_focused\":true}}}", 0, 1, 90,
                  "a window's pid learnt later is taken" },
                { "{\"WindowOpenedOrChanged\":{\"window\":{\"id\":9,\"pid\":90,\"is_focused\":false}}}", 0, 1, 0,
                  "the focused window saying it lost the focus: nobody has it" },
                { "{\"WindowOpenedOrChanged\":{\"window\":{\"id\":10,\"pid\":4294967297,\"is_focused\":true}}}",
                  0, 1, 0, "a pid above INT32_MAX names nobody" },
                { "{\"WindowOpenedOrChanged\":{\"window\":{\"id\":11,\"pid\":\"1234\",\"is_focused\":true}}}", 0, 1, 0,
                  "a pid as text is not taken" },
                { "{\"WindowFocusChanged\":{\"id\":9}}", 0, 1, 90, "back to a known window" },
        };
        /* Hostile lines: refused, and the focus stays what it was. */
        static const TestLineCase hostile_steps[] = {
                { "{\"WindowFocusChanged\":{\"id\":8", 0, -EINVAL, 0, "broken JSON is refused" },
                { "{\"WindowFocusChanged\":{\"id\":7}}{\"WindowFocusChanged\":{\"id\":8}}", 0, -EINVAL, 0,
                  "two values on one line are refused" },
                { "{\"WindowFocusChanged\":{\"id\":7}}\0x", 33, -EINVAL, 0, "a NUL byte in a line is refused" },
                { "{\"WindowFocusChanged\":{\"id\":-1}}", 0, -EINVAL, 0, "a negative id is refused" },
                { "{\"WindowFocusChanged\":{\"id\":7},\"WindowClosed\":{\"id\":9}}", 0, -EINVAL, 0,
                  "an event with two names is refused" },
                { "[\"WindowFocusChanged\",7]", 0, -EINVAL, 0, "not an object" },
                { "{\"WindowsChanged\":{\"windows\":{\"id\":1}}}", 0, -EINVAL, 0,
                  "windows that are not a list are refused" },
                { "{\"WindowOpenedOrChanged\":{\"window\":{\"id\":12,\"title\":\"\xff\xfe\x80\",\"pid\":120,"
                  "\"is_focused\":true}}}", 0, 1, 120, "non-UTF-8 in a title is tolerated" },
                { "{\"WindowFocusChanged\":{\"id\":9}}", 0, 1, 90, "the hostile lines left the windows as they were" },
        };
        /* What is no focus change, and niri's refusal. */
        static const TestLineCase other_steps[] = {
                { "{\"SomeLaterEvent\":{\"id\":9}}", 0, 0, 0, "an unknown event is ignored" },
                { "{\"Ok\":\"Handled\"}", 0, 0, 0, "the reply to EventStream is no focus change" },
                { "{\"Err\":\"unknown request\"}", 0, -EPROTO, 0, "niri refusing the request is said" },
        };

        steps(&st, focus_steps, ELEMENTSOF(focus_steps));
        steps(&st, hostile_steps, ELEMENTSOF(hostile_steps));
        {
                char *deep = test_nested_brackets(100000);

                r = line(&st, deep, &pid);
                test_check("nesting deeper than the bound is refused", r == -EINVAL);
                free(deep);
        }
        steps(&st, other_steps, ELEMENTSOF(other_steps));
        niri_state_done(&st);

        /* More windows than kept: the focused one is still named; ids past the cap name nobody. */
        {
                size_t n = NIRI_WINDOWS_MAX + 1000, off = 0, cap = n * 64 + 64;
                char *l = malloc(cap);

                if (!l)
                        return 1;
                off += (size_t) snprintf(l + off, cap - off, "{\"WindowsChanged\":{\"windows\":[");
                for (size_t i = 0; i < n; i++)
                        off += (size_t) snprintf(l + off, cap - off, "%s{\"id\":%zu,\"pid\":%zu,\"is_focused\":%s}",
                                                 i ? "," : "", i + 1, 10000 + i, i == n - 10 ? "true" : "false");
                off += (size_t) snprintf(l + off, cap - off, "]}}");
                r = niri_state_line(&st, l, off, &pid);
                test_check("a windows list beyond the cap: the focused window past the cap is named",
                      r == 1 && pid == (pid_t) (10000 + n - 10));
                test_check("a windows list beyond the cap: NIRI_WINDOWS_MAX kept, the rest counted",
                      st.n_windows == NIRI_WINDOWS_MAX && st.over_cap == 1000);
                r = line(&st, "{\"WindowFocusChanged\":{\"id\":5}}", &pid);
                test_check("a window within the cap is named", r == 1 && pid == 10004);
                snprintf(l, cap, "{\"WindowFocusChanged\":{\"id\":%zu}}", n - 5);
                r = line(&st, l, &pid);
                test_check("a window past the cap names nobody", r == 1 && pid == 0);
                snprintf(l, cap, "{\"WindowOpenedOrChanged\":{\"window\":{\"id\":%zu,\"pid\":5,\"is_focused\":true}}}",
                         n + 1);
                r = line(&st, l, &pid);
                test_check("a window opened with the map full is still focused, not kept",
                      r == 1 && pid == 5 && st.n_windows == NIRI_WINDOWS_MAX);
                free(l);
                niri_state_done(&st);
        }

        /* The framing: an over-long line is dropped whole, the next one is read. */
        line_buffer_init(&lb, 1024);
        big = malloc(5000);
        if (!big)
                return 1;
        memset(big, 'x', 5000);
        (void) line_buffer_feed(&lb, "first\n", 6, count_on_line, &lines);
        for (int i = 0; i < 5; i++)
                (void) line_buffer_feed(&lb, big, 1000, count_on_line, &lines);
        (void) line_buffer_feed(&lb, "\nsecond\n", 8, count_on_line, &lines);
        (void) line_buffer_feed(&lb, big, 5000, count_on_line, &lines);
        (void) line_buffer_feed(&lb, "\nthird", 6, count_on_line, &lines);
        (void) line_buffer_feed(&lb, "\n", 1, count_on_line, &lines);
        test_check("over-long lines are dropped whole and the stream goes on", lines == 3 && lb.dropped == 2);
        test_check("the buffer never grew above its bound", lb.cap <= 1024);
        line_buffer_done(&lb);
        free(big);
        {
                /* A line above NIRI_LINE_MAX is refused by the parser too, should one get there. */
                size_t n = 4 * 1024 * 1024 + 1;
                char *l = calloc(1, n + 1);

                if (!l)
                        return 1;
                memset(l, ' ', n);
                r = niri_state_line(&st, l, n, &pid);
                test_check("a line above the size bound is refused", r == -E2BIG);
                free(l);
        }
        return test_failed;
}
