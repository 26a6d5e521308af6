/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a hand-built Manager in a unit test does not have: the reload, the profile switch, the
 * foreground boost and the scheduler statistics (manager-stubs.c). Each has its own test with the
 * real daemon (tests/integration): here the boost is off and the statistics cannot attach.
 */
#pragma once

extern int stub_reload_result;     /* what manager_reload() returns */
extern char stub_profile[64];      /* the profile manager_set_profile() was given ("broken" fails) */
extern unsigned stub_stats_starts; /* how often a collection was asked for */
