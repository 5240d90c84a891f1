/* daemon/dirs.c - see dirs.h. */
#include "daemon/dirs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/errfmt.h"

int srv_mkdir_p(const char *path, mode_t mode)
{
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
        return -ENAMETOOLONG;
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(dir, mode) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

int srv_mkdir_parent(const char *path, mode_t mode)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    return srv_mkdir_p(dir, mode);
}

/* ------------------------------------------------------------ lock */

/* The pid written in a lock file by its holder, or 0 when it cannot be
 * read. */
static long lock_holder_pid(int fd)
{
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *end = NULL;
    long pid = strtol(buf, &end, 10);
    return end != buf && pid > 0 ? pid : 0;
}

int srv_lock_dir(const char *dir, const char *name, int *ret_fd, char *err,
                 size_t errlen)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
        return ho_errf(err, errlen, -ENAMETOOLONG, "%s/%s: path too long",
                       dir, name);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return ho_errf(err, errlen, -errno, "cannot open lock file %s: %s",
                       path, strerror(errno));
    int rc;
    do
        rc = flock(fd, LOCK_EX | LOCK_NB);
    while (rc < 0 && errno == EINTR);
    if (rc < 0) {
        int e = errno;
        long pid = e == EWOULDBLOCK ? lock_holder_pid(fd) : 0;
        close(fd);
        if (e != EWOULDBLOCK)
            return ho_errf(err, errlen, -e, "cannot lock %s: %s", path,
                           strerror(e));
        if (pid)
            return ho_errf(err, errlen, -EBUSY, "%s is in use by another "
                           "hyperoffloadd (pid %ld holds the lock %s)", dir,
                           pid, path);
        return ho_errf(err, errlen, -EBUSY, "%s is in use by another "
                       "hyperoffloadd (a process holds the lock %s)", dir,
                       path);
    }
    char pid[32];
    int n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
        rc = ho_errf(err, errlen, -errno, "cannot write lock file %s: %s",
                     path, strerror(errno));
        close(fd);
        return rc;
    }
    *ret_fd = fd;
    return 0;
}
