/*
 * proto/mem.h - the one way the project does three small memory chores:
 * allocate an array that may be empty, free the buffers a struct owns,
 * and grow a dynamic array by doubling.
 *
 * Header only (static inline), so every layer may include it without a
 * link dependency: proto is layer 1 (docs/architecture.md).
 */
#ifndef HO_PROTO_MEM_H
#define HO_PROTO_MEM_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* calloc of n elements, at least one: an empty array is still a pointer
 * the caller tests for NULL (out of memory) and frees. */
static inline void *ho_calloc(size_t n, size_t size)
{
    return calloc(n ? n : 1, size);
}

/* free() every pointer in p[0..n) (NULL entries allowed). */
static inline void ho_free_list(void *const *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(p[i]);
}

/* HO_FREE_ALL(a, b, c): free(a); free(b); free(c); for the buffers a
 * struct owns.  The arguments are evaluated once each. */
#define HO_FREE_ALL(...)                                                   \
    ho_free_list((void *const[]){__VA_ARGS__},                             \
                 sizeof((void *const[]){__VA_ARGS__}) / sizeof(void *))

/* Make room for `need` elements of `elem` bytes in *arr, whose capacity
 * is *cap elements: the capacity doubles from `first` (when 0) until it
 * holds `need`, capped at `limit` elements.  0; -E2BIG when need exceeds
 * limit; -ENOMEM.  On failure *arr and *cap are unchanged. */
static inline int ho_grow(void **arr, size_t *cap, size_t need, size_t elem,
                          size_t first, size_t limit)
{
    if (need <= *cap)
        return 0;
    if (need > limit)
        return -E2BIG;
    size_t ncap = *cap ? *cap : (first ? first : 1);
    while (ncap < need)
        ncap = ncap > limit / 2 ? limit : ncap * 2;
    if (ncap > SIZE_MAX / elem)
        return -ENOMEM;
    void *p = realloc(*arr, ncap * elem);
    if (!p)
        return -ENOMEM;
    *arr = p;
    *cap = ncap;
    return 0;
}

#endif
