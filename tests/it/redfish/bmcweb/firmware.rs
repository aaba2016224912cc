//! Firmware by push on the captured trees: the catalog's file streamed to
//! `MultipartHttpPushUri` (or `HttpPushUri`), its SHA-256 checked first, the task followed
//! through 202 → 204 → 404 to the Task, and the install proven by the `expect` members.

use flow::components::{
    DeviceError, FirmwareControl, FirmwareRequest, FirmwareState, FirmwareStatus,
};
use flow::inventory::model::ComponentType;
use serde_json::json;

use super::tree::{GB200, GBSWITCH};
use super::{bmc, device};
use crate::redfish::Setup;
use crate::support::redfish::{TempDir, free_port};

const BMC_FW: &str = "/redfish/v1/UpdateService/FirmwareInventory/FW_BMC_0";

fn sha256(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A catalog of bundles (`version`, bundle bytes, sha256 to state) for compute trays.
fn catalog(dir: &TempDir, entries: &[(&str, &str, Option<String>)]) -> std::path::PathBuf {
    let mut text = String::new();
    for (version, bundle, sha) in entries {
        let file = dir.write(&format!("{version}.fwpkg"), bundle);
        text.push_str(&format!(
            "[[firmware]]\ntype = \"compute\"\nversion = \"{version}\"\nfile = {:?}\n\
             targets = [\"{BMC_FW}\"]\n{}[firmware.expect]\nFW_BMC_0 = \"{version}\"\n",
            file.display().to_string(),
            sha.as_ref()
                .map(|s| format!("sha256 = \"{s}\"\n"))
                .unwrap_or_default()
        ));
    }
    text.push_str(
        "[[firmware]]\ntype = \"compute\"\nversion = \"by-uri\"\nimage_uri = \"https://fw.example/x\"\n",
    );
    dir.write("catalog.toml", &text)
}

fn request(v: &str) -> FirmwareRequest {
    FirmwareRequest {
        target_version: Some(v.into()),
        sub_targets: vec![],
    }
}

async fn follow(fw: &dyn FirmwareControl, d: &flow::components::Device) -> Vec<FirmwareStatus> {
    let mut seen: Vec<FirmwareStatus> = Vec::new();
    while seen.len() < 10 {
        let s = fw.update_status(d).await.unwrap();
        let end = matches!(s.state, FirmwareState::Completed | FirmwareState::Failed);
        seen.push(s);
        if end {
            break;
        }
    }
    seen
}

#[tokio::test]
async fn a_bundle_is_pushed_multipart_followed_to_its_task_and_proven_by_expect() {
    let port = free_port();
    let at = bmc(GB200, port, |_| {}).await;
    let dir = TempDir::new();
    let good = r#"{"install": {"FW_BMC_0": "25.06-2"}}"#;
    let bad = r#"{"fail": "Image signature verification failed."}"#;
    let mut setup = Setup::http(port);
    setup.catalog_file = Some(catalog(
        &dir,
        &[
            ("25.06-2", good, Some(sha256(good.as_bytes()))),
            ("25.06-3", bad, None),
        ],
    ));
    let fw = setup.manager();
    let d = device(ComponentType::Compute, &at);

    fw.start_update(&d, &request("25.06-2")).await.unwrap();
    {
        let b = at.bmc.lock().unwrap();
        let push = &b.tasks.pushes[0];
        assert_eq!(push.uri, "/redfish/v1/UpdateService/update-multipart");
        assert_eq!(push.parameters["Targets"], json!([BMC_FW]));
        assert_eq!(push.file, good.as_bytes());
    }
    at.bmc.lock().unwrap().requests.clear();
    let seen = follow(fw.as_ref(), &d).await;
    let states: Vec<FirmwareState> = seen.iter().map(|s| s.state).collect();
    assert_eq!(
        states,
        [FirmwareState::InProgress, FirmwareState::Completed],
        "{seen:?}"
    );
    assert_eq!(seen[1].version.as_deref(), Some("25.06-2"));
    {
        let b = at.bmc.lock().unwrap();
        assert!(
            b.requests
                .contains(&"GET /redfish/v1/TaskService/Tasks/1".to_string()),
            "{:?}",
            b.requests
        );
        assert!(
            !b.requests
                .contains(&"GET /redfish/v1/UpdateService/FirmwareInventory".to_string()),
            "the confirmation reads only the expect member: {:?}",
            b.requests
        );
    }

    // A failing task: the BMC's own message, read from the Task once the monitor said it ended.
    fw.start_update(&d, &request("25.06-3")).await.unwrap();
    let seen = follow(fw.as_ref(), &d).await;
    let last = seen.last().unwrap();
    assert_eq!(last.state, FirmwareState::Failed, "{seen:?}");
    let error = last.error.clone().unwrap();
    assert!(
        error.contains("Exception") && error.contains("Image signature verification failed"),
        "{error}"
    );
    assert!(!error.contains("404"), "{error}");

    // A file whose SHA-256 is not the catalog's stops the start-up, naming the entry (so it is
    // never sent); an image_uri needs SimpleUpdate.
    let mut bad_sum = Setup::http(port);
    bad_sum.catalog_file = Some(catalog(
        &dir,
        &[("25.06-4", good, Some(sha256(b"something else")))],
    ));
    let err = bad_sum.redfish_setup().manager().err().unwrap();
    assert!(
        err.contains("entry 1 (type compute, version 25.06-4)")
            && err.contains("checksum mismatch"),
        "{err}"
    );
    let err = fw.start_update(&d, &request("by-uri")).await.unwrap_err();
    assert!(
        matches!(&err, DeviceError::Unsupported(m) if m.contains("SimpleUpdate")),
        "{err:?}"
    );
    assert_eq!(at.bmc.lock().unwrap().tasks.pushes.len(), 2);
}

#[tokio::test]
async fn a_monitor_already_gone_leaves_the_task_to_tell_completed_or_exception() {
    let port = free_port();
    let at = bmc(GB200, port, |_| {}).await;
    let dir = TempDir::new();
    let good = r#"{"install": {"FW_BMC_0": "25.06-2"}}"#;
    let bad = r#"{"fail": "Firmware package rejected by the ERoT."}"#;
    let mut setup = Setup::http(port);
    setup.catalog_file = Some(catalog(
        &dir,
        &[("25.06-2", good, None), ("25.06-3", bad, None)],
    ));
    let fw = setup.manager();
    let d = device(ComponentType::Compute, &at);
    for (task, version, want) in [
        (1, "25.06-2", FirmwareState::Completed),
        (2, "25.06-3", FirmwareState::Failed),
    ] {
        fw.start_update(&d, &request(version)).await.unwrap();
        {
            let mut b = at.bmc.lock().unwrap();
            super::update::end_unseen(&mut b);
            b.requests.clear();
        }
        let s = fw.update_status(&d).await.unwrap();
        assert_eq!(s.state, want, "{s:?}");
        let b = at.bmc.lock().unwrap();
        let monitor = format!("GET /redfish/v1/TaskService/Tasks/{task}/Monitor");
        let read = format!("GET /redfish/v1/TaskService/Tasks/{task}");
        assert_eq!(
            b.requests
                .iter()
                .filter(|r| **r == monitor || **r == read)
                .count(),
            2,
            "the monitor (404), then the Task: {:?}",
            b.requests
        );
        if want == FirmwareState::Completed {
            assert_eq!(s.version.as_deref(), Some("25.06-2"));
        } else {
            let error = s.error.clone().unwrap_or_default();
            assert!(
                error.contains("Exception")
                    && error.contains("Firmware package rejected by the ERoT.")
                    && !error.contains("404"),
                "{error}"
            );
        }
    }
}

#[tokio::test]
async fn a_bmc_with_only_http_push_uri_gets_the_bare_image() {
    let port = free_port();
    let at = bmc(GBSWITCH, port, |b| {
        b.tree.set(
            "/redfish/v1/UpdateService",
            "/MultipartHttpPushUri",
            json!(null),
        );
    })
    .await;
    let dir = TempDir::new();
    let bundle = r#"{"install": {"MGX_FW_BMC_0": "88.0002.2000"}}"#;
    let file = dir.write("switch.fwpkg", bundle);
    let mut setup = Setup::http(port);
    setup.catalog_file = Some(dir.write(
        "catalog.toml",
        &format!(
            "[[firmware]]\ntype = \"nvswitch\"\nversion = \"88.0002.2000\"\nfile = {:?}\n\
             [firmware.expect]\nMGX_FW_BMC_0 = \"88.0002.2000\"\n",
            file.display().to_string()
        ),
    ));
    let fw = setup.manager();
    let d = device(ComponentType::NvSwitch, &at);
    fw.start_update(&d, &request("88.0002.2000")).await.unwrap();
    let seen = follow(fw.as_ref(), &d).await;
    assert_eq!(
        seen.last().unwrap().state,
        FirmwareState::Completed,
        "{seen:?}"
    );
    let b = at.bmc.lock().unwrap();
    assert_eq!(b.tasks.pushes[0].uri, "/redfish/v1/UpdateService/update");
    assert_eq!(b.tasks.pushes[0].file, bundle.as_bytes());
}

/// One `[[firmware.bundle]]` of a catalog entry: the image `file`, its activation and the part
/// versions it expects (TOML lines).
pub(super) fn bundle(file: &std::path::Path, activate: &str, expect: &str) -> String {
    format!(
        "[[firmware.bundle]]\nfile = {:?}\nactivate = \"{activate}\"\n[firmware.bundle.expect]\n{expect}\n",
        file.display().to_string()
    )
}

/// A GB200-shaped recipe for compute trays: the BMC bundle (bmc_reset), then the CPLD
/// (ac_cycle) and the BIOS (power_cycle); `fail` makes the BIOS bundle's task end in Exception.
fn recipe(dir: &TempDir, fail: bool) -> std::path::PathBuf {
    let bmc = dir.write("bmc.fwpkg", r#"{"install": {"FW_BMC_0": "25.06-2"}}"#);
    let cpld = dir.write("cpld.fwpkg", r#"{"install": {"FW_CPLD_0": "0.1C"}}"#);
    let bios = if fail {
        dir.write(
            "bios.fwpkg",
            r#"{"fail": "BIOS image rejected by the ERoT."}"#,
        )
    } else {
        dir.write("bios.fwpkg", r#"{"install": {"FW_BMC_0": "25.06-2"}}"#)
    };
    let text = format!(
        "[[firmware]]\ntype = \"compute\"\nversion = \"gb200-r1\"\n{}{}{}",
        bundle(&bmc, "bmc_reset", "FW_BMC_0 = \"25.06-2\""),
        bundle(&cpld, "ac_cycle", "FW_CPLD_0 = \"0.1C\""),
        bundle(&bios, "power_cycle", "FW_BMC_0 = \"25.06-2\""),
    );
    dir.write("recipe.toml", &text)
}

#[tokio::test]
async fn a_recipe_pushes_its_bundles_in_order_and_a_failing_one_carries_the_bmcs_message() {
    let port = free_port();
    let at = bmc(GB200, port, |_| {}).await;
    let dir = TempDir::new();
    let mut setup = Setup::http(port);
    setup.catalog_file = Some(recipe(&dir, false));
    let fw = setup.manager();
    let d = device(ComponentType::Compute, &at);
    let view = fw.recipe(&d, &request("gb200-r1")).unwrap();
    assert_eq!(view.bundles.len(), 3);
    assert!(view.needs_ac_cycle());
    for i in 0..3 {
        fw.start_bundle(&d, &request("gb200-r1"), i).await.unwrap();
        let seen = follow(fw.as_ref(), &d).await;
        assert_eq!(
            seen.last().unwrap().state,
            FirmwareState::Completed,
            "bundle {i}: {seen:?}"
        );
    }
    {
        let b = at.bmc.lock().unwrap();
        let files: Vec<String> = b
            .tasks
            .pushes
            .iter()
            .map(|p| String::from_utf8_lossy(&p.file).into_owned())
            .collect();
        assert!(
            files[0].contains("FW_BMC_0") && files[1].contains("FW_CPLD_0"),
            "{files:?}"
        );
    }
    let parts = fw
        .part_versions(&d, &["FW_BMC_0".to_string(), "FW_CPLD_0".to_string()])
        .await
        .unwrap();
    assert_eq!(parts["FW_BMC_0"].as_deref(), Some("25.06-2"));
    assert!(
        fw.start_bundle(&d, &request("gb200-r1"), 3).await.is_err(),
        "no bundle 3"
    );

    let port = free_port();
    let at = bmc(GB200, port, |_| {}).await;
    let mut setup = Setup::http(port);
    setup.catalog_file = Some(recipe(&dir, true));
    let fw = setup.manager();
    let d = device(ComponentType::Compute, &at);
    fw.start_bundle(&d, &request("gb200-r1"), 2).await.unwrap();
    let last = follow(fw.as_ref(), &d).await.pop().unwrap();
    assert_eq!(last.state, FirmwareState::Failed);
    let error = last.error.unwrap();
    assert!(
        error.contains(&d.name) && error.contains("BIOS image rejected by the ERoT."),
        "{error}"
    );
}
