/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Profiles are named rule files: /etc/latnice/profiles/NAME.conf (the
 * administrator's) before LATNICE_PROFILE_DIR/NAME.conf (shipped). An extra
 * directory (from --profile-dir) is searched first. A -util module: it
 * looks at files, never logs.
 */
#pragma once

/* Validates a profile name: [A-Za-z0-9_.-], not starting with '.', at most 64 chars. */
int profile_name_valid(const char *name);

/* Finds NAME.conf; returns -ENOENT if no directory has it. */
int profile_find(const char *root, const char *extra_dir, const char *name, char **ret_path);

/* Sorted, unique names of all profiles found. */
int profile_list(const char *root, const char *extra_dir, char ***ret);
