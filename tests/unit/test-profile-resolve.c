/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Which profile applies, on temporary trees: the option, latniced.conf, the default, a missing one. */

#include <sys/stat.h>

#include "profile.h"
#include "tests.h"
#include "util.h"

static void resolve(const char *root, const char *dir, const char *profile, bool no_profile, int want_r,
                    const char *want_name, const char *want_path, const char *want_warning) {
        _cleanup_(freep) char *name = NULL, *path = NULL, *warning = NULL;

        const RuleTreeOptions o = { .root = root, .profile = profile, .profile_dir = dir, .no_profile = no_profile };

        ASSERT_EQ(profile_resolve(&o, &name, &path, &warning), want_r);
        if (want_name)
                ASSERT_STREQ(name, want_name);
        else
                ASSERT_TRUE(!name);
        if (want_path)
                ASSERT_STREQ(path, want_path);
        else
                ASSERT_TRUE(!path);
        if (want_warning)
                ASSERT_TRUE(warning && strstr(warning, want_warning));
        else
                ASSERT_TRUE(!warning);
}

TEST(resolve) {
        const char *t = test_tmpdir();
        char *root = test_path(t, "root"), *bad = test_path(t, "bad"), *extra = test_path(t, "extra");

        /* latniced.conf where this build reads it (--sysconfdir), below the root. */
        test_write(root, LATNICE_DAEMON_CONF + 1, "[Daemon]\nProfile=quiet\n");
        test_write(root, "etc/latnice/profiles/quiet.conf", "");
        test_write(root, "etc/latnice/profiles/loud.conf", "");
        test_write(extra, "loud.conf", "");
        test_write(bad, LATNICE_DAEMON_CONF + 1, "[Daemon]\nNoSuchKey=1\n");

        /* --no-profile wins over everything. */
        resolve(root, NULL, "loud", true, 0, NULL, NULL, NULL);
        /* latniced.conf below the root names the profile; the root's profile directory has it. */
        resolve(root, NULL, NULL, false, 0, "quiet", test_path(root, "etc/latnice/profiles/quiet.conf"), NULL);
        /* --profile over latniced.conf; --profile-dir is searched first. */
        resolve(root, NULL, "loud", false, 0, "loud", test_path(root, "etc/latnice/profiles/loud.conf"), NULL);
        resolve(root, extra, "loud", false, 0, "loud", test_path(extra, "loud.conf"), NULL);
        /* A profile nobody has: where it would be, so that loading reports it. */
        resolve(root, NULL, "gone", false, 0, "gone", LATNICE_PROFILE_DIR "/gone.conf", NULL);
        resolve(root, extra, "gone", false, 0, "gone", test_path(extra, "gone.conf"), NULL);
        /* A broken latniced.conf is ignored, with a warning that says where: the default profile. */
        resolve(bad, NULL, NULL, false, 0, LATNICE_DEFAULT_PROFILE,
                LATNICE_PROFILE_DIR "/" LATNICE_DEFAULT_PROFILE ".conf",
                "latniced.conf:2");
        /* No latniced.conf at all: the default, quietly. */
        resolve(extra, NULL, NULL, false, 0, LATNICE_DEFAULT_PROFILE,
                LATNICE_PROFILE_DIR "/" LATNICE_DEFAULT_PROFILE ".conf", NULL);
}
