/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What scx_latnice's BPF side and its loader share: the record of why the
 * kernel disabled the scheduler (a copy of its scx_exit_info). The kernel
 * types come from vmlinux.h in BPF and from <linux/types.h> in user space.
 */
#pragma once

#define LATNICE_EXIT_REASON_LEN 128
#define LATNICE_EXIT_MSG_LEN 1024

struct latnice_exit_info {
        __s32 kind; /* enum scx_exit_kind; 0 while attached; written last */
        __s64 exit_code;
        char reason[LATNICE_EXIT_REASON_LEN];
        char msg[LATNICE_EXIT_MSG_LEN];
};
