"""Node arbitration in the daemon (daemon/arbitrate.c, docs/node.md
"Re-planning and admission"), end to end: a real hyperoffloadd with four
devices on two emulated switches of 1 GB/s, real ho-demo-client
processes (tests/python/hotest.py TINY model), hoctl.

  admission        hoctl admit predicts a newcomer beside a running client
                   (admissible, rows for both); a budget above the device
                   is refused naming the device; a newcomer whose
                   prediction exceeds its max_slowdown is refused, by
                   hoctl admit and by registration (ho-demo-client
                   --max-slowdown: HO_E_BUDGET with the same reason); the
                   admitted newcomer then joins and the re-plan's
                   predictions (the node judge on the admitted workload)
                   agree with the admission's within 1%.
  join_leave       clients join and leave while a sampler polls hoctl
                   clients every 20 ms: the DDR limits granted never sum
                   above the pool nor budgets above a device, the grants
                   re-plan on every join and leave, every client switches
                   to the arbiter's plans (SWITCHED) and verifies its data.
  killed           a client SIGKILLed while the others re-plan: the others
                   finish with their data verified, the daemon reclaims
                   the session and re-plans the rest.
  killed_pending   the same where it matters most: a client stopped
                   (SIGSTOP) before it confirms a shrinking grant holds
                   back a newcomer's growing one (its DDR limit stays
                   deferred, the stopped client's grant pending); SIGKILLed
                   there, it is dropped, the others are re-planned, the
                   newcomer gets its DDR limit, nothing stays pending, and
                   both survivors verify their data.
  flash_shares     two clients of weights 1 and 3 on a DDR pool smaller
                   than their host copies, both staging through flash at
                   once: each one's flash share is weight x (host copies
                   - DDR limit) over the sum (docs/runtime.md "Flash
                   bandwidth"), its staging plan is made for it (within
                   the re-plan slack), and the one left alone is
                   re-planned for the whole flash bandwidth.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python"))
import hotest  # noqa: E402

BIN = os.path.join(hotest.BUILD_DIR, "bin")
DEMO = os.path.join(BIN, "ho-demo-client")
DDR = 256 << 20
HBM = 1 << 30
NODE = ["--devices=4", "--device-gbps=1", "--switch-gbps=1",
        "--host-gbps=2"]


def clients(d):
    out = hotest.hoctl("--socket", d.sock, "clients", "--json").stdout
    return json.loads(out)["clients"]


def admit(d, *args, expect=(0, 1)):
    p = hotest.hoctl("--socket", d.sock, "admit", "--json", *args,
                     expect=expect)
    return p.returncode, json.loads(p.stdout)


def start_client(d, s, dev, steps, *extra, name=None):
    log = open(s.path("client%s.log" % (name or dev)), "w")
    p = subprocess.Popen(
        [DEMO, "--socket", d.sock, "--device", str(dev), "--job",
         "j%d" % dev, "--steps", str(steps)] + hotest.TINY + list(extra),
        stdout=log, stderr=subprocess.STDOUT)
    p.log_path = log.name
    p.log_file = log
    return p


def finish(p, timeout=240):
    rc = p.wait(timeout)
    p.log_file.close()
    with open(p.log_path) as f:
        text = f.read()
    return rc, text


def wait_for(cond, what, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def arb_of(d, pid):
    for c in clients(d):
        if c["pid"] == pid and c.get("arb"):
            return c
    return None


def test_admission(s):
    d = hotest.Daemon(s, "adm", ddr="256M", extra=NODE)
    try:
        trace = s.path("a.trace.json")
        a = start_client(d, s, 0, 400, "--save-trace", trace)
        ca = wait_for(lambda: (lambda c: c if c and c["arb"]["epoch"] > 0
                               else None)(arb_of(d, a.pid)),
                      "client 0 in the node workload")
        budget = ca["arb"]["budget_bytes"]
        # accepted: a newcomer of the same trace on device 1 (switch sw0)
        rc, r = admit(d, "--trace", trace, "--device", "1", "--budget",
                      str(budget), "--name", "b")
        assert rc == 0 and r["admissible"], r
        assert len(r["clients"]) == 2, r
        old, new = r["clients"]
        assert old["session_id"] == ca["session_id"], r
        assert old["before_step_us"] > 0 and new["after_step_us"] > 0, r
        assert new["budget_bytes"] == budget, r
        # refused: a budget above the device's HBM
        rc, r = admit(d, "--trace", trace, "--device", "1", "--budget",
                      "2G")
        assert rc == 1 and not r["admissible"], r
        assert any("device" in x for x in r["reasons"]), r
        # refused: the newcomer's prediction above its max_slowdown (the
        # tiny model cannot hide all its copies at 1.000001x compute)
        rc, r = admit(d, "--trace", trace, "--device", "1", "--budget",
                      str(budget), "--max-slowdown", "1.000001")
        slow = r["clients"][-1]["slowdown"] if r["clients"] else None
        assert slow is not None and slow > 1.000001, r
        assert rc == 1 and not r["admissible"], r
        assert any("max_slowdown" in x for x in r["reasons"]), r
        # the same refusal at registration (HO_E_BUDGET, the reason)
        b = start_client(d, s, 1, 2, "--max-slowdown", "1.000001", name="r")
        rc, text = finish(b)
        assert rc != 0, text
        assert "max_slowdown" in text and "admission refused" in text, text
        # the admitted newcomer joins: the re-plan's figures are the
        # prediction (the node judge on the admitted workload) within 1%
        rc, pred = admit(d, "--trace", trace, "--device", "1", "--budget",
                         str(budget), "--name", "b")
        assert rc == 0, pred
        b = start_client(d, s, 1, 400, "--trace", trace, name="b")

        def both():
            # re-planned with the newcomer (a later epoch than the one
            # client 0 had alone), every grant applied
            cs = [c for c in clients(d) if c.get("arb")]
            if len(cs) == 2 and all(c["arb"]["epoch"] > ca["arb"]["epoch"]
                                    and not c["arb"]["pending"]
                                    for c in cs):
                return cs
            return None
        cs = wait_for(both, "both clients granted one epoch")
        for row, c in zip(pred["clients"], cs):
            got = c["arb"]["predicted_step_us"]
            want = row["after_step_us"]
            assert abs(got - want) <= 0.01 * want, (row, c)
            got = c["arb"]["predicted_exposed_us"]
            want = row["after_exposed_us"]
            assert abs(got - want) <= 0.01 * max(want, 1.0), (row, c)
        judge_admitted(d, s, pred, b.pid)
        for p in (a, b):
            p.send_signal(signal.SIGTERM)
            finish(p)
    finally:
        assert d.stop() == 0


def judge_admitted(d, s, pred, new_pid):
    """The workload the daemon planned once the newcomer joined, exported
    (hoctl node workload) and run by the node judge (hoctl node check)
    and by the independent checker (tests/python/node_checker.py): each
    client's step time and exposure are the admission's prediction
    within 1%."""
    out = s.path("planned")
    w = json.loads(hotest.hoctl("--socket", d.sock, "node", "workload",
                                "--out", out, "--json").stdout)
    assert len(w["clients"]) == 2, w
    with open(w["workload"]) as f:
        doc = json.load(f)
    assert doc["format"] == "hyperoffload-workload", doc
    for c in doc["clients"]:
        for k in ("budget_bytes", "planned_h2d_gbps", "planned_d2h_gbps",
                  "ddr_limit_bytes", "predicted", "schedule"):
            assert k in c, (k, c)
    new_sid = [c for c in clients(d) if c["pid"] == new_pid][0]["session_id"]
    # node check exits 1 when the workload's predicted figures (the
    # daemon's) differ from its judge's by more than 0.1%
    judged = json.loads(hotest.hoctl("--json", "node", "check", "--node",
                                     w["node"], "--workload", w["workload"])
                        .stdout)
    assert judged["valid"] and all(c["predicted_matches"]
                                   for c in judged["clients"]), judged
    chk = subprocess.run(
        ["/usr/bin/python3", os.path.join(hotest.SOURCE_DIR, "tests",
                                          "python", "node_checker.py"),
         w["node"], w["workload"]], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, universal_newlines=True, timeout=600)
    assert chk.returncode == 0, chk.stderr
    indep = json.loads(chk.stdout)
    for row in pred["clients"]:
        sid = row["session_id"] or new_sid
        i = [k for k, c in enumerate(w["clients"])
             if c["session_id"] == sid]
        assert len(i) == 1, (row, w)
        i = i[0]
        for fig in (judged["clients"][i], indep["clients"][i]):
            got, want = fig["step_time_us"], row["after_step_us"]
            assert abs(got - want) <= 0.01 * want, (row, fig)
            got, want = fig["exposed_us"], row["after_exposed_us"]
            assert abs(got - want) <= 0.01 * max(want, 1.0), (row, fig)


def sample(d, stop, bad, seen):
    while not stop.is_set():
        try:
            cs = clients(d)
        except hotest.HoctlError:
            continue
        ddr = sum(c["arb"]["ddr_limit_bytes"] for c in cs if c.get("arb"))
        per_dev = {}
        for c in cs:
            if c.get("arb"):
                per_dev[c["device"]] = (per_dev.get(c["device"], 0) +
                                        c["arb"]["budget_bytes"])
                seen.add(c["arb"]["epoch"])
        if ddr > DDR:
            bad.append("DDR limits %d above the pool %d: %r" % (ddr, DDR, cs))
        for dev, b in per_dev.items():
            if b > HBM:
                bad.append("device %d granted %d above %d" % (dev, b, HBM))
        time.sleep(0.02)


def test_join_leave(s):
    d = hotest.Daemon(s, "jl", ddr="256M", extra=NODE)
    stop = threading.Event()
    bad, seen = [], set()
    t = threading.Thread(target=sample, args=(d, stop, bad, seen))
    t.start()
    try:
        a = start_client(d, s, 0, 30)
        wait_for(lambda: arb_of(d, a.pid), "client 0 in the workload")
        b = start_client(d, s, 1, 8)
        c = start_client(d, s, 2, 8)
        for p in (b, c):
            rc, text = finish(p)
            assert rc == 0 and "verified=1" in text, text
        # after they left, client 0 is re-planned alone again: its DDR
        # limit is the whole pool's share of one client
        def alone():
            x = arb_of(d, a.pid)
            return x if x and not x["arb"]["pending"] and len(
                [c for c in clients(d) if c.get("arb")]) == 1 else None
        x = wait_for(alone, "client 0 re-planned alone")
        assert x["arb"]["switched_epoch"] > 0, x
        rc, text = finish(a)
        assert rc == 0 and "verified=1" in text, text
    finally:
        stop.set()
        t.join()
        log = d.text()
        assert d.stop() == 0
    assert not bad, bad[:3]
    assert len(seen) >= 3, seen  # join, joins, leaves
    assert log.count("plan ready") >= 4, log


def test_killed(s):
    d = hotest.Daemon(s, "kill", ddr="256M", extra=NODE)
    try:
        a = start_client(d, s, 0, 20)
        b = start_client(d, s, 1, 400)
        wait_for(lambda: arb_of(d, a.pid) and arb_of(d, b.pid),
                 "both in the workload")
        c = start_client(d, s, 2, 12)      # a join: a re-plan starts ...
        time.sleep(0.05)
        b.send_signal(signal.SIGKILL)      # ... and b dies during it
        finish(b)
        for p in (a, c):
            rc, text = finish(p)
            assert rc == 0 and "verified=1" in text, text
        assert not [x for x in clients(d) if x["pid"] == b.pid]
    finally:
        log = d.text()
        assert d.stop() == 0
    assert "arbiter: epoch" in log, log


def by_pid(d):
    return {c["pid"]: c for c in clients(d) if c.get("arb")}


def test_killed_pending(s):
    d = hotest.Daemon(s, "kp", ddr="256M", extra=NODE)
    try:
        a = start_client(d, s, 0, 200)
        b = start_client(d, s, 1, 400)

        def settled():
            g = by_pid(d)
            return all(p.pid in g and not g[p.pid]["arb"]["pending"] and
                       g[p.pid]["arb"]["switched_epoch"] > 0
                       for p in (a, b))
        wait_for(settled, "a and b switched to their shared grants")
        b.send_signal(signal.SIGSTOP)   # it cannot confirm a shrink now
        c = start_client(d, s, 2, 60)

        def held_back():
            g = by_pid(d)
            if c.pid not in g or b.pid not in g:
                return None
            return g if g[b.pid]["arb"]["pending"] else None
        g = wait_for(held_back, "b's shrink pending after c joined")
        # c's DDR limit (a raise from none) waits for b's confirmation
        for _ in range(10):
            g = by_pid(d)
            assert g[b.pid]["arb"]["pending"], g
            assert g[c.pid]["arb"]["ddr_limit_bytes"] == 0, g
            time.sleep(0.05)
        epoch = max(x["arb"]["epoch"] for x in g.values())
        b_sid = g[b.pid]["session_id"]
        b.send_signal(signal.SIGKILL)
        finish(b)

        def replanned():
            g = by_pid(d)
            if b.pid in g or not all(p.pid in g for p in (a, c)):
                return None
            if any(g[p.pid]["arb"]["pending"] or
                   g[p.pid]["arb"]["epoch"] <= epoch for p in (a, c)):
                return None
            return g if g[c.pid]["arb"]["ddr_limit_bytes"] > 0 else None
        g = wait_for(replanned, "a and c re-planned without b")
        assert sum(x["arb"]["ddr_limit_bytes"] for x in g.values()) <= DDR
        for p in (a, c):
            rc, text = finish(p)
            assert rc == 0 and "verified=1" in text, text
    finally:
        log = d.text()
        assert d.stop() == 0
    assert [l for l in log.splitlines()
            if "session %d (" % b_sid in l and "dropped" in l], log


def replays(d):
    return {c["session_id"]: c for c in clients(d)
            if c.get("runtime") and c.get("arb")}


def test_flash_shares(s):
    # 2 x 6.4 MiB of host copies on an 8 MiB pool: 4 MiB limits each
    d = hotest.Daemon(s, "fs", ddr="8M", extra=NODE)
    try:
        a = start_client(d, s, 0, 60, "--weight", "1")
        b = start_client(d, s, 1, 30, "--weight", "3")

        def staging():
            cs = replays(d)
            if len(cs) != 2:
                return None
            for c in cs.values():
                rt = c["runtime"]
                if not (rt["flash_share"] > 0 and rt["flash_in_bytes"] > 0
                        and abs(rt["flash_planned_share"] -
                                rt["flash_share"]) <=
                        0.1 * rt["flash_share"]):
                    return None
            return cs
        cs = wait_for(staging, "both clients staging through flash")
        demand = {sid: c["arb"]["weight"] *
                  (c["runtime"]["host_copies_bytes"] -
                   c["runtime"]["ddr_limit_bytes"])
                  for sid, c in cs.items()}
        assert all(v > 0 for v in demand.values()), cs
        total = sum(demand.values())
        for sid, c in cs.items():
            want = demand[sid] / total
            assert abs(c["runtime"]["flash_share"] - want) <= 1e-9, (want, c)
        by_pid = {c["pid"]: c for c in cs.values()}
        wa = by_pid[a.pid]["runtime"]["flash_share"]
        wb = by_pid[b.pid]["runtime"]["flash_share"]
        assert wb > 2 * wa, (wa, wb)   # weight 3 against 1
        rc, text = finish(b)
        assert rc == 0 and "verified=1" in text, text

        def alone():
            c = [x for x in replays(d).values() if x["pid"] == a.pid]
            rt = c[0]["runtime"] if c else None
            return rt if rt and rt["flash_share"] == 1.0 and \
                rt["flash_planned_share"] == 1.0 else None
        wait_for(alone, "client 0 re-planned for the whole flash bandwidth")
        rc, text = finish(a)
        assert rc == 0 and "verified=1" in text and "flash_in=0" not in \
            text, text
    finally:
        log = d.text()
        assert d.stop() == 0
    assert "of the flash bandwidth" in log, log


def main():
    if not os.path.exists(DEMO):
        print("ho-demo-client not built")
        return 1
    for test in (test_admission, test_join_leave, test_killed,
                 test_killed_pending, test_flash_shares):
        s = hotest.Scratch("node-replan-")
        try:
            test(s)
            print("ok:", test.__name__)
        finally:
            s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
