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

# A small model for ho-demo-client (tests/e2e TINY): ~6 MiB of host
# copies; a DDR limit of 4 MiB keeps most of them on flash.
TINY = ["--layers", "2", "--hidden", "128", "--heads", "4", "--ffn", "256",
        "--vocab", "512", "--seq", "64", "--mbs", "2", "--micro", "2",
        "--tflops", "0.05", "--hbm-gbps", "1", "--link-gbps", "1",
        "--budget-ratio", "0.6"]

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

    def __init__(self, prefix="pytest-"):
        base = os.path.join(BUILD_DIR, "tmp")
        os.makedirs(base, exist_ok=True)
        self.dir = tempfile.mkdtemp(prefix=prefix, dir=base)

    def path(self, name):
        return os.path.join(self.dir, name)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def require_hoctl():
    if not os.access(HOCTL, os.X_OK):
        sys.stderr.write("hoctl not built at %s\n" % HOCTL)
        sys.exit(1)


# ------------------------------------------------------------ the daemon
DAEMON = os.path.join(BUILD_DIR, "bin", "hyperoffloadd")
PR_SET_PDEATHSIG = 1


def _die_with_parent():
    import ctypes
    import signal
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Daemon:
    """hyperoffloadd on a socket in a scratch directory (under HO_WRAP,
    i.e. valgrind, when set); `extra` flags come after the defaults and
    override them; stop() sends SIGTERM and returns the exit status."""

    def __init__(self, scratch, name="hod", ddr="256M", extra=()):
        import socket
        import time
        self.sock = scratch.path(name + ".sock")
        self.log_path = scratch.path(name + ".log")
        args = WRAP + [
            DAEMON, "--socket=" + self.sock,
            "--state-dir=" + scratch.path(name + "-state"),
            "--flash-paths=" + scratch.path(name + "-flash0"),
            "--ddr-capacity=" + ddr, "--flash-capacity=64M", "--devices=2",
            "--hbm-capacity=1G", "--log-level=debug"] + list(extra)
        env = dict(os.environ)
        if "HO_DAEMON_ASAN_OPTIONS" in env:  # sanitizer build: leak checks
            env["ASAN_OPTIONS"] = env["HO_DAEMON_ASAN_OPTIONS"]
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(args, stdout=self.log,
                                     stderr=subprocess.STDOUT, env=env,
                                     preexec_fn=_die_with_parent)
        deadline = time.time() + (120 if UNDER_VALGRIND else 15)
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("daemon exited %d:\n%s"
                                     % (self.proc.returncode, self.text()))
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(self.sock)
                return
            except OSError:
                time.sleep(0.05)
        self.proc.kill()
        raise AssertionError("daemon did not come up:\n" + self.text())

    def text(self):
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def stop(self):
        import signal
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(300 if UNDER_VALGRIND else 30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.log.close()
        return rc
