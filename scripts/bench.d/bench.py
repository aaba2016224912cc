#!/usr/bin/env python3
"""Glue of scripts/bench: GB200 rack bodies, seeding, cursor walking, the fan-out and rollout
runs, whole-site validation, a JWT issuer for the auth run (openssl), reading Flow's batch-size
metric, pgbench log statistics, and the final tables (text, JSON, markdown). Standard library
only (plus the openssl command)."""

import argparse
import base64
import concurrent.futures
import datetime
import glob
import http.client
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.parse

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
import report  # noqa: E402
from report import load  # noqa: E402

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

    def __init__(self, url, timeout=120):
        u = urllib.parse.urlsplit(url)
        self.host, self.port, self.timeout = u.hostname, u.port, timeout
        self.local = threading.local()

    def conn(self):
        c = getattr(self.local, "c", None)
        if c is None:
            c = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
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


# How often the fan-out and the rollout look whether they ended. The time they took is read
# from the server's end timestamps, not from when a look saw the end, so a slow look costs no
# precision; looking every 50 ms did cost the measured run: 20 reads a second of the rollout's
# whole document (its 100 racks with their tasks' statuses) took about 1 s of Flow's CPU and
# 0.5 s of PostgreSQL's in a 15 s rollout on two cores, which the no-op baseline, waiting on
# Temporal's long poll, never pays.
LOOK_EVERY = 0.5


def server_time(text):
    """An RFC 3339 timestamp of Flow's as seconds since the epoch (the clock time.time() reads:
    Flow and this script run on one machine)."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def request_tasks(client, request_id):
    """Every task of one operation request, page by page."""
    tasks, cursor = [], None
    while True:
        path = f"/v1/tasks?request_id={request_id}&limit=1000"
        if cursor:
            path += "&cursor=" + urllib.parse.quote(cursor, safe="")
        status, body = client.call("GET", path)
        if status != 200:
            sys.exit(f"listing the request's tasks: {status} {body}")
        tasks += body["items"]
        cursor = body.get("next_cursor")
        if not cursor:
            return tasks


def cmd_fanout(a):
    """A power-on of `racks` racks in one request, timed from the request to the last task's
    end (its `finished_at`)."""
    client = Client(a.url)
    names = [{"name": f"bench-r{r:07d}"} for r in range(a.racks)]
    wall, started = time.time(), time.monotonic()
    status, body = client.call("POST", "/v1/operations/power-on",
                               {"target_spec": {"racks": names}})
    accepted = time.monotonic() - started
    if status != 202:
        sys.exit(f"power-on: {status} {body}")
    request_id, tasks = body["request_id"], len(body["task_ids"])
    deadline = started + a.timeout
    ended = []
    while time.monotonic() <= deadline:
        time.sleep(LOOK_EVERY)
        ended = [t for t in request_tasks(client, request_id) if t.get("finished_at")]
        if len(ended) >= tasks:
            break
    succeeded = sum(1 for t in ended if t["status"] == "succeeded")
    failed = len(ended) - succeeded
    last = max((server_time(t["finished_at"]) for t in ended), default=time.time())
    print(json.dumps({"racks": a.racks, "tasks": tasks, "succeeded": succeeded,
                      "failed": failed, "accepted_seconds": accepted, "seconds": last - wall,
                      "observed_seconds": time.monotonic() - started,
                      "activities_per_task": 2 + COMPUTE + NVSWITCH + POWERSHELF}))
    if succeeded != tasks:
        sys.exit(f"fan-out: {succeeded}/{tasks} tasks succeeded ({failed} failed)")


def cmd_rollout(a):
    """A power-on rollout of the fan-out's racks in waves of `batch` (no canary, no gate), timed
    from the request to the rollout's end (its `finished_at`)."""
    client = Client(a.url)
    names = [{"name": f"bench-r{r:07d}"} for r in range(a.racks)]
    body = {"name": f"bench-{int(time.time())}", "operation": {"kind": "power_on"},
            "target_spec": {"racks": names},
            "strategy": {"canary": 0, "batch_size": a.batch}}
    wall, started = time.time(), time.monotonic()
    status, doc = client.call("POST", "/v1/rollouts", body)
    if status != 201:
        sys.exit(f"rollout: {status} {doc}")
    deadline = started + a.timeout
    while doc["status"] not in ("succeeded", "failed", "halted", "aborted"):
        if time.monotonic() > deadline:
            break
        time.sleep(LOOK_EVERY)
        _, doc = client.call("GET", f"/v1/rollouts/{doc['id']}")
    observed = time.monotonic() - started
    end = server_time(doc["finished_at"]) if doc.get("finished_at") else time.time()
    counts = doc.get("counts", {})
    print(json.dumps({"racks": a.racks, "batch": a.batch, "waves": len(doc.get("waves", [])),
                      "status": doc["status"], "succeeded": counts.get("succeeded"),
                      "failed": counts.get("failed"), "seconds": end - wall,
                      "observed_seconds": observed}))
    if doc["status"] != "succeeded":
        sys.exit(f"rollout ended {doc['status']}: {doc.get('message')}")


def cmd_validate(a):
    """Whole-site live validation (`POST /v1/validation`, no body), timed."""
    client = Client(a.url, timeout=1800)
    started = time.monotonic()
    status, doc = client.call("POST", "/v1/validation")
    elapsed = time.monotonic() - started
    if status != 200:
        sys.exit(f"validation: {status} {doc}")
    print(json.dumps({"seconds": elapsed, "summary": doc.get("summary"),
                      "diffs": len(doc.get("diffs", []))}))


def cmd_metric(a):
    """The `_sum` and `_count` of one histogram in Flow's /metrics."""
    client = Client(a.url)
    conn = client.conn()
    conn.request("GET", "/metrics")
    resp = conn.getresponse()
    text = resp.read().decode()
    if resp.status != 200:
        sys.exit(f"/metrics: {resp.status}")
    out = {"sum": 0.0, "count": 0.0}
    for line in text.splitlines():
        for part in ("sum", "count"):
            if line.startswith(f"{a.name}_{part} ") or line.startswith(f"{a.name}_{part}{{"):
                out[part] += float(line.rsplit(" ", 1)[1])
    print(json.dumps(out))


def cmd_batch_mean(a):
    """Mean lookups per statement between two `metric` snapshots."""
    before, after = load(a.before), load(a.after)
    count = after["count"] - before["count"]
    mean = (after["sum"] - before["sum"]) / count if count else 1.0
    print(json.dumps({"statements": count, "lookups": after["sum"] - before["sum"],
                      "mean_batch": mean}))


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def cmd_jwt(a):
    """A throwaway identity provider: an RSA key made with openssl, its JWKS file, and one RS256
    viewer token (printed) for the auth-on lookup run."""
    os.makedirs(a.dir, exist_ok=True)
    key = os.path.join(a.dir, "jwt-key.pem")
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt",
                    "rsa_keygen_bits:2048", "-out", key], check=True, capture_output=True)
    modulus = subprocess.run(["openssl", "rsa", "-in", key, "-noout", "-modulus"], check=True,
                             capture_output=True, text=True).stdout.strip().split("=", 1)[1]
    text = subprocess.run(["openssl", "rsa", "-in", key, "-noout", "-text"], check=True,
                          capture_output=True, text=True).stdout
    e = int(re.search(r"publicExponent: (\d+)", text).group(1))
    jwk = {"kty": "RSA", "kid": "bench", "use": "sig", "alg": "RS256",
           "n": b64url(bytes.fromhex(modulus)), "e": b64url(e.to_bytes((e.bit_length() + 7) // 8, "big"))}
    with open(os.path.join(a.dir, "jwks.json"), "w") as f:
        json.dump({"keys": [jwk]}, f)
    now = int(time.time())
    header = {"alg": "RS256", "typ": "JWT", "kid": "bench"}
    claims = {"iss": a.issuer, "aud": a.audience, "sub": "bench", "iat": now, "nbf": now - 5,
              "exp": now + 4 * 3600, "roles": ["viewer"]}
    signing_input = (b64url(json.dumps(header).encode()) + "." +
                     b64url(json.dumps(claims).encode()))
    sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key, "-binary"], check=True,
                         input=signing_input.encode(), capture_output=True).stdout
    print(signing_input + "." + b64url(sig))


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
    s.set_defaults(fn=report.cmd_report)
    s = sub.add_parser("scale-report")
    s.add_argument("--work", required=True)
    s.add_argument("--json", required=True)
    s.set_defaults(fn=report.cmd_scale_report)
    s = sub.add_parser("rollout")
    s.add_argument("--url", required=True)
    s.add_argument("--racks", type=int, required=True)
    s.add_argument("--batch", type=int, required=True)
    s.add_argument("--timeout", type=float, default=900)
    s.set_defaults(fn=cmd_rollout)
    s = sub.add_parser("validate")
    s.add_argument("--url", required=True)
    s.set_defaults(fn=cmd_validate)
    s = sub.add_parser("metric")
    s.add_argument("--url", required=True)
    s.add_argument("--name", required=True)
    s.set_defaults(fn=cmd_metric)
    s = sub.add_parser("batch-mean")
    s.add_argument("--before", required=True)
    s.add_argument("--after", required=True)
    s.set_defaults(fn=cmd_batch_mean)
    s = sub.add_parser("jwt")
    s.add_argument("--dir", required=True)
    s.add_argument("--issuer", required=True)
    s.add_argument("--audience", required=True)
    s.set_defaults(fn=cmd_jwt)
    a = p.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
