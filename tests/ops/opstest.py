"""Shared helpers of the operations tests (tests/ops): a real hyperoffloadd
in a scratch directory, a real replaying ho-demo-client, `hoctl metrics`,
and the Prometheus text parsed with Debian's python3-prometheus-client.

Environment (tests/ops/CMakeLists.txt): HO_BUILD_DIR, HO_SOURCE_DIR.
"""

import os
import socket
import subprocess
import sys
import time

from prometheus_client.parser import text_string_to_metric_families

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
# tests/python/hotest.py: SOURCE_DIR, BUILD_DIR, HO_LIBRARY of the build
# tree, Scratch, Daemon.text/stop, _die_with_parent
import hotest  # noqa: E402

SOURCE_DIR, BUILD_DIR = hotest.SOURCE_DIR, hotest.BUILD_DIR
BIN = os.path.join(BUILD_DIR, "bin")
DAEMON = os.path.join(BIN, "hyperoffloadd")
HOCTL = os.path.join(BIN, "hoctl")
CLIENT = os.path.join(BIN, "ho-demo-client")
sys.path.insert(0, hotest.PYTHON)

# hotest.TINY: a DDR limit of 4 MiB keeps most of its host copies on
# flash, so replays move bytes both ways.
TINY = hotest.TINY


def project_env(base=None):
    """The environment of the project's own programs: under a sanitizer
    build their ASAN_OPTIONS (leak checks on) instead of python's."""
    env = dict(base or os.environ)
    if "HO_DAEMON_ASAN_OPTIONS" in env:
        env["ASAN_OPTIONS"] = env["HO_DAEMON_ASAN_OPTIONS"]
    return env


def system_env():
    """The environment of system tools (node_exporter, curl): without the
    sanitizer runtimes a sanitizer build preloads into python."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


_die_with_parent = hotest._die_with_parent


def Scratch():
    """hotest's scratch directory, named ops-*."""
    return hotest.Scratch(prefix="ops-")


def _listening(path, proc, tries=300):
    """True once `path` accepts a connection (tries x 50 ms), False when
    proc exits first or it never does."""
    for _ in range(tries):
        if proc.poll() is not None:
            return False
        with socket.socket(socket.AF_UNIX) as s:
            if s.connect_ex(path) == 0:
                return True
        time.sleep(0.05)
    return False


class Daemon(hotest.Daemon):
    """hyperoffloadd on a socket of the scratch directory; extra flags in
    `args`, its stderr in `stderr` (a path, appended to) or <name>.log.
    Started here (--ddr-lock=no, the daemon's own log level, `env`, no
    HO_WRAP); text() and stop() are hotest.Daemon's."""

    def __init__(self, scratch, args=(), name="hod", env=None, stderr=None):
        self.sock = scratch.path(name + ".sock")
        self.log_path = stderr or scratch.path(name + ".log")
        cmd = [DAEMON, "--socket=" + self.sock,
               "--state-dir=" + scratch.path(name + "-state"),
               "--flash-paths=" + scratch.path(name + "-flash0"),
               "--ddr-capacity=256M", "--flash-capacity=64M", "--devices=2",
               "--hbm-capacity=1G", "--ddr-lock=no"] + list(args)
        self.log = open(self.log_path, "a")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log,
                                     env=project_env(env),
                                     preexec_fn=_die_with_parent)
        if not _listening(self.sock, self.proc):
            self.proc.kill()
            raise AssertionError("daemon did not come up (exit %s):\n%s"
                                 % (self.proc.poll(), self.text()))

    def hoctl(self, *args, expect=0):
        p = subprocess.run([HOCTL, "--socket", self.sock] + list(args),
                           env=project_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=60)
        if expect is not None and p.returncode != expect:
            raise AssertionError("hoctl %s exited %d:\n%s%s"
                                 % (" ".join(args), p.returncode, p.stdout,
                                    p.stderr))
        return p

    def metrics_text(self):
        return self.hoctl("metrics").stdout

    def metrics(self):
        return parse(self.metrics_text())


def start_client(daemon, scratch, steps, job="ops", device=0,
                 ddr_limit="4M", name="client"):
    """A replaying ho-demo-client (TINY model); returns the Popen."""
    log = open(scratch.path(name + ".log"), "w")
    cmd = [CLIENT, "--socket", daemon.sock, "--device", str(device),
           "--job", job, "--steps", str(steps), "--ddr-limit",
           ddr_limit] + TINY
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                         env=project_env(), preexec_fn=_die_with_parent)
    log.close()  # the child has its own copy
    return p


def parse(text):
    """{sample name: [(labels dict, value)]} of a Prometheus text; the
    parser of python3-prometheus-client (raises on a malformed text)."""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, []).append((dict(s.labels), s.value))
    return out


def value(m, name, **labels):
    """The one sample of `name` whose labels include `labels`."""
    hits = [v for ls, v in m.get(name, [])
            if all(ls.get(k) == str(x) for k, x in labels.items())]
    if len(hits) != 1:
        raise AssertionError("%s%s: %d samples (%s)"
                             % (name, labels, len(hits), m.get(name)))
    return hits[0]


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()
