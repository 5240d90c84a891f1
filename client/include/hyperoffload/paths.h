/*
 * hyperoffload/paths.h - where the daemon's socket is: the one place the
 * default paths are written (the daemon's embedded default, the library's
 * resolution order and hoctl's help all use these).
 *
 * C and C++ compatible, no dependencies.
 */
#ifndef HYPEROFFLOAD_PATHS_H
#define HYPEROFFLOAD_PATHS_H

/* Socket resolution (see ho_socket_path in hyperoffload/client.h). */
#define HO_SOCKET_ENV "HO_SOCKET"
/* The embedded default's runtime folder and the socket in it. */
#define HO_LOCAL_DIR "./.hyperoffload"
#define HO_SOCKET_LOCAL HO_LOCAL_DIR "/hyperoffloadd.sock"
/* Under systemd (RuntimeDirectory=hyperoffload). */
#define HO_SOCKET_SYSTEM "/run/hyperoffload/hyperoffloadd.sock"
/* Longest socket path (sizeof(sockaddr_un.sun_path) - 1 on Linux). */
#define HO_SOCKET_PATH_MAX 107

#endif
