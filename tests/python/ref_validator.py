#!/usr/bin/python3
"""An independent reference implementation of the schedule judge.

Written from the text of shared/design/PLANNER.md section 3 and
docs/execution-model.md alone (not from planner/simulate.c), so that the
shipped validator and this one can be checked against each other.

    ref_validator.py TRACE.json SCHEDULE.json   -> one JSON object on stdout

Only the JSON forms are read (convert protobuf with ``hoctl ... convert``).
Exit status 0 when the schedule is valid and within its budget, 1 when it
is not, 2 on unreadable input.

Covers the `wait` action (execution-model.md rule 13: the point's clock
moves to the completion of the storage's copies issued so far) and the
schedule's `homes` of `movable` storages (rule 14: judged as if `initial`
were the home); a schedule that does not fit the trace (unknown ids, ops
beyond the trace, a home of a storage that is not movable, two homes of
one storage, a bad home) is reported with `bind_error` set.
"""

import heapq
import json
import sys

NONE = None


class Violation(Exception):
    def __init__(self, op, storage, message):
        super().__init__(message)
        self.op = op              # op index, or None for "at step end"
        self.storage = storage    # storage id, or None
        self.message = message


class _S:
    """State of one storage during the simulation."""

    __slots__ = ("id", "bytes", "initial", "retained", "pinned", "movable",
                 "on_device",
                 "version", "host_version", "host_mem", "host_ready",
                 "h2d_done", "d2h_done", "last_access")

    def __init__(self, d):
        self.id = d["id"]
        self.bytes = d["bytes"]
        self.initial = d.get("initial", "none")
        self.retained = d.get("retained", False)
        self.pinned = d.get("pinned", False)
        self.movable = d.get("movable", False)
        self.on_device = False
        self.version = 0
        self.host_version = None  # version the host copy holds; None: none
        self.host_mem = False     # holds host memory
        self.host_ready = 0.0     # when the host copy is complete
        self.h2d_done = 0.0       # completion of the latest H2D
        self.d2h_done = 0.0       # completion of the latest D2H
        self.last_access = None   # op index


class _Pool:
    """Bytes allocated in one memory (device or host) with releases that
    take effect at a given time; allocation applies every release due at or
    before its own time first."""

    def __init__(self):
        self.cur = 0
        self.peak = 0
        self._pending = []  # heap of (time, seq, bytes)
        self._seq = 0

    def release(self, t, nbytes):
        self._seq += 1
        heapq.heappush(self._pending, (t, self._seq, nbytes))

    def allocate(self, t, nbytes):
        while self._pending and self._pending[0][0] <= t:
            self.cur -= heapq.heappop(self._pending)[2]
        self.cur += nbytes
        if self.cur > self.peak:
            self.peak = self.cur
        return self.cur


def copy_us(link, direction, nbytes):
    gbps = link["h2d_gbps"] if direction == "h2d" else link["d2h_gbps"]
    return link.get("latency_us", 0.0) + nbytes / (gbps * 1e3)


def _bind(st, by_id, n_ops, schedule):
    """What plan_schedule_bind refuses: (storage id or None, message), or
    None when the schedule fits the trace.  Applies the homes."""
    for n, a in enumerate(schedule["actions"]):
        if a["storage"] not in by_id:
            return a["storage"], "actions[%d]: unknown storage id %d" % (
                n, a["storage"])
        if not 0 <= a["op"] < n_ops:
            return a["storage"], "actions[%d]: op %d out of range" % (
                n, a["op"])
    first = {}
    for n, h in enumerate(schedule.get("homes", [])):
        sid = h["storage"]
        if sid not in by_id:
            return sid, "homes[%d]: unknown storage id %d" % (n, sid)
        s = st[by_id[sid]]
        if not s.movable:
            return sid, "homes[%d]: storage id %d is not movable" % (n, sid)
        if h["home"] not in ("device", "host"):
            return sid, "homes[%d]: bad home %r" % (n, h["home"])
        if sid in first:
            return sid, "homes[%d]: duplicate storage id %d (first at " \
                "homes[%d])" % (n, sid, first[sid])
        first[sid] = n
    for h in schedule.get("homes", []):
        st[by_id[h["storage"]]].initial = h["home"]
    return None


def simulate(trace, schedule):
    """Judge `schedule` against `trace` (both parsed JSON documents).

    Returns a dict: valid (bool: no violation, within budget), over_budget,
    violation ({op, storage, message} or None: the first one in time),
    metrics (the seven figures; complete unless a violation other than the
    budget stopped the run), bind_error (the message when the schedule
    does not fit the trace at all; then nothing was simulated).
    """
    link = trace["link"]
    duplex = link.get("duplex", True)
    budget = schedule["budget_bytes"]
    st = [_S(d) for d in trace["storages"]]
    by_id = {s.id: i for i, s in enumerate(st)}
    ops = trace["ops"]
    n_ops = len(ops)

    reads = [[by_id[x] for x in o.get("reads", [])] for o in ops]
    writes = [[by_id[x] for x in o.get("writes", [])] for o in ops]
    for i in range(n_ops):
        for k in reads[i] + writes[i]:
            st[k].last_access = i

    bad = _bind(st, by_id, n_ops, schedule)
    if bad is not None:
        zero = {"peak_device_bytes": 0, "peak_host_bytes": 0,
                "compute_us": 0.0, "step_time_us": 0.0, "exposed_us": 0.0,
                "h2d_bytes": 0, "d2h_bytes": 0}
        return {"valid": False, "over_budget": False, "stopped": True,
                "bind_error": bad[1],
                "violation": {"op": None, "storage": bad[0],
                              "message": bad[1]},
                "metrics": zero}

    # Actions by point (op, when), list order kept within a point.
    points = {}
    for n, a in enumerate(schedule["actions"]):
        points.setdefault((a["op"], a["when"]), []).append((n, a))

    dev = _Pool()
    host = _Pool()
    state = {"budget_violation": None}
    engine = {"h2d": 0.0, "d2h": 0.0}
    moved = {"h2d": 0, "d2h": 0}

    def engine_key(direction):
        return direction if duplex else "h2d"

    def dev_alloc(t, s, op):
        cur = dev.allocate(t, s.bytes)
        if cur > budget and state["budget_violation"] is None:
            state["budget_violation"] = Violation(
                op, s.id, "device bytes %d exceed the budget %d when "
                "storage %d is allocated" % (cur, budget, s.id))

    def metrics(end):
        compute = sum(o["duration_us"] for o in ops)
        return {"peak_device_bytes": dev.peak, "peak_host_bytes": host.peak,
                "compute_us": compute, "step_time_us": end,
                "exposed_us": end - compute, "h2d_bytes": moved["h2d"],
                "d2h_bytes": moved["d2h"]}

    def run_action(n, a, t, op, when):
        """Apply action a at the point's clock t; returns the clock after
        it (only a wait moves it)."""
        sid = a["storage"]
        s = st[by_id[sid]]
        kind = a["kind"]
        if kind == "wait":
            # every copy of s issued so far (none in flight: no-op)
            return max(t, s.h2d_done, s.d2h_done)
        if kind == "prefetch":
            if s.on_device:
                raise Violation(op, sid, "prefetch of storage %d which is "
                                "on device" % sid)
            if s.host_version is None:
                raise Violation(op, sid, "prefetch of storage %d which has "
                                "no host copy" % sid)
            if s.host_version != s.version:
                raise Violation(op, sid, "prefetch of storage %d whose host "
                                "copy is stale" % sid)
            dev_alloc(t, s, op)
            s.on_device = True
            e = engine_key("h2d")
            start = max(t, engine[e], s.host_ready)
            end = start + copy_us(link, "h2d", s.bytes)
            engine[e] = end
            s.h2d_done = end
            moved["h2d"] += s.bytes
        elif kind == "store":
            if not s.on_device:
                raise Violation(op, sid, "store of storage %d which is not "
                                "on device" % sid)
            if not s.host_mem:
                host.allocate(t, s.bytes)
                s.host_mem = True
            e = engine_key("d2h")
            start = max(t, engine[e], s.h2d_done)
            end = start + copy_us(link, "d2h", s.bytes)
            engine[e] = end
            s.d2h_done = end
            s.host_version = s.version
            s.host_ready = end
            moved["d2h"] += s.bytes
        elif kind == "free_device":
            if not s.on_device:
                raise Violation(op, sid, "free_device of storage %d which is "
                                "not on device" % sid)
            if s.pinned and s.last_access is not None and (
                    op < s.last_access or
                    (op == s.last_access and when == "before")):
                raise Violation(op, sid, "free_device of pinned storage %d "
                                "before its last access" % sid)
            dev.release(max(t, s.h2d_done, s.d2h_done), s.bytes)
            s.on_device = False
        elif kind == "free_host":
            if not s.host_mem:
                raise Violation(op, sid, "free_host of storage %d which has "
                                "no host copy" % sid)
            host.release(max(t, s.h2d_done, s.d2h_done), s.bytes)
            s.host_mem = False
            s.host_version = None
        else:
            raise Violation(op, sid, "unknown action kind %r" % kind)
        return t

    def run_point(i, when, t):
        for n, a in points.get((i, when), []):
            t = run_action(n, a, t, i, when)
        return t

    # t = 0
    for s in st:
        if s.initial == "device" and (s.retained or
                                      s.last_access is not None):
            s.on_device = True
            dev_alloc(0.0, s, 0)
        elif s.initial == "host":
            s.host_version = 0
            s.host_mem = True
            s.host_ready = 0.0
            host.allocate(0.0, s.bytes)

    now = 0.0
    try:
        for i, o in enumerate(ops):
            # a wait before the op delays its allocations and its start
            now = run_point(i, "before", now)
            for k in reads[i]:
                if not st[k].on_device:
                    raise Violation(i, st[k].id, "storage %d not on device "
                                    "at op %d" % (st[k].id, i))
            for k in writes[i]:
                if not st[k].on_device:
                    st[k].on_device = True
                    dev_alloc(now, st[k], i)
            start = now
            for k in reads[i]:
                start = max(start, st[k].h2d_done)
            for k in writes[i]:
                start = max(start, st[k].h2d_done, st[k].d2h_done)
            now = start + o["duration_us"]
            for k in set(writes[i]):
                st[k].version += 1
            # a wait after the op delays everything that follows
            now = run_point(i, "after", now)
            for k in set(reads[i] + writes[i]):
                s = st[k]
                if not s.retained and s.last_access == i and s.on_device:
                    dev.release(max(now, s.h2d_done, s.d2h_done), s.bytes)
                    s.on_device = False
        end = max([now, engine["h2d"], engine["d2h"]])
        for s in st:
            if not s.retained:
                continue
            if s.initial != "host" and not s.on_device:
                raise Violation(None, s.id, "retained storage %d not on "
                                "device at step end" % s.id)
            if s.initial == "host" and (s.on_device or
                                        s.host_version != s.version):
                raise Violation(None, s.id, "retained initial-host storage "
                                "%d has no current host copy or is still on "
                                "device at step end" % s.id)
        # releases still pending count as done by step end
        dev.allocate(float("inf"), 0)
        host.allocate(float("inf"), 0)
    except Violation as v:
        first = state["budget_violation"] or v
        return {"valid": False, "over_budget": dev.peak > budget,
                "stopped": True, "bind_error": None,
                "violation": _vdict(first),
                "metrics": metrics(now)}
    bv = state["budget_violation"]
    return {"valid": bv is None, "over_budget": bv is not None,
            "stopped": False, "bind_error": None,
            "violation": _vdict(bv) if bv else None,
            "metrics": metrics(end)}


def _vdict(v):
    return {"op": v.op, "storage": v.storage, "message": v.message}


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: ref_validator.py TRACE.json SCHEDULE.json\n")
        return 2
    try:
        with open(argv[1], encoding="utf-8") as f:
            trace = json.load(f)
        with open(argv[2], encoding="utf-8") as f:
            schedule = json.load(f)
    except (OSError, ValueError) as e:
        sys.stderr.write("ref_validator: %s\n" % e)
        return 2
    res = simulate(trace, schedule)
    json.dump(res, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0 if res["valid"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
