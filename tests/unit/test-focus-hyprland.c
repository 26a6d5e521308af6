/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Hyprland parsers (session/focus-hyprland.c) and the line framing under them
 * (session/focus-lines.c), on a stored event stream and on hostile input. The stream,
 * tests/unit/data/hyprland.events, is written after Hyprland's wiki (IPC page) and the
 * events its source posts, not captured from a running Hyprland: Hyprland is not packaged for
 * Debian 12. Its .expected file lists the window events it must give (focus, open, close and
 * the address, 0 for nothing focused).
 *
 * The stream is replayed in every chunk size from 1 byte up, so each line is split across
 * reads at every position; then hostile event lines (no separator, bad addresses, NUL bytes, a
 * line above the bound) and j/activewindow replies as hyprctl writes them and as they must
 * not be taken (broken JSON, a bad address, pids out of range, a reply above the bound).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "focus-source.h"
#include "tests.h"
#include "util.h"


/* The window events of a stream, as the .expected file writes them. */
typedef struct Replay {
        char out[4096];
        size_t len;
        int errors;
} Replay;

static int replay_on_line(const char *line, size_t len, void *userdata) {
        static const char *const kinds[] = { [HYPR_EVENT_FOCUS] = "focus", [HYPR_EVENT_OPEN] = "open",
                                             [HYPR_EVENT_CLOSE] = "close" };
        Replay *rp = userdata;
        uint64_t address = 7;
        int r = hypr_event_parse(line, len, &address);

        if (r < 0)
                rp->errors++;
        else if (r != HYPR_EVENT_OTHER && rp->len < sizeof(rp->out))
                rp->len += (size_t) snprintf(rp->out + rp->len, sizeof(rp->out) - rp->len, "%s %" PRIx64 "\n",
                                             kinds[r], address);
        return 0;
}

static void replay_stream(const char *stream, size_t len, const char *want) {
        size_t chunks[] = { 1, 2, 3, 5, 7, 13, 64, 1000, len };
        int all_ok = 1;

        for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
                Replay rp = {};
                LineBuffer lb;
                int ok;

                line_buffer_init(&lb, 64 * 1024);
                for (size_t off = 0; off < len; off += chunks[c])
                        (void) line_buffer_feed(&lb, stream + off, len - off < chunks[c] ? len - off : chunks[c],
                                                replay_on_line, &rp);
                ok = rp.errors == 0 && lb.len == 0 && strcmp(rp.out, want) == 0;
                if (!ok)
                        printf("# chunk %zu: %d errors, got:\n%s", chunks[c], rp.errors, rp.out);
                all_ok &= ok;
                line_buffer_done(&lb);
        }
        test_check("the stored stream gives its window events, read in chunks of every size from 1 byte", all_ok);
}

static int reply(const char *json, uint64_t *ret_address, pid_t *ret_pid) {
        return hypr_reply_parse(json, strlen(json), ret_address, ret_pid);
}

/* j/activewindow as hyprctl writes it (the fields of its window JSON, abridged). */
#define WINDOW_JSON(address, pid, title)                                                              \
        "{\n    \"address\": \"" address "\",\n    \"mapped\": true,\n    \"hidden\": false,\n"         \
        "    \"at\": [10, 40],\n    \"size\": [1900, 1030],\n"                                          \
        "    \"workspace\": {\n        \"id\": 1,\n        \"name\": \"1\"\n    },\n"                   \
        "    \"floating\": false,\n    \"monitor\": 0,\n    \"class\": \"foot\",\n"                     \
        "    \"title\": \"" title "\",\n    \"initialClass\": \"foot\",\n    \"initialTitle\": \"foot\",\n" \
        "    \"pid\": " pid ",\n    \"xwayland\": false,\n    \"pinned\": false,\n"                     \
        "    \"fullscreen\": 0,\n    \"grouped\": [],\n    \"tags\": [],\n"                             \
        "    \"swallowing\": \"0x0\",\n    \"focusHistoryID\": 0\n}"

/* A j/activewindow reply and what it must give: r, and for r == 0 the address and the pid. */
typedef struct HyprReplyCase {
        const char *json;
        int r;
        uint64_t address;
        pid_t pid;
        const char *what;
} HyprReplyCase;

int main(void) {
        uint64_t address = 7;
        pid_t pid = -7;
        size_t len;
        char *stream, *expected, *big;
        int r;

        stream = test_read_source("tests/unit/data/hyprland.events", &len);
        expected = test_read_source("tests/unit/data/hyprland.expected", &(size_t) { 0 });
        replay_stream(stream, len, expected);
        free(stream);
        free(expected);

        /* Event lines: the kind, and for a focus, open or close the address. */
        static const TestLineCase events[] = {
                { "activewindowv2>>55a7c3b1e2f0", 0, HYPR_EVENT_FOCUS, 0x55a7c3b1e2f0,
                  "activewindowv2 names an address" },
                { "activewindowv2>>", 0, HYPR_EVENT_FOCUS, 0, "activewindowv2 without an address: nothing focused" },
                { "activewindowv2>>,", 0, HYPR_EVENT_FOCUS, 0, "activewindowv2>>, (older Hyprland): nothing focused" },
                { "activewindow>>foot,activewindowv2>>1234", 0, HYPR_EVENT_OTHER, 0,
                  "an event name inside another event's data is not an event" },
                { "closewindow>>ABCDEF12", 0, HYPR_EVENT_CLOSE, 0xabcdef12,
                  "closewindow names its address (upper-case hex too)" },
                { "openwindow>>ff01,3,mpv,a, title, with, commas", 0, HYPR_EVENT_OPEN, 0xff01,
                  "openwindow names the address before its first comma" },
                { "somefutureevent>>55a7c3b1e2f0", 0, HYPR_EVENT_OTHER, 0, "an unknown event is ignored" },
                /* Hostile event lines. */
                { "activewindowv2 55a7c3b1e2f0", 0, -EINVAL, 0, "a line without >> is refused" },
                { "activewindowv2>>0x55a7c3b1e2f0", 0, -EINVAL, 0, "an event address with 0x is refused" },
                { "activewindowv2>>55a7c3b1e2f0 ", 0, -EINVAL, 0, "an address with trailing bytes is refused" },
                { "activewindowv2>>-1", 0, -EINVAL, 0, "a negative address is refused" },
                { "activewindowv2>>11223344556677889", 0, -EINVAL, 0, "an address of more than 64 bits is refused" },
                { "activewindowv2>>\xff\xfe", 0, -EINVAL, 0, "non-UTF-8 bytes as an address are refused" },
                { "activewindowv2>>12\0" "34", 21, -EINVAL, 0, "a NUL byte in a line is refused" },
                { "activewindow>>foot,\xff\xfe\x80 title", 0, HYPR_EVENT_OTHER, 0,
                  "non-UTF-8 in another event's title is ignored" },
        };
        /* Replies. */
        static const HyprReplyCase replies[] = {
                { WINDOW_JSON("0x55a7c3b1e2f0", "4242", "~ vim"), 0, 0x55a7c3b1e2f0, 4242,
                  "a j/activewindow reply names its address and pid" },
                { "{}", 0, 0, 0, "{}: nothing focused" },
                { WINDOW_JSON("0x55a7c3b1e2f0", "-1", "x"), 0, 0x55a7c3b1e2f0, 0, "pid -1 (not known) names nobody" },
                { WINDOW_JSON("0x55a7c3b1e2f0", "4294967297", "x"), 0, 0x55a7c3b1e2f0, 0,
                  "a pid above INT32_MAX names nobody" },
                { WINDOW_JSON("0x55a7c3b1e2f0", "\"4242\"", "x"), 0, 0x55a7c3b1e2f0, 0, "a pid as text is not taken" },
                { WINDOW_JSON("0x55a7c3b1e2f0", "4242", "\xff\xfe\x80"), 0, 0x55a7c3b1e2f0, 4242,
                  "non-UTF-8 in a title is tolerated" },
                { WINDOW_JSON("55a7c3b1e2f0", "4242", "x"), -EINVAL, 0, 0, "a reply address without 0x is refused" },
                { WINDOW_JSON("0xzz", "4242", "x"), -EINVAL, 0, 0, "a reply address that is not hex is refused" },
                { "{\"address\": 12345, \"pid\": 4242}", -EINVAL, 0, 0,
                  "a reply address that is not a string is refused" },
                { "{\"address\": \"0x55a7c3b1e2f0\", \"pid\": 42", -EINVAL, 0, 0, "a reply cut short is refused" },
                { "{\"address\": \"0x1\", \"pid\": 1},", -EINVAL, 0, 0, "a reply with a trailing comma is refused" },
                { "[{\"address\": \"0x1\", \"pid\": 1}]", -EINVAL, 0, 0, "a reply that is not an object is refused" },
                { "ok", -EINVAL, 0, 0, "a reply that is not JSON is refused" },
                /* An Xwayland window: Hyprland's pid for it may be its _NET_WM_PID, the client's own word,
                 * and the reply names no X window to ask the X server about. */
                { "{\"address\": \"0x55a7c3b1e2f0\", \"pid\": 4242, \"xwayland\": true}", 0, 0x55a7c3b1e2f0, 0,
                  "an Xwayland window names nobody (its pid may be the client's word)" },
                { "{\"address\": \"0x55a7c3b1e2f0\", \"pid\": 4242, \"xwayland\": 1}", 0, 0x55a7c3b1e2f0, 0,
                  "xwayland not a boolean: names nobody either" },
        };

        for (size_t i = 0; i < ELEMENTSOF(events); i++) {
                const TestLineCase *c = &events[i];

                address = 7;
                r = hypr_event_parse(c->line, test_line_len(c), &address);
                test_check(c->what, r == c->r && (r <= HYPR_EVENT_OTHER || address == c->value));
        }
        for (size_t i = 0; i < ELEMENTSOF(replies); i++) {
                const HyprReplyCase *c = &replies[i];

                address = 7, pid = -7;
                r = reply(c->json, &address, &pid);
                test_check(c->what, r == c->r && (r < 0 || (address == c->address && pid == c->pid)));
        }
        {
                char *deep = test_nested_brackets(100000);

                r = reply(deep, &address, &pid);
                test_check("nesting deeper than the bound is refused", r == -EINVAL);
                free(deep);
        }
        big = calloc(1, 2 * 1024 * 1024 + 1);
        if (!big)
                return 1;
        memset(big, ' ', 2 * 1024 * 1024);
        memcpy(big, "{}", 2);
        r = reply(big, &address, &pid);
        test_check("a reply above the size bound is refused", r == -E2BIG);
        free(big);

        /* An event line above HYPR_LINE_MAX (64 KiB) is dropped; the next one is read. */
        {
                Replay rp = {};
                LineBuffer lb;
                size_t n = 100 * 1024;
                char *l = malloc(n + 64);

                if (!l)
                        return 1;
                memcpy(l, "activewindowv2>>", 16);
                memset(l + 16, 'a', n - 16);
                memcpy(l + n, "\nactivewindowv2>>beef\n", 22);
                line_buffer_init(&lb, 64 * 1024);
                (void) line_buffer_feed(&lb, l, n + 22, replay_on_line, &rp);
                test_check("an over-long event line is dropped and the next is read",
                      rp.errors == 0 && lb.dropped == 1 && strcmp(rp.out, "focus beef\n") == 0);
                line_buffer_done(&lb);
                free(l);
        }
        return test_failed;
}
