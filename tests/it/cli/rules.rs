//! `flow rule …` and `--dry-run` as the real binary: the example rule file, versions, defaults,
//! rack attachments, and the plan an operation would run.

use serde_json::{Value, json};

use super::{Run, TempFile, flow, serve_router};
use crate::on_both_backends;
use crate::support::TestApp;
use crate::support::fixtures::gb200_rack;

on_both_backends!(
    the_cli_creates_the_example_rule_replaces_it_makes_it_the_default_and_maps_errors,
    a_dry_run_shows_the_rule_attached_to_the_rack_and_creates_nothing,
);

const EXAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/examples/rule-careful-power-on.yaml"
);

fn ok(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{run:#?}");
    run.json()
}

/// Creates the example rule through the CLI; returns its id.
/// `flow -o json <args> --dry-run`, which must succeed: the plan it prints.
async fn dry_run(url: &str, args: &[&str]) -> Value {
    let mut full = vec!["-o", "json"];
    full.extend_from_slice(args);
    full.push("--dry-run");
    ok(&flow(url, &full).await)
}

async fn create_example(url: &str) -> String {
    let created = ok(&flow(url, &["-o", "json", "rule", "create", "-f", EXAMPLE]).await);
    assert_eq!(created["name"], "careful power on");
    assert_eq!(created["version"], 1);
    created["id"].as_str().unwrap().to_string()
}

async fn the_cli_creates_the_example_rule_replaces_it_makes_it_the_default_and_maps_errors(
    app: TestApp,
) {
    let url = serve_router(app.router.clone()).await;
    let id = create_example(&url).await;

    // The YAML went to the server as YAML, and was stored as written.
    let got = ok(&flow(&url, &["-o", "json", "rule", "get", &id]).await);
    let stages = got["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 3, "{got:#}");
    assert_eq!(stages[0]["component_types"], json!(["powershelf"]));
    assert_eq!(stages[0]["max_parallel"], 2);
    assert_eq!(stages[0]["actions"][1]["action"], "verify_power");
    assert_eq!(stages[1]["component_types"], json!(["nvswitch"]));
    let compute: Vec<&Value> = stages[2]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["action"])
        .collect();
    assert_eq!(compute, ["power_control", "sleep", "verify_power"]);

    // The table: one line per stage.
    let table = flow(&url, &["rule", "get", &id]).await;
    assert_eq!(table.code, 0, "{table:#?}");
    let header = table
        .stdout
        .lines()
        .position(|l| l.starts_with("STAGE"))
        .unwrap_or_else(|| panic!("{table:#?}"));
    let rows: Vec<Vec<&str>> = table.stdout.lines().skip(header + 1).map(cells).collect();
    assert_eq!(rows.len(), 3, "{table:#?}");
    assert_eq!(
        rows[0][..3],
        ["1", "power on shelves", "powershelf"],
        "{table:#?}"
    );
    assert!(
        rows[0].contains(&"power_control, verify_power_on") && rows[0].contains(&"6m"),
        "{table:#?}"
    );
    assert!(
        rows[2].contains(&"power_control, sleep 20s, verify_power_on"),
        "{table:#?}"
    );

    let list = flow(&url, &["rule", "list", "--operation", "power_on"]).await;
    assert_eq!(list.code, 0, "{list:#?}");
    let lines: Vec<Vec<&str>> = list.stdout.lines().map(cells).collect();
    assert_eq!(
        lines,
        [
            vec!["ID", "NAME", "OPERATION", "DEFAULT", "VERSION"],
            vec![id.as_str(), "careful power on", "power_on", "false", "1"],
        ],
        "{list:#?}"
    );
    let other = ok(&flow(
        &url,
        &["-o", "json", "rule", "list", "--operation", "upgrade"],
    )
    .await);
    assert_eq!(other["items"], json!([]));
    let builtin = ok(&flow(
        &url,
        &[
            "-o",
            "json",
            "rule",
            "list",
            "--builtin",
            "--operation",
            "power_on",
        ],
    )
    .await);
    assert_eq!(builtin["total"], 1);
    assert_eq!(builtin["items"][0]["name"], "built-in power on");

    // Replace from JSON: a new version, the old one still readable.
    let mut changed: Value =
        serde_yaml::from_str(&std::fs::read_to_string(EXAMPLE).unwrap()).unwrap();
    changed["name"] = json!("careful power on, slower shelves");
    changed["stages"][0]["max_parallel"] = json!(1);
    let changed = TempFile::new("rule.json", &changed.to_string());
    let replaced = ok(&flow(
        &url,
        &["-o", "json", "rule", "replace", &id, "-f", changed.path()],
    )
    .await);
    assert_eq!(replaced["version"], 2);
    assert_eq!(replaced["stages"][0]["max_parallel"], 1);
    let versions = ok(&flow(&url, &["-o", "json", "rule", "versions", &id]).await);
    let numbers: Vec<&Value> = versions["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| &v["version"])
        .collect();
    assert_eq!(numbers, [2, 1]);
    assert_eq!(versions["items"][1]["stages"][0]["max_parallel"], 2);
    let table = flow(&url, &["rule", "versions", &id]).await;
    assert!(
        table.stdout.contains("careful power on, slower shelves"),
        "{table:#?}"
    );

    // Default on and off.
    let default = ok(&flow(&url, &["-o", "json", "rule", "default", &id]).await);
    assert_eq!(default["is_default"], true);
    let defaults = ok(&flow(&url, &["-o", "json", "rule", "list", "--default"]).await);
    assert_eq!(defaults["total"], 1);
    assert_eq!(defaults["items"][0]["id"], json!(id));
    let unset = ok(&flow(&url, &["-o", "json", "rule", "default", &id, "--unset"]).await);
    assert_eq!(unset["is_default"], false);
    let defaults = ok(&flow(&url, &["-o", "json", "rule", "list", "--default"]).await);
    assert_eq!(defaults["total"], 0);

    // Exit codes: unknown rule 3, a rule the server refuses 5 with each field named, no id 5.
    let missing = flow(&url, &["rule", "get", &uuid::Uuid::now_v7().to_string()]).await;
    assert_eq!(missing.code, 3, "{missing:#?}");
    let bad = TempFile::new(
        "bad-rule.yaml",
        "name: bad\noperation: power_on\nstages:\n  - component_types: [powershelf]\n    \
         max_parallel: 0\n    actions:\n      - {action: launch}\n",
    );
    let invalid = flow(&url, &["rule", "create", "-f", bad.path()]).await;
    assert_eq!(invalid.code, 5, "{invalid:#?}");
    assert!(
        invalid.stderr.contains("max_parallel") && invalid.stderr.contains("actions[0]"),
        "{invalid:#?}"
    );
    let not_yaml = TempFile::new("broken.yaml", "name: [unclosed\n");
    let invalid = flow(&url, &["rule", "create", "-f", not_yaml.path()]).await;
    assert_eq!(invalid.code, 5, "{invalid:#?}");
    assert_eq!(flow(&url, &["rule", "get", "careful"]).await.code, 5);
    // Nothing the refused files asked for was stored.
    let all = ok(&flow(&url, &["-o", "json", "rule", "list"]).await);
    assert_eq!(all["total"], 1);

    let deleted = flow(&url, &["rule", "delete", &id]).await;
    assert_eq!(deleted.code, 0, "{deleted:#?}");
    assert_eq!(flow(&url, &["rule", "get", &id]).await.code, 3);
}

async fn a_dry_run_shows_the_rule_attached_to_the_rack_and_creates_nothing(app: TestApp) {
    let url = serve_router(app.router.clone()).await;
    app.create_rack(&gb200_rack(1, 2)).await;
    let id = create_example(&url).await;

    let attached = flow(
        &url,
        &[
            "rule",
            "attach",
            "--rack",
            "rack-0001",
            "--operation",
            "power_on",
            "--rule",
            &id,
        ],
    )
    .await;
    assert_eq!(attached.code, 0, "{attached:#?}");
    let on_rack = ok(&flow(&url, &["-o", "json", "rule", "rack", "rack-0001"]).await);
    assert_eq!(on_rack["items"].as_array().unwrap().len(), 1);
    assert_eq!(on_rack["items"][0]["operation"], "power_on");
    assert_eq!(on_rack["items"][0]["rule_id"], json!(id));

    let plan = dry_run(&url, &["power", "on", "--rack", "rack-0001"]).await;
    assert_eq!(plan["dry_run"], true);
    let rack = &plan["racks"][0];
    assert_eq!(rack["outcome"], "start");
    assert_eq!(rack["rule"]["source"], "rack");
    assert_eq!(rack["rule"]["id"], json!(id));
    let shape: Vec<(u64, usize, u64)> = rack["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["number"].as_u64().unwrap(),
                s["components"].as_array().unwrap().len(),
                s["max_parallel"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(shape, [(1, 2, 2), (2, 2, 9), (3, 2, 4)]);

    let table = flow(&url, &["power", "on", "--rack", "rack-0001", "--dry-run"]).await;
    assert_eq!(table.code, 0, "{table:#?}");
    assert!(table.stdout.contains("rack-0001 ("), "{table:#?}");
    assert!(
        table.stdout.contains("careful power on (rack, v1)"),
        "{table:#?}"
    );
    let compute = table
        .stdout
        .lines()
        .find(|l| l.starts_with("3 "))
        .map(cells)
        .unwrap_or_else(|| panic!("{table:#?}"));
    assert_eq!(compute[1..3], ["power on compute trays", "compute"]);
    // 2 components, 4 at a time; the bound is the server's, in minutes and seconds.
    assert_eq!(compute[4..6], ["2", "4"], "{table:#?}");

    // `--rule` wins over the rack's rule; `--mode` picks the reset's own built-in rule.
    let builtin_plan = dry_run(
        &url,
        &["power", "reset", "--rack", "rack-0001", "--mode", "warm"],
    )
    .await;
    assert_eq!(
        builtin_plan["racks"][0]["rule"]["name"],
        "built-in warm reset"
    );
    let bmc_plan = dry_run(
        &url,
        &["power", "reset", "--rack", "rack-0001", "--mode", "bmc"],
    )
    .await;
    assert_eq!(bmc_plan["racks"][0]["rule"]["name"], "built-in BMC reset");
    let second = create_example(&url).await;
    let asked = dry_run(
        &url,
        &["power", "on", "--rack", "rack-0001", "--rule", &second],
    )
    .await;
    assert_eq!(asked["racks"][0]["rule"]["source"], "request");
    assert_eq!(asked["racks"][0]["rule"]["id"], json!(second));

    // A rack that would be refused: the plan still prints, the exit code says 4.
    app.create_rack(&json!({"name": "empty", "manufacturer": "NVIDIA",
        "serial_number": "RACK-EMPTY", "components": []}))
        .await;
    let refused = flow(
        &url,
        &["power", "on", "--rack", "rack-0001,empty", "--dry-run"],
    )
    .await;
    assert_eq!(refused.code, 4, "{refused:#?}");
    assert!(refused.stdout.contains("no_components"), "{refused:#?}");
    assert!(
        refused.stdout.contains("careful power on (rack, v1)"),
        "{refused:#?}"
    );

    // Nothing was created by any of it.
    let tasks = ok(&flow(&url, &["-o", "json", "task", "list", "--count", "exact"]).await);
    assert_eq!(tasks["total"], 0, "{tasks:#}");
    assert_eq!(tasks["items"], json!([]));
    assert_eq!(app.count_rows("tasks").await, 0);

    let detached = flow(
        &url,
        &[
            "rule",
            "detach",
            "--rack",
            "rack-0001",
            "--operation",
            "power_on",
        ],
    )
    .await;
    assert_eq!(detached.code, 0, "{detached:#?}");
    let on_rack = ok(&flow(&url, &["-o", "json", "rule", "rack", "rack-0001"]).await);
    assert_eq!(on_rack["items"], json!([]));
    let plan = dry_run(&url, &["power", "on", "--rack", "rack-0001"]).await;
    assert_eq!(plan["racks"][0]["rule"]["source"], "builtin");
}

/// A table line's cells (columns are two or more spaces apart; cells hold single spaces).
fn cells(line: &str) -> Vec<&str> {
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}
