/*
 * daemon/dirs.h - the directories the daemon creates: its state
 * directory, and the parents of its socket and flash files; the lock that
 * keeps a second daemon off a state directory.  No libuv.
 */
#ifndef HO_DAEMON_DIRS_H
#define HO_DAEMON_DIRS_H

#include <stddef.h>
#include <sys/types.h>

/* Create directory `path` with `mode` and every missing parent with 0755
 * (parents stay traversable: the socket may live beside).  An existing
 * directory is fine.  0, -ENAMETOOLONG (path of PATH_MAX or more), or the
 * -errno of the mkdir that failed. */
int srv_mkdir_p(const char *path, mode_t mode);
/* srv_mkdir_p of the directory part of `path` (nothing for a name without
 * a directory, or directly under /). */
int srv_mkdir_parent(const char *path, mode_t mode);

/* Take the exclusive lock of directory `dir`: flock(LOCK_EX | LOCK_NB) on
 * `dir`/`name` (created 0644), which then holds this process's pid (one
 * line).  0 with *ret_fd (close it to release; it is CLOEXEC), or -EBUSY
 * with err naming the directory, the lock file and the holder's pid (as
 * the holder wrote it) when another process holds it; -errno otherwise.
 * Nothing else of `dir` is touched. */
int srv_lock_dir(const char *dir, const char *name, int *ret_fd, char *err,
                 size_t errlen);

#endif
