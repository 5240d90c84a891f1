#!/usr/bin/python3
"""Structured journal fields (docs/admin.md): when stderr is the journal
stream (JOURNAL_STREAM names stderr's device:inode, the systemd
convention) the daemon logs with sd_journal_sendv, which writes one
datagram per record to /run/systemd/journal/socket, with MESSAGE=,
PRIORITY=, SYSLOG_IDENTIFIER=, and HO_SESSION=, HO_JOB=, HO_CODE= where
the record concerns a session, a job or an error.

There is no journald here (no systemd as PID 1): the test binds a
SOCK_DGRAM socket at that path itself, only when nothing is there, and
removes it (and the directory, when it made it) afterwards.  Skipped
(exit 77, CTest SKIP_RETURN_CODE) when the path is taken or cannot be
made."""

import os
import select
import socket
import sys
import threading
import time
import unittest

import opstest

import hyperoffload.binding as hob

JDIR = "/run/systemd/journal"
JSOCK = JDIR + "/socket"
MiB = 1 << 20


class Reader(threading.Thread):
    """Drains the socket as journald would (a full queue blocks the
    sender): every datagram as a dict of its fields, in .records."""

    def __init__(self, sock):
        super().__init__(daemon=True)
        self.sock = sock
        self.records = []
        self.lock = threading.Lock()
        self.stop = False

    def run(self):
        while not self.stop:
            r, _, _ = select.select([self.sock], [], [], 0.1)
            if not r:
                continue
            try:
                data = self.sock.recv(1 << 20)
            except OSError:
                return
            rec = {}
            for line in data.decode("utf-8", "replace").split("\n"):
                if "=" in line:
                    k, v = line.split("=", 1)
                    rec[k] = v
            with self.lock:
                self.records.append(rec)

    def wait_for(self, want, timeout=10):
        deadline = time.time() + timeout
        while True:
            with self.lock:
                recs = list(self.records)
            if want(recs) or time.time() > deadline:
                return recs
            time.sleep(0.05)


class JournalTest(unittest.TestCase):
    def setUp(self):
        self.made_dir = self.bound = False
        self.sock = None
        if os.path.lexists(JSOCK):
            raise unittest.SkipTest(JSOCK + " exists (a real journald?)")
        try:
            if not os.path.isdir(JDIR):
                os.makedirs(JDIR)
                self.made_dir = True
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self.sock.bind(JSOCK)
            self.bound = True
            # runs even when the rest of setUp fails
            self.addCleanup(self.cleanup_socket)
        except OSError as e:
            self.cleanup_socket()   # removes only what this test made
            raise unittest.SkipTest("cannot bind %s: %s" % (JSOCK, e))
        self.reader = Reader(self.sock)
        self.reader.start()
        self.s = opstest.Scratch()
        self.stderr = self.s.path("stderr.log")
        open(self.stderr, "w").close()
        st = os.stat(self.stderr)
        env = dict(os.environ)
        env["JOURNAL_STREAM"] = "%d:%d" % (st.st_dev, st.st_ino)
        self.d = opstest.Daemon(self.s, env=env, stderr=self.stderr)

    def cleanup_socket(self):
        if self.sock:
            self.sock.close()
            self.sock = None
        if self.bound:
            self.bound = False
            try:
                os.unlink(JSOCK)
            except FileNotFoundError:
                pass
        if self.made_dir:
            try:
                os.rmdir(JDIR)
            except OSError:
                pass

    def tearDown(self):
        rc = self.d.stop()
        self.reader.stop = True
        self.reader.join(5)
        self.s.close()
        self.assertEqual(rc, 0)

    def test_quota_refusal_carries_fields(self):
        with hob.Client.connect(self.d.sock, "journal-client") as c:
            c.register(job="jq", device=0, hbm_budget=0)
            sid = str(c.session_id)
            self.d.hoctl("quota", "set", "--job", "jq", "--tier", "ddr", "1M")
            with self.assertRaises(hob.HoError):
                c.extent_alloc(2 * MiB)

            def refused(recs):
                return any(r.get("HO_CODE") == "HO_E_QUOTA" for r in recs)
            recs = self.reader.wait_for(refused)
        self.assertTrue(refused(recs), "no HO_CODE=HO_E_QUOTA record in %r"
                        % recs)
        r = [r for r in recs if r.get("HO_CODE") == "HO_E_QUOTA"][0]
        self.assertEqual(r.get("HO_SESSION"), sid)
        self.assertEqual(r.get("HO_JOB"), "jq")
        self.assertEqual(r.get("PRIORITY"), "6")
        self.assertEqual(r.get("SYSLOG_IDENTIFIER"), "hyperoffloadd")
        self.assertIn("alloc of %d bytes refused" % (2 * MiB),
                      r.get("MESSAGE", ""))
        self.assertIn("quota", r.get("MESSAGE", ""))
        # the registration: session and job, no code
        reg = [r for r in recs if "registered" in r.get("MESSAGE", "")]
        self.assertEqual(len(reg), 1, recs)
        self.assertEqual(reg[0].get("HO_SESSION"), sid)
        self.assertEqual(reg[0].get("HO_JOB"), "jq")
        self.assertNotIn("HO_CODE", reg[0])
        # plain records have no HO_ fields
        ready = [r for r in recs if r.get("MESSAGE", "").startswith("ready:")]
        self.assertEqual(len(ready), 1, recs)
        self.assertFalse([k for k in ready[0] if k.startswith("HO_")])
        # everything went to the journal, nothing to the stream
        self.assertNotIn("refused", opstest.read(self.stderr))


if __name__ == "__main__":
    r = unittest.main(verbosity=2, exit=False).result
    if r.skipped and not r.failures and not r.errors:
        sys.exit(77)
    sys.exit(0 if r.wasSuccessful() else 1)
