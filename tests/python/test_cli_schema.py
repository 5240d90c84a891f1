#!/usr/bin/python3
"""Every `hoctl --json` document, results and errors alike, validates
against docs/cli-schema.json (docs/cli-schema.md).

A real hyperoffloadd is started on a scratch socket with a registered
session holding an extent and an HBM grant, so that status, clients,
quota and health have rows to print; the offline nouns run on a small
generated trace, its plan and a two-client node.  Then the errors: the
daemon down, a bad flag, bad sizes, an unknown noun or column, a missing
file, a non-admin peer (when run as root).  Each run must print exactly
one JSON document on stdout (one per round under --watch) and it must
validate against the command's own definition in the schema and the
schema's top level; the exit status must be the one documented, and an
error document's code must equal it.

Runs with /usr/bin/python3 (Debian's python3-jsonschema).
"""

import json
import os
import subprocess
import sys
import time
import unittest

import jsonschema

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hotest  # noqa: E402

sys.path.insert(0, hotest.PYTHON)
from hyperoffload import binding  # noqa: E402

Daemon = getattr(hotest, "Daemon", None)
if Daemon is None:  # until hotest.py carries the shared Daemon
    from test_offload_session import Daemon  # noqa: E402

SCHEMA_PATH = os.path.join(hotest.SOURCE_DIR, "docs", "cli-schema.json")
DUMP = os.environ.get("HO_SCHEMA_DUMP", "")


def hoctl_nouns():
    """The nouns `hoctl --help` lists (two-space indented words)."""
    usage = hotest.hoctl("--help").stdout
    return {line.split()[0] for line in usage.splitlines()
            if line.startswith("  ") and not line.startswith("   ")
            and not line.lstrip().startswith("-")}


NOUNS = hoctl_nouns()


class CliSchemaTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        hotest.require_hoctl()
        # sanitizer build: this process (which loaded the library) runs
        # without leak checks, the hoctl it starts with them
        if "HO_DAEMON_ASAN_OPTIONS" in os.environ:
            os.environ["ASAN_OPTIONS"] = os.environ["HO_DAEMON_ASAN_OPTIONS"]
        with open(SCHEMA_PATH, encoding="utf-8") as f:
            cls.schema = json.load(f)
        cls.validator_class = jsonschema.validators.validator_for(cls.schema)
        cls.validator_class.check_schema(cls.schema)
        cls.s = hotest.Scratch()
        cls.daemon = Daemon(cls.s, name="schema")
        cls.sock = cls.daemon.sock
        cls.missing = cls.s.path("missing.sock")
        # a session with an extent and a grant: rows in every table
        cls.client = binding.Client.connect(cls.sock, "schema-client")
        cls.client.register(job="schema-job", device=0, hbm_budget=64 << 20)
        cls.extent = cls.client.extent_alloc(160 << 20)
        cls.seen = set()
        cls.nouns_run = set()
        cls.files()

    @classmethod
    def files(cls):
        cls.trace = cls.s.path("t.json")
        hotest.hoctl("trace", "gen", "train", "--layers", "2", "--hidden",
                     "256", "--heads", "4", "--ffn", "512", "--vocab", "500",
                     "--seq", "256", "--micro", "1", "--params", "host",
                     "--optimizer", "host", "--out", cls.trace)
        cls.sched = cls.s.path("s.json")
        hotest.hoctl("plan", "--trace", cls.trace, "--budget", "80%",
                     "--out", cls.sched)
        doc = hotest.load(cls.sched)
        # a schedule that prefetches a storage twice: invalid
        bad = dict(doc, actions=doc["actions"] + doc["actions"][:1] * 2)
        cls.bad_sched = cls.s.path("bad.json")
        hotest.dump(bad, cls.bad_sched)
        cls.node = cls.s.path("node.json")
        hotest.dump({"format": "hyperoffload-node", "version": 1,
                     "links": [{"name": "host", "h2d_gbps": 50.0,
                                "d2h_gbps": 50.0}],
                     "devices": [{"id": i, "name": "d%d" % i,
                                  "hbm_bytes": 1 << 34, "h2d_gbps": 25.0,
                                  "d2h_gbps": 25.0, "parent": "host"}
                                 for i in range(2)],
                     "ddr_bytes": 0}, cls.node)
        cls.workload = cls.s.path("wl.json")
        hotest.dump({"format": "hyperoffload-workload", "version": 1,
                     "clients": [{"name": "c%d" % i, "device": i,
                                  "trace": cls.trace, "schedule": cls.sched}
                                 for i in range(2)]}, cls.workload)

    @classmethod
    def tearDownClass(cls):
        cls.client.extent_free(cls.extent.id)
        cls.client.close()
        rc = cls.daemon.stop()
        cls.s.close()
        if rc != 0:
            raise AssertionError("daemon exited %d" % rc)

    # ------------------------------------------------------------ helpers
    def validate(self, doc, definition, what):
        """`doc` against $defs/<definition> and against the top level."""
        self.seen.add(definition)
        if DUMP == "raw":
            return
        sub = {"$schema": self.schema["$schema"],
               "$defs": self.schema["$defs"],
               "$ref": "#/$defs/" + definition}
        for s in (sub, self.schema):
            errors = sorted(self.validator_class(s).iter_errors(doc),
                            key=lambda e: list(e.path))
            self.assertFalse(errors, "%s: %s\n%s" % (
                what, "; ".join("%s: %s" % (list(e.path), e.message)
                                for e in errors[:5]),
                json.dumps(doc, indent=1)[:3000]))

    def run_json(self, definition, *args, expect=0, user=None, lines=1,
                 daemon=True):
        """hoctl --json [--socket S] args: exactly `lines` documents (one
        per line when more than one), each valid; returns the last."""
        argv = ["--json"] + (["--socket", self.sock] if daemon else [])
        argv += [str(a) for a in args]
        self.nouns_run.update(a for a in argv if a in NOUNS)
        what = "hoctl " + " ".join(argv)
        if user is None:
            p = hotest.hoctl(*argv, expect=(expect,))
        else:
            p = subprocess.run([hotest.HOCTL] + argv, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE,
                               universal_newlines=True, user=user)
            self.assertEqual(p.returncode, expect, what + p.stderr)
        if DUMP:
            sys.stderr.write("== %s (%d)\n%s" % (what, p.returncode,
                                                 p.stdout))
        if lines == 1:
            try:
                docs = [json.loads(p.stdout)]
            except ValueError as e:
                self.fail("%s: not one JSON document (%s):\n%r"
                          % (what, e, p.stdout))
        else:
            rows = p.stdout.splitlines()
            self.assertEqual(len(rows), lines, what + "\n" + p.stdout)
            docs = [json.loads(r) for r in rows]
        for d in docs:
            self.validate(d, definition, what)
            if "error" in d:
                self.assertEqual(d["error"]["code"], p.returncode, what)
                self.assertTrue(p.stderr.strip(), what + ": no sentence on "
                                "stderr")
        return docs[-1]

    def error(self, expect, *args, **kw):
        doc = self.run_json("error_document", *args, expect=expect, **kw)
        self.assertEqual(set(doc), {"schema", "error"})
        return doc["error"]

    # ------------------------------------------------------------ daemon
    def test_status(self):
        doc = self.run_json("status", "status")
        names = [t["name"] for t in doc["tiers"]]
        self.assertEqual(names, ["ddr", "flash0", "hbm0", "hbm1"])
        flash = doc["tiers"][1]
        self.assertTrue(flash["path"].endswith("schema-flash0"), flash)
        self.assertIsNone(doc["tiers"][0]["path"])
        self.assertGreaterEqual(doc["tiers"][0]["used"], 160 << 20)
        self.assertIsInstance(doc["uptime_us"], int)
        self.assertEqual(doc["devices"][0]["grants"][0]["bytes"], 64 << 20)
        sel = self.run_json("status", "status", "-o", "name,used")
        self.assertEqual(set(sel["tiers"][0]), {"name", "used"})
        self.run_json("status", "status", "--watch", "1", "--count", "2",
                      lines=2)

    def test_status_table_fits_100_columns(self):
        """With the daemon's files under /var/lib/hyperoffload (the
        scratch directory's name replaced by it), every line of `hoctl
        status` fits in 100 columns."""
        out = hotest.hoctl("--socket", self.sock, "status").stdout
        out = out.replace(self.s.dir, "/var/lib/hyperoffload")
        widest = max(len(line) for line in out.splitlines())
        sys.stderr.write("hoctl status: %d columns\n" % widest)
        self.assertLessEqual(widest, 100, out)
        self.assertIn("flash0", out)
        self.assertIn("/var/lib/hyperoffload/schema-flash0", out)

    def test_clients(self):
        doc = self.run_json("clients", "clients")
        self.assertEqual(len(doc["clients"]), 1)
        c = doc["clients"][0]
        self.assertEqual(c["job"], "schema-job")
        self.assertEqual(c["hbm_granted"], 64 << 20)
        self.assertIsInstance(c["connected_us"], int)
        self.run_json("clients", "clients", "list")
        self.run_json("clients", "clients", "--watch", "1", "--count", "2",
                      lines=2)

    def test_health(self):
        doc = self.run_json("health", "health")
        self.assertTrue(doc["healthy"])
        # 160 MiB of 256 MiB DDR in use: under 50% free is degraded (5)
        doc = self.run_json("health", "health", "--min-free", "50",
                            expect=5)
        self.assertEqual(doc["status"], "degraded")
        bad = [c for c in doc["checks"] if not c["ok"]]
        self.assertEqual([c["check"] for c in bad], ["tier ddr"])
        doc = self.run_json("health", "--socket", self.missing, "health",
                            expect=69, daemon=False)
        self.assertFalse(doc["healthy"])
        self.run_json("health", "health", "--watch", "1", "--count", "2",
                      lines=2)

    def test_quota(self):
        self.run_json("quota", "quota", "list")
        self.run_json("quota", "quota", "set", "--uid", "0", "--tier", "ddr",
                      "1M")
        doc = self.run_json("quota", "quota", "get", "--uid", "0", "--tier",
                            "ddr")
        self.assertEqual(doc["quotas"][0]["limit"], 1 << 20)
        self.run_json("quota", "quota", "set", "--job", "schema-job",
                      "--tier", "flash", "--", "2M")
        self.run_json("quota", "quota", "get", "--uid", "0")
        self.run_json("quota", "quota", "clear", "--uid", "0")
        doc = self.run_json("quota", "quota", "clear", "--job", "schema-job")
        self.run_json("quota", "quota", "list", "-o", "subject,tier")

    def test_version(self):
        doc = self.run_json("version", "version")
        self.assertEqual(doc["daemon"]["protocol_version"], 1)
        self.run_json("version_local", "--version", daemon=False)
        doc = self.run_json("version", "--socket", self.missing, "version",
                            expect=69, daemon=False)
        self.assertIsNone(doc["daemon"])
        self.assertEqual(doc["error"]["name"], "unreachable")

    # ------------------------------------------------------------ offline
    def test_trace(self):
        out = self.s.path("gen.pb")
        self.run_json("trace_gen", "trace", "gen", "train", "--layers", "1",
                      "--hidden", "128", "--heads", "2", "--ffn", "256",
                      "--vocab", "100", "--seq", "64", "--micro", "1",
                      "--out", out, daemon=False)
        self.run_json("trace_gen", "trace", "gen", "decode", "--model",
                      "llama3-8b", "--layers", "1", "--prompt", "64",
                      "--tokens", "2", "--batch", "1", "--out",
                      self.s.path("dec.json"), daemon=False)
        self.run_json("trace_gen", "trace", "gen", "random", "--seed", "3",
                      "--ops", "20", "--storages", "10", "--out",
                      self.s.path("rnd.json"), daemon=False)
        doc = self.run_json("trace_show", "trace", "show", self.trace,
                            daemon=False)
        self.assertIsInstance(doc["compute_us"], (int, float))
        self.run_json("convert", "trace", "convert", self.trace,
                      self.s.path("t2.pb"), daemon=False)
        self.run_json("convert", "schedule", "convert", self.sched,
                      self.s.path("s2.pb"), daemon=False)

    def test_plan(self):
        doc = self.run_json("plan", "plan", "--trace", self.trace,
                            "--budget", "80%", daemon=False)
        self.assertTrue(doc["feasible"])
        self.assertIsInstance(doc["planning_us"], int)
        doc = self.run_json("plan", "plan", "--trace", self.trace,
                            "--budget", "4096", expect=1, daemon=False)
        self.assertFalse(doc["feasible"])
        self.assertGreater(doc["min_budget"], 4096)
        self.assertEqual(doc["error"]["cause"], "HO_E_INFEASIBLE")
        doc = self.run_json("plan", "plan", "--trace", self.trace,
                            "--budget", "80%", "--bound", "full",
                            daemon=False)
        self.assertEqual(doc["bound"]["mode"], "full")
        doc = self.run_json("plan", "plan", "--trace", self.trace,
                            "--budget", "80%", "--bound", "off",
                            daemon=False)
        self.assertIsNone(doc["bound"])
        doc = self.run_json("plan", "plan", "--trace", self.trace,
                            "--curve", "budget", "--points", "3",
                            daemon=False)
        self.assertEqual(len(doc["points"]), 3)
        doc = self.run_json("plan", "plan", "--trace", self.trace,
                            "--curve", "bandwidth", "--budget", "80%",
                            "--scales", "0.5,1", "--bound", "off",
                            daemon=False)
        self.assertEqual(doc["axis"], "bandwidth")
        doc = self.run_json("plan", "plan", "--trace", self.trace,
                            "--budget", "80%", "--daemon")
        self.assertEqual(doc["bound"]["mode"], "fast")

    def test_schedule_check(self):
        doc = self.run_json("schedule_check", "schedule", "check", "--trace",
                            self.trace, "--schedule", self.sched,
                            daemon=False)
        self.assertTrue(doc["valid"])
        doc = self.run_json("schedule_check", "schedule", "check", "--trace",
                            self.trace, "--schedule", self.bad_sched,
                            expect=1, daemon=False)
        self.assertFalse(doc["valid"])

    def test_node(self):
        self.run_json("node_show", "node", "show", "--node", self.node,
                      daemon=False)
        doc = self.run_json("node_check", "node", "check", "--node",
                            self.node, "--workload", self.workload,
                            daemon=False)
        self.assertTrue(doc["valid"])
        # the daemon's arbiter has planned nothing yet (no session has a
        # plan): an error document naming that
        out = self.s.path("planned")
        err = self.error(1, "node", "workload", "--out", out)
        self.assertIn("not planned", err["message"])
        # a session with a plan enters the node workload: exported
        c = binding.Client.connect(self.sock, "schema-planner")
        try:
            c.register(job="schema-plan", device=1, hbm_budget=64 << 20)
            c.plan_request(binding.Trace.load(self.trace))
            deadline = time.time() + 30
            while hotest.hoctl("--socket", self.sock, "node", "workload",
                               "--out", out, expect=(0, 1)).returncode:
                self.assertLess(time.time(), deadline, "no re-plan")
                time.sleep(0.05)
            doc = self.run_json("node_workload", "node", "workload",
                                "--out", out)
            self.assertEqual(len(doc["clients"]), 1)
            self.assertTrue(doc["clients"][0]["name"].startswith(
                "schema-planner#"))
            doc = self.run_json("node_check", "node", "check", "--node",
                                doc["node"], "--workload", doc["workload"],
                                daemon=False)
            self.assertTrue(doc["valid"])
        finally:
            c.close()

    def test_metrics(self):
        doc = self.run_json("metrics", "metrics")
        self.assertIn("# TYPE", doc["text"])
        self.error(69, "--socket", self.missing, "metrics", daemon=False)

    def test_regions_and_store(self):
        doc = self.run_json("regions", "regions")
        self.assertEqual(doc["regions"], [])
        doc = self.run_json("store", "store")
        self.assertEqual(doc["entries"], [])
        self.assertEqual(doc["lookups"], 0)

    def test_admit(self):
        doc = self.run_json("admit", "admit", "--trace", self.trace,
                            "--device", "1", "--budget", "1G")
        self.assertTrue(doc["admissible"])
        self.assertEqual(doc["clients"][-1]["name"], "newcomer")
        self.error(2, "admit", "--device", "1")

    def test_node_plan(self):
        wl = self.s.path("wl-plan.json")
        hotest.dump({"format": "hyperoffload-workload", "version": 1,
                     "clients": [{"name": "c%d" % i, "device": i,
                                  "trace": self.trace,
                                  "budget_bytes": 1 << 30}
                                 for i in range(2)]}, wl)
        doc = self.run_json("node_plan", "node", "plan", "--node", self.node,
                            "--workload", wl, daemon=False)
        self.assertEqual(len(doc["clients"]), 2)

    # ------------------------------------------------------------ errors
    def test_errors_daemon_down(self):
        for args in (["status"], ["clients"], ["quota", "list"],
                     ["status", "-o", "name"]):
            e = self.error(69, "--socket", self.missing, *args, daemon=False)
            self.assertEqual(e["name"], "unreachable")
            self.assertEqual(e["cause"], "ENOENT")
            self.assertIn("missing.sock", e["message"])

    def test_errors_usage(self):
        cases = [["status", "--bogus"], ["--frobnicate", "status"],
                 ["frobnicate"], [], ["quota"],
                 ["quota", "set", "--uid", "0", "--tier", "tape", "2G"],
                 ["status", "-o", "nosuchcolumn"], ["--format", "xml",
                                                    "status"],
                 ["-o", "name", "plan"], ["version", "--watch", "1"],
                 ["status", "--watch", "0"], ["status", "--count", "2"],
                 ["plan", "--trace", self.trace, "--budget", "1.5"]]
        cases += [["trace"], ["trace", "gen"], ["schedule"], ["node"],
                  ["trace", "frob"], ["plan", "--bogus"]]
        for args in cases:
            e = self.error(2, *args)
            self.assertEqual(e["name"], "usage", args)
            # the reason, not a usage text
            self.assertNotIn("usage:", e["message"], args)
            self.assertLess(len(e["message"]), 300, args)
        e = self.error(2, "status", "-o", "nosuchcolumn")
        self.assertIn("CAPACITY", e["message"])  # the valid ones listed

    def test_errors_bad_sizes(self):
        for size, why in [("1.5", "fraction of a byte"),
                          ("15E", "over the limit"),
                          ("1T", "more than the ddr tier holds"),
                          ("2GB", "not a size"), ("+1", "no sign")]:
            e = self.error(2, "quota", "set", "--uid", "0", "--tier", "ddr",
                           size)
            self.assertIn(why, e["message"], size)
        # nothing was set: no limit (null), only the use
        doc = self.run_json("quota", "quota", "get", "--uid", "0", "--tier",
                            "ddr")
        self.assertTrue(all(q["limit"] is None for q in doc["quotas"]), doc)

    def test_errors_not_found(self):
        e = self.error(4, "trace", "show", self.s.path("nofile.json"),
                       daemon=False)
        self.assertEqual(e["name"], "not_found")
        e = self.error(4, "quota", "get", "--uid", "no-such-user-hoctl")
        # `--` ends option scanning: a file named like an option
        e = self.error(4, "trace", "show", "--", "--no-such-file.json",
                       daemon=False)
        self.assertIn("--no-such-file.json", e["message"])

    @unittest.skipUnless(os.geteuid() == 0, "needs root to run as nobody")
    def test_errors_permission(self):
        e = self.error(77, "status", user=65534)
        # the socket's directory (EACCES) or the daemon's admin check
        self.assertIn(e["cause"], ("EACCES", "HO_E_PERMISSION"))
        doc = self.run_json("health", "health", expect=77, user=65534)
        self.assertFalse(doc["healthy"])

    def test_zz_every_definition_used(self):
        """Each command definition in the schema was exercised (the tests
        run in name order, this one last)."""
        defs = set(self.schema["$defs"]) - set(
            self.schema.get("x-building-blocks", []))
        self.assertEqual(sorted(defs - self.seen), [])

    def test_zz_every_noun_tested(self):
        """Every noun hoctl lists in --help was run with --json here."""
        self.assertEqual(sorted(NOUNS - self.nouns_run), [])


COMPLETION = os.path.join(hotest.SOURCE_DIR, "hoctl", "hoctl.bash-completion")


class CompletionTest(unittest.TestCase):
    """hoctl/hoctl.bash-completion, sourced by bash with the two
    bash-completion helpers it uses stubbed: nouns, verbs, options and the
    -o columns it offers are hoctl's own (taken from hoctl's help and its
    error message listing the valid columns)."""

    def complete(self, line):
        words = line.split(" ")
        words[0] = hotest.HOCTL  # the completion asks this hoctl
        script = """
_init_completion() { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]};
  words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
_filedir() { COMPREPLY=(FILES); }
compopt() { :; }
complete() { :; }
source "$1"; shift
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
_hoctl
printf '%s\\n' "${COMPREPLY[@]}"
"""
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)  # sanitizer build: not into sed, awk
        p = subprocess.run(["bash", "-c", script, "bash", COMPLETION] + words,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        return sorted(x for x in p.stdout.split("\n") if x)

    def test_nouns_are_hoctls(self):
        self.assertEqual(set(self.complete("hoctl ")), NOUNS)
        self.assertEqual(self.complete("hoctl --json qu"), ["quota"])

    def test_verbs_and_options(self):
        self.assertEqual(self.complete("hoctl quota "),
                         ["clear", "get", "list", "set"])
        self.assertEqual(self.complete("hoctl quota set --tier "),
                         ["ddr", "flash", "hbm"])
        self.assertEqual(self.complete("hoctl --format "),
                         ["csv", "json", "table"])
        self.assertIn("--min-free", self.complete("hoctl health --"))
        self.assertIn("--watch", self.complete("hoctl status --"))
        self.assertEqual(self.complete("hoctl trace gen "),
                         ["decode", "random", "train"])
        self.assertEqual(self.complete("hoctl trace show "), ["FILES"])

    def test_columns_are_hoctls(self):
        for noun in ("status", "clients", "quota"):
            p = hotest.hoctl("--json", noun, *(["list"] if noun == "quota"
                                               else []),
                             "-o", "nosuch", expect=(2,))
            msg = json.loads(p.stdout)["error"]["message"]
            valid = msg.split("valid columns: ")[1].split(", ")
            got = self.complete("hoctl %s -o " % noun)
            self.assertEqual(sorted(set(got) - {"all"}), sorted(valid), noun)
        self.assertEqual(self.complete("hoctl status -o name,us"),
                         ["name,USED"])
        self.assertEqual(self.complete("hoctl clients -o +ag"), ["+AGE"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
