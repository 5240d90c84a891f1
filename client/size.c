/*
 * client/size.c - the library version string.
 */
#include "client_internal.h"

#define HOC_STR2(x) #x
#define HOC_STR(x) HOC_STR2(x)

HO_EXPORT const char *ho_version(void)
{
    return HOC_STR(HO_CLIENT_VERSION_MAJOR) "." HOC_STR(
        HO_CLIENT_VERSION_MINOR) "." HOC_STR(HO_CLIENT_VERSION_PATCH);
}
