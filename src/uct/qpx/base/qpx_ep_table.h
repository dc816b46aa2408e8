/*
 * Endpoint lookup for qpx transports: find the endpoint a received packet
 * or a completion belongs to.
 *
 * qpx_ep_table_t gives each endpoint a 32-bit id that a peer puts in its
 * packets: the low QPX_EP_ID_IDX_BITS bits index a slot, the high bits are
 * the slot's generation, which changes when the slot is freed. A late packet
 * for a destroyed endpoint, or for an earlier endpoint in the same slot,
 * finds no endpoint (qpx_ep_table_lookup returns NULL). Freed slots are
 * reused most recently freed first; the table grows by doubling.
 *
 * The QP-number map of an interface (qpx_iface_qp_map_*, qpx_iface.h) is the
 * other lookup: by the QP number of a work completion (RC).
 */
#ifndef QPX_EP_TABLE_H_
#define QPX_EP_TABLE_H_

#include <ucs/ucx_compat.h>
#include <stdint.h>


#define QPX_EP_ID_NULL      0xffffffffu  /* no endpoint (never allocated) */
#define QPX_EP_ID_IDX_BITS  20           /* up to 1M endpoints per table */
#define QPX_EP_ID_IDX_MASK  ((1u << QPX_EP_ID_IDX_BITS) - 1)
#define QPX_EP_ID_GEN_MASK  ((1u << (32 - QPX_EP_ID_IDX_BITS)) - 1)


/* A slot: its endpoint (NULL when free) and the id it answers to, which a
 * free slot keeps at its next id (no endpoint has it yet) */
typedef struct qpx_ep_table_slot {
    void     *obj;
    uint32_t id;
    uint32_t free_next;   /* a free slot: the next free one */
} qpx_ep_table_slot_t;


typedef struct qpx_ep_table {
    qpx_ep_table_slot_t *slots; /* capacity of them, or one read-only slot
                                   that no id finds an endpoint in */
    unsigned            mask;   /* capacity - 1 (a power of two), 0 empty */
    unsigned            capacity;
    unsigned            count;     /* slots in use */
    unsigned            free_head; /* UINT32_MAX: none free */
} qpx_ep_table_t;


void qpx_ep_table_init(qpx_ep_table_t *table);

void qpx_ep_table_cleanup(qpx_ep_table_t *table);

/* Give obj a slot; *id_p is its id. UCS_ERR_EXCEEDS_LIMIT beyond
 * QPX_EP_ID_IDX_MASK endpoints, UCS_ERR_NO_MEMORY if the table cannot grow
 * (logged; nothing changed either way) */
ucs_status_t qpx_ep_table_add(qpx_ep_table_t *table, void *obj,
                              uint32_t *id_p);

/* Free the slot of id: the slot's next id has a new generation */
void qpx_ep_table_remove(qpx_ep_table_t *table, uint32_t id);

/* The endpoint of id, or NULL (unknown slot, free slot, old generation):
 * the slot the index bits give within the table, if it answers to the whole
 * id (an index beyond the table lands on a slot of another index) */
static UCS_F_ALWAYS_INLINE void *
qpx_ep_table_lookup(const qpx_ep_table_t *table, uint32_t id)
{
    const qpx_ep_table_slot_t *slot = &table->slots[id & table->mask];

    if (ucs_unlikely(slot->id != id)) {
        return NULL;
    }
    return slot->obj;
}

/* Slot i (0 <= i < capacity) for walking every endpoint: NULL when free */
static UCS_F_ALWAYS_INLINE void *
qpx_ep_table_slot(const qpx_ep_table_t *table, unsigned i)
{
    return table->slots[i].obj;
}

#endif
