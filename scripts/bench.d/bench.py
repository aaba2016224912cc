#!/usr/bin/env python3
"""Glue of scripts/bench: GB200 rack bodies, seeding, cursor walking, the fan-out run, pgbench
log statistics, and the final table + JSON. Standard library only."""

import argparse
import concurrent.futures
import glob
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse

# One GB200-shaped rack; rack.lua builds the very same bodies for the import run.
COMPUTE, NVSWITCH, POWERSHELF, TOR = 18, 9, 8, 2


def mac(prefix, rack, component, bmc):
    octets = [prefix, (rack >> 16) & 255, (rack >> 8) & 255, rack & 255, component, bmc]
    return ":".join(f"{o:02x}" for o in octets)


def rack_body(r, prefix=0x02):
    components = []
    idx = 0

    def add(kind, tag, k, manufacturer, model, slot, bmc_types):
        nonlocal idx
        components.append({
            "type": kind,
            "name": f"bench-r{r:07d}-{kind}{k:02d}",
            "manufacturer": manufacturer,
            "model": model,
            "serial_number": f"S{r:07d}-{tag}{k:02d}",
            "firmware_version": "1.0.0",
            "position": {"slot_id": slot, "tray_idx": k, "host_id": 0},
            "bmcs": [{"type": t, "mac_address": mac(prefix, r, idx, b)}
                     for b, t in enumerate(bmc_types)],
        })
        idx += 1

    for k in range(POWERSHELF):
        add("powershelf", "P", k, "NVIDIA", "GB200 Power Shelf", 1 + k, ["host"])
    for k in range(NVSWITCH):
        add("nvswitch", "N", k, "NVIDIA", "GB200 NVLink Switch", 20 + k, ["host"])
    for k in range(COMPUTE):
        add("compute", "C", k, "WiWynn", "GB200 Compute Tray", 30 + k, ["host", "dpu", "dpu"])
    for k in range(TOR):
        add("torswitch", "T", k, "Celestica", "ToR", 60 + k, [])
    return {
        "name": f"bench-r{r:07d}",
        "manufacturer": "Wiwynn",
        "serial_number": f"RACK{r:07d}",
        "model": "GB200 NVL72",
        "location": {"region": "bench", "datacenter": "bench01", "room": "r1",
                     "position": f"p{r:07d}"},
        "components": components,
    }


class Client:
    """One keep-alive HTTP/1.1 connection per thread."""

    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port
        self.local = threading.local()

    def conn(self):
        c = getattr(self.local, "c", None)
        if c is None:
            c = http.client.HTTPConnection(self.host, self.port, timeout=120)
            self.local.c = c
        return c

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        headers = {"content-type": "application/json"} if data is not None else {}
        for attempt in range(3):
            try:
                c = self.conn()
                c.request(method, path, body=data, headers=headers)
                resp = c.getresponse()
                raw = resp.read()
                return resp.status, (json.loads(raw) if raw else None)
            except (http.client.HTTPException, OSError):
                self.local.c = None
                if attempt == 2:
                    raise
                time.sleep(0.2)
        raise RuntimeError("unreachable")


def cmd_seed(a):
    client = Client(a.url)
    failures = []

    def one(r):
        status, body = client.call("POST", "/v1/expected-racks", rack_body(r))
        if status != 201:
            failures.append((r, status, body))

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(a.concurrency) as pool:
        list(pool.map(one, range(a.start, a.start + a.racks)))
    elapsed = time.monotonic() - started
    if failures:
        print(f"seeding: {len(failures)} racks failed, first: {failures[0]}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps({"racks": a.racks, "seconds": elapsed}))


def cmd_cursor(a):
    """Walks the component list `depth` items deep; prints the cursor of the next page."""
    client = Client(a.url)
    cursor, seen = None, 0
    while seen < a.depth:
        limit = min(1000, a.depth - seen)
        path = f"/v1/components?limit={limit}"
        if cursor:
            path += "&cursor=" + urllib.parse.quote(cursor, safe="")
        status, body = client.call("GET", path)
        if status != 200:
            sys.exit(f"listing components: {status} {body}")
        seen += len(body["items"])
        cursor = body.get("next_cursor")
        if not cursor:
            break
    print(json.dumps({"depth": seen, "cursor": cursor or "",
                      "cursor_query": urllib.parse.quote(cursor or "", safe="")}))


def cmd_fanout(a):
    client = Client(a.url)
    names = [{"name": f"bench-r{r:07d}"} for r in range(a.racks)]
    started = time.monotonic()
    status, body = client.call("POST", "/v1/operations/power-on",
                               {"target_spec": {"racks": names}})
    accepted = time.monotonic() - started
    if status != 202:
        sys.exit(f"power-on: {status} {body}")
    request_id, tasks = body["request_id"], len(body["task_ids"])
    deadline = started + a.timeout
    succeeded = failed = 0
    while True:
        _, ok = client.call("GET", f"/v1/tasks?request_id={request_id}&status=succeeded&limit=1")
        _, bad = client.call("GET", f"/v1/tasks?request_id={request_id}"
                                    "&status=failed,cancelled&limit=1")
        succeeded, failed = ok["total"], bad["total"]
        if succeeded + failed >= tasks or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    elapsed = time.monotonic() - started
    print(json.dumps({"racks": a.racks, "tasks": tasks, "succeeded": succeeded,
                      "failed": failed, "accepted_seconds": accepted, "seconds": elapsed,
                      "activities_per_task": 2 + COMPUTE + NVSWITCH + POWERSHELF}))
    if succeeded != tasks:
        sys.exit(f"fan-out: {succeeded}/{tasks} tasks succeeded ({failed} failed)")


def percentile(sorted_values, p):
    if not sorted_values:
        return None
    i = min(len(sorted_values) - 1, max(0, int(round(p / 100 * (len(sorted_values) - 1)))))
    return sorted_values[i]


def cmd_pgbench_stats(a):
    """Per-transaction logs (pgbench -l): `client tx latency_us script epoch epoch_us`."""
    lat = []
    for path in glob.glob(a.logs):
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[2].isdigit():
                    lat.append(int(parts[2]))
    lat.sort()
    tps = len(lat) / a.duration
    if a.report:
        # pgbench's own figure leaves out the time its clients took to connect.
        with open(a.report) as f:
            for line in f:
                if line.startswith("tps = "):
                    tps = float(line.split()[2])
    out = {"transactions": len(lat), "tps": tps,
           "p50_ms": (percentile(lat, 50) or 0) / 1000, "p99_ms": (percentile(lat, 99) or 0) / 1000}
    print(json.dumps(out))


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def ratio(a, b):
    return None if a is None or b in (None, 0) else a / b


def cmd_report(a):
    w = a.work
    meta = load(os.path.join(w, "meta.json")) or {}
    seed = load(os.path.join(w, "seed.json")) or {}
    lk_flow = load(os.path.join(w, "lookup_flow.json"))
    lk_pg = load(os.path.join(w, "lookup_pgbench.json"))
    p_first = load(os.path.join(w, "page_first.json"))
    p_deep = load(os.path.join(w, "page_deep.json"))
    cursor = load(os.path.join(w, "cursor.json")) or {}
    im_flow = load(os.path.join(w, "import_flow.json"))
    im_pg = load(os.path.join(w, "import_pgbench.json"))
    fan = load(os.path.join(w, "fanout_flow.json"))
    base = load(os.path.join(w, "fanout_baseline.json"))
    mem = load(os.path.join(w, "memory.json")) or {}

    def ok_rps(r):
        return None if r is None else (r["requests"] - r["non2xx"] - r["socket_errors"]) / r["seconds"]

    rows = []  # (key, figure, value, unit, limit, limit_desc, ratio, target_desc, pass)

    def row(key, figure, value, unit, limit=None, limit_desc="", r=None, target=None, passed=None):
        rows.append({"key": key, "figure": figure, "value": value, "unit": unit,
                     "limit": limit, "limit_desc": limit_desc, "ratio": r,
                     "target": target, "pass": passed})

    if lk_flow or lk_pg:
        f_rps, g_rps = ok_rps(lk_flow), lk_pg and lk_pg["tps"]
        r = ratio(f_rps, g_rps)
        row("lookup_rps", "lookup by serial (c=32)", f_rps, "req/s", g_rps, "pgbench tx/s", r,
            "≥ 0.5 × pgbench", None if r is None else r >= 0.5)
        row("lookup_p50_ms", "  lookup p50", lk_flow and lk_flow["p50_ms"], "ms",
            lk_pg and lk_pg["p50_ms"], "pgbench p50", ratio(lk_flow and lk_flow["p50_ms"], lk_pg and lk_pg["p50_ms"]))
        row("lookup_p99_ms", "  lookup p99", lk_flow and lk_flow["p99_ms"], "ms",
            lk_pg and lk_pg["p99_ms"], "pgbench p99", ratio(lk_flow and lk_flow["p99_ms"], lk_pg and lk_pg["p99_ms"]))
    if p_first or p_deep:
        fv, dv = p_first and p_first["p50_ms"], p_deep and p_deep["p50_ms"]
        r = ratio(dv, fv)
        row("deep_page_ms", f"page {cursor.get('depth', '?')} items deep (p50)", dv, "ms", fv,
            "first page p50", r, "≤ 1.5 × first page", None if r is None else r <= 1.5)
    if im_flow or im_pg:
        fv = ok_rps(im_flow)
        gv = im_pg and im_pg["tps"]
        r = ratio(fv, gv)
        row("import_racks_per_s", "import racks (c=8)", fv, "racks/s", gv, "pgbench racks/s", r,
            "≥ 0.5 × SQL", None if r is None else r >= 0.5)
    if fan or base:
        fv, bv = fan and fan["seconds"], base and base["seconds"]
        r = ratio(fv, bv)
        n = (fan or {}).get("tasks") or (base or {}).get("workflows")
        row("fanout_s", f"power-on fan-out ({n} racks)", fv, "s", bv, "no-op workflows", r,
            "≤ 1.5 × Temporal", None if r is None else r <= 1.5)
    if "idle_rss_mb" in mem:
        v = mem["idle_rss_mb"]
        row("rss_idle_mb", f"RSS idle ({meta.get('racks', '?')} racks)", v, "MB", 100, "100 MB",
            v / 100, "≤ 100 MB", v <= 100)
    if "peak_rss_mb" in mem:
        v = mem["peak_rss_mb"]
        row("rss_peak_mb", "RSS peak (lookup, fan-out)", v, "MB", 250, "250 MB", v / 250,
            "≤ 250 MB", v <= 250)

    def fmt(v):
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:,.0f}" if abs(v) >= 1000 else (f"{v:.1f}" if abs(v) >= 10 else f"{v:.3g}")
        return str(v)

    header = ["figure", "value", "limit", "ratio", "target", ""]
    table = [header]
    for x in rows:
        mark = "" if x["pass"] is None else ("PASS" if x["pass"] else "MISS")
        table.append([x["figure"], f"{fmt(x['value'])} {x['unit']}",
                      f"{fmt(x['limit'])} ({x['limit_desc']})" if x["limit_desc"] else fmt(x["limit"]),
                      "-" if x["ratio"] is None else f"{x['ratio']:.2f}",
                      x["target"] or "", mark])
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    print()
    print(f"Flow benchmark — {meta.get('racks', '?')} racks, profile {meta.get('profile', '?')}, "
          f"{meta.get('duration', '?')} s load runs" + (", quick" if meta.get("quick") else ""))
    for i, r in enumerate(table):
        print("  ".join(c.ljust(widths[j]) for j, c in enumerate(r)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    if seed:
        print(f"(seeding {seed.get('racks')} racks through the API took {seed.get('seconds', 0):.1f} s)")
    missed = [x["figure"].strip() for x in rows if x["pass"] is False]
    print("targets missed: " + (", ".join(missed) if missed else "none")
          + "  (informational: the benchmark asserts nothing)")

    out = {"meta": meta, "figures": rows,
           "raw": {"seed": seed, "lookup_flow": lk_flow, "lookup_pgbench": lk_pg,
                   "page_first": p_first, "page_deep": p_deep, "cursor_depth": cursor.get("depth"),
                   "import_flow": im_flow, "import_pgbench": im_pg, "fanout_flow": fan,
                   "fanout_baseline": base, "memory": mem}}
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(out, f, indent=2)
    print(f"figures written to {a.json}")


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("seed")
    s.add_argument("--url", required=True)
    s.add_argument("--racks", type=int, required=True)
    s.add_argument("--start", type=int, default=0)
    s.add_argument("--concurrency", type=int, default=8)
    s.set_defaults(fn=cmd_seed)
    s = sub.add_parser("cursor")
    s.add_argument("--url", required=True)
    s.add_argument("--depth", type=int, required=True)
    s.set_defaults(fn=cmd_cursor)
    s = sub.add_parser("fanout")
    s.add_argument("--url", required=True)
    s.add_argument("--racks", type=int, required=True)
    s.add_argument("--timeout", type=float, default=600)
    s.set_defaults(fn=cmd_fanout)
    s = sub.add_parser("pgbench-stats")
    s.add_argument("--logs", required=True)
    s.add_argument("--duration", type=float, required=True)
    s.add_argument("--report", help="pgbench's output, for its tps figure")
    s.set_defaults(fn=cmd_pgbench_stats)
    s = sub.add_parser("report")
    s.add_argument("--work", required=True)
    s.add_argument("--json", required=True)
    s.set_defaults(fn=cmd_report)
    a = p.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
