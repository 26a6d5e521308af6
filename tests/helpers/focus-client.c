/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A minimal X client for the focus tests: maps one window named argv[1]
 * with _NET_WM_PID set to its own pid (or to argv[2], to stand in for a
 * client that lies), prints the window id, then waits for the X server
 * or a signal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xcb/xcb.h>

static xcb_atom_t atom(xcb_connection_t *c, const char *name) {
        xcb_intern_atom_reply_t *r = xcb_intern_atom_reply(c, xcb_intern_atom(c, 0, (uint16_t) strlen(name), name), NULL);
        xcb_atom_t a = r ? r->atom : XCB_ATOM_NONE;
        free(r);
        return a;
}

int main(int argc, char *argv[]) {
        xcb_connection_t *c;
        xcb_screen_t *s;
        xcb_window_t w;
        xcb_generic_event_t *ev;
        uint32_t pid = (uint32_t) getpid();
        const char *name = argc > 1 ? argv[1] : "focus-client";

        if (argc > 2)
                pid = (uint32_t) strtoul(argv[2], NULL, 10);
        c = xcb_connect(NULL, NULL);
        if (xcb_connection_has_error(c)) {
                fprintf(stderr, "no X server\n");
                return 1;
        }
        s = xcb_setup_roots_iterator(xcb_get_setup(c)).data;
        w = xcb_generate_id(c);
        /* A background: the server paints the window on map, and Xwayland commits a buffer only for a
         * window that has content (an empty one is never mapped on the Wayland side). */
        xcb_create_window(c, XCB_COPY_FROM_PARENT, w, s->root, 0, 0, 100, 100, 0, XCB_WINDOW_CLASS_INPUT_OUTPUT,
                          s->root_visual, XCB_CW_BACK_PIXEL, &s->white_pixel);
        xcb_change_property(c, XCB_PROP_MODE_REPLACE, w, XCB_ATOM_WM_NAME, XCB_ATOM_STRING, 8,
                            (uint32_t) strlen(name), name);
        xcb_change_property(c, XCB_PROP_MODE_REPLACE, w, atom(c, "_NET_WM_PID"), XCB_ATOM_CARDINAL, 32, 1, &pid);
        xcb_map_window(c, w);
        xcb_flush(c);
        printf("%u\n", w);
        fflush(stdout);
        while ((ev = xcb_wait_for_event(c)))
                free(ev);
        xcb_disconnect(c);
        return 0;
}
