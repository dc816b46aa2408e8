/*
 * Endpoint ids with generations (qpx_ep_table.h).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_ep_table.h"

#include <stdlib.h>


/* What an empty table's lookups read: no endpoint, whatever the id */
static qpx_ep_table_slot_t qpx_ep_table_no_slot = { NULL, 0, UINT32_MAX };


static uint32_t qpx_ep_table_id(unsigned idx, uint32_t gen)
{
    return idx | ((gen & QPX_EP_ID_GEN_MASK) << QPX_EP_ID_IDX_BITS);
}


void qpx_ep_table_init(qpx_ep_table_t *table)
{
    table->slots     = &qpx_ep_table_no_slot;
    table->mask      = 0;
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
    if (table->capacity > 0) {
        free(table->slots);
    }
    qpx_ep_table_init(table);
}


/* Double the table; the new slots are free */
static ucs_status_t qpx_ep_table_grow(qpx_ep_table_t *table)
{
    unsigned i, capacity = ucs_max(64, table->capacity * 2);
    qpx_ep_table_slot_t *slots;

    if (capacity > QPX_EP_ID_IDX_MASK) {
        ucs_error("endpoint table %p: more than %u endpoints", table,
                  QPX_EP_ID_IDX_MASK);
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    /* Nothing changes unless the new array is there */
    slots = realloc((table->capacity > 0) ? table->slots : NULL,
                    capacity * sizeof(*slots));
    if (slots == NULL) {
        ucs_error("endpoint table %p: failed to grow to %u endpoints",
                  table, capacity);
        return UCS_ERR_NO_MEMORY;
    }

    for (i = table->capacity; i < capacity; ++i) {
        slots[i].obj       = NULL;
        slots[i].id        = qpx_ep_table_id(i, 0);
        slots[i].free_next = (i + 1 < capacity) ? i + 1 : table->free_head;
    }
    table->slots     = slots;
    table->free_head = table->capacity;
    table->capacity  = capacity;
    table->mask      = capacity - 1;
    return UCS_OK;
}


ucs_status_t qpx_ep_table_add(qpx_ep_table_t *table, void *obj,
                              uint32_t *id_p)
{
    qpx_ep_table_slot_t *slot;
    ucs_status_t status;

    if (table->free_head == UINT32_MAX) {
        status = qpx_ep_table_grow(table);
        if (status != UCS_OK) {
            return status;
        }
    }

    slot             = &table->slots[table->free_head];
    table->free_head = slot->free_next;
    slot->obj        = obj;
    ++table->count;
    *id_p = slot->id;
    return UCS_OK;
}


void qpx_ep_table_remove(qpx_ep_table_t *table, uint32_t id)
{
    unsigned idx              = id & QPX_EP_ID_IDX_MASK;
    qpx_ep_table_slot_t *slot = &table->slots[idx];

    slot->obj        = NULL;
    /* A new generation: packets for the old id no longer match */
    slot->id         = qpx_ep_table_id(idx, (id >> QPX_EP_ID_IDX_BITS) + 1);
    slot->free_next  = table->free_head;
    table->free_head = idx;
    --table->count;
}
