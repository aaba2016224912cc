"""The operator console in a real browser: Debian's Chromium, headless, driven by Playwright.

Starts its own `flow serve` (a SQLite file, simulated devices with short latency, the shared
Temporal server on a private task queue, a loopback port), then as an operator would: creates
racks through the API, finds one in the console, pages through the list, runs a power-on with
its preview and watches it finish live, sees a drift diff; checks each rack elevation (SVG) has
exactly the rack's components as trays, each linking to its page, and an NVLink domain's page
draws its racks side by side. At 390 px the component and step tables are stacked cards with no
cell hidden. Any browser console error fails the test. Screenshots of every page at 1280 and 390 px go to target/ui-shots/.

A second server requires API tokens (`FLOW_AUTH=token`, tokens made with `flow token create`):
an operator signs in, sees a rollout's waves and its approval gate with the steering controls; a
viewer sees the same pages and is offered no action. (The rollout is stored straight in the
database: the rollout workflow itself is tested by the Rust suite.) Holds (issue 27): a hold set
through the API shows as a badge on the rack and holds pages, an operator's run on the held rack
shows a plan naming it with nothing to confirm, only an admin is offered the override, behind a confirmation, and the
holds page's release button deletes it.

Run by scripts/test; alone: target/tools/venv/bin/pytest -q tests/ui
"""

import contextlib
import json
import re
import sqlite3
import os
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "target" / "ui-shots"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
WIDTHS = {"wide": (1280, 900), "narrow": (390, 844)}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(base, method, path, body=None, token=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        req.add_header("content-type", "application/json")
    if token is not None:
        req.add_header("authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=10) as r:
        text = r.read().decode()
        return json.loads(text) if text else None


def poll(what, check, timeout=60.0, every=0.25):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def rack_body(n):
    """A small rack: two power shelves, one NVSwitch tray, two compute trays, firmware 1.0."""
    components = []
    for i, kind in enumerate(["powershelf", "powershelf", "nvswitch", "compute", "compute"]):
        components.append({
            "type": kind,
            "name": f"ui{n:02}-{kind}-{i}",
            "manufacturer": "NVIDIA",
            "serial_number": f"UI-{n:02}-{i}",
            "firmware_version": "1.0",
            "position": {"slot_id": i + 1, "tray_idx": i},
            "bmcs": [{"type": "host", "mac_address": f"02:aa:{n:02x}:00:{i:02x}:01"}],
        })
    return {
        "name": f"ui-rack-{n:02}",
        "manufacturer": "NVIDIA",
        "serial_number": f"UI-RACK-{n:02}",
        "model": "GB200 NVL72",
        "location": {"region": "EU", "datacenter": "ams1", "room": "hall-2", "position": f"R{n:02}"},
        "components": components,
    }


@contextlib.contextmanager
def serve(auth):
    """A `flow serve` of its own; yields (base URL, environment of its database)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    binary = os.environ.get("FLOW_BIN", str(ROOT / "target" / "debug" / "flow"))
    work = tempfile.mkdtemp(prefix="flow-ui-")
    temporal = os.environ.get("TEST_TEMPORAL_ADDRESS", "http://127.0.0.1:7233")
    env = dict(
        os.environ,
        FLOW_DATABASE_URL=f"sqlite://{work}/flow.db?mode=rwc",
        FLOW_LISTEN=f"127.0.0.1:{port}",
        FLOW_TEMPORAL_ADDRESS=temporal,
        FLOW_TEMPORAL_NAMESPACE="flow",
        # A private queue: workers of other test runs on the shared server never take our tasks.
        FLOW_TEMPORAL_TASK_QUEUE=f"ui-test-{uuid.uuid4()}",
        FLOW_COMPONENT_MANAGERS="compute=sim,nvswitch=sim,powershelf=sim",
        FLOW_SIM_LATENCY_MS="150",
        FLOW_DRIFT_SYNC_INTERVAL_SECS="1",
        FLOW_AUTH=auth,
        FLOW_LOG="warn",
    )
    log = open(Path(work) / "flow.log", "w")
    proc = subprocess.Popen([binary, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)

    def healthy():
        if proc.poll() is not None:
            raise AssertionError(f"flow serve exited with {proc.returncode}; log: {work}/flow.log")
        try:
            return call(base, "GET", "/readyz") is not None or True
        except OSError:
            return False

    try:
        poll("flow serve to answer", healthy, timeout=60)
        yield base, env, Path(work) / "flow.db"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def flow():
    with serve("none") as (base, _, _):
        yield base


def create_token(env, name, role):
    """`flow token create` straight on the server's database; the secret is its last line."""
    binary = os.environ.get("FLOW_BIN", str(ROOT / "target" / "debug" / "flow"))
    env = {k: v for k, v in env.items() if k != "FLOW_TOKEN"}
    out = subprocess.run([binary, "token", "create", "--name", name, "--role", role], env=env,
                         check=True, capture_output=True, text=True, timeout=60).stdout
    return out.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def secured():
    """A server requiring API tokens, a token per role, its database: (base, {role: secret}, db)."""
    with serve("token") as (base, env, db):
        tokens = {role: create_token(env, f"ui-{role}", role) for role in ["admin", "operator", "viewer"]}
        yield base, tokens, db


def store_rollout(db, name, racks):
    """A power-on rollout whose canary wave is done and which waits for approval, as its
    workflow would have stored it (one row: spec and waves as JSON)."""
    spec = {
        "name": name,
        "template": {"operation": {"operation": "power_on"}, "queue_timeout_secs": 3600},
        "targets": {"racks": [{"name": r["name"]} for r in racks]},
        "component_types": ["compute"],
        "strategy": {"order": "name", "canary": 1, "batch_size": {"racks": 1},
                     "max_concurrent_racks": None, "pause_between_secs": 0,
                     "approval_after_canary": True,
                     "failure_budget": {"max_failed_racks": 1, "max_failed_fraction": None},
                     "spread_by": "none", "verify": "none"},
        "window": None, "conflict_strategy": "reject", "on_refused": "skip",
    }

    def rack(r, state, reason=None):
        return {"rack_id": r["id"], "rack_name": r["name"], "state": state, "task_id": None,
                "reason": reason, "verify_failed": False}

    now = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    waves = [
        {"index": 0, "canary": True, "status": "succeeded", "started_at": now, "finished_at": now,
         "racks": [rack(racks[0], "skipped", "nothing to do: the trays are on")]},
        {"index": 1, "canary": False, "status": "pending", "started_at": None, "finished_at": None,
         "racks": [rack(r, "pending") for r in racks[1:]]},
    ]
    rollout_id = uuid.uuid4()
    with contextlib.closing(sqlite3.connect(db, timeout=30)) as conn, conn:
        conn.execute(
            "INSERT INTO rollouts (id, name, status, spec, waves, current_wave, approved, message,"
            " revision, created_at, updated_at, started_at, finished_at)"
            " VALUES (?, ?, 'awaiting_approval', ?, ?, 1, 0, ?, 0, ?, ?, ?, NULL)",
            (rollout_id.bytes, name, json.dumps(spec), json.dumps(waves),
             "the canary passed; waiting for approval", now, now, now))
    return str(rollout_id)


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield b
        b.close()


class Console:
    """A browser page that records every console error and page exception."""

    def __init__(self, browser, width):
        w, h = WIDTHS[width]
        self.width = width
        self.context = browser.new_context(viewport={"width": w, "height": h})
        self.page = self.context.new_page()
        self.errors = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def shot(self, name):
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{name}-{self.width}.png"), full_page=True)
        # Nothing wider than the window: tables scroll inside their own box.
        overflow = self.page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 1, f"{name} at {self.width}: the page scrolls sideways by {overflow}px"

    def close(self):
        self.context.close()
        assert not self.errors, f"browser console errors: {self.errors}"


def check_elevation(scope, base, rack):
    """The SVG's trays are exactly the rack's components: one each, each linking to its page,
    the highest slot on top, each labelled with its slot and name."""
    components = call(base, "GET", f"/v1/racks/{rack['id']}?include_components=true")["components"]
    trays = scope.locator("svg.elevation a.tray")
    expect(trays).to_have_count(len(components))
    hrefs = [t.get_attribute("href") for t in trays.all()]
    assert sorted(hrefs) == sorted(f"/ui/components/{x['id']}" for x in components), hrefs
    by_slot = sorted(components, key=lambda x: x["position"]["slot_id"], reverse=True)
    labels = [t.locator("text").text_content() for t in trays.all()]
    assert labels == [f"U{x['position']['slot_id']} {x['name']}" for x in by_slot], labels


def test_an_operator_finds_a_rack_runs_a_power_on_live_and_sees_drift(flow, browser):
    racks = [call(flow, "POST", "/v1/expected-racks", rack_body(n)) for n in range(1, 4)]
    rack = racks[0]
    c = Console(browser, "wide")
    page = c.page

    # The list, keyboard first: the skip link is the first stop.
    page.goto(f"{flow}/ui")
    expect(page).to_have_url(f"{flow}/ui/racks")
    c.shot("racks")
    page.keyboard.press("Tab")
    expect(page.locator("a.skip")).to_be_focused()

    # Paginate: two per page, then the next page holds the third rack.
    page.goto(f"{flow}/ui/racks?limit=2")
    expect(page.locator("tbody tr")).to_have_count(2)
    page.get_by_role("link", name="Next page").click()
    expect(page.get_by_role("link", name="ui-rack-03")).to_be_visible()
    expect(page.locator(".pager")).to_contain_text("1 shown")
    expect(page.locator(".pager")).not_to_contain_text("more")

    # Find the rack with the filter form.
    page.goto(f"{flow}/ui/racks")
    page.get_by_label("Name").fill("ui-rack-01")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("tbody tr")).to_have_count(1)
    page.get_by_role("link", name="ui-rack-01").click()
    expect(page.locator("h1")).to_have_text("Rack ui-rack-01")
    expect(page.locator("main")).to_contain_text("UI-01-3")
    check_elevation(page, flow, rack)
    c.shot("rack")

    # An NVLink domain of two racks: their elevations side by side, a tray's link to its page.
    call(flow, "POST", "/v1/nvl-domains", {"name": "ui-nvl-1"})
    call(flow, "POST", "/v1/nvl-domains/ui-nvl-1/racks", {"racks": [{"name": "ui-rack-01"}, {"name": "ui-rack-02"}]})
    page.goto(f"{flow}/ui/racks/{rack['id']}")
    page.get_by_role("link", name="ui-nvl-1").click()
    expect(page.locator("h1")).to_have_text("NVLink domain ui-nvl-1")
    expect(page.locator(".elevations figure")).to_have_count(2)
    expect(page.locator(".elevations figcaption")).to_have_text(["ui-rack-01", "ui-rack-02"])
    for fig, r in zip(page.locator(".elevations figure").all(), racks[:2]):
        check_elevation(fig, flow, r)
    boxes = [f.bounding_box() for f in page.locator(".elevations figure").all()]
    assert boxes[0]["y"] == boxes[1]["y"] and boxes[0]["x"] < boxes[1]["x"], f"not side by side: {boxes}"
    c.shot("nvl-domain")
    page.locator("svg.elevation a.tray").first.click()
    expect(page.locator("h1")).to_have_text("Component ui01-compute-4")
    expect(page.get_by_role("link", name="ui-rack-01")).to_be_visible()
    c.shot("component")

    # Select it, preview a power-on, confirm.
    page.goto(f"{flow}/ui/racks?name=ui-rack-01")
    page.get_by_label("Select ui-rack-01").check()
    page.get_by_role("button", name="Run an operation on the selected racks").click()
    page.get_by_label("Operation").select_option("power_on")
    c.shot("run")
    page.get_by_role("button", name="Preview the plan").click()
    expect(page.locator("h1")).to_have_text("Plan: power_on")
    expect(page.locator("main")).to_contain_text("power on shelves")
    c.shot("plan")
    page.get_by_role("button", name="Confirm and run").click()

    # The task's page follows it live (no reload) until it succeeds.
    expect(page).to_have_url(re.compile(r"/ui/tasks/[0-9a-f-]{36}$"))
    page.evaluate("window.__stayed = true")
    expect(page.locator("[data-status]")).to_have_attribute("data-status", "succeeded", timeout=90_000)
    assert page.evaluate("window.__stayed === true"), "the page reloaded instead of updating live"
    expect(page.locator("section.stage")).to_have_count(3)
    expect(page.get_by_role("button", name="Cancel task")).to_have_count(0)
    c.shot("task")

    page.goto(f"{flow}/ui/tasks")
    expect(page.locator("tbody tr")).to_have_count(1)
    # Tasks name their rack.
    expect(page.locator("tbody tr td").nth(3)).to_have_text("ui-rack-01")
    c.shot("tasks")

    # After the power-on the rack's trays are drawn on: power recorded from the task's steps.
    page.goto(f"{flow}/ui/racks/{rack['id']}")
    trays = page.locator("svg.elevation a.tray")
    assert [t.get_attribute("data-power") for t in trays.all()] == ["on"] * 5

    # Drift: the operator records new firmware the devices do not run yet.
    tray = next(x for x in call(flow, "GET", f"/v1/racks/{rack['id']}?include_components=true")["components"]
                if x["type"] == "compute")
    call(flow, "PATCH", f"/v1/components/{tray['id']}", {"firmware_version": "2.0"})
    poll("the drift sync to record the mismatch",
         lambda: call(flow, "GET", "/v1/drift?kind=mismatch")["items"], timeout=60)
    page.goto(f"{flow}/ui/drift")
    page.get_by_role("link", name="mismatch").click()
    expect(page.locator("main")).to_contain_text("firmware_version")
    expect(page.locator(".diff-exp").first).to_have_text("2.0")
    expect(page.locator(".diff-act").first).to_have_text("1.0")
    c.shot("drift")
    page.goto(f"{flow}/ui/racks/{rack['id']}")
    expect(page.locator(".diff-exp").first).to_have_text("2.0")

    for name in ["schedules", "rules"]:
        page.goto(f"{flow}/ui/{name}")
        expect(page.locator("h1")).to_have_text(name.capitalize())
        c.shot(name)

    # A problem is a readable page, not JSON. Chromium logs the 404 of the document itself;
    # that one line is expected, anything else is not.
    before = list(c.errors)
    page.goto(f"{flow}/ui/racks/{uuid.uuid4()}")
    expect(page.get_by_role("alert")).to_contain_text("not found")
    assert all("404" in e for e in c.errors[len(before):]), c.errors
    c.errors = before
    c.close()


def test_every_page_is_usable_at_phone_width(flow, browser):
    rack = poll("a rack from the first test",
                lambda: call(flow, "GET", "/v1/racks?name=ui-rack-01")["items"])[0]
    task = call(flow, "GET", "/v1/tasks?limit=1")["items"]
    c = Console(browser, "narrow")
    page = c.page
    pages = {"racks": "/ui/racks", "rack": f"/ui/racks/{rack['id']}", "tasks": "/ui/tasks",
             "drift": "/ui/drift?kind=mismatch", "schedules": "/ui/schedules", "rules": "/ui/rules",
             "run": f"/ui/run?rack={rack['id']}"}
    pages["nvl-domain"] = "/ui/nvl-domains/ui-nvl-1"
    tray = call(flow, "GET", f"/v1/racks/{rack['id']}?include_components=true")["components"][0]
    pages["component"] = f"/ui/components/{tray['id']}"
    if task:
        pages["task"] = f"/ui/tasks/{task[0]['id']}"
    for name, path in pages.items():
        page.goto(flow + path)
        expect(page.locator("h1")).to_be_visible()
        c.shot(name)
        # Component and step tables become stacked cards: every cell shown, none scrolled away.
        hidden = page.evaluate("""() => [...document.querySelectorAll('table.cards td')]
            .filter(td => { const r = td.getBoundingClientRect();
                            return r.width === 0 || r.right > document.documentElement.clientWidth + 1; })
            .map(td => td.dataset.label)""")
        assert hidden == [], f"{name} at 390 px hides {hidden}"
        if name in ("rack", "task"):
            expect(page.locator("table.cards thead").first).to_be_hidden()
            expect(page.locator("table.cards td[data-label=Power], table.cards td[data-label='Last event']").first).to_be_visible()
    page.goto(flow + pages["run"])
    page.get_by_label("Operation").select_option("power_off")
    page.get_by_role("button", name="Preview the plan").click()
    expect(page.locator("h1")).to_have_text("Plan: power_off")
    c.shot("plan")
    c.close()


def sign_in(c, base, token, wrong_first=False):
    """Signs in from the form a console page sends the browser to, with the keyboard."""
    page = c.page
    page.goto(f"{base}/ui/rollouts")
    expect(page).to_have_url(re.compile(r"/ui/login\?next=%2Fui%2Frollouts$"))
    expect(page.locator("h1")).to_have_text("Sign in")
    field = page.get_by_label("API token or identity-provider token (JWT)")
    expect(field).to_be_focused()
    if wrong_first:
        field.fill("flow_not-a-token")
        # The failed attempt is an expected 401 of the document; nothing else may be logged.
        before = list(c.errors)
        page.keyboard.press("Enter")
        expect(page.get_by_role("alert")).to_contain_text("invalid token")
        assert all("401" in e for e in c.errors[len(before):]), c.errors
        c.errors = before
        c.shot("login")
        field = page.get_by_label("API token or identity-provider token (JWT)")
    field.fill(token)
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{base}/ui/rollouts")


def test_an_operator_signs_in_and_sees_a_rollouts_waves_a_viewer_only_watches(secured, browser):
    base, tokens, db = secured
    admin = tokens["admin"]
    racks = [call(base, "POST", "/v1/expected-racks", rack_body(n), token=admin) for n in (11, 12, 13)]
    rollout = store_rollout(db, "power-on hall 2", racks)
    assert call(base, "GET", f"/v1/rollouts/{rollout}", token=admin)["status"] == "awaiting_approval"

    c = Console(browser, "wide")
    page = c.page
    sign_in(c, base, tokens["operator"], wrong_first=True)
    expect(page.locator("header .who")).to_contain_text("token:ui-operator")
    expect(page.locator("header .who")).to_contain_text("operator")
    expect(page.locator("tbody tr")).to_have_count(1)
    c.shot("rollouts")
    page.get_by_role("link", name="power-on hall 2").click()
    expect(page.locator("h1")).to_have_text("Rollout power-on hall 2")
    live = page.locator("#rollout-live")
    expect(live.locator("dd[data-status]")).to_have_attribute("data-status", "awaiting_approval")
    expect(live).to_contain_text("Wave 1 (canary)")
    expect(live).to_contain_text("nothing to do: the trays are on")
    expect(live).to_contain_text("waiting for approval")
    expect(page.get_by_role("link", name="ui-rack-13")).to_be_visible()
    for name in ["Approve the waves after the canary", "Pause", "Abort and cancel running tasks"]:
        expect(page.get_by_role("button", name=name)).to_be_visible()
    # Keyboard: the steering buttons are reachable by Tab from the page's first stop.
    page.keyboard.press("Tab")
    expect(page.locator("a.skip")).to_be_focused()
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent") == "Approve the waves after the canary":
            break
    expect(page.get_by_role("button", name="Approve the waves after the canary")).to_be_focused()
    c.shot("rollout")
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(f"{base}/ui/login")
    page.goto(f"{base}/ui/racks")
    expect(page).to_have_url(re.compile(r"/ui/login\?next="))
    c.close()

    # A viewer sees everything and is offered nothing to run or steer.
    c = Console(browser, "narrow")
    page = c.page
    sign_in(c, base, tokens["viewer"])
    expect(page.locator("header .who")).to_contain_text("viewer")
    c.shot("rollouts")
    page.get_by_role("link", name="power-on hall 2").click()
    expect(page.locator("#rollout-live")).to_contain_text("Wave 2")
    expect(page.locator("main form button")).to_have_count(0)
    c.shot("rollout")
    page.goto(f"{base}/ui/racks")
    expect(page.locator("tbody tr")).to_have_count(3)
    expect(page.get_by_role("button", name="Run an operation on the selected racks")).to_have_count(0)
    page.goto(f"{base}/ui/schedules")
    expect(page.locator("h1")).to_have_text("Schedules")
    page.get_by_role("button", name="Sign out").click()
    expect(page.locator("h1")).to_have_text("Sign in")
    c.shot("login")
    c.close()


@contextlib.contextmanager
def attacker_site(html):
    """A hostile page on another port of the same host (cookies ignore ports, and
    `SameSite=Strict` calls it the same site): serves `html` at /."""
    import http.server
    import threading

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = html.encode()
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_a_page_on_another_port_cannot_power_off_through_a_signed_in_console(secured, browser):
    base, tokens, _ = secured
    admin = tokens["admin"]
    rack = call(base, "POST", "/v1/expected-racks", rack_body(21), token=admin)
    tasks_before = len(call(base, "GET", "/v1/tasks?limit=1000", token=admin)["items"])
    # The attacker fetches a genuine pre-session CSRF pair from Flow's own sign-in page.
    with urllib.request.urlopen(base + "/ui/login", timeout=10) as r:
        planted = r.headers["set-cookie"].split(";")[0]
        token = re.search(r'name="csrf" value="([^"]+)"', r.read().decode()).group(1)
    html = f"""<!DOCTYPE html><html><body>
<form id="f" method="post" action="{base}/ui/run">
  <input name="rack" value="{rack['id']}"><input name="operation" value="power_off">
  <input name="conflict_strategy" value="reject"><input name="csrf" value="{token}">
</form>
<script>document.cookie = "{planted}; path=/"; document.getElementById("f").submit();</script>
</body></html>"""

    c = Console(browser, "wide")
    page = c.page
    sign_in(c, base, tokens["operator"])
    with attacker_site(html) as attack:
        before = list(c.errors)
        with page.expect_response(lambda r: r.url == f"{base}/ui/run"
                                  and r.request.method == "POST") as answer:
            page.goto(attack)
        assert answer.value.status == 403, answer.value.status
        expect(page.get_by_role("alert")).to_contain_text("did not come from a page of this console")
        # The refused document's 403 is the one expected console line.
        assert all("403" in e for e in c.errors[len(before):]), c.errors
        c.errors = before
    tasks_after = call(base, "GET", "/v1/tasks?limit=1000", token=admin)["items"]
    assert len(tasks_after) == tasks_before, tasks_after
    # The operator's own console still works.
    page.goto(f"{base}/ui/racks")
    expect(page.locator("header .who")).to_contain_text("token:ui-operator")
    c.close()


def task_total(base, token):
    return call(base, "GET", "/v1/tasks?count=exact&limit=1", token=token)["total"]


def expect_refused_page(c, base, path, status, click):
    """Clicks `click` (a locator) and expects the POST to `path` to answer `status` with an
    error page; the refused document's console line is the one expected."""
    before = list(c.errors)
    with c.page.expect_response(lambda r: r.url == f"{base}{path}"
                                and r.request.method == "POST") as answer:
        click.click()
    assert answer.value.status == status, answer.value.status
    expect(c.page.locator("h1")).to_have_text("Something went wrong")
    assert all(str(status) in e for e in c.errors[len(before):]), c.errors
    c.errors = before
    return c.page.get_by_role("alert")


def test_holds_show_as_badges_an_operator_is_refused_and_only_an_admin_overrides_after_confirming(
        secured, browser):
    """Issue 27 in the console. A hold a workload scheduler sets through the API (an operator's
    token) shows as a `held` badge with its owner and reason on the rack's page and on the
    holds page. An operator who runs a power-off on the held rack from the run form is offered
    no override, and the plan names the hold and offers nothing to confirm; a forged
    `override_readiness_check` field is refused `403` naming the field. An admin is offered the
    override: ticking it shows the `readiness_override` confirmation naming the hold and creates
    nothing until confirmed; confirming creates the task and the audit log names the hold
    overridden. The release button on the holds page deletes the hold and the badge goes."""
    base, tokens, _ = secured
    admin, operator = tokens["admin"], tokens["operator"]
    rack = call(base, "POST", "/v1/expected-racks", rack_body(31), token=admin)
    hold = call(base, "POST", "/v1/holds", {"target": {"rack": {"name": rack["name"]}},
                                             "owner": "slurm", "reason": "job 4711"}, token=operator)
    hold_id = hold["id"]
    assert hold["active"], hold
    badge = f'span.badge[data-hold="{hold_id}"]'

    # The operator sees the hold on the rack's page and on the holds page.
    c = Console(browser, "wide")
    page = c.page
    sign_in(c, base, operator)
    page.goto(f"{base}/ui/racks/{rack['id']}")
    expect(page.locator(badge)).to_have_text("held")
    held_dd = page.locator("dd", has=page.locator(badge))
    expect(held_dd).to_contain_text("slurm: job 4711")
    c.shot("rack-held")
    page.get_by_role("link", name="Holds").click()
    expect(page.locator("h1")).to_have_text("Holds")
    row = page.locator(f'tr[data-hold="{hold_id}"]')
    expect(row).to_have_count(1)
    expect(row.locator("span.badge")).to_have_text("held")
    expect(row).to_contain_text("slurm")
    expect(row).to_contain_text("job 4711")
    expect(row.get_by_role("link", name=rack["id"])).to_have_attribute("href", f"/ui/racks/{rack['id']}")
    c.shot("holds")

    # The operator's power-off from the run form: no override offered, refused, nothing created.
    tasks_before = task_total(base, admin)
    page.goto(f"{base}/ui/racks/{rack['id']}")
    page.get_by_role("link", name="Run an operation").click()
    expect(page.locator("h1")).to_have_text("Run an operation")
    expect(page.locator("input[name=override_readiness_check]")).to_have_count(0)
    page.get_by_label("Operation").select_option("power_off")
    page.get_by_role("button", name="Preview the plan").click()
    expect(page.locator("h1")).to_have_text("Plan: power_off")
    expect(page.locator('[data-code="readiness_override"]')).to_have_count(0)
    # The plan names the hold (the API dry run's blockers) and offers nothing to confirm.
    alert = page.locator('[data-code="held"]')
    expect(alert).to_contain_text(hold_id)
    expect(alert).to_contain_text("slurm")
    expect(alert).to_contain_text("job 4711")
    expect(alert.locator(f'li[data-hold="{hold_id}"]')).to_have_count(1)
    expect(page.get_by_role("button", name="Confirm and run")).to_have_count(0)
    c.shot("run-held")
    assert task_total(base, admin) == tasks_before

    # A forged override field (added to the operator's own form) is refused 403 naming it.
    page.goto(f"{base}/ui/run?rack={rack['id']}")
    page.get_by_label("Operation").select_option("power_off")
    page.evaluate("""() => {
        const i = document.createElement('input');
        i.type = 'hidden'; i.name = 'override_readiness_check'; i.value = 'true';
        document.querySelector('form[action="/ui/run/preview"]').appendChild(i);
    }""")
    alert = expect_refused_page(c, base, "/ui/run/preview", 403,
                                page.get_by_role("button", name="Preview the plan"))
    expect(alert.locator("li")).to_contain_text("override_readiness_check: needs the admin role")
    assert task_total(base, admin) == tasks_before
    c.close()

    # The admin is offered the override; ticking it asks for confirmation and creates nothing yet.
    c = Console(browser, "wide")
    page = c.page
    sign_in(c, base, admin)
    page.goto(f"{base}/ui/racks/{rack['id']}")
    expect(page.locator(badge)).to_have_text("held")
    page.get_by_role("link", name="Run an operation").click()
    override = page.locator("input[name=override_readiness_check]")
    expect(override).to_have_count(1)
    expect(page.get_by_label("Override the readiness check")).to_be_visible()
    page.get_by_label("Operation").select_option("power_off")
    page.get_by_label("Override the readiness check").check()
    page.get_by_role("button", name="Preview the plan").click()
    expect(page.locator("h1")).to_have_text("Plan: power_off")
    box = page.locator('[data-code="readiness_override"]')
    expect(box).to_contain_text("The readiness check is overridden")
    expect(box.locator(f'li[data-hold="{hold_id}"]')).to_contain_text("job 4711")
    c.shot("run-override")
    assert task_total(base, admin) == tasks_before, "a task was created before the confirmation"

    # Confirming creates the task; the audit log names the hold it went past.
    page.get_by_role("button", name="Confirm and run").click()
    expect(page).to_have_url(re.compile(r"/ui/tasks/[0-9a-f-]{36}$"))
    task_id = page.url.rsplit("/", 1)[1]
    assert task_total(base, admin) == tasks_before + 1
    task = call(base, "GET", f"/v1/tasks/{task_id}", token=admin)
    assert task["rack_id"] == rack["id"], task
    audit = call(base, "GET", f"/v1/audit?resource=readiness_override:{task['request_id']}",
                 token=admin)["items"]
    assert len(audit) == 1, audit
    overridden = audit[0]["after"]["overridden"]
    assert [o["hold_id"] for o in overridden] == [hold_id], overridden
    assert audit[0]["after"]["override_readiness_check"] is True
    expect(page.locator("[data-status]")).to_have_attribute("data-status", "succeeded", timeout=90_000)
    c.shot("task-override")

    # The release button on the holds page deletes the hold; the rack's badge goes.
    page.goto(f"{base}/ui/holds")
    page.get_by_role("button", name=f"release hold {hold_id}").click()
    expect(page).to_have_url(f"{base}/ui/holds")
    expect(page.locator(f'tr[data-hold="{hold_id}"]')).to_have_count(0)
    with pytest.raises(urllib.error.HTTPError) as gone:
        call(base, "GET", f"/v1/holds/{hold_id}", token=admin)
    assert gone.value.code == 404
    released = call(base, "GET", f"/v1/audit?resource=hold:{hold_id}", token=admin)["items"]
    assert any(e["before"] and not e["after"] for e in released), released
    page.goto(f"{base}/ui/racks/{rack['id']}")
    expect(page.locator("span.badge[data-hold]")).to_have_count(0)
    expect(page.locator("dt", has_text="Holds").locator("xpath=following-sibling::dd[1]")).to_have_text("—")
    c.close()
