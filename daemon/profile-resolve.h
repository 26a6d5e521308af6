/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which profile applies: --profile, else Profile= of latniced.conf below the
 * root, else the default; and the file it names. latniced and latnicectl's
 * offline verbs both go through it, so that both load the same rules. Reads
 * files, never logs.
 */
#pragma once

#include <stdbool.h>

/*
 * 0 with *ret_name and *ret_path (both NULL with no_profile). A profile no
 * directory has gets the path where it would be shipped: rule_set_load()
 * reports it missing, as a rule error. *ret_warning (free it): what was
 * wrong in latniced.conf, which is then ignored; NULL if nothing.
 */
int profile_resolve(const char *root, const char *profile_dir, const char *profile, bool no_profile,
                    char **ret_name, char **ret_path, char **ret_warning);
