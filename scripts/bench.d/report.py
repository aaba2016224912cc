"""The tables of scripts/bench: the figures of one run (`report`) or of the growth curve
(`scale-report`), printed as text and written as JSON and as a markdown table beside it
(`results.json` -> `results.md`). Standard library only."""

import json
import os


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def ratio(a, b):
    return None if a is None or b in (None, 0) else a / b


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 1000 else (f"{v:.1f}" if abs(v) >= 10 else f"{v:.3g}")
    return str(v)


def ok_rps(r):
    if not r:
        return None
    return (r["requests"] - r["non2xx"] - r["socket_errors"]) / r["seconds"]


# The load runs whose hypervisor steal is reported, in the order they run.
STEAL_RUNS = [
    ("lookup_flow", "lookup"), ("version_flow", "ceiling"), ("lookup_pg_unnest", "DB UNNEST"),
    ("lookup_pg_pipeline", "DB pipeline"), ("lookup_flow_unbatched", "lookup unbatched"),
    ("lookup_flow_bare", "lookup bare"), ("lookup_flow_jwt", "lookup jwt"),
    ("lookup_flow_jwt_nocache", "lookup jwt no cache"), ("import_flow", "import"),
    ("import_pgbench", "import pgbench"),
]
# A run that lost this share of the machine's CPU time or more is flagged in the notes.
STEAL_FLAG = 0.05


def steal_shares(work):
    """Each load run's steal as a share of the CPU time its duration offered on all CPUs."""
    shares = {}
    for name, _ in STEAL_RUNS:
        s = load(os.path.join(work, name + ".steal.json"))
        if s and s.get("seconds"):
            offered = s["seconds"] * s.get("cpus", 1) * s.get("hz", 100)
            shares[name] = max(0, s["steal_ticks"]) / offered
    return shares


def steal_note(shares):
    if not shares:
        return None
    labels = dict(STEAL_RUNS)
    parts = [f"{labels[n]} {v:.0%}" for n, v in shares.items()]
    flagged = [labels[n] for n, v in shares.items() if v >= STEAL_FLAG]
    note = "CPU time taken by the hypervisor (steal) during each load run: " + ", ".join(parts)
    if flagged:
        note += (f"; {', '.join(flagged)} lost {STEAL_FLAG:.0%} or more of the machine: "
                 "their ratios are the machine's as much as Flow's")
    return note


def text_table(rows):
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for i, r in enumerate(rows):
        lines.append("  ".join(c.ljust(widths[j]) for j, c in enumerate(r)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def md_table(rows):
    out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    out += ["| " + " | ".join(c.strip() or " " for c in r) + " |" for r in rows[1:]]
    return "\n".join(out)


def write(json_path, doc, title, rows, notes):
    os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
    with open(json_path, "w") as f:
        json.dump(doc, f, indent=2)
    md_path = os.path.splitext(json_path)[0] + ".md"
    with open(md_path, "w") as f:
        f.write(f"{title}\n\n{md_table(rows)}\n\n" + "".join(f"{n}\n" for n in notes))
    print()
    print(title)
    print(text_table(rows))
    for n in notes:
        print(n)
    print(f"figures written to {json_path} and {md_path}")


def cmd_report(a):
    w = a.work

    def f(name):
        return load(os.path.join(w, name + ".json"))

    meta, seed, mem = f("meta") or {}, f("seed") or {}, f("memory") or {}
    lk_on, lk_off, lk_jwt = f("lookup_flow"), f("lookup_flow_unbatched"), f("lookup_flow_jwt")
    lk_bare, lk_jwt_nc, version = f("lookup_flow_bare"), f("lookup_flow_jwt_nocache"), f("version_flow")
    batch, shape = f("lookup_batch") or {}, f("lookup_pg_shape") or {}
    pg_un, pg_pipe = f("lookup_pg_unnest"), f("lookup_pg_pipeline")
    p_first, p_deep, cursor = f("page_first"), f("page_deep"), f("cursor") or {}
    im_flow, im_pg = f("import_flow"), f("import_pgbench")
    fan, base = f("fanout_flow"), f("fanout_baseline")
    roll, roll_base = f("rollout_flow"), f("rollout_baseline")

    rows = []

    def row(key, figure, value, unit, lat=None, limit=None, limit_desc="", r=None, target=None,
            passed=None):
        rows.append({"key": key, "figure": figure, "value": value, "unit": unit,
                     "p50_ms": lat and lat.get("p50_ms"), "p99_ms": lat and lat.get("p99_ms"),
                     "limit": limit, "limit_desc": limit_desc, "ratio": r, "target": target,
                     "pass": passed})

    # Lookup: the limit is the better of the two ways the database serves the same keys.
    keys, depth = shape.get("unnest_keys"), shape.get("pipeline_depth")
    un_rate = pg_un and keys and pg_un["tps"] * keys
    pipe_rate = pg_pipe and depth and pg_pipe["tps"] * depth
    limit = max([x for x in (un_rate, pipe_rate) if x] or [0]) or None
    if un_rate:
        row("db_lookup_unnest", f"DB: Flow's UNNEST statement, {keys} keys/stmt (c=32)", un_rate,
            "lookups/s", pg_un)
    if pipe_rate:
        row("db_lookup_pipelined", f"DB: single-key statement, {depth}/pipeline (c=32)", pipe_rate,
            "lookups/s", pg_pipe)
    # The HTTP ceiling: Flow's cheapest route on the same Flow with the same connections. Per
    # request, a lookup costs at least what that route costs plus what the database spends on
    # one lookup; those CPU costs add, so the bound is 1 / (1/ceiling + 1/db_limit).
    ceiling = ok_rps(version)
    composite = 1 / (1 / ceiling + 1 / limit) if ceiling and limit else None
    if ceiling:
        row("http_ceiling_rps", "HTTP ceiling: GET /v1/version, same Flow (c=32)", ceiling,
            "req/s", version)
    if composite:
        row("composite_bound_rps", "composite bound 1/(1/ceiling + 1/DB limit)", composite,
            "req/s", None, limit, "DB limit", ratio(composite, limit))
    mean = batch.get("mean_batch")
    lookup_notes = []
    for key, label, run in (
            ("lookup_rps", "Flow lookup, batching on", lk_on),
            ("lookup_unbatched_rps", "Flow lookup, batching off", lk_off),
            ("lookup_bare_rps", "Flow lookup, batching on, no metrics/trace/request id", lk_bare),
            ("lookup_jwt_rps", "Flow lookup, batching on, auth jwt (cached)", lk_jwt),
            ("lookup_jwt_nocache_rps", "Flow lookup, batching on, auth jwt, no cache", lk_jwt_nc)):
        if run:
            v = ok_rps(run)
            bound, desc = (composite, "composite bound") if composite else (limit, "DB limit")
            r = ratio(v, bound)
            target = 0.6 if composite else 0.5
            if key == "lookup_rps" and mean:
                label += f" (mean batch {mean:.1f})"
            row(key, label + " (c=32)", v, "req/s", run, bound, desc, r,
                f"≥ {target} × {'composite' if composite else 'DB'}",
                None if r is None else r >= target)
            rows[-1].update(ratio_db=ratio(v, limit), ratio_ceiling=ratio(v, ceiling),
                            ratio_composite=ratio(v, composite))
            parts = [f"{x:.2f} × {name}" for x, name in (
                (ratio(v, limit), "DB limit"), (ratio(v, ceiling), "HTTP ceiling"),
                (ratio(v, composite), "composite bound")) if x is not None]
            lookup_notes.append(f"{label}: " + ", ".join(parts))
    if lk_jwt and lk_on:
        v, off = ok_rps(lk_jwt), ok_rps(lk_on)
        r = ratio(v, off)
        row("lookup_jwt_vs_off", "Flow lookup, auth jwt vs auth off (same run)", v, "req/s",
            None, off, "auth off", r, "≥ 0.9 × auth off", None if r is None else r >= 0.9)
    if p_first or p_deep:
        fv, dv = p_first and p_first["p50_ms"], p_deep and p_deep["p50_ms"]
        r = ratio(dv, fv)
        row("deep_page_ms", f"page {cursor.get('depth', '?')} items deep (p50)", dv, "ms", None,
            fv, "first page p50", r, "≤ 1.5 × first page", None if r is None else r <= 1.5)
    if im_flow or im_pg:
        fv, gv = ok_rps(im_flow), im_pg and im_pg["tps"]
        r = ratio(fv, gv)
        row("import_racks_per_s", "import racks (c=8)", fv, "racks/s", im_flow, gv,
            "pgbench racks/s", r, "≥ 0.7 × SQL", None if r is None else r >= 0.7)
    # Issue 28's bounds: a rollout within 1.2 x of its no-op baseline; fan-out within 1.5 x.
    for key, label, run, bl, bound in (("fanout_s", "power-on fan-out", fan, base, 1.5),
                                       ("rollout_s", "power-on rollout", roll, roll_base, 1.2)):
        if run or bl:
            fv, bv = run and run.get("seconds"), bl and bl.get("seconds")
            r = ratio(fv, bv)
            n = (run or {}).get("racks") or (bl or {}).get("workflows")
            if key == "rollout_s":
                label += f" in waves of {(run or bl or {}).get('batch')}"
            row(key, f"{label} ({n} racks)", fv, "s", None, bv, "no-op workflows", r,
                f"≤ {bound} × Temporal", None if r is None else r <= bound)
    if "idle_rss_mb" in mem:
        v = mem["idle_rss_mb"]
        row("rss_idle_mb", f"RSS idle ({meta.get('racks', '?')} racks)", v, "MB", None, 100,
            "100 MB", v / 100, "≤ 100 MB", v <= 100)
    if "peak_rss_mb" in mem:
        v = mem["peak_rss_mb"]
        row("rss_peak_mb", "RSS peak (lookup, fan-out)", v, "MB", None, 250, "250 MB", v / 250,
            "≤ 250 MB", v <= 250)

    table = [["figure", "value", "p50 / p99 ms", "limit", "ratio", "target", ""]]
    for x in rows:
        lat = "-" if x["p50_ms"] is None else f"{fmt(x['p50_ms'])} / {fmt(x['p99_ms'])}"
        table.append([x["figure"], f"{fmt(x['value'])} {x['unit']}", lat,
                      f"{fmt(x['limit'])} ({x['limit_desc']})" if x["limit_desc"] else fmt(x["limit"]),
                      "-" if x["ratio"] is None else f"{x['ratio']:.2f}", x["target"] or "",
                      "" if x["pass"] is None else ("PASS" if x["pass"] else "MISS")])
    title = (f"Flow benchmark — {meta.get('racks', '?')} racks, profile {meta.get('profile', '?')}, "
             f"{meta.get('duration', '?')} s load runs, {meta.get('cpus', '?')} CPUs, "
             f"{meta.get('started', '?')}" + (", quick" if meta.get("quick") else ""))
    missed = [x["figure"].strip() for x in rows if x["pass"] is False]
    notes = []
    if seed:
        notes.append(f"(seeding {seed.get('racks')} racks through the API took "
                     f"{seed.get('seconds', 0):.1f} s)")
    notes.append("p50/p99: per request for Flow; per statement (pgbench transaction) for the "
                 "database rows, which carry several lookups each.")
    if lookup_notes:
        notes.append("lookup ratios: " + "; ".join(lookup_notes))
    steal = steal_shares(w)
    note = steal_note(steal)
    if note:
        notes.append(note)
    notes.append("targets missed: " + (", ".join(missed) if missed else "none")
                 + "  (informational: the benchmark asserts nothing)")
    doc = {"meta": meta, "figures": rows,
           "raw": {"seed": seed, "lookup_flow": lk_on, "lookup_flow_unbatched": lk_off,
                   "lookup_flow_jwt": lk_jwt, "lookup_flow_jwt_nocache": lk_jwt_nc,
                   "lookup_flow_bare": lk_bare, "version_flow": version,
                   "http_ceiling_rps": ceiling, "composite_bound_rps": composite,
                   "lookup_batch": batch, "lookup_pg_unnest": pg_un,
                   "lookup_pg_pipeline": pg_pipe, "lookup_pg_shape": shape,
                   "page_first": p_first, "page_deep": p_deep,
                   "cursor_depth": cursor.get("depth"), "import_flow": im_flow,
                   "import_pgbench": im_pg, "fanout_flow": fan, "fanout_baseline": base,
                   "rollout_flow": roll, "rollout_baseline": roll_base, "memory": mem,
                   "steal_share": steal}}
    write(a.json, doc, title, table, notes)


# Scale figures: (key, label, unit, kind). `time` grows at most linearly with the site when all
# is well; `flat` should not grow at all (an index walk, a fixed-size answer); `rate` should not
# fall (per-item cost constant).
SCALE_FIGURES = [
    ("import_racks_per_s", "import rate (API, last racks of the site)", "racks/s", "rate"),
    ("sql_seed_s", "SQL seed of the rest (not Flow)", "s", "time"),
    ("lookup_rps", "lookup throughput (c=32)", "req/s", "rate"),
    ("lookup_p99_ms", "lookup p99", "ms", "flat"),
    ("first_page_ms", "first page p50 (limit 100)", "ms", "flat"),
    ("last_page_ms", "last page p50 (cursor)", "ms", "flat"),
    ("validation_s", "whole-site validation", "s", "time"),
    ("validation_peak_mb", "RSS peak during validation", "MB", "time"),
    ("drift_sync_s", "drift sync (one cycle)", "s", "time"),
    ("drift_peak_mb", "RSS peak during drift sync", "MB", "time"),
    ("idle_rss_mb", "RSS idle", "MB", "time"),
]


def scale_point(d):
    def f(name):
        return load(os.path.join(d, name + ".json")) or {}

    seed, lk, first, last = f("seed"), f("lookup_flow"), f("page_first"), f("page_deep")
    val, mem, sql = f("validation"), f("memory"), f("seed_sql")
    return {
        # Racks below the import sample were written by SQL; the sample through the API.
        "components": (seed.get("racks", 0) + sql.get("racks", 0)) * 37,
        "import_racks_per_s": ratio(seed.get("racks"), seed.get("seconds")),
        "import_sample_racks": seed.get("racks"),
        "sql_seed_s": sql.get("seconds"),
        "lookup_rps": ok_rps(lk) if lk else None,
        "lookup_p99_ms": lk.get("p99_ms"),
        "first_page_ms": first.get("p50_ms"),
        "last_page_ms": last.get("p50_ms"),
        "last_page_depth": f("cursor").get("depth"),
        "validation_s": val.get("seconds"),
        "validation_peak_mb": mem.get("peak_validation_rss_mb"),
        "drift_sync_s": mem.get("drift_sync_seconds"),
        "drift_peak_mb": mem.get("peak_drift_rss_mb"),
        "idle_rss_mb": mem.get("idle_rss_mb"),
    }


def growth_note(kind, factor, size_factor):
    """Whether a figure grows faster than linearly between two sizes (25% slack for noise)."""
    if factor is None:
        return None
    if kind == "rate":
        return "per-item cost grows" if factor < 1 / 1.25 else None
    if kind == "flat":
        return "grows with the site" if factor > 1.25 and factor > size_factor ** 0.5 else None
    return "faster than linear" if factor > size_factor * 1.25 else None


def cmd_scale_report(a):
    meta = load(os.path.join(a.work, "meta.json")) or {}
    sizes = meta.get("sizes", [])
    points = {n: scale_point(os.path.join(a.work, "scale", str(n))) for n in sizes}
    header = ["figure"] + [f"{n:,} racks" for n in sizes]
    header += [f"× {sizes[i]:,}→{sizes[i + 1]:,}" for i in range(len(sizes) - 1)] + ["note"]
    table = [header, ["components"] + [f"{points[n]['components']:,}" for n in sizes]
             + [""] * (len(sizes) - 1) + [""]]
    flagged = []
    for key, label, unit, kind in SCALE_FIGURES:
        values = [points[n].get(key) for n in sizes]
        growth, notes = [], set()
        for i in range(len(sizes) - 1):
            g = ratio(values[i + 1], values[i])
            growth.append(g)
            note = growth_note(kind, g, sizes[i + 1] / sizes[i])
            if note:
                notes.add(note)
        if notes:
            flagged.append(f"{label}: {', '.join(sorted(notes))}")
        table.append([f"{label} ({unit})"] + [fmt(v) for v in values]
                     + ["-" if g is None else f"{g:.2f}" for g in growth]
                     + ["; ".join(sorted(notes))])
    title = (f"Flow scale curve — GB200-shaped racks (37 components each), profile "
             f"{meta.get('profile', '?')}, {meta.get('duration', '?')} s lookup runs, "
             f"{meta.get('cpus', '?')} CPUs, {meta.get('started', '?')}")
    notes = ["growth: the figure at the larger size divided by the figure at the smaller one.",
             "flagged (faster than linear, or a cost per item that grows): "
             + ("; ".join(flagged) if flagged else "none")] + page_targets(points)
    write(a.json, {"meta": meta, "points": points}, title, table, notes)


def page_targets(points):
    """Issue 28's page targets: p50 <= 10 ms at 10,000 racks, and at 100,000 within 1.5 x of
    10,000 (first and last page alike); only for the sizes that were run."""
    out = []
    for key, label in (("first_page_ms", "first page"), ("last_page_ms", "last page")):
        at10k = points.get(10000, {}).get(key)
        if at10k is not None:
            verdict = "PASS" if at10k <= 10 else "MISS"
            out.append(f"{label} p50 at 10,000 racks: {fmt(at10k)} ms (target ≤ 10 ms) {verdict}")
        at100k = points.get(100000, {}).get(key)
        if at10k and at100k is not None:
            r = at100k / at10k
            verdict = "PASS" if r <= 1.5 else "MISS"
            out.append(f"{label} p50 at 100,000 racks: {fmt(at100k)} ms = {r:.2f} × 10,000 "
                       f"(target ≤ 1.5 ×) {verdict}")
    return out
