/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * latnicectl's output: JSON for programs (--json) and text that is safe on a
 * terminal. Process names are any bytes, so both sides clean what they print.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A JSON string; bytes that are not UTF-8 become U+FFFD. */
void json_str(const char *s);
/* "key": preceded by a comma unless first. */
void json_key(const char *k, bool first);
void json_kv_str(const char *k, const char *v, bool first);
void json_kv_int(const char *k, long long v, bool first);
void json_kv_bool(const char *k, bool v, bool first);
void json_kv_strv(const char *k, char **l, bool first);
/* The comma between array elements: none before element 0. */
void json_sep(size_t i);

/* "1.500 ms". */
void format_ms(uint64_t ns, char *buf, size_t size);
/* For a terminal: controls and what is not UTF-8 become '?', as ps(1) does. */
void comm_printable(char *s);
