/*
 * client/version.c - the library version string.
 */
#include "client/client_internal.h"
#include "hyperoffload/version.h"

HO_EXPORT const char *ho_version(void)
{
    return HO_VERSION_STRING;
}
