/*
 * daemon/list.h - intrusive doubly-linked lists: a head pointer and
 * `prev` / `next` members in the element (connections, sessions, arenas,
 * extents).  Macros only; no module of the order.
 */
#ifndef HO_DAEMON_LIST_H
#define HO_DAEMON_LIST_H

/* Put x at the front of the list whose first element is `head`. */
#define SRV_LIST_PUSH(head, x)                                            \
    do {                                                                  \
        (x)->prev = NULL;                                                 \
        (x)->next = (head);                                               \
        if (head)                                                         \
            (head)->prev = (x);                                           \
        (head) = (x);                                                     \
    } while (0)

/* Take x out of the list whose first element is `head`; x's links are
 * cleared. */
#define SRV_LIST_UNLINK(head, x)                                          \
    do {                                                                  \
        if ((x)->prev)                                                    \
            (x)->prev->next = (x)->next;                                  \
        else                                                              \
            (head) = (x)->next;                                           \
        if ((x)->next)                                                    \
            (x)->next->prev = (x)->prev;                                  \
        (x)->prev = (x)->next = NULL;                                     \
    } while (0)


/* The same with a `tail` pointer kept too (least recently used lists:
 * the plan cache, the plans sessions keep).  x must not be an expression
 * of head or tail. */
#define SRV_LRU_PUSH(head, tail, x)                                       \
    do {                                                                  \
        SRV_LIST_PUSH(head, x);                                           \
        if (!(tail))                                                      \
            (tail) = (x);                                                 \
    } while (0)

#define SRV_LRU_UNLINK(head, tail, x)                                     \
    do {                                                                  \
        if ((tail) == (x))                                                \
            (tail) = (x)->prev;                                           \
        SRV_LIST_UNLINK(head, x);                                         \
    } while (0)

#endif
