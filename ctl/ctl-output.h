/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * latnicectl's text helpers; JSON for programs (--json) is ctl-table.c's.
 * Process names are any bytes, so both sides clean what they print.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

/* "1.500 ms". */
void format_ms(uint64_t ns, char *buf, size_t size);
/* For a terminal: controls and what is not UTF-8 become '?', as ps(1) does. */
void comm_printable(char *s);
/* *s with more text after it (NULL: none yet); -ENOMEM leaves it as it was. */
int strextendf(char **s, const char *fmt, ...) _printf_(2, 3);
