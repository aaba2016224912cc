//! Request bodies shared by tests: the original README's example rack and generated GB200 racks.

use serde_json::{Value, json};

/// The original Flow README's example: rack `g10` holding compute tray `gpu17-nvl5-gp2-cin1-jhb01`.
pub fn readme_rack() -> Value {
    json!({
        "name": "g10",
        "manufacturer": "Wiwynn",
        "serial_number": "B8111801000951700005Y0SA",
        "location": {"region": "MY", "datacenter": "jhb01", "room": "EW-F00-DH-02", "position": "EW-F00-DH-02-G10"},
        "components": [{
            "type": "compute",
            "name": "gpu17-nvl5-gp2-cin1-jhb01",
            "manufacturer": "WiWynn",
            "model": "GB200 Compute Tray",
            "serial_number": "B8111801000851500108Y0SA",
            "firmware_version": "FW 1.2.00GA",
            "position": {"slot_id": 36, "tray_idx": 16, "host_id": 0},
            "bmcs": [
                {"type": "host", "mac_address": "d8:19:09:00:04:af"},
                {"type": "dpu", "mac_address": "e0:9d:73:80:c0:59"},
                {"type": "dpu", "mac_address": "e0:9d:73:88:de:1b"}
            ]
        }]
    })
}

/// A MAC unique to (rack, component, bmc) indexes.
pub fn mac(rack: u32, component: u32, bmc: u32) -> String {
    format!(
        "02:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        (rack >> 8) & 0xff,
        rack & 0xff,
        (component >> 8) & 0xff,
        component & 0xff,
        bmc
    )
}

/// A small GB200-shaped rack: `compute` compute trays (host + 2 DPU BMCs), 2 NVSwitch trays,
/// 2 power shelves and a ToR switch, all with serials and MACs derived from `n`.
pub fn gb200_rack(n: u32, compute: u32) -> Value {
    let mut components = Vec::new();
    let mut idx = 0;
    let mut push = |kind: &str,
                    name: String,
                    model: &str,
                    slot: u32,
                    tray: u32,
                    bmcs: Vec<(&str, String)>| {
        components.push(json!({
            "type": kind,
            "name": name,
            "manufacturer": "NVIDIA",
            "model": model,
            "serial_number": format!("SN-{n:04}-{kind}-{tray:02}"),
            "position": {"slot_id": slot, "tray_idx": tray, "host_id": 0},
            "bmcs": bmcs.into_iter().map(|(t, m)| json!({"type": t, "mac_address": m})).collect::<Vec<_>>(),
        }));
    };
    for t in 0..compute {
        idx += 1;
        push(
            "compute",
            format!("r{n:04}-gpu{t:02}"),
            "GB200 Compute Tray",
            11 + t,
            t,
            vec![
                ("host", mac(n, idx, 0)),
                ("dpu", mac(n, idx, 1)),
                ("dpu", mac(n, idx, 2)),
            ],
        );
    }
    for t in 0..2 {
        idx += 1;
        push(
            "nvswitch",
            format!("r{n:04}-nvsw{t}"),
            "GB200 NVLink Switch",
            19 + t,
            t,
            vec![("host", mac(n, idx, 0))],
        );
    }
    for t in 0..2 {
        idx += 1;
        push(
            "powershelf",
            format!("r{n:04}-pwr{t}"),
            "GB200 Power Shelf",
            t,
            t,
            vec![("host", mac(n, idx, 0))],
        );
    }
    push(
        "torswitch",
        format!("r{n:04}-tor0"),
        "MSN2201",
        43,
        0,
        vec![],
    );
    json!({
        "name": format!("rack-{n:04}"),
        "manufacturer": "NVIDIA",
        "serial_number": format!("RACK-SN-{n:04}"),
        "model": "GB200 NVL72",
        "description": format!("test rack {n}"),
        "location": {"region": "us-west", "datacenter": "SJC01", "room": format!("room-{}", n % 2), "position": format!("A{n:02}")},
        "components": components,
    })
}

/// The id of the component named `name` in a rack as the API answered it.
pub fn component_id(rack: &Value, name: &str) -> String {
    rack["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {rack}"))["id"]
        .as_str()
        .unwrap()
        .to_string()
}
