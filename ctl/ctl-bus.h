/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* latnicectl's online verbs: latniced's org.latnice1 API through sd-bus. */
#pragma once

#include "ctl.h"

/* Need the daemon. */
int verb_status(Ctl *ctl, int argc, char **argv);
int verb_list(Ctl *ctl, int argc, char **argv);
int verb_reload(Ctl *ctl, int argc, char **argv);
int verb_profile(Ctl *ctl, int argc, char **argv);
int verb_rules(Ctl *ctl, int argc, char **argv);

/* Ask the daemon when it is on the bus, else fall back to the offline verb. */
int verb_get_online(Ctl *ctl, int argc, char **argv);
int verb_set_online(Ctl *ctl, int argc, char **argv);
int verb_explain_online(Ctl *ctl, int argc, char **argv);

/*
 * latnicectl run: sets latency nice ln on ourselves through latniced when it
 * is on the bus, so that the value counts as explicit and a rule matching the
 * command does not replace it after the exec. 1 done; 0 latniced is not
 * there; < 0 it refused or failed (*ret_why says why, free it).
 */
int ctl_run_through_daemon(int ln, char **ret_why);
