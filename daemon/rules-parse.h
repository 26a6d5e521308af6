/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What rules-load.c needs of the parser (rules.c) to fill a RuleSet from the
 * files it reads. Pure: buffers in, rules and errors out.
 */
#pragma once

#include "rules.h"
#include "util.h"

RuleSet *rule_set_new(void);
/* Adds a file entry (path as read, shown as reported); *ret stays valid until the next add. */
int rule_set_add_file(RuleSet *s, const char *path, const char *shown, ConfFile **ret);
_printf_(4, 5) int rule_set_add_error(RuleSet *s, const char *file, unsigned line, const char *fmt, ...);
/* Parses the contents of file f into s; binary data is an error of the file, not of the call. */
int rule_set_parse_contents(RuleSet *s, ConfFile *f, const char *buf, size_t size);
/* Gives back the slack of the rule array once loading is done. */
void rule_set_shrink(RuleSet *s);
/* latniced.conf's contents; errors go to config->error (path names the file in them). */
int daemon_config_parse(const char *path, const char *buf, size_t size, DaemonConfig *config);
