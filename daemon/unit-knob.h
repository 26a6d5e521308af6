/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The cgroup knob of a [Unit] rule: writing a unit cgroup's latency nice and
 * putting back what it held. A -util module: cgroup file I/O through the
 * mounts handed in, no logging, no globals, so it is tested on a fake tree
 * (tests/unit/test-unit-knob.c).
 */
#pragma once

#include "cgroup.h"
#include "state.h"

/* One cgroup whose knob we wrote and what it held before (state.h: remembered across restarts). */
typedef StateKnob UnitKnob;

/*
 * Writes value to the cgroup's knob. The first write records the previous
 * value. Errors as cgroup_latency_nice_set(): -ENOENT when the cgroup has no
 * directory in the cpu hierarchy (v1) or no cpu controller (v2) (ask systemd:
 * systemd_watch_set_cpu_accounting()), -EOPNOTSUPP when the kernel has no
 * knob (per-task fallback).
 */
int unit_knob_set(const CGroupMounts *mounts, UnitKnob *k, const char *cgroup, int value);

/* Puts the previous value back if the knob still holds ours: 1 restored, 0 changed by somebody else. */
int unit_knob_restore(const CGroupMounts *mounts, const UnitKnob *k);
