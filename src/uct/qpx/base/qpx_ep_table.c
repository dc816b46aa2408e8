/*
 * Endpoint ids with generations (qpx_ep_table.h).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_ep_table.h"

#include <stdlib.h>


void qpx_ep_table_init(qpx_ep_table_t *table)
{
    table->objs      = NULL;
    table->gen       = NULL;
    table->free_next = NULL;
    table->capacity  = 0;
    table->count     = 0;
    table->free_head = UINT32_MAX;
}


void qpx_ep_table_cleanup(qpx_ep_table_t *table)
{
    if (table->count > 0) {
        ucs_debug("endpoint table %p freed with %u endpoints", table,
                  table->count);
    }
    free(table->objs);
    free(table->gen);
    free(table->free_next);
    qpx_ep_table_init(table);
}


/* Double the table; the new slots are free */
static ucs_status_t qpx_ep_table_grow(qpx_ep_table_t *table)
{
    unsigned i, capacity = ucs_max(64, table->capacity * 2);
    void *objs, *gen, *next;

    if (capacity > QPX_EP_ID_IDX_MASK) {
        ucs_error("endpoint table %p: more than %u endpoints", table,
                  QPX_EP_ID_IDX_MASK);
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    /* Arrays that did grow keep their new size: capacity says how much of
     * them is in use, so a failure leaves the table as it was */
    objs = realloc(table->objs, capacity * sizeof(*table->objs));
    if (objs == NULL) {
        goto err_nomem;
    }
    table->objs = objs;

    gen = realloc(table->gen, capacity * sizeof(*table->gen));
    if (gen == NULL) {
        goto err_nomem;
    }
    table->gen = gen;

    next = realloc(table->free_next, capacity * sizeof(*table->free_next));
    if (next == NULL) {
        goto err_nomem;
    }
    table->free_next = next;

    for (i = table->capacity; i < capacity; ++i) {
        table->objs[i]      = NULL;
        table->gen[i]       = 0;
        table->free_next[i] = (i + 1 < capacity) ? i + 1 : table->free_head;
    }
    table->free_head = table->capacity;
    table->capacity  = capacity;
    return UCS_OK;

err_nomem:
    ucs_error("endpoint table %p: failed to grow to %u endpoints", table,
              capacity);
    return UCS_ERR_NO_MEMORY;
}


ucs_status_t qpx_ep_table_add(qpx_ep_table_t *table, void *obj,
                              uint32_t *id_p)
{
    ucs_status_t status;
    unsigned idx;

    if (table->free_head == UINT32_MAX) {
        status = qpx_ep_table_grow(table);
        if (status != UCS_OK) {
            return status;
        }
    }

    idx              = table->free_head;
    table->free_head = table->free_next[idx];
    table->objs[idx] = obj;
    ++table->count;
    *id_p = idx | ((uint32_t)table->gen[idx] << QPX_EP_ID_IDX_BITS);
    return UCS_OK;
}


void qpx_ep_table_remove(qpx_ep_table_t *table, uint32_t id)
{
    unsigned idx = id & QPX_EP_ID_IDX_MASK;

    table->objs[idx]      = NULL;
    /* A new generation: packets for the old id no longer match */
    table->gen[idx]       = (table->gen[idx] + 1) & QPX_EP_ID_GEN_MASK;
    table->free_next[idx] = table->free_head;
    table->free_head      = idx;
    --table->count;
}
