/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Why a BPF object that tries tp_btf first and the plain tracepoint second did not load, in the
 * words both of latniced's objects (exec-bpf.c, stats-bpf.c) report it with.
 */
#pragma once

/*
 * "WHAT (tp_btf: ...; tracepoint: ...)" into *ret (NULL without memory), adding that tracefs is
 * not mounted where that is why the tracepoint was not found. r_btf: the tp_btf attempt's error,
 * 0 where it was not tried; r_tp: the tracepoint's.
 */
void bpf_load_reason(const char *what, int r_btf, int r_tp, char **ret);
