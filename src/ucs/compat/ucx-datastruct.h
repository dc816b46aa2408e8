/*
 * Declarations of the UCX data structures qpx uses whose headers UCX does
 * not install (arbiter, queue inlines), the same in UCX 1.13, 1.19 and 1.22
 * (their arbiter.h and the parts of queue.h below have one layout and
 * behaviour in the three releases).
 *
 * Include only through a src/ucs/compat/ucx-<version>.h.
 */
#ifndef QPX_UCX_COMPAT_DATASTRUCT_H_
#define QPX_UCX_COMPAT_DATASTRUCT_H_

#include <ucs/datastruct/list.h>
#include <ucs/datastruct/queue_types.h>
#include <stddef.h>

/* ------------------------------------------------------------------------
 * ucs: arbiter (src/ucs/datastruct/arbiter.h). A UCX built with
 * assertions (ENABLE_ASSERT=1: Debian's, contrib/ucx-build.sh's) adds the
 * group's guard and arbiter pointer.
 */
typedef struct ucs_arbiter       ucs_arbiter_t;
typedef struct ucs_arbiter_group ucs_arbiter_group_t;
typedef struct ucs_arbiter_elem  ucs_arbiter_elem_t;

typedef enum {
    UCS_ARBITER_CB_RESULT_REMOVE_ELEM,
    UCS_ARBITER_CB_RESULT_NEXT_GROUP,
    UCS_ARBITER_CB_RESULT_DESCHED_GROUP,
    UCS_ARBITER_CB_RESULT_RESCHED_GROUP,
    UCS_ARBITER_CB_RESULT_STOP
} ucs_arbiter_cb_result_t;

typedef ucs_arbiter_cb_result_t (*ucs_arbiter_callback_t)(
        ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
        ucs_arbiter_elem_t *elem, void *arg);

struct ucs_arbiter {
    ucs_list_link_t list;
};

struct ucs_arbiter_group {
    ucs_arbiter_elem_t *tail;
    int                guard;   /* present when UCX is built with assertions */
    ucs_arbiter_t      *arbiter;
};

struct ucs_arbiter_elem {
    ucs_list_link_t     list;
    ucs_arbiter_elem_t  *next;
    ucs_arbiter_group_t *group;
};

void ucs_arbiter_init(ucs_arbiter_t *arbiter);
void ucs_arbiter_cleanup(ucs_arbiter_t *arbiter);
void ucs_arbiter_group_init(ucs_arbiter_group_t *group);
void ucs_arbiter_group_cleanup(ucs_arbiter_group_t *group);
int ucs_arbiter_group_is_scheduled(ucs_arbiter_group_t *group);
void ucs_arbiter_group_push_elem_always(ucs_arbiter_group_t *group,
                                        ucs_arbiter_elem_t *elem);
void ucs_arbiter_group_push_head_elem_always(ucs_arbiter_group_t *group,
                                             ucs_arbiter_elem_t *elem);
void ucs_arbiter_group_purge(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                             ucs_arbiter_callback_t cb, void *cb_arg);
size_t ucs_arbiter_group_num_elems(ucs_arbiter_group_t *group);
void ucs_arbiter_group_schedule_nonempty(ucs_arbiter_t *arbiter,
                                         ucs_arbiter_group_t *group);
void ucs_arbiter_group_desched_nonempty(ucs_arbiter_t *arbiter,
                                        ucs_arbiter_group_t *group);
void ucs_arbiter_dispatch_nonempty(ucs_arbiter_t *arbiter, unsigned per_group,
                                   ucs_arbiter_callback_t cb, void *cb_arg);


/* Inline parts of arbiter.h (the exported functions above do the work) */
static inline void ucs_arbiter_elem_init(ucs_arbiter_elem_t *elem)
{
    elem->group = NULL;
}

static inline int ucs_arbiter_is_empty(ucs_arbiter_t *arbiter)
{
    return ucs_list_is_empty(&arbiter->list);
}

static inline int ucs_arbiter_group_is_empty(ucs_arbiter_group_t *group)
{
    return group->tail == NULL;
}

static inline int ucs_arbiter_elem_is_scheduled(ucs_arbiter_elem_t *elem)
{
    return elem->group != NULL;
}

static inline void ucs_arbiter_group_schedule(ucs_arbiter_t *arbiter,
                                              ucs_arbiter_group_t *group)
{
    if (!ucs_arbiter_group_is_empty(group)) {
        ucs_arbiter_group_schedule_nonempty(arbiter, group);
    }
}

static inline void ucs_arbiter_group_desched(ucs_arbiter_t *arbiter,
                                             ucs_arbiter_group_t *group)
{
    if (!ucs_arbiter_group_is_empty(group)) {
        ucs_arbiter_group_desched_nonempty(arbiter, group);
    }
}

static inline void ucs_arbiter_group_push_elem(ucs_arbiter_group_t *group,
                                               ucs_arbiter_elem_t *elem)
{
    if (!ucs_arbiter_elem_is_scheduled(elem)) {
        ucs_arbiter_group_push_elem_always(group, elem);
    }
}

static inline void ucs_arbiter_group_push_head_elem(ucs_arbiter_group_t *group,
                                                    ucs_arbiter_elem_t *elem)
{
    if (!ucs_arbiter_elem_is_scheduled(elem)) {
        ucs_arbiter_group_push_head_elem_always(group, elem);
    }
}

static inline void ucs_arbiter_dispatch(ucs_arbiter_t *arbiter,
                                        unsigned per_group,
                                        ucs_arbiter_callback_t cb, void *cb_arg)
{
    if (!ucs_arbiter_is_empty(arbiter)) {
        ucs_arbiter_dispatch_nonempty(arbiter, per_group, cb, cb_arg);
    }
}

/* ------------------------------------------------------------------------
 * ucs: queue (ucs/datastruct/queue.h is not installed; its types are,
 * queue_types.h). A singly linked FIFO: head, and the link the next push
 * writes (ptail); the last element's next is not set.
 */
static inline void ucs_queue_head_init(ucs_queue_head_t *queue)
{
    queue->ptail = &queue->head;
}

static inline int ucs_queue_is_empty(const ucs_queue_head_t *queue)
{
    return queue->ptail == &queue->head;
}

static inline void ucs_queue_push(ucs_queue_head_t *queue,
                                  ucs_queue_elem_t *elem)
{
    *queue->ptail = elem;
    queue->ptail  = &elem->next;
}

static inline ucs_queue_elem_t *
ucs_queue_pull_non_empty(ucs_queue_head_t *queue)
{
    ucs_queue_elem_t *elem = queue->head;

    queue->head = elem->next;
    if (queue->ptail == &elem->next) {
        queue->ptail = &queue->head;
    }
    return elem;
}

#endif
