//! The built-in firmware upgrade against the captured GB200 compute tray, served by a stand-in
//! that only stages images until their activation, as the tray's BMC does: the BMC bundle goes
//! live on `Manager.Reset`, the BIOS on a `PowerCycle` of the host, the CPLD only when the rack
//! loses AC power through its (simulated) power shelves. The task succeeds only because Flow
//! made each activation happen, in the rack order, and verified the parts after the AC cycle
//! (the shelves taking part although the request installs nothing on them). A request that
//! leaves the shelves out is refused: nothing could make the CPLD image live. A part left on
//! another version than the recipe expects fails its tray, naming the part.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::racks::{rack, tray};
use super::server::Handle;
use super::tree::GB200;
use crate::redfish::Setup;
use crate::support::Backend;
use crate::support::ops::{Ops, OpsBuilder};
use crate::support::redfish::{TempDir, free_port};
use flow::components::providers::SimDevices;
use flow::inventory::model::ComponentType;

const BMC_FW: &str = "GB200Nvl-25.06-2";
const CPLD_FW: &str = "0x00 0x0b 0x03 0x05";
const UEFI_FW: &str = "buildbrain-gcid-40000001";

/// The recipe, each bundle's stand-in image staging its part for the activation it declares.
fn recipe(dir: &TempDir) -> std::path::PathBuf {
    let image = |name: &str, part: &str, version: &str, activate: &str| {
        let body = json!({"install": {part: version}, "activate": activate});
        let file = dir.write(name, &body.to_string());
        super::firmware::bundle(&file, activate, &format!("{part} = \"{version}\""))
    };
    let text = format!(
        "[[firmware]]\ntype = \"compute\"\nversion = \"gb200-r2\"\n{}{}{}",
        image("bmc.fwpkg", "FW_BMC_0", BMC_FW, "bmc_reset"),
        image("cpld.fwpkg", "FW_CPLD_0", CPLD_FW, "ac_cycle"),
        image("bios.fwpkg", "UEFI", UEFI_FW, "power_cycle"),
    );
    dir.write("recipe.toml", &text)
}

fn shelf(name: &str, serial: &str, mac: &str) -> serde_json::Value {
    json!({"type": "powershelf", "name": name, "manufacturer": "NVIDIA",
        "model": "GB200 Power Shelf", "serial_number": serial,
        "bmcs": [{"type": "host", "mac_address": mac}]})
}

/// Plays the rack's AC power to the tray: once every shelf's last power call was a forced off,
/// the tray loses AC; the first shelf powered on again restores it.
fn follow_shelves(
    sim: Arc<SimDevices>,
    tray: Arc<Handle>,
    shelves: usize,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let mut last: HashMap<uuid::Uuid, &'static str> = HashMap::new();
            for e in sim.events() {
                if e.kind == ComponentType::PowerShelf
                    && matches!(e.op, "force_power_off" | "power_on")
                {
                    last.insert(e.component_id, e.op);
                }
            }
            let off = last.values().filter(|op| **op == "force_power_off").count();
            if off == shelves {
                tray.lose_ac();
            } else if tray.bmc.lock().unwrap().ac_off && off < shelves {
                tray.restore_ac();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
}

async fn staged_images_go_live_only_on_their_activation(backend: Backend) {
    let port = free_port();
    let at = Arc::new(super::bmc(GB200, port, |b| b.reboot_window = Duration::from_secs(2)).await);
    let dir = TempDir::new();
    let mut setup = Setup::http(port);
    setup.catalog_file = Some(recipe(&dir));
    let set = setup.managers();
    let state = at.bmc.clone();
    OpsBuilder::new(backend)
        .managers(ComponentType::Compute, set)
        .run(|ops| async move {
            let shelves = follow_shelves(ops.sim.clone(), at.clone(), 2);
            upgrade_and_check(&ops, &at).await;
            shelves.abort();
            let b = state.lock().unwrap();
            assert!(b.tasks.staged.is_empty(), "{:?}", b.tasks.staged);
            assert_eq!(
                b.tasks.activated,
                [
                    ("FW_BMC_0".to_string(), "Manager.Reset"),
                    ("UEFI".to_string(), "PowerCycle"),
                    ("FW_CPLD_0".to_string(), "AC loss"),
                ],
                "each image live on its own activation: {:?}",
                b.actions
            );
        })
        .await;
}

async fn upgrade_and_check(ops: &Ops, at: &Handle) {
    let c1 = tray(
        "compute",
        "gba-c1",
        "1583124820080",
        "3c:6d:66:0e:db:dc",
        at,
    );
    let s0 = shelf("gba-p0", "PS-GBA-0", "02:aa:00:00:00:01");
    let s1 = shelf("gba-p1", "PS-GBA-1", "02:aa:00:00:00:02");
    ops.app.create_rack(&rack("gba", vec![c1, s0, s1])).await;
    // Narrowed to the compute trays, the task would have no shelf to cut the power with: the
    // CPLD image could never go live, so the rack is refused before anything is sent.
    let narrowed = json!({"target_spec": {"racks": [{"name": "gba", "component_types": ["compute"]}]},
        "target_version": {"compute": "gb200-r2"}});
    let refused = ops.operate("firmware-upgrade", &narrowed).await;
    let problem = refused.assert_problem(422, "unsupported").to_string();
    assert!(
        problem.contains("no power shelf to cut the power") && problem.contains("gba-c1"),
        "{problem}"
    );
    assert!(at.bmc.lock().unwrap().tasks.pushes.is_empty());
    let body = json!({"target_spec": {"racks": [{"name": "gba"}]},
        "target_version": {"compute": "gb200-r2"}});
    let dry = ops
        .app
        .post("/v1/operations/firmware-upgrade?dry_run=true", &body)
        .await;
    assert_eq!(dry.status, 200, "{}", dry.text);
    assert_eq!(
        dry.body["racks"][0]["firmware"]["ac_cycle"], true,
        "{}",
        dry.text
    );
    let r = ops.operate("firmware-upgrade", &body).await;
    assert_eq!(r.status, 202, "{}", r.text);
    // Three pushes polled every 5 s, a BMC reboot, a host power cycle and the AC cycle's
    // 10 s drain: a few minutes.
    let id = r.body["task_ids"][0].as_str().unwrap();
    let task = ops.wait_end_within(id, Duration::from_secs(300)).await;
    assert_eq!(task["status"], "succeeded", "{task}");
    let versions = |part: &str| {
        let path = format!("/redfish/v1/UpdateService/FirmwareInventory/{part}");
        at.bmc.lock().unwrap().tree.get(&path).unwrap()["Version"].clone()
    };
    assert_eq!(versions("FW_BMC_0"), BMC_FW);
    assert_eq!(versions("FW_CPLD_0"), CPLD_FW);
    assert_eq!(versions("UEFI"), UEFI_FW);
    let b = at.bmc.lock().unwrap();
    // Flow cycled the host's power for the BIOS (a warm restart would not have activated it),
    // forced it off before the shelves went dark, and powered it on after they came back.
    let host: Vec<&str> = b
        .actions
        .iter()
        .filter(|a| !a.starts_with("Manager."))
        .map(String::as_str)
        .collect();
    assert!(
        host.iter().any(|a| a.ends_with(":PowerCycle")),
        "{:?}",
        b.actions
    );
    assert!(
        host.ends_with(&["ComputerSystem.Reset:ForceOff", "ComputerSystem.Reset:On"]),
        "{:?}",
        b.actions
    );
    assert_eq!(b.reboots, 1, "one BMC reset, for the BMC bundle");
}

/// A bundle whose image installs another version than the catalog expects: the tray's
/// verification never sees the expected version and fails the tray, naming the part and both
/// versions (a stored rule with a 15 s bound, so the test does not wait the built-in 45 min).
async fn a_part_left_on_another_version_fails_verification(backend: Backend) {
    let port = free_port();
    let at = super::bmc(GB200, port, |_| {}).await;
    let dir = TempDir::new();
    let body = json!({"install": {"FW_BMC_0": "GB200Nvl-25.06-1"}});
    let file = dir.write("bmc.fwpkg", &body.to_string());
    let text = format!(
        "[[firmware]]\ntype = \"compute\"\nversion = \"gb200-miss\"\n{}",
        super::firmware::bundle(&file, "none", "FW_BMC_0 = \"GB200Nvl-25.06-9\"")
    );
    let mut setup = Setup::http(port);
    setup.catalog_file = Some(dir.write("recipe.toml", &text));
    let set = setup.managers();
    OpsBuilder::new(backend)
        .managers(ComponentType::Compute, set)
        .run(|ops| async move {
            let c1 = tray("compute", "gbm-c1", "1583124820080", "3c:6d:66:0e:db:dc", &at);
            ops.app.create_rack(&rack("gbm", vec![c1])).await;
            let rule = json!({"name": "short verify", "operation": "upgrade", "stages": [
                {"component_types": ["compute"], "max_parallel": 1, "timeout": "5m",
                 "retry": {"max_attempts": 1},
                 "actions": [{"action": "firmware_recipe", "timeout": "15s", "poll_interval": "1s"}]}]});
            let r = ops.app.post("/v1/operation-rules", &rule).await;
            assert_eq!(r.status, 201, "{}", r.text);
            let body = json!({"target_spec": {"racks": [{"name": "gbm"}]},
                "target_version": {"compute": "gb200-miss"}, "rule_id": r.body["id"]});
            let r = ops.operate("firmware-upgrade", &body).await;
            assert_eq!(r.status, 202, "{}", r.text);
            let id = r.body["task_ids"][0].as_str().unwrap();
            // A generous bound: the only deadline under test is the 15 s verification.
            let task = ops.wait_end_within(id, Duration::from_secs(300)).await;
            assert_eq!(task["status"], "failed", "{task}");
            let step = &task["stages"][0]["components"][0];
            let error = step["error"].as_str().unwrap_or_default();
            assert!(
                error.contains("FW_BMC_0")
                    && error.contains("GB200Nvl-25.06-1")
                    && error.contains("GB200Nvl-25.06-9"),
                "{task}"
            );
            assert_eq!(at.bmc.lock().unwrap().tasks.pushes.len(), 1);
        })
        .await;
}

on_both! {
    a_gb200_recipe_goes_live_by_bmc_reset_power_cycle_and_the_racks_ac_cycle => staged_images_go_live_only_on_their_activation,
    a_part_that_never_reaches_the_expected_version_fails_its_tray_naming_it => a_part_left_on_another_version_fails_verification,
}
