/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sched_ext, the kernel's BPF scheduler class: what its sysfs files say
 * (/sys/kernel/sched_ext/state, root/ops, switch_all) and what latniced
 * calls the backend while a BPF scheduler runs the tasks. While one is in
 * charge of every normal task, neither latency nice nor custom slices mean
 * anything: the scheduler ignores them. Pure: the caller reads the files.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef enum ScxState {
        SCX_ABSENT,     /* no /sys/kernel/sched_ext: the kernel has no sched_ext */
        SCX_DISABLED,
        SCX_ENABLING,
        SCX_ENABLED,
        SCX_DISABLING,
        SCX_UNKNOWN,    /* the state file said something else (a newer kernel?) */
        _SCX_STATE_MAX,
} ScxState;

const char *scx_state_to_string(ScxState s);

/* What the state file holds ("enabled\n"), n bytes of it; garbage is SCX_UNKNOWN. */
ScxState scx_state_parse(const char *buf, size_t n);

#define SCX_NAME_MAX 64

/*
 * The scheduler's name from root/ops (n bytes): the first line, without a
 * version suffix ("lavd_1.0.5_gabc123_x86_64" -> "lavd", "simple" ->
 * "simple"), only [A-Za-z0-9_.-] (a BPF program chose the rest), at most
 * SCX_NAME_MAX - 1 bytes (cut there). "" when nothing usable is there.
 */
void scx_ops_name_parse(const char *buf, size_t n, char ret[static SCX_NAME_MAX]);

typedef struct ScxStatus {
        ScxState state;
        char name[SCX_NAME_MAX]; /* "" while none is loaded or unknown */
        bool partial;            /* switch_all reads 0: only SCHED_EXT tasks are its own */
} ScxStatus;

/* A BPF scheduler runs (or is taking over, or giving back) the normal tasks: values are not honoured. */
bool scx_in_charge(const ScxStatus *s);

/* What the backend reads as, after the "sched-ext:" prefix when scx_in_charge. */
#define SCX_BACKEND_PREFIX "sched-ext"
#define SCX_NOT_HONOURED "latency nice not honoured"
/* latnice's own BPF scheduler (scheduler/scx_latnice): root/ops "latnice", and it honours the values. */
#define SCX_LATNICE_NAME "latnice"
#define SCX_LATNICE_BACKEND SCX_BACKEND_PREFIX ":" SCX_LATNICE_NAME

/*
 * The Backend property's value: base (the fair class's backend,
 * "eevdf-slice") unless a BPF scheduler is in charge, then e.g.
 * "sched-ext:lavd (latency nice not honoured)"; ("enabling; ...",
 * "disabling; ..." while it changes). scx_latnice, once enabled, is
 * "sched-ext:latnice": it reads the values latniced sets. Returns
 * snprintf()'s count.
 */
int scx_backend_string(const ScxStatus *s, const char *base, char *buf, size_t size);

/*
 * The one sentence every output prints next to such a backend (latniced's
 * log, latnicectl status, explain, stats) into buf; false (buf "") if the
 * backend string is not a sched_ext one.
 */
bool sched_ext_note(const char *backend, char *buf, size_t size);
