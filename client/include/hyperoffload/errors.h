/*
 * hyperoffload/errors.h - error codes shared by libhyperoffload, hoctl and
 * hyperoffloadd.
 *
 * Every fallible function of the project returns 0 on success or a negative
 * code: either a negative errno value (-ENOMEM, -EIO, ...) for failures that
 * come from the system, or one of the HO_E_* codes below for failures that
 * belong to HyperOffload's domain.  The two ranges never overlap (errno values
 * are < 1000 on Linux).
 *
 * On the wire an error travels as the positive value (-code), so the numbers
 * below are part of the protocol: never renumber, only append.
 *
 * This header is C and C++ compatible and has no dependencies.
 */
#ifndef HYPEROFFLOAD_ERRORS_H
#define HYPEROFFLOAD_ERRORS_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define HO_EXPORT
#else
#define HO_EXPORT __attribute__((visibility("default")))
#endif

/* The HO_E_* codes: XX(name, code, message), one row each.  ho_strerror()
 * and ho_err_name() are generated from this list; tests pin the numbers. */
#define HO_ERROR_MAP(XX) \
    XX(PROTOCOL, -1000, "malformed frame or protocol violation") \
    XX(VERSION, -1001, "no common protocol version") \
    XX(FRAME_TOO_LARGE, -1002, "frame larger than the allowed limit") \
    XX(NOT_REGISTERED, -1003, "request needs a registered session") \
    XX(UNKNOWN_SESSION, -1004, "unknown session") \
    XX(UNKNOWN_EXTENT, -1005, "unknown extent") \
    XX(UNKNOWN_DEVICE, -1006, "unknown device") \
    XX(QUOTA, -1007, "quota exceeded") \
    XX(TIER_FULL, -1008, "tier has no free space") \
    XX(TOO_LARGE, -1009, "request exceeds the tier's capacity") \
    XX(BUDGET, -1010, "device budget cannot be granted") \
    XX(PERMISSION, -1011, "permission denied (admin required)") \
    XX(INFEASIBLE, -1012, "no schedule fits the budget") \
    XX(BAD_TRACE, -1013, "trace malformed or inconsistent") \
    XX(BAD_SCHEDULE, -1014, "schedule malformed or invalid") \
    XX(BAD_CONFIG, -1015, "configuration invalid") \
    XX(INVALID_SIZE, -1016, "invalid size") \
    XX(STATE, -1017, "object is in the wrong state") \
    XX(BUSY, -1018, "object has a transfer in flight") \
    XX(ALREADY, -1019, "already done") \
    XX(SHUTTING_DOWN, -1020, "daemon is shutting down") \
    XX(DISCONNECTED, -1021, "connection to the daemon lost") \
    XX(DIVERGED, -1022, "replay diverged from the traced step") \
    XX(NO_PLAN, -1023, "no plan available") \
    XX(DEVICE, -1024, "device backend failure") \
    XX(UNSUPPORTED, -1025, "not supported here") \
    XX(INTERNAL, -1026, "internal error")

enum ho_error {
    HO_OK = 0,
#define HO__ERROR_ENUM(name, code, text) HO_E_##name = code,
    HO_ERROR_MAP(HO__ERROR_ENUM)
#undef HO__ERROR_ENUM
};

/* Stable, short, human description of any code returned by the project
 * (HO_E_* or negative errno).  Never returns NULL; the string is static. */
HO_EXPORT const char *ho_strerror(int code);

/* Stable symbolic name ("HO_E_QUOTA", "ENOMEM", ...).  Never NULL. */
HO_EXPORT const char *ho_err_name(int code);

#ifdef __cplusplus
}
#endif
#endif
