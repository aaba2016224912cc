//! `--nvl-domain` on `flow power …` and `flow firmware upgrade`, and the domain rule as the
//! CLI meets it: an upgrade of part of a domain exits 4 naming the racks left out, and
//! `--allow-split-domain` lets it be planned.

use super::{flow, serve_router};
use crate::nvl_targets::{domains, planned_racks};
use crate::on_both_backends;
use crate::support::TestApp;

on_both_backends!(the_cli_targets_a_domain_and_a_split_upgrade_exits_4_naming_the_racks_left_out);

async fn the_cli_targets_a_domain_and_a_split_upgrade_exits_4_naming_the_racks_left_out(
    app: TestApp,
) {
    domains(&app, 3).await;
    let url = serve_router(app.router.clone()).await;
    for power in ["on", "off"] {
        let args = [
            "-o",
            "json",
            "power",
            power,
            "--nvl-domain",
            "nvl-a",
            "--dry-run",
        ];
        let run = flow(&url, &args).await;
        assert_eq!(run.code, 0, "{run:#?}");
        assert_eq!(planned_racks(&run.json()), ["rack-0001", "rack-0002"]);
    }
    let upgrade = |targets: &[&'static str]| {
        let mut args = vec!["-o", "json", "firmware", "upgrade", "--version", "2.0.0"];
        args.extend_from_slice(targets);
        args.push("--dry-run");
        args
    };

    let domain = flow(&url, &upgrade(&["--nvl-domain", "nvl-a"])).await;
    assert_eq!(domain.code, 0, "{domain:#?}");
    assert_eq!(planned_racks(&domain.json()), ["rack-0001", "rack-0002"]);

    let split = flow(&url, &upgrade(&["--rack", "rack-0001,rack-0003"])).await;
    assert_eq!(split.code, 4, "a 409 exits 4: {split:#?}");
    assert!(split.stderr.contains("domain_split"), "{split:#?}");
    assert!(
        split.stderr.contains("nvl_domains.nvl-a") && split.stderr.contains("rack-0002"),
        "names the domain and the rack left out: {split:#?}"
    );

    let told = ["--rack", "rack-0001,rack-0003", "--allow-split-domain"];
    let allowed = flow(&url, &upgrade(&told)).await;
    assert_eq!(allowed.code, 0, "{allowed:#?}");
    assert_eq!(planned_racks(&allowed.json()), ["rack-0001", "rack-0003"]);
    assert_eq!(app.count_rows("tasks").await, 0, "dry runs create nothing");
}
