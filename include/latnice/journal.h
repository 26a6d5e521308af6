/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The MESSAGE_ID= of latniced's decisions in the journal, for log tools:
 * journalctl MESSAGE_ID=... (see latniced(8), JOURNAL). Each such message
 * also carries TARGET_PID= (the process), LATENCY_NICE= (the value set or
 * restored) and, where a rule decided, RULE= (its name).
 */
#pragma once

/* A rule (process, thread or unit rule applied per task) set a value. */
#define LATNICE_MESSAGE_APPLIED "337aa52686a5460aa16cc8cf56a0b1ce"
/* SetLatencyNice set a value. */
#define LATNICE_MESSAGE_MANUAL "2ea94ce3e2ad42a2b1f1ce75a0d6e54b"
/* latniced gave a process back the value it had before (the rule no longer matches, a reload, exit). */
#define LATNICE_MESSAGE_RESTORED "e2136232e4dc48f58bf696929dbc4981"
