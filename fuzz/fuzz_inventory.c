/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/fuzz_inventory.c - libFuzzer target for the rack inventory of `topox label --inventory`
 * (objects/inventory.c): the bytes as CSV through obj_inventory_parse_csv(), and the same bytes as
 * a YAML/JSON inventory file through obj_inventory_load(); every row found is looked up again and
 * its labels read, which checks that the names kept are the names found.
 *   build/fuzz/fuzz/fuzz_inventory -dict=fuzz/dict/inventory.dict fuzz/seeds/fuzz_inventory */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "fuzz/fuzz_tmp.h"
#include "objects/inventory.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct obj_inventory *inv)
{
    for (size_t i = 0; i < inv->n; i++) {
        struct obj_kv kv[3];

        if (!inv->rows[i].node || obj_inventory_find(inv, inv->rows[i].node) != &inv->rows[i])
            abort(); /* a row without a name, or a duplicate name, was let through */
        (void)obj_inventory_row_labels(&inv->rows[i], kv);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct obj_inventory inv;
    struct tpx_err err = TPX_ERR_INIT;
    const char *path;

    if (obj_inventory_parse_csv((const char *)data, size, "fuzz.csv", &inv, &err) == TPX_OK)
        check(&inv);
    obj_inventory_release(&inv);
    path = fuzz_tmp_write(data, size, "inventory.yaml");
    tpx_err_clear(&err);
    if (path && obj_inventory_load(path, &inv, &err) == TPX_OK)
        check(&inv);
    obj_inventory_release(&inv);
    return 0;
}
