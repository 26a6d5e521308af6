/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Newline-delimited framing for the compositor sources that speak in lines (Hyprland's event
 * socket, niri's event stream). Pure: bytes in, whole lines out through a callback, no fds, no
 * logging. Every line is bounded: the buffer never grows above its stated maximum; a longer
 * line is dropped as a whole (counted in 'dropped') and the stream resynchronises at the next
 * newline, because a line's length is decided by what clients put in their titles and one long
 * title must not cost the connection. A line of JSON is parsed only if it is one whole value
 * (json-c stops at the end of the first one and would ignore what follows), bounded in size and
 * depth, and holds no NUL byte.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "focus-source.h"

#define LINE_BUFFER_KEEP 65536 /* above this, the buffer is freed once empty: one big line costs once */

void line_buffer_init(LineBuffer *lb, size_t max) {
        *lb = (LineBuffer) { .max = max };
}

void line_buffer_done(LineBuffer *lb) {
        free(lb->buf);
        *lb = (LineBuffer) { .max = lb->max };
}

/* Appends to the partial line; refuses (and starts skipping) what would exceed the bound. */
static int line_buffer_append(LineBuffer *lb, const char *data, size_t n) {
        if (n > lb->max - lb->len) {
                lb->len = 0;
                lb->skipping = true;
                lb->dropped++;
                return 0;
        }
        if (lb->len + n > lb->cap) {
                size_t cap = lb->cap ? lb->cap : 256;
                char *p;

                while (cap < lb->len + n)
                        cap = cap > lb->max / 2 ? lb->max : cap * 2;
                p = realloc(lb->buf, cap);
                if (!p)
                        return -ENOMEM;
                lb->buf = p;
                lb->cap = cap;
        }
        memcpy(lb->buf + lb->len, data, n);
        lb->len += n;
        return 0;
}

int line_buffer_feed(LineBuffer *lb, const char *data, size_t n, LineFunc func, void *userdata) {
        while (n > 0) {
                const char *nl = memchr(data, '\n', n);
                size_t chunk = nl ? (size_t) (nl - data) : n;
                int r;

                if (lb->skipping) {
                        /* The rest of a line that was too long: nothing of it is looked at. */
                        if (nl)
                                lb->skipping = false;
                } else if (!nl) {
                        r = line_buffer_append(lb, data, chunk);
                        if (r < 0)
                                return r;
                } else if (lb->len == 0) {
                        /* A whole line in this read: no copy. */
                        if (chunk <= lb->max) {
                                r = func(data, chunk, userdata);
                                if (r < 0)
                                        return r;
                        } else
                                lb->dropped++;
                } else {
                        r = line_buffer_append(lb, data, chunk);
                        if (r < 0)
                                return r;
                        if (!lb->skipping) {
                                size_t len = lb->len;

                                lb->len = 0;
                                r = func(lb->buf, len, userdata);
                                if (r < 0)
                                        return r;
                        } else
                                lb->skipping = false; /* this read held the newline that ends it */
                }
                if (!nl)
                        break;
                data = nl + 1;
                n -= chunk + 1;
        }
        if (lb->len == 0 && lb->cap > LINE_BUFFER_KEEP) {
                free(lb->buf);
                lb->buf = NULL;
                lb->cap = 0;
        }
        return 0;
}

json_object *json_line_parse(const char *line, size_t len, size_t max, int depth, int *ret_error) {
        json_tokener *tok;
        json_object *root;
        size_t end;

        *ret_error = -EINVAL;
        if (len > max) {
                *ret_error = -E2BIG;
                return NULL;
        }
        if (memchr(line, '\0', len))
                return NULL;
        tok = json_tokener_new_ex(depth);
        if (!tok) {
                *ret_error = -ENOMEM;
                return NULL;
        }
        root = json_tokener_parse_ex(tok, line, (int) len);
        end = json_tokener_get_parse_end(tok);
        if (root && json_tokener_get_error(tok) != json_tokener_success) {
                json_object_put(root);
                root = NULL;
        }
        json_tokener_free(tok);
        for (; root && end < len; end++)
                if (!strchr(" \t\r\n", line[end])) {
                        json_object_put(root);
                        root = NULL;
                }
        return root;
}
