/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/objects/test_inventory.c - inventory files (CSV and YAML), NodeList files, and the
 * label merge-patch bodies of `topox label`. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "objects/inventory.h"
#include "objects/label_patch.h"

static char *write_tmp(const char *suffix, const char *text)
{
    char *path = malloc(64);
    int fd;

    snprintf(path, 64, "/tmp/topox-inv-XXXXXX%s", suffix);
    fd = mkstemps(path, (int)strlen(suffix));
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

Test(obj_inventory, csv_with_header_comments_quotes_and_empty_columns)
{
    static const char csv[] = "# rack map\n"
                              "node,block,rack,nvlink-domain\n"
                              "\n"
                              "gpu-1,b1,r1,nvl-a\n"
                              "\"gpu-2\", b1 ,r2,\n"
                              "gpu-3,,r3\n";
    struct obj_inventory inv;
    struct tpx_err err = TPX_ERR_INIT;
    struct obj_kv kv[3];

    cr_assert_eq(obj_inventory_parse_csv(csv, strlen(csv), "inv.csv", &inv, &err), TPX_OK, "%s",
                 err.msg);
    cr_assert_eq(inv.n, 3);
    cr_expect_str_eq(inv.rows[0].node, "gpu-1");
    cr_expect_str_eq(inv.rows[0].rack, "r1");
    cr_expect_str_eq(inv.rows[0].block, "b1");
    cr_expect_str_eq(inv.rows[0].domain, "nvl-a");
    cr_expect_eq(inv.rows[0].line, 4);
    cr_expect_str_eq(inv.rows[1].node, "gpu-2");
    cr_expect_str_eq(inv.rows[1].block, "b1");
    cr_expect_null(inv.rows[1].domain);
    cr_expect_null(inv.rows[2].block);
    cr_expect_eq(obj_inventory_row_labels(&inv.rows[2], kv), 1);
    cr_expect_str_eq(kv[0].key, "topox.io/rack");
    cr_expect_str_eq(kv[0].value, "r3");
    cr_expect_not_null(obj_inventory_find(&inv, "gpu-2"));
    cr_expect_null(obj_inventory_find(&inv, "gpu-9"));
    obj_inventory_release(&inv);
}

Test(obj_inventory, csv_without_header_is_positional)
{
    static const char csv[] = "n1,r1,b1,d1\nn2,r2\n";
    struct obj_inventory inv;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_inventory_parse_csv(csv, strlen(csv), "x.csv", &inv, &err), TPX_OK, "%s",
                 err.msg);
    cr_assert_eq(inv.n, 2);
    cr_expect_str_eq(inv.rows[0].domain, "d1");
    cr_expect_str_eq(inv.rows[1].rack, "r2");
    obj_inventory_release(&inv);
}

Test(obj_inventory, bad_csv_names_file_and_line)
{
    static const struct {
        const char *csv, *want;
    } cases[] = {
        {"node,rack\nn1,r 1\n", "x.csv:2: topox.io/rack 'r 1' is not a valid label value"},
        {"n1,r1\nn1,r2\n", "x.csv:2: node 'n1' is listed twice"},
        {"node,rack,colour\n", "x.csv:1: unknown column 'colour'"},
        {"n1,\"r1\n", "x.csv:1: bad quoting"},
        {"node,rack\nn1,r1,b1\n", "x.csv:2: 3 columns"},
        {",r1\n", "x.csv:1: row without a node name"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct obj_inventory inv;
        struct tpx_err err = TPX_ERR_INIT;

        cr_expect_neq(
            obj_inventory_parse_csv(cases[i].csv, strlen(cases[i].csv), "x.csv", &inv, &err),
            TPX_OK, "case %zu", i);
        cr_expect(strncmp(err.msg, cases[i].want, strlen(cases[i].want)) == 0, "case %zu: '%s'", i,
                  err.msg);
        obj_inventory_release(&inv);
    }
}

Test(obj_inventory, yaml_forms)
{
    static const char *const docs[] = {
        "nodes:\n  - name: gpu-1\n    rack: r1\n    block: b1\n    nvlink-domain: d1\n"
        "  - node: gpu-2\n    rack: 12\n",
        "- {name: gpu-1, rack: r1, block: b1, nvlink-domain: d1}\n- {name: gpu-2, rack: 12}\n",
        "gpu-1: {rack: r1, block: b1, nvlink-domain: d1}\ngpu-2: {rack: 12}\n",
    };

    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        char *path = write_tmp(".yaml", docs[i]);
        struct obj_inventory inv;
        struct tpx_err err = TPX_ERR_INIT;

        cr_assert_eq(obj_inventory_load(path, &inv, &err), TPX_OK, "form %zu: %s", i, err.msg);
        cr_assert_eq(inv.n, 2, "form %zu", i);
        cr_expect_str_eq(inv.rows[0].node, "gpu-1");
        cr_expect_str_eq(inv.rows[0].domain, "d1");
        cr_expect_str_eq(inv.rows[1].rack, "12");
        cr_expect_null(inv.rows[1].block);
        obj_inventory_release(&inv);
        unlink(path);
        free(path);
    }
}

Test(obj_inventory, bad_yaml_names_the_file)
{
    static const char *const docs[] = {"nodes: [{name: a, shelf: 3}]\n", "just a string\n",
                                       "nodes:\n  - name: a\n    rack: [1, 2]\n", "a: [\n"};

    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        char *path = write_tmp(".yaml", docs[i]);
        struct obj_inventory inv;
        struct tpx_err err = TPX_ERR_INIT;

        cr_expect_neq(obj_inventory_load(path, &inv, &err), TPX_OK, "case %zu", i);
        cr_expect(strstr(err.msg, path) != NULL, "case %zu: '%s'", i, err.msg);
        cr_expect(strchr(err.msg, '\n') == NULL, "case %zu: one line", i);
        obj_inventory_release(&inv);
        unlink(path);
        free(path);
    }
}

Test(obj_nodelist, kubectl_json_and_real_gke_node)
{
    static const char list[] =
        "{\"kind\":\"NodeList\",\"items\":[{\"metadata\":{\"name\":\"a\",\"labels\":"
        "{\"topox.io/rack\":\"r1\",\"x\":\"y\"},\"annotations\":{\"topox.io/topology\":\"{}\"}}},"
        "{\"metadata\":{\"name\":\"b\"}}]}";
    char *path = write_tmp(".json", list);
    struct obj_nodelist l;
    struct tpx_err err = TPX_ERR_INIT;
    const struct obj_node_entry *a;

    cr_assert_eq(obj_nodelist_load(path, &l, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(l.n, 2);
    a = obj_nodelist_find(&l, "a");
    cr_assert_not_null(a);
    cr_expect_eq(a->n_labels, 2);
    cr_expect_str_eq(a->topology, "{}");
    cr_expect_null(obj_nodelist_find(&l, "c"));
    obj_nodelist_release(&l);
    unlink(path);
    free(path);

    cr_assert_eq(obj_nodelist_load(
                     TPX_FIXTURES "/nodes/k8s-apimachinery-testdata-gke-node-full.yaml", &l, &err),
                 TPX_OK, "%s", err.msg);
    cr_expect_eq(l.n, 1);
    obj_nodelist_release(&l);
}

static const struct obj_kv want[] = {
    {"topox.io/accelerator", "nvidia"},
    {"topox.io/accelerator-count", "8"},
};

Test(obj_label_patch, sets_changed_and_nulls_stale_owned_keys_only)
{
    static const struct obj_kv cur[] = {
        {"topox.io/accelerator", "nvidia"},  /* unchanged */
        {"topox.io/accelerator-count", "4"}, /* changed */
        {"topox.io/interconnect", "nvlink"}, /* stale: removed */
        {"topox.io/rack", "r1"},             /* inventory key: not ours to remove */
        {"kubernetes.io/hostname", "gpu-1"}, /* foreign: untouched */
    };
    char *body = NULL;
    struct obj_label_diff diff;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_label_patch_build(obj_label_scope_discovery(), cur, 5, want, 2,
                                       "topox.io/topology", "{\"old\":1}", "{\"new\":1}", &body,
                                       &diff, &err),
                 TPX_OK, "%s", err.msg);
    cr_assert_not_null(body);
    cr_expect_str_eq(body, "{\"metadata\":{\"annotations\":{\"topox.io/topology\":"
                           "\"{\\\"new\\\":1}\"},\"labels\":{\"topox.io/accelerator-count\":\"8\","
                           "\"topox.io/interconnect\":null}}}");
    cr_expect_eq(diff.set, 1);
    cr_expect_eq(diff.removed, 1);
    cr_expect_eq(diff.unchanged, 1);
    cr_expect(diff.annotation);
    free(body);
}

Test(obj_label_patch, nothing_changed_gives_no_patch)
{
    static const struct obj_kv cur[] = {
        {"topox.io/accelerator-count", "8"},
        {"topox.io/accelerator", "nvidia"},
        {"topox.io/block", "b2"},
    };
    char *body = (char *)"sentinel";
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_label_patch_build(obj_label_scope_discovery(), cur, 3, want, 2,
                                       "topox.io/topology", "{}", "{}", &body, NULL, &err),
                 TPX_OK);
    cr_expect_null(body);
}

Test(obj_label_patch, inventory_scope_owns_only_rack_block_domain)
{
    static const struct obj_kv cur[] = {
        {"topox.io/accelerator", "nvidia"},
        {"topox.io/block", "b1"},
        {"topox.io/nvlink-domain", "d1"},
    };
    static const struct obj_kv inv[] = {{"topox.io/rack", "r7"}, {"topox.io/block", "b1"}};
    char *body = NULL;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_label_patch_build(obj_label_scope_inventory(), cur, 3, inv, 2, NULL, NULL,
                                       NULL, &body, NULL, &err),
                 TPX_OK);
    cr_assert_not_null(body);
    cr_expect_str_eq(body, "{\"metadata\":{\"labels\":{\"topox.io/nvlink-domain\":null,"
                           "\"topox.io/rack\":\"r7\"}}}");
    free(body);
}

Test(obj_label_patch, duplicate_wanted_key_is_an_error)
{
    static const struct obj_kv dup[] = {{"topox.io/rack", "a"}, {"topox.io/rack", "b"}};
    char *body = NULL;
    struct tpx_err err = TPX_ERR_INIT;

    cr_expect_eq(obj_label_patch_build(obj_label_scope_inventory(), NULL, 0, dup, 2, NULL, NULL,
                                       NULL, &body, NULL, &err),
                 TPX_EINVAL);
    cr_expect_null(body);
}
