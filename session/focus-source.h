/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a focus source (focus-sway.c, ...) needs of latnice-focus.c: one call per focus change
 * with the pid the compositor named (0: none, or unknown) and the source's name for --print.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

typedef struct Focus Focus;

void focus_set(Focus *f, pid_t pid, const char *source);
sd_event *focus_event(Focus *f);

/* Sway and i3-compatible IPC: subscribe ["window"], change "focus", container.pid. */
typedef struct SwayIpc SwayIpc;
int sway_ipc_new(Focus *f, const char *path, SwayIpc **ret);
SwayIpc *sway_ipc_free(SwayIpc *s);

/* Pure: the pid a Sway "window" event names, 0 if it names none, -EINVAL for anything else
 * than a focus change. Exposed for tests on recorded events. */
int sway_event_focus_pid(const char *json, size_t len, pid_t *ret_pid);
/* The same for a GET_TREE reply: the focused node's pid, 0 for none. */
int sway_tree_focus_pid(const char *json, size_t len, pid_t *ret_pid);
