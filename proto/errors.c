/* proto/errors.c - ho_strerror() and ho_err_name() for every code of
 * hyperoffload/errors.h and negative errno values. */
#include <errno.h>
#include <string.h>

#include "hyperoffload/errors.h"

struct ho_err_row {
    int code;
    const char *name;
    const char *text;
};

static const struct ho_err_row ho_err_table[] = {
    {HO_OK, "HO_OK", "success"},
    {HO_E_PROTOCOL, "HO_E_PROTOCOL", "malformed frame or protocol violation"},
    {HO_E_VERSION, "HO_E_VERSION", "no common protocol version"},
    {HO_E_FRAME_TOO_LARGE, "HO_E_FRAME_TOO_LARGE", "frame larger than the allowed limit"},
    {HO_E_NOT_REGISTERED, "HO_E_NOT_REGISTERED", "request needs a registered session"},
    {HO_E_UNKNOWN_SESSION, "HO_E_UNKNOWN_SESSION", "unknown session"},
    {HO_E_UNKNOWN_EXTENT, "HO_E_UNKNOWN_EXTENT", "unknown extent"},
    {HO_E_UNKNOWN_DEVICE, "HO_E_UNKNOWN_DEVICE", "unknown device"},
    {HO_E_QUOTA, "HO_E_QUOTA", "quota exceeded"},
    {HO_E_TIER_FULL, "HO_E_TIER_FULL", "tier has no free space"},
    {HO_E_TOO_LARGE, "HO_E_TOO_LARGE", "request exceeds the tier's capacity"},
    {HO_E_BUDGET, "HO_E_BUDGET", "device budget cannot be granted"},
    {HO_E_PERMISSION, "HO_E_PERMISSION", "permission denied (admin required)"},
    {HO_E_INFEASIBLE, "HO_E_INFEASIBLE", "no schedule fits the budget"},
    {HO_E_BAD_TRACE, "HO_E_BAD_TRACE", "trace malformed or inconsistent"},
    {HO_E_BAD_SCHEDULE, "HO_E_BAD_SCHEDULE", "schedule malformed or invalid"},
    {HO_E_BAD_CONFIG, "HO_E_BAD_CONFIG", "configuration invalid"},
    {HO_E_INVALID_SIZE, "HO_E_INVALID_SIZE", "invalid size"},
    {HO_E_STATE, "HO_E_STATE", "object is in the wrong state"},
    {HO_E_BUSY, "HO_E_BUSY", "object has a transfer in flight"},
    {HO_E_ALREADY, "HO_E_ALREADY", "already done"},
    {HO_E_SHUTTING_DOWN, "HO_E_SHUTTING_DOWN", "daemon is shutting down"},
    {HO_E_DISCONNECTED, "HO_E_DISCONNECTED", "connection to the daemon lost"},
    {HO_E_DIVERGED, "HO_E_DIVERGED", "replay diverged from the traced step"},
    {HO_E_NO_PLAN, "HO_E_NO_PLAN", "no plan available"},
    {HO_E_DEVICE, "HO_E_DEVICE", "device backend failure"},
    {HO_E_UNSUPPORTED, "HO_E_UNSUPPORTED", "not supported here"},
    {HO_E_INTERNAL, "HO_E_INTERNAL", "internal error"},
};

static const struct ho_err_row *ho_err_find(int code)
{
    for (size_t i = 0; i < sizeof(ho_err_table) / sizeof(ho_err_table[0]); i++)
        if (ho_err_table[i].code == code)
            return &ho_err_table[i];
    return NULL;
}

HO_EXPORT const char *ho_strerror(int code)
{
    const struct ho_err_row *row = ho_err_find(code);
    if (row)
        return row->text;
    if (code < 0 && code > -1000)
        return strerror(-code); /* glibc: static text for known errno */
    return "unknown error";
}

HO_EXPORT const char *ho_err_name(int code)
{
    const struct ho_err_row *row = ho_err_find(code);
    if (row)
        return row->name;
    if (code < 0 && code > -1000) {
        const char *n = strerrorname_np(-code);
        if (n)
            return n;
    }
    return "HO_E_UNKNOWN";
}
