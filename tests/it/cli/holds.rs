//! `flow hold create|list|delete` as the real binary: each target kind, the filters and paging of
//! `list`, the exit code of a bad target, and delete.

use serde_json::Value;

use super::{Run, flow, serve_router};
use crate::on_both_backends;
use crate::support::TestApp;
use crate::support::fixtures::gb200_rack;

on_both_backends!(the_cli_creates_holds_on_each_target_lists_filters_pages_and_deletes_them);

fn ok(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{run:#?}");
    run.json()
}

fn ids(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap().to_string())
        .collect()
}

async fn the_cli_creates_holds_on_each_target_lists_filters_pages_and_deletes_them(app: TestApp) {
    let rack = app.create_rack(&gb200_rack(1, 1)).await;
    let tray = rack["components"][0]["id"].as_str().unwrap().to_string();
    let domain = app
        .post("/v1/nvl-domains", &serde_json::json!({"name": "nvl-a"}))
        .await;
    assert_eq!(domain.status, 201, "{}", domain.text);
    let url = serve_router(app.router.clone()).await;
    let hold = |args: &[&str]| {
        let mut full = vec!["-o", "json", "hold", "create"];
        full.extend_from_slice(args);
        full.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |args: Vec<String>| {
        let url = url.clone();
        async move { flow(&url, &args.iter().map(String::as_str).collect::<Vec<_>>()).await }
    };

    let on_rack = ok(&run(hold(&[
        "--rack",
        "rack-0001",
        "--owner",
        "slurm",
        "--reason",
        "job 4711",
    ]))
    .await);
    assert_eq!(on_rack["target"]["rack"]["id"], rack["id"], "{on_rack:#}");
    assert_eq!(on_rack["active"], true);
    let on_tray = ok(&run(hold(&[
        "--component",
        &tray,
        "--owner",
        "k8s",
        "--reason",
        "pod",
        "--expires-at",
        "2999-01-01T00:00:00Z",
    ]))
    .await);
    assert_eq!(on_tray["target"]["component"]["id"], tray.as_str());
    assert_eq!(on_tray["expires_at"], "2999-01-01T00:00:00Z");
    let on_domain = ok(&run(hold(&[
        "--nvl-domain",
        "nvl-a",
        "--owner",
        "slurm",
        "--reason",
        "x",
    ]))
    .await);
    assert_eq!(on_domain["target"]["nvl_domain"]["id"], domain.body["id"]);

    // Exactly one target: clap refuses none and two (usage error, exit 2), nothing is created.
    let none = run(hold(&["--owner", "slurm", "--reason", "x"])).await;
    assert_eq!(none.code, 2, "{none:#?}");
    let two = run(hold(&[
        "--rack",
        "rack-0001",
        "--component",
        &tray,
        "--owner",
        "o",
        "--reason",
        "x",
    ]))
    .await;
    assert_eq!(two.code, 2, "{two:#?}");
    // An unknown rack is the API's answer, shown on stderr.
    let unknown = run(hold(&[
        "--rack",
        "no-such-rack",
        "--owner",
        "o",
        "--reason",
        "x",
    ]))
    .await;
    assert_ne!(unknown.code, 0, "{unknown:#?}");
    assert!(unknown.stderr.contains("error"), "{unknown:#?}");

    let all = ok(&flow(&url, &["-o", "json", "hold", "list"]).await);
    assert_eq!(ids(&all).len(), 3, "{all:#}");
    // `--rack` finds the hold on the rack and on its component.
    let on_r = ok(&flow(&url, &["-o", "json", "hold", "list", "--rack", "rack-0001"]).await);
    assert_eq!(ids(&on_r).len(), 2, "{on_r:#}");
    let by_c = ok(&flow(&url, &["-o", "json", "hold", "list", "--component", &tray]).await);
    assert_eq!(
        ids(&by_c),
        vec![on_tray["id"].as_str().unwrap().to_string()]
    );
    let by_owner = ok(&flow(
        &url,
        &[
            "-o", "json", "hold", "list", "--owner", "slurm", "--active", "true",
        ],
    )
    .await);
    assert_eq!(ids(&by_owner).len(), 2, "{by_owner:#}");
    let expired = ok(&flow(&url, &["-o", "json", "hold", "list", "--active", "false"]).await);
    assert!(ids(&expired).is_empty(), "{expired:#}");

    // Paging: one per page, `--all` follows the cursors to the same three.
    let page = ok(&flow(&url, &["-o", "json", "hold", "list", "--limit", "1"]).await);
    assert_eq!(ids(&page).len(), 1);
    assert!(page["next_cursor"].is_string(), "{page:#}");
    let every = flow(&url, &["hold", "list", "--limit", "1", "--all"]).await;
    assert_eq!(every.code, 0, "{every:#?}");
    for id in ids(&all) {
        assert!(every.stdout.contains(&id), "{every:#?}");
    }

    let table = flow(&url, &["hold", "list", "--owner", "k8s"]).await;
    assert!(
        table.stdout.contains("OWNER") && table.stdout.contains("pod"),
        "{table:#?}"
    );

    let gone = on_rack["id"].as_str().unwrap();
    let deleted = flow(&url, &["hold", "delete", gone]).await;
    assert_eq!(deleted.code, 0, "{deleted:#?}");
    assert!(deleted.stdout.contains("deleted hold"), "{deleted:#?}");
    let left = ok(&flow(&url, &["-o", "json", "hold", "list"]).await);
    assert!(!ids(&left).contains(&gone.to_string()), "{left:#}");
    let again = flow(&url, &["hold", "delete", gone]).await;
    assert_ne!(again.code, 0, "{again:#?}");
}
