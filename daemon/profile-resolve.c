/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Which profile applies (see profile-resolve.h). */

#include "profile-resolve.h"
#include "profile.h"
#include "rules.h"
#include "util.h"

int profile_resolve(const char *root, const char *profile_dir, const char *profile, bool no_profile,
                    char **ret_name, char **ret_path, char **ret_warning) {
        _cleanup_(freep) char *conf = NULL, *name = NULL, *path = NULL, *warning = NULL;
        DaemonConfig dc = {};
        int r;

        *ret_name = *ret_path = *ret_warning = NULL;
        if (no_profile)
                return 0;
        if (profile)
                name = strdup(profile);
        else {
                conf = path_join(root, LATNICE_DAEMON_CONF);
                if (!conf)
                        return -ENOMEM;
                r = daemon_config_load(conf, &dc);
                if (r < 0)
                        return r;
                warning = TAKE_PTR(dc.error);
                name = strdup(dc.profile ? dc.profile : LATNICE_DEFAULT_PROFILE);
                daemon_config_done(&dc);
        }
        if (!name)
                return -ENOMEM;
        r = profile_find(root, profile_dir, name, &path);
        if (r == -ENOENT || r == -EINVAL) {
                if (asprintf(&path, "%s/%s.conf", profile_dir ?: LATNICE_PROFILE_DIR, name) < 0)
                        return -ENOMEM;
        } else if (r < 0)
                return r;
        *ret_name = TAKE_PTR(name);
        *ret_path = TAKE_PTR(path);
        *ret_warning = TAKE_PTR(warning);
        return 0;
}
