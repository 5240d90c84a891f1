#!/usr/bin/python3
"""An independent implementation of the node judge.

Written from ../shared/design/NODE.md section 3 and docs/node.md section 3
(not from planner/node/node_judge.c), so that the shipped judge and this
one can be checked against each other.  Schedules are first judged alone
by ref_validator.py (the independent implementation of PLANNER.md
section 3).

    node_checker.py NODE.json WORKLOAD.json [STEPS]   -> JSON on stdout

Only JSON traces and schedules are read.  Exit status 0 when the workload
is valid, 1 when it is not, 2 on unreadable input.

Structure: every client is a Python generator that yields what it waits
for (an op's end, copies, memory, the barrier); a small kernel advances
node time from event to event, lets clients act in workload order, starts
copies on their engines and shares bandwidth by weighted max-min fairness
(water-filling over the capacities of each copy's path).
"""

import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_validator  # noqa: E402

INF = float("inf")


class Invalid(Exception):
    def __init__(self, client, message, op=None, storage=None, step=None):
        super().__init__(message)
        self.client = client
        self.message = message
        self.op = op
        self.storage = storage
        self.step = step


# --------------------------------------------------------------- the node

class Capacity:
    """One shared capacity: a link direction, or a whole link when it is
    not duplex.  `coef[direction]` is how much of it one byte/us of a copy
    of that direction uses (in units of `size`)."""

    def __init__(self, size, coef_h2d, coef_d2h):
        self.size = size
        self.coef = {"h2d": coef_h2d, "d2h": coef_d2h}


def build_node(doc):
    links = {l["name"]: l for l in doc.get("links", [])}
    caps = {}
    for name, l in links.items():
        h = l["h2d_gbps"] * 1e3
        d = l["d2h_gbps"] * 1e3
        if l.get("duplex", True):
            caps[name] = {"h2d": Capacity(h, 1.0, 0.0),
                          "d2h": Capacity(d, 0.0, 1.0)}
        else:
            # r_h / h + r_d / d <= 1, i.e. r_h + r_d * (h / d) <= h
            one = Capacity(h, 1.0, h / d)
            caps[name] = {"h2d": one, "d2h": one}
    devices = {}
    for d in doc["devices"]:
        path = {"h2d": [], "d2h": []}
        name = d.get("parent")
        while name is not None:
            for direction in ("h2d", "d2h"):
                path[direction].append(caps[name][direction])
            name = links[name].get("parent")
        devices[d["id"]] = {
            "doc": d,
            "own": {"h2d": d["h2d_gbps"] * 1e3, "d2h": d["d2h_gbps"] * 1e3},
            "latency": d.get("latency_us", 0.0),
            "duplex": d.get("duplex", True),
            "capacity": d["hbm_bytes"] - d.get("reserve_bytes", 0),
            "path": path,
        }
    return devices


# --------------------------------------------------------------- sharing

def fair_rates(flows):
    """Weighted max-min fair rates of `flows` (each: weight, own, path of
    Capacity objects, direction) by water-filling: all unfixed flows rise
    as weight * level; at each round the smallest level at which some
    capacity (or a flow's own figure) fills fixes the flows it holds."""
    rate = {}
    left = set(range(len(flows)))
    used = {}
    while left:
        best = INF
        for i in left:
            f = flows[i]
            best = min(best, f["own"] / f["weight"])
        groups = {}
        for i in left:
            for cap in flows[i]["path"]:
                groups.setdefault(id(cap), (cap, []))[1].append(i)
        for cap, members in groups.values():
            demand = sum(cap.coef[flows[i]["dir"]] * flows[i]["weight"]
                         for i in members)
            free = cap.size - used.get(id(cap), 0.0)
            if demand > 0:
                best = min(best, max(free, 0.0) / demand)
        fixed = set()
        for i in left:
            f = flows[i]
            if f["own"] / f["weight"] <= best * (1 + 1e-12):
                rate[i] = f["own"]
                fixed.add(i)
        for cap, members in groups.values():
            demand = sum(cap.coef[flows[i]["dir"]] * flows[i]["weight"]
                         for i in members)
            free = cap.size - used.get(id(cap), 0.0)
            if demand > 0 and max(free, 0.0) / demand <= best * (1 + 1e-12):
                for i in members:
                    if i not in fixed:
                        rate[i] = flows[i]["weight"] * best
                        fixed.add(i)
        if not fixed:  # cannot happen: something always fills
            raise RuntimeError("water-filling made no progress")
        for i in fixed:
            for cap in flows[i]["path"]:
                used[id(cap)] = (used.get(id(cap), 0.0)
                                 + cap.coef[flows[i]["dir"]] * rate[i])
        left -= fixed
    return [rate[i] for i in range(len(flows))]


# --------------------------------------------------------------- copies

class Copy:
    __slots__ = ("client", "dir", "nbytes", "issued", "seq", "after",
                 "started", "moving_from", "left", "rate", "mark", "done",
                 "finished", "engine")

    def __init__(self, client, direction, nbytes, issued, seq, after,
                 engine):
        self.client = client
        self.dir = direction
        self.nbytes = nbytes
        self.issued = issued
        self.seq = seq
        self.after = after        # copy that must complete first, or None
        self.engine = engine
        self.started = None
        self.moving_from = None   # time it starts moving bytes
        self.left = float(nbytes)  # bytes still to move at `mark`
        self.rate = 0.0
        self.mark = None
        self.done = False
        self.finished = None      # completion time

    def eta(self):
        if self.moving_from is None:
            return INF
        return self.mark + self.left / self.rate if self.rate > 0 else INF


# --------------------------------------------------------------- kernel

class Node:
    def __init__(self, node_doc, clients, steps):
        self.devices = build_node(node_doc)
        self.clients = clients
        self.steps = steps
        self.now = 0.0
        self.queues = {}       # engine key -> list of waiting copies
        self.busy = {}         # engine key -> copy on it
        self.mem = {d: 0 for d in self.devices}
        self.dev_peak = {d: None for d in self.devices}
        self.pending_dev = {d: 0 for d in self.devices}
        self.groups = {}
        for c in clients:
            if c.sync is not None:
                self.groups.setdefault(c.sync, []).append(c)
        self.arrived = {g: set() for g in self.groups}
        self.flows_dirty = False

    # ---- memory

    def note_device(self, dev):
        if self.dev_peak[dev] is not None:
            self.dev_peak[dev] = max(self.dev_peak[dev], self.mem[dev])

    def fits(self, c, nbytes):
        d = self.devices[c.device]
        return (c.dev_bytes + nbytes <= c.budget and
                self.mem[c.device] + nbytes <= d["capacity"])

    def take(self, c, nbytes):
        c.dev_bytes += nbytes
        self.mem[c.device] += nbytes
        c.peak_dev = max(c.peak_dev, c.dev_bytes)
        self.note_device(c.device)

    def give(self, c, nbytes):
        c.dev_bytes -= nbytes
        self.mem[c.device] -= nbytes

    # ---- copies

    def engine_of(self, c, direction):
        d = self.devices[c.device]
        return (c.device, direction if d["duplex"] else "one")

    def issue(self, c, direction, nbytes, after):
        key = self.engine_of(c, direction)
        cp = Copy(c, direction, nbytes, self.now, c.seq, after, key)
        c.seq += 1
        c.live.add(cp)
        self.queues.setdefault(key, []).append(cp)
        # FIFO by (issue time, client order, issue order)
        self.queues[key].sort(key=lambda x: (x.issued, x.client.index,
                                             x.seq))
        return cp

    def start_engines(self):
        for key, q in self.queues.items():
            if self.busy.get(key) is not None or not q:
                continue
            head = q[0]
            if head.after is not None and not head.after.done:
                continue
            q.pop(0)
            self.busy[key] = head
            head.started = self.now
            lat = self.devices[head.client.device]["latency"]
            if head.started + lat <= self.now:
                self.begin_moving(head)
            else:
                head.moving_from = None

    def begin_moving(self, cp):
        cp.moving_from = self.now
        cp.mark = self.now
        cp.left = float(cp.nbytes)
        self.flows_dirty = True

    def moving(self):
        return [cp for cp in self.busy.values()
                if cp is not None and cp.moving_from is not None]

    def share(self):
        flows = self.moving()
        for cp in flows:   # bring every copy to `now` at its old rate
            if cp.rate > 0:
                cp.left = max(cp.left - cp.rate * (self.now - cp.mark), 0.0)
            cp.mark = self.now
        specs = [{"weight": cp.client.weight, "dir": cp.dir,
                  "own": self.devices[cp.client.device]["own"][cp.dir],
                  "path": self.devices[cp.client.device]["path"][cp.dir]}
                 for cp in flows]
        for cp, r in zip(flows, fair_rates(specs)):
            cp.rate = r

    def next_event(self):
        t = INF
        for cp in self.busy.values():
            if cp is None:
                continue
            if cp.moving_from is None:
                t = min(t, cp.started +
                        self.devices[cp.client.device]["latency"])
            else:
                t = min(t, cp.eta())
        for c in self.clients:
            if c.sleep_until is not None:
                t = min(t, c.sleep_until)
        return t

    def advance_copies(self):
        for key, cp in list(self.busy.items()):
            if cp is None:
                continue
            if cp.moving_from is None:
                lat = self.devices[cp.client.device]["latency"]
                if cp.started + lat <= self.now:
                    self.begin_moving(cp)
            elif cp.eta() <= self.now:
                cp.done = True
                cp.finished = self.now
                self.busy[key] = None
                cp.client.live.discard(cp)
                cp.client.last_end = max(cp.client.last_end, self.now)
                self.flows_dirty = True
                cp.client.copy_finished(cp)

    # ---- run

    def run(self):
        for c in self.clients:
            c.node = self
            c.proc = c.process()
            c.want = next(c.proc)  # ("go",): ready to start step 0
        while True:
            self.advance_copies()
            self.let_clients_act()
            self.check_waiters()
            self.start_engines()
            if self.flows_dirty:
                self.flows_dirty = False
                self.share()
            t = self.next_event()
            if t == INF:
                stuck = [c for c in self.clients if c.want is not None]
                if stuck:
                    raise Invalid(stuck[0].index, "client %s stuck"
                                  % stuck[0].name)
                return
            self.now = max(t, self.now)

    def can_go(self, c):
        w = c.want
        if w is None:
            return False
        kind = w[0]
        if kind == "go":
            return True
        if kind == "sleep":
            return c.sleep_until <= self.now
        if kind == "copies":
            return all(cp is None or cp.done for cp in w[1])
        if kind == "mem":
            return self.fits(c, w[1])
        if kind == "barrier":
            return False
        raise RuntimeError(kind)

    def let_clients_act(self):
        while True:
            for c in self.clients:
                if self.can_go(c):
                    break
            else:
                return
            self.resume(c)

    def resume(self, c):
        """Run client c until it yields something not yet satisfied (or
        ends its step: then it is picked again in workload order)."""
        first = True
        while True:
            if not first and not self.can_go(c):
                return
            first = False
            w = c.want
            if w[0] == "sleep":
                c.sleep_until = None
            if w[0] == "mem":
                c.alloc_wait += self.now - w[2]
                self.take(c, w[1])
            try:
                c.want = c.proc.send(self.now)
            except StopIteration:
                c.want = None
                return
            if c.want[0] == "sleep":
                c.sleep_until = c.want[1]
            if c.want[0] == "mem":
                c.want = ("mem", c.want[1], self.now, c.want[2])
            if c.want[0] == "step_done":
                self.step_done(c)
                return

    def step_done(self, c):
        if c.sync is None:
            c.record(c.step_start, self.now)
            c.want = ("go",) if c.step + 1 < self.steps else None
            c.step += 1
            return
        c.want = ("barrier",)
        g = self.arrived[c.sync]
        g.add(c)
        if len(g) < len(self.groups[c.sync]):
            return
        g.clear()
        for m in self.groups[c.sync]:
            m.record(m.step_start, self.now)
            m.step += 1
            m.want = ("go",) if m.step < self.steps else None

    def check_waiters(self):
        for c in self.clients:
            if c.want is None or c.want[0] != "mem":
                continue
            nbytes = c.want[1]
            d = self.devices[c.device]
            over_budget = c.dev_bytes + nbytes > c.budget
            over_device = self.mem[c.device] + nbytes > d["capacity"]
            if over_budget and c.pending_releases == 0:
                raise Invalid(c.index, "client %s over its budget with no "
                              "release pending" % c.name, c.want[3][0],
                              c.want[3][1], c.step)
            if over_device and self.pending_dev[c.device] == 0:
                raise Invalid(c.index, "client %s: device %d is full with "
                              "no release pending" % (c.name, c.device),
                              c.want[3][0], c.want[3][1], c.step)


# --------------------------------------------------------------- a client

class Storage:
    __slots__ = ("id", "nbytes", "initial", "retained", "last", "on_dev",
                 "host", "h2d", "d2h", "ready")


class Client:
    def __init__(self, index, spec, trace, schedule, budget):
        self.index = index
        self.name = spec["name"]
        self.device = spec["device"]
        self.weight = spec.get("weight", 1.0)
        self.sync = spec.get("sync")
        self.budget = budget
        self.trace = trace
        self.schedule = schedule
        self.homes = {h["storage"]: h["home"]
                      for h in schedule.get("homes", [])}
        self.ops = trace["ops"]
        self.compute = 0.0
        self.step = 0
        self.seq = 0
        self.live = set()
        self.sleep_until = None
        self.dev_bytes = 0
        self.host_bytes = 0
        self.pending_releases = 0
        self.figures = None
        self.waiting_releases = []  # (storage bytes, copies, host?)
        points = {}
        for a in schedule["actions"]:
            points.setdefault((a["op"], a["when"]), []).append(a)
        self.points = points
        self.last = {}
        for i, o in enumerate(self.ops):
            for sid in o.get("reads", []) + o.get("writes", []):
                self.last[sid] = i

    def initial_of(self, s):
        home = self.homes.get(s["id"])
        if home is not None:
            return home
        return s.get("initial", "none")

    # ---- releases

    def release(self, s, host):
        copies = [cp for cp in (s.h2d, s.d2h)
                  if cp is not None and not cp.done]
        if not copies:
            self.apply_release(s.nbytes, host)
            return
        entry = [s.nbytes, copies, host]
        self.waiting_releases.append(entry)
        if not host:
            self.pending_releases += 1
            self.node.pending_dev[self.device] += 1

    def apply_release(self, nbytes, host):
        if host:
            self.host_bytes -= nbytes
        else:
            self.node.give(self, nbytes)

    def copy_finished(self, cp):
        keep = []
        for entry in self.waiting_releases:
            nbytes, copies, host = entry
            if all(x.done for x in copies):
                if not host:
                    self.pending_releases -= 1
                    self.node.pending_dev[self.device] -= 1
                self.apply_release(nbytes, host)
            else:
                keep.append(entry)
        self.waiting_releases = keep

    # ---- figures

    def record(self, start, end):
        if self.step + 1 != self.node.steps:
            return
        step_time = end - start
        self.figures = {
            "compute_us": self.compute, "step_time_us": step_time,
            "exposed_us": step_time - self.compute,
            "alloc_wait_us": self.alloc_wait,
            "slowdown": step_time / self.compute if self.compute > 0 else 1.0,
            "h2d_bytes": self.h2d, "d2h_bytes": self.d2h,
            "peak_device_bytes": self.peak_dev,
            "peak_host_bytes": self.peak_host,
            "start_us": start, "end_us": self.step_end,
        }

    # ---- the process

    def act(self, a, st, op):
        s = st[a["storage"]]
        kind = a["kind"]
        node = self.node
        if kind == "prefetch":
            yield ("mem", s.nbytes, (op, s.id))
            s.on_dev = True
            s.h2d = node.issue(self, "h2d", s.nbytes, s.ready)
            self.h2d += s.nbytes
        elif kind == "store":
            if not s.host:
                self.host_bytes += s.nbytes
                self.peak_host = max(self.peak_host, self.host_bytes)
                s.host = True
            s.d2h = node.issue(self, "d2h", s.nbytes, s.h2d)
            s.ready = s.d2h
            self.d2h += s.nbytes
        elif kind == "free_device":
            s.on_dev = False
            self.release(s, False)
        elif kind == "free_host":
            s.host = False
            self.release(s, True)
        elif kind == "wait":
            yield ("copies", [s.h2d, s.d2h])
        else:
            raise RuntimeError(kind)

    def process(self):
        node = self.node
        dev = self.device
        while self.step < node.steps:
            now = yield ("go",)
            # a step starts in the t = 0 state
            self.step_start = now
            self.alloc_wait = 0.0
            self.compute = 0.0
            self.h2d = self.d2h = 0
            self.last_end = now
            node.give(self, self.dev_bytes)
            if self.step + 1 == node.steps and node.dev_peak[dev] is None:
                node.dev_peak[dev] = node.mem[dev]
            st = {}
            t0 = 0
            host0 = 0
            for d in self.trace["storages"]:
                s = Storage()
                s.id = d["id"]
                s.nbytes = d["bytes"]
                s.retained = d.get("retained", False)
                s.last = self.last.get(s.id)
                s.h2d = s.d2h = s.ready = None
                init = self.initial_of(d)
                s.on_dev = init == "device" and (s.retained or
                                                 s.last is not None)
                s.host = init == "host"
                if s.on_dev:
                    t0 += s.nbytes
                if s.host:
                    host0 += s.nbytes
                st[s.id] = s
            self.host_bytes = host0
            self.peak_host = host0
            self.peak_dev = 0
            yield ("mem", t0, (None, None))
            self.peak_dev = self.dev_bytes
            for i, o in enumerate(self.ops):
                for a in self.points.get((i, "before"), []):
                    yield from self.act(a, st, i)
                for sid in o.get("writes", []):
                    s = st[sid]
                    if not s.on_dev:
                        yield ("mem", s.nbytes, (i, sid))
                        s.on_dev = True
                need = [st[sid].h2d for sid in o.get("reads", [])]
                for sid in o.get("writes", []):
                    need += [st[sid].h2d, st[sid].d2h]
                now = yield ("copies", need)
                start = max([now] + [cp.finished for cp in need
                                     if cp is not None])
                end = start + o["duration_us"]
                self.compute += o["duration_us"]
                if end > now:
                    yield ("sleep", end)
                for a in self.points.get((i, "after"), []):
                    yield from self.act(a, st, i)
                for sid in set(o.get("reads", []) + o.get("writes", [])):
                    s = st[sid]
                    if s.on_dev and not s.retained and s.last == i:
                        s.on_dev = False
                        self.release(s, False)
            now = yield ("copies", list(self.live))
            self.step_end = now
            yield ("step_done",)


# --------------------------------------------------------------- entry

def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def judge(node_doc, workload_doc, base_dir, steps=3, cache=None):
    """Judge a workload; returns a dict: valid, violation or clients /
    devices / node figures."""
    cache = {} if cache is None else cache

    def get(path):
        full = path if os.path.isabs(path) else os.path.join(base_dir, path)
        if full not in cache:
            cache[full] = load_json(full)
        return cache[full]

    clients = []
    for i, spec in enumerate(workload_doc["clients"]):
        trace = get(spec["trace"])
        sched = get(spec["schedule"])
        budget = spec.get("budget_bytes", sched["budget_bytes"])
        alone = dict(sched)
        alone["budget_bytes"] = budget
        res = ref_validator.simulate(trace, alone)
        if not res["valid"]:
            return {"valid": False,
                    "violation": {"client": i, "step": None,
                                  "alone": True,
                                  "message": res["violation"]["message"]}}
        clients.append(Client(i, spec, trace, sched, budget))
    node = Node(node_doc, clients, steps)
    try:
        node.run()
    except Invalid as e:
        return {"valid": False,
                "violation": {"client": e.client, "step": e.step,
                              "op": e.op, "storage": e.storage,
                              "alone": False, "message": e.message}}
    out_clients = [c.figures for c in clients]
    devices = []
    for d in node_doc["devices"]:
        peak = node.dev_peak[d["id"]]
        devices.append({"id": d["id"], "peak_bytes": peak or 0,
                        "clients": sum(1 for c in clients
                                       if c.device == d["id"])})
    return {
        "valid": True,
        "clients": out_clients,
        "devices": devices,
        "node": {
            "weighted_exposed_us": sum(c.weight * c.figures["exposed_us"]
                                       for c in clients),
            "max_slowdown": max([c.figures["slowdown"] for c in clients],
                                default=1.0),
            "alloc_wait_us": sum(c.figures["alloc_wait_us"]
                                 for c in clients),
        },
    }


def main(argv):
    if len(argv) not in (3, 4):
        sys.stderr.write("usage: node_checker.py NODE.json WORKLOAD.json "
                         "[STEPS]\n")
        return 2
    try:
        node_doc = load_json(argv[1])
        wl = load_json(argv[2])
        res = judge(node_doc, wl, os.path.dirname(os.path.abspath(argv[2])),
                    int(argv[3]) if len(argv) == 4 else 3)
    except (OSError, ValueError, KeyError) as e:
        sys.stderr.write("node_checker: %s\n" % e)
        return 2
    json.dump(res, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0 if res["valid"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
