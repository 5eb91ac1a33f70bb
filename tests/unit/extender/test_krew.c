/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/extender/test_krew.c - the krew manifest of `kubectl topox`: scripts/krew-package.sh
 * packs the built topox and renders deploy/krew/topox.yaml, and the result passes the checks of
 * krew's ValidatePlugin (kubernetes-sigs/krew internal/index/validation/validate.go): apiVersion
 * krew.googlecontainertools.github.com/v1alpha2, kind Plugin, metadata.name = the file's name
 * (and [\w-]+), a shortDescription without line breaks, a version that is semver with a leading
 * v, at least one platform, each with uri, a sha256 of 64 lowercase hex digits, bin, files
 * unset or each with from and to, and a selector with matchLabels on os and arch only. Beyond krew:
 * the sha256 is the archive's, the version is topox's, and the archive's bin, run, is
 * `kubectl topox`. */
#include <criterion/criterion.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects/yamljson.h"

#define OUT "/tmp/topox-krew-test"

static char *sh(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    static char buf[8192];
    size_t n;

    cr_assert_not_null(p);
    n = fread(buf, 1, sizeof(buf) - 1, p);
    buf[n] = '\0';
    cr_assert_eq(pclose(p), 0, "`%s` failed: %s", cmd, buf);
    while (n > 0 && buf[n - 1] == '\n')
        buf[--n] = '\0';
    return buf;
}

static bool matches(const char *pattern, const char *s)
{
    regex_t re;
    bool ok;

    cr_assert_eq(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
    ok = s && regexec(&re, s, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

Test(krew, the_packaged_manifest_is_one_krew_accepts)
{
    struct obj_yaml_docs d = {0};
    struct tpx_err err = TPX_ERR_INIT;
    const json_t *p, *spec, *plats, *pl;
    char version[64];
    size_t i;

    snprintf(version, sizeof(version), "v%s", sh(TOPOX_BIN " version --short"));
    sh("rm -rf " OUT " && " TPX_SOURCE_DIR "/scripts/krew-package.sh " TPX_BUILD_DIR " " OUT
       " >/dev/null");
    cr_assert_eq(obj_yaml_load_file(OUT "/topox.yaml", 1 << 20, &d, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(d.n, 1);
    p = d.docs[0];
    spec = json_object_get(p, "spec");
    cr_expect_str_eq(str(p, "apiVersion"), "krew.googlecontainertools.github.com/v1alpha2");
    cr_expect_str_eq(str(p, "kind"), "Plugin");
    cr_expect_str_eq(str(json_object_get(p, "metadata"), "name"), "topox",
                     "the name must be the manifest file's (topox.yaml)");
    cr_expect(matches("^[A-Za-z0-9_-]+$", str(json_object_get(p, "metadata"), "name")));
    cr_expect(matches("^[^\r\n]+$", str(spec, "shortDescription")),
              "shortDescription must be one line");
    cr_expect(matches("^v[0-9]+\\.[0-9]+\\.[0-9]+(-[0-9A-Za-z.-]+)?(\\+[0-9A-Za-z.-]+)?$",
                      str(spec, "version")),
              "version '%s' is no semver with a leading v", str(spec, "version"));
    cr_expect_str_eq(str(spec, "version"), version, "the version must be topox's");
    plats = json_object_get(spec, "platforms");
    cr_assert_gt(json_array_size(plats), 0, "krew needs a platform");
    json_array_foreach(plats, i, pl)
    {
        const json_t *sel = json_object_get(pl, "selector");
        const json_t *ml = json_object_get(sel, "matchLabels");
        const json_t *files = json_object_get(pl, "files");
        const char *k;
        const json_t *v, *f;
        size_t j;
        char cmd[512], archive[256];
        const char *uri = str(pl, "uri");

        cr_expect(uri && *uri, "platform %zu: uri", i);
        cr_expect(matches("^[a-f0-9]{64}$", str(pl, "sha256")), "platform %zu: sha256 '%s'", i,
                  str(pl, "sha256"));
        cr_expect_str_eq(str(pl, "bin"), "kubectl-topox");
        cr_assert(json_is_object(ml) && json_object_size(ml) > 0, "platform %zu: matchLabels", i);
        json_object_foreach((json_t *)ml, k, v)
            cr_expect(strcmp(k, "os") == 0 || strcmp(k, "arch") == 0, "selector key '%s'", k);
        cr_expect(files == NULL || json_array_size(files) > 0, "files: unset or not empty");
        json_array_foreach(files, j, f)
            cr_expect(str(f, "from") && *str(f, "from") && str(f, "to") && *str(f, "to"));
        /* the archive named by the uri: its sha256, and its bin is `kubectl topox` */
        cr_assert_not_null(strrchr(uri, '/'));
        snprintf(archive, sizeof(archive), OUT "/%s", strrchr(uri, '/') + 1);
        snprintf(cmd, sizeof(cmd), "sha256sum %s | cut -d' ' -f1", archive);
        cr_expect_str_eq(sh(cmd), str(pl, "sha256"), "the sha256 is not the archive's");
        snprintf(cmd, sizeof(cmd), "cd " OUT " && tar xzf %s && ./%s --help | head -1", archive,
                 str(pl, "bin"));
        cr_expect(strncmp(sh(cmd), "usage: kubectl topox", 20) == 0, "%s", sh(cmd));
    }
    obj_yaml_docs_release(&d);
    sh("rm -rf " OUT);
}
