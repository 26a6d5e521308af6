/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The running kernel's preemption model and HZ: what decides how long a
 * fair-class wakeup may wait behind a busy task, whatever its latency nice
 * or slice says (DESIGN.md "Kernels of 2026"). Read, in this order:
 *  1. the dynamic mode in debugfs (sched/preempt, "none voluntary (full) lazy");
 *     unreadable when debugfs is not mounted or the kernel is locked down;
 *  2. preempt= on the kernel command line, on a PREEMPT_DYNAMIC kernel (or one
 *     whose configuration is unknown): the last valid word wins, as in the kernel;
 *  3. the build's configuration (/proc/config.gz, /boot/config-RELEASE).
 * HZ only from the configuration (CLK_TCK is USER_HZ, not HZ).
 * A -util module: paths come in as parameters; it never logs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum PreemptModel {
        PREEMPT_MODEL_UNKNOWN,
        PREEMPT_MODEL_NONE,
        PREEMPT_MODEL_VOLUNTARY,
        PREEMPT_MODEL_FULL,
        PREEMPT_MODEL_LAZY,
        PREEMPT_MODEL_RT,  /* PREEMPT_RT with eager preemption; an RT kernel in lazy mode is "lazy" */
        _PREEMPT_MODEL_MAX,
} PreemptModel;

typedef enum PreemptSource {
        PREEMPT_SOURCE_UNKNOWN,
        PREEMPT_SOURCE_DEBUGFS,
        PREEMPT_SOURCE_CMDLINE,
        PREEMPT_SOURCE_CONFIG,
        _PREEMPT_SOURCE_MAX,
} PreemptSource;

/* "none", "voluntary", "full", "lazy", "rt"; "" for unknown (the D-Bus values). */
const char *preempt_model_to_string(PreemptModel m);
/* "debugfs", "cmdline", "config"; "" for unknown. */
const char *preempt_source_to_string(PreemptSource s);
/* The inverse, for a mode word as the kernel spells it ("none".."lazy", and "rt"); unknown otherwise. */
PreemptModel preempt_model_from_string(const char *s);

/* What a kernel configuration says, line by line. */
typedef struct KernelConfig {
        bool seen;            /* at least one line about preemption or HZ was read */
        PreemptModel choice;  /* the "Preemption Model" choice, NONE..LAZY (none on RT kernels before 6.13) */
        bool rt;              /* CONFIG_PREEMPT_RT=y */
        bool dynamic;         /* CONFIG_PREEMPT_DYNAMIC=y: the command line and debugfs may change the model */
        uint32_t hz;          /* CONFIG_HZ, 0 unknown */
} KernelConfig;

/* One line of a .config (n bytes, without or with its newline); others are ignored. */
void kernel_config_parse_line(KernelConfig *c, const char *line, size_t n);

/*
 * The current mode in the debugfs file's words, n bytes: exactly one known
 * word in parentheses among words separated by blanks; unknown otherwise.
 */
PreemptModel preempt_debugfs_parse(const char *buf, size_t n);

/*
 * preempt= on a kernel command line of n bytes: the last of its known values
 * (the kernel applies each valid one in turn and ignores the others), words
 * in double quotes are one word, nothing after a lone "--" (init's
 * arguments); unknown if there is none.
 */
PreemptModel preempt_cmdline_parse(const char *buf, size_t n);

typedef struct KernelPreempt {
        PreemptModel model;
        PreemptSource source;
        bool dynamic;  /* PREEMPT_DYNAMIC: the configuration says so, or debugfs has the file */
        uint32_t hz;   /* 0 unknown */
} KernelPreempt;

/* The decision from what was read (UNKNOWN, or a config with !seen, where a source said nothing). */
void kernel_preempt_decide(const KernelConfig *config, PreemptModel debugfs, PreemptModel cmdline,
                           KernelPreempt *ret);

typedef struct KernelPreemptPaths {
        const char *debugfs;   /* /sys/kernel/debug/sched/preempt */
        const char *cmdline;   /* /proc/cmdline */
        const char *config_gz; /* /proc/config.gz */
        const char *config;    /* /boot/config-$(uname -r) */
} KernelPreemptPaths;

/* Each path may be NULL (not read). Every file is bounded; a missing or unreadable one is skipped. */
void kernel_preempt_read(const KernelPreemptPaths *paths, KernelPreempt *ret);

/* The file each source was read from on this system (config from uname's release into buf). */
void kernel_preempt_default_paths(KernelPreemptPaths *ret, char *config_buf, size_t size);

/*
 * The one sentence latnicectl status prints: what the model and HZ mean for a
 * wakeup on this backend (the Backend property's value: "latency-nice",
 * "eevdf-slice", "none", "sched-ext:..."). model and hz as on D-Bus ("" and
 * 0: unknown); dynamic: preempt= on the command line can change the model.
 * Returns snprintf()'s count.
 */
int preempt_sentence(const char *model, bool dynamic, uint32_t hz, const char *backend, char *buf, size_t size);
