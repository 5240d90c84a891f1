/*
 * daemon/dirs.h - the directories the daemon creates: its state
 * directory, and the parents of its socket and flash files.  No libuv.
 */
#ifndef HO_DAEMON_DIRS_H
#define HO_DAEMON_DIRS_H

#include <sys/types.h>

/* Create directory `path` with `mode` and every missing parent with 0755
 * (parents stay traversable: the socket may live beside).  An existing
 * directory is fine.  0, -ENAMETOOLONG (path of PATH_MAX or more), or the
 * -errno of the mkdir that failed. */
int srv_mkdir_p(const char *path, mode_t mode);
/* srv_mkdir_p of the directory part of `path` (nothing for a name without
 * a directory, or directly under /). */
int srv_mkdir_parent(const char *path, mode_t mode);

#endif
