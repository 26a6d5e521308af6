/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * An enum's names as a table indexed by its values, and the two lookups such
 * a table wants, as systemd's string-table.h: a value outside the table has
 * no name (NULL), a name that is not in it, or NULL, has no value (-EINVAL,
 * which every enum here uses as its _INVALID). The table is name##_table.
 */
#pragma once

#include <errno.h>
#include <string.h>
#include <sys/types.h>

#include "util.h"

static inline const char *string_table_lookup_to_string(const char * const *table, size_t len, ssize_t i) {
        if (i < 0 || (size_t) i >= len)
                return NULL;
        return table[i];
}

static inline ssize_t string_table_lookup_from_string(const char * const *table, size_t len, const char *s) {
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < len; i++)
                if (table[i] && strcmp(table[i], s) == 0)
                        return (ssize_t) i;
        return -EINVAL;
}

#define DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type)                                        \
        const char *name##_to_string(type i) {                                                  \
                return string_table_lookup_to_string(name##_table, ELEMENTSOF(name##_table), i); \
        }

#define DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type)                                               \
        type name##_from_string(const char *s) {                                                         \
                return (type) string_table_lookup_from_string(name##_table, ELEMENTSOF(name##_table), s); \
        }
