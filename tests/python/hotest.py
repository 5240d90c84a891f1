"""Shared helpers of the Python tests: where hoctl is, how to run it, a
scratch directory.

Environment (set by tests/python/CMakeLists.txt):
  HO_BUILD_DIR        build tree (hoctl is $HO_BUILD_DIR/bin/hoctl)
  HO_SOURCE_DIR       source tree
  HO_UNDER_VALGRIND   "1": smaller workloads (hoctl runs under HO_WRAP)
  HO_WRAP             command prefix for every hoctl run (e.g. valgrind)
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("HO_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(HERE))
BUILD_DIR = os.environ.get("HO_BUILD_DIR") or os.path.join(SOURCE_DIR,
                                                           "build")
HOCTL = os.path.join(BUILD_DIR, "bin", "hoctl")
WRAP = shlex.split(os.environ.get("HO_WRAP", ""))
UNDER_VALGRIND = os.environ.get("HO_UNDER_VALGRIND", "0") not in ("", "0")
EXAMPLES = os.path.join(SOURCE_DIR, "examples", "pytorch")
# The Python package (python/hyperoffload) as it is in the source tree, and
# the build tree's library for it (an installed one would win otherwise).
PYTHON = os.path.join(SOURCE_DIR, "python")
os.environ.setdefault("HO_LIBRARY", os.path.join(BUILD_DIR, "lib",
                                                 "libhyperoffload.so.0"))

# valgrind reports its own errors with this exit status (HoTest.cmake)
VALGRIND_ERROR = 99


class HoctlError(AssertionError):
    pass


def hoctl(*args, expect=(0,)):
    """Run hoctl with args; return the CompletedProcess.  Fails the test
    when the exit status is not in `expect` (and always on a valgrind
    error)."""
    cmd = WRAP + [HOCTL] + [str(a) for a in args]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode == VALGRIND_ERROR and WRAP:
        raise HoctlError("valgrind reported errors for %s:\n%s"
                         % (" ".join(cmd), p.stderr))
    if expect is not None and p.returncode not in expect:
        raise HoctlError("%s exited %d (expected %s)\nstdout:\n%s\nstderr:\n"
                         "%s" % (" ".join(cmd), p.returncode, expect,
                                 p.stdout, p.stderr))
    return p


def hoctl_json(*args, expect=(0,)):
    """Run hoctl --json ...; return (exit status, parsed stdout)."""
    p = hoctl("--json", *args, expect=expect)
    return p.returncode, json.loads(p.stdout)


def no_result(p):
    """True when a `hoctl --json` run printed no result, only the error
    document every failure prints (docs/cli-schema.md)."""
    if not p.stdout.strip():
        return True
    doc = json.loads(p.stdout)
    return set(doc) == {"schema", "error"}


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def dump(doc, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)


class Scratch:
    """A temporary directory under the build tree, removed at exit."""

    def __init__(self):
        base = os.path.join(BUILD_DIR, "tmp")
        os.makedirs(base, exist_ok=True)
        self.dir = tempfile.mkdtemp(prefix="pytest-", dir=base)

    def path(self, name):
        return os.path.join(self.dir, name)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def require_hoctl():
    if not os.access(HOCTL, os.X_OK):
        sys.stderr.write("hoctl not built at %s\n" % HOCTL)
        sys.exit(1)
