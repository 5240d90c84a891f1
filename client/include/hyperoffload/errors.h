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

enum ho_error {
    HO_OK = 0,
    HO_E_PROTOCOL = -1000,        /* malformed frame or protocol violation */
    HO_E_VERSION = -1001,         /* no common protocol version */
    HO_E_FRAME_TOO_LARGE = -1002, /* frame length above the negotiated limit */
    HO_E_NOT_REGISTERED = -1003,  /* request needs a registered session */
    HO_E_UNKNOWN_SESSION = -1004, /* no such session / client */
    HO_E_UNKNOWN_EXTENT = -1005,  /* no such extent for this session */
    HO_E_UNKNOWN_DEVICE = -1006,  /* device index not configured */
    HO_E_QUOTA = -1007,           /* request would exceed a quota */
    HO_E_TIER_FULL = -1008,       /* tier has no room right now */
    HO_E_TOO_LARGE = -1009,       /* request exceeds a tier's whole capacity */
    HO_E_BUDGET = -1010,          /* HBM budget cannot be granted */
    HO_E_PERMISSION = -1011,      /* caller lacks the right (admin) */
    HO_E_INFEASIBLE = -1012,      /* no schedule fits the budget */
    HO_E_BAD_TRACE = -1013,       /* trace malformed or inconsistent */
    HO_E_BAD_SCHEDULE = -1014,    /* schedule malformed or violates the model */
    HO_E_BAD_CONFIG = -1015,      /* configuration invalid */
    HO_E_INVALID_SIZE = -1016,    /* size zero, unaligned or overflowing */
    HO_E_STATE = -1017,           /* object in the wrong state for this */
    HO_E_BUSY = -1018,            /* object has a transfer in flight */
    HO_E_ALREADY = -1019,         /* already done (e.g. session registered) */
    HO_E_SHUTTING_DOWN = -1020,   /* daemon is draining */
    HO_E_DISCONNECTED = -1021,    /* connection to the daemon lost */
    HO_E_DIVERGED = -1022,        /* replay diverged from the traced step */
    HO_E_NO_PLAN = -1023,         /* no plan available (yet) */
    HO_E_DEVICE = -1024,          /* device backend failure */
    HO_E_UNSUPPORTED = -1025,     /* feature not available here */
    HO_E_INTERNAL = -1026,        /* bug: an invariant did not hold */
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
