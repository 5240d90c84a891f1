#!/usr/bin/python3
"""Every shell example of README.md runs and exits 0.

The shell examples are the fenced code blocks whose info string is empty
or one of sh, bash, shell (a ```python block is not a shell example: it is
a fragment that needs a model, and tests/python/test_package.py runs the
same three lines).  The line before a block may carry a marker, an HTML
comment that GitHub does not show:

  <!-- readme-test: daemon -->        the block needs a running daemon:
                                      the test starts build/bin/hyperoffloadd
                                      on its embedded default in the block's
                                      directory and stops it afterwards
                                      (SIGTERM; it must exit 0)
  <!-- readme-test: skip (REASON) --> not run; REASON must start with
                                      "install step" (scripts/test, the
                                      Debian packages, pip into a venv):
                                      only install steps are skipped, and
                                      the test lists them

Each block runs as one `bash -e` script in a fresh temporary directory, so
every command in it must exit 0.  Paths the README gives from the
repository root are resolved: build/ is the build tree under test
(HO_BUILD_DIR), scripts/, systemd/, python/, examples/ and docs/ the source
tree.  HO_BUILD points scripts/demo at the build tree under test,
HO_DEMO_NO_BUILD=1 makes it skip its own install step (scripts/install-deps
and scripts/build: the tree under test is built already, and a package
build must not reconfigure it) and HO_DEMO_STEPS=3 keeps it short (knobs
docs/demo.md documents); the rest of it, daemon, clients, pictures, runs.

Environment: HO_BUILD_DIR, HO_SOURCE_DIR.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("HO_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(HERE))
BUILD_DIR = os.path.abspath(os.environ.get("HO_BUILD_DIR") or
                            os.path.join(SOURCE_DIR, "build"))
README = os.path.join(SOURCE_DIR, "README.md")
SHELL_LANGS = ("", "sh", "bash", "shell")
MARKER = re.compile(r"^<!--\s*readme-test:\s*(daemon|skip\s*\((.*)\))\s*-->$")


def blocks():
    """[(line number, info string, marker or None, skip reason, text)]."""
    out = []
    with open(README, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        prev = start - 1
        while prev >= 0 and not lines[prev].strip():
            prev -= 1
        marker = reason = None
        mm = MARKER.match(lines[prev].strip()) if prev >= 0 else None
        if mm:
            marker = "daemon" if mm.group(1) == "daemon" else "skip"
            reason = mm.group(2)
        out.append((start + 1, lang, marker, reason,
                    "\n".join(lines[start + 1:j])))
        i = j + 1
    return out


def resolve(text):
    """build/ -> the build tree, scripts/ etc. -> the source tree."""
    def sub(m):
        top = m.group(1)
        base = BUILD_DIR if top == "build" else os.path.join(SOURCE_DIR, top)
        return m.group(0)[:-len(top) - 1] + base + "/"
    return re.sub(r"(?:^|(?<=[\s=\"']))(build|scripts|systemd|python|"
                  r"examples|docs)/", sub, text, flags=re.M)


def start_daemon(cwd):
    sock = os.path.join(cwd, ".hyperoffload", "hyperoffloadd.sock")
    log = open(os.path.join(cwd, "daemon.log"), "w")
    p = subprocess.Popen([os.path.join(BUILD_DIR, "bin", "hyperoffloadd")],
                         cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    hoctl = os.path.join(BUILD_DIR, "bin", "hoctl")
    for _ in range(300):
        if p.poll() is not None:
            raise AssertionError("the daemon exited during start")
        if os.path.exists(sock) and subprocess.run(
                [hoctl, "--socket", sock, "version"], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL).returncode == 0:
            return p
        time.sleep(0.1)
    p.kill()
    raise AssertionError("the daemon's socket did not answer in 30 s")


class ReadmeExamples(unittest.TestCase):
    def test_blocks_found(self):
        shell = [b for b in blocks() if b[1] in SHELL_LANGS]
        # the quick start, the CLI examples, the packages: at least these
        self.assertGreaterEqual(len(shell), 6)
        skipped = [b for b in shell if b[2] == "skip"]
        for line, _, _, reason, _ in skipped:
            self.assertTrue(reason.startswith("install step"),
                            "README.md:%d is skipped but is not an install "
                            "step: %s" % (line, reason))
        print("skipped (install steps): %s" % ", ".join(
            "README.md:%d" % b[0] for b in skipped), file=sys.stderr)

    def test_run_every_block(self):
        env = dict(os.environ, HO_BUILD=BUILD_DIR, HO_DEMO_STEPS="3",
                   HO_DEMO_NO_BUILD="1")
        env.pop("HO_SOCKET", None)
        ran = 0
        for line, lang, marker, reason, text in blocks():
            if lang not in SHELL_LANGS or marker == "skip":
                continue
            with self.subTest(block="README.md:%d" % line):
                cwd = tempfile.mkdtemp(prefix="ho-readme-")
                daemon = None
                try:
                    if marker == "daemon":
                        daemon = start_daemon(cwd)
                    script = resolve(text)
                    p = subprocess.run(["bash", "-e", "-c", script], cwd=cwd,
                                       env=env, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT,
                                       universal_newlines=True, timeout=900)
                    self.assertEqual(p.returncode, 0,
                                     "README.md:%d exited %d:\n%s\n--- "
                                     "output:\n%s" % (line, p.returncode,
                                                      script, p.stdout[-6000:]))
                    ran += 1
                finally:
                    if daemon:
                        daemon.send_signal(signal.SIGTERM)
                        rc = daemon.wait(timeout=60)
                        self.assertEqual(rc, 0, "the daemon exited %d" % rc)
                    shutil.rmtree(cwd, ignore_errors=True)
        self.assertGreaterEqual(ran, 3)


if __name__ == "__main__":
    unittest.main(verbosity=2)
