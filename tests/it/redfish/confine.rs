//! Attacks on where BMC logins go (issue 30): an editor pointing a BMC at a listener of their
//! own, a stored address outside `FLOW_BMC_ALLOWED_NETWORKS`, and a BMC whose answers name a
//! third host:port (`Links.Sessions`, `@odata.id`, a redirect). Each listener counts the
//! connections it gets; the attacker's must get none. Every test is bounded in time.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use flow::components::DeviceError;
use flow::domain::{ComponentType, ManagementNetworks};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::{Setup, tray};
use crate::support::redfish::{PASSWORD, TempDir, USER, next_bmc_ip};
use crate::support::{Backend, TestApp};

const BOUND: Duration = Duration::from_secs(30);

/// A canned answer: status, extra headers, JSON body.
type Answer = (u16, Vec<(&'static str, String)>, Value);

/// A raw HTTP listener on its own loopback address that answers canned JSON by path (404
/// otherwise) and keeps every request head it was sent.
struct Listener {
    ip: String,
    port: u16,
    connections: Arc<AtomicUsize>,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Listener {
    async fn start(answers: HashMap<String, Answer>) -> Self {
        Self::start_with(|_, _| answers).await
    }

    /// Answers that may name the listener's own address and port.
    async fn start_with(make: impl FnOnce(&str, u16) -> HashMap<String, Answer>) -> Self {
        let ip = next_bmc_ip();
        let socket = TcpListener::bind((ip.as_str(), 0)).await.unwrap();
        let port = socket.local_addr().unwrap().port();
        let answers = make(&ip, port);
        let connections = Arc::new(AtomicUsize::new(0));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let (count, seen) = (connections.clone(), heads.clone());
        let answers = Arc::new(answers);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = socket.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let (seen, answers) = (seen.clone(), answers.clone());
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    let n = stream.read(&mut buf).await.unwrap_or(0);
                    let head = String::from_utf8_lossy(&buf[..n]).into_owned();
                    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                    seen.lock().unwrap().push(head);
                    let (status, headers, body) = answers.get(&path).cloned().unwrap_or((
                        404,
                        vec![],
                        json!({"error": {"message": "no such"}}),
                    ));
                    let body = body.to_string();
                    let mut reply = format!(
                        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n\
                         Content-Length: {}\r\nConnection: close\r\n",
                        body.len()
                    );
                    for (name, value) in headers {
                        reply.push_str(&format!("{name}: {value}\r\n"));
                    }
                    reply.push_str("\r\n");
                    reply.push_str(&body);
                    let _ = stream.write_all(reply.as_bytes()).await;
                });
            }
        });
        Self {
            ip,
            port,
            connections,
            heads,
        }
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    fn origin(&self) -> String {
        format!("http://{}:{}", self.ip, self.port)
    }
}

fn root(extra: Value) -> HashMap<String, Answer> {
    let mut root = json!({"@odata.id": "/redfish/v1/", "RedfishVersion": "1.15.0",
        "Systems": {"@odata.id": "/redfish/v1/Systems"}});
    if let (Some(root), Some(extra)) = (root.as_object_mut(), extra.as_object()) {
        root.extend(extra.clone());
    }
    HashMap::from([("/redfish/v1/".to_string(), (200, vec![], root))])
}

fn only(networks: &[&str]) -> ManagementNetworks {
    ManagementNetworks::parse(networks).unwrap()
}

#[tokio::test]
async fn a_stored_bmc_outside_the_management_network_is_never_contacted() {
    tokio::time::timeout(BOUND, async {
        let bmc = Listener::start(root(json!({}))).await;
        let device = tray(ComponentType::Compute, Some(&bmc.ip), "SN-OUT");
        let mut setup = Setup::http(bmc.port);
        setup.allowed_networks = only(&["10.20.0.0/16"]);
        let err = setup.managers().status.unwrap().power_status(&device).await;
        assert!(
            matches!(&err, Err(DeviceError::Rejected(m))
                if m.contains("not contacted") && m.contains("FLOW_BMC_ALLOWED_NETWORKS")),
            "{err:?}"
        );
        // Listing 0.0.0.0/0 does not let a loopback address through either.
        setup.allowed_networks = only(&["0.0.0.0/0"]);
        let err = setup.managers().status.unwrap().power_status(&device).await;
        assert!(matches!(&err, Err(DeviceError::Rejected(_))), "{err:?}");

        // Inside the network, but the login's own entry lists other networks: no login sent.
        let dir = TempDir::new();
        let file = dir.write(
            "creds.toml",
            &format!(
                "[default]\nusername = \"{USER}\"\npassword = \"{PASSWORD}\"\n\
                 networks = [\"10.20.0.0/16\"]\n"
            ),
        );
        let mut scoped = Setup::http(bmc.port);
        scoped.credentials_file = Some(file);
        let err = scoped
            .managers()
            .status
            .unwrap()
            .power_status(&device)
            .await;
        assert!(
            matches!(&err, Err(DeviceError::Rejected(m)) if m.contains("other networks")),
            "{err:?}"
        );
        assert_eq!(bmc.connections(), 0, "the listener was contacted");
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn urls_in_a_bmc_answer_that_name_another_origin_are_never_followed() {
    tokio::time::timeout(BOUND, async {
        let third = Listener::start(HashMap::new()).await;
        let sessions = format!("{}/redfish/v1/SessionService/Sessions", third.origin());
        let systems = format!("{}/redfish/v1/Systems", third.origin());
        let trees = [
            root(json!({"Links": {"Sessions": {"@odata.id": sessions}}})),
            root(json!({"Systems": {"@odata.id": systems}})),
        ];
        for tree in trees {
            let bmc = Listener::start(tree).await;
            let device = tray(ComponentType::Compute, Some(&bmc.ip), "SN-X");
            let status = Setup::http(bmc.port).managers().status.unwrap();
            let err = status.power_status(&device).await.unwrap_err();
            let DeviceError::Rejected(text) = &err else {
                panic!("{err:?}");
            };
            assert!(
                text.contains("another origin") && text.contains(&third.ip),
                "{text}"
            );
            assert!(
                !text.contains("http://") && !text.contains("SessionService"),
                "only the foreign host is named: {text}"
            );
        }
        // A member on the BMC's own host but another port is refused alike.
        let bmc = Listener::start_with(|ip, port| {
            let mut tree = root(json!({}));
            let member = format!("http://{ip}:{}/redfish/v1/Systems/1", port.wrapping_add(1));
            let members = json!({"Members": [{"@odata.id": member}]});
            tree.insert("/redfish/v1/Systems".into(), (200, vec![], members));
            tree
        })
        .await;
        let device = tray(ComponentType::Compute, Some(&bmc.ip), "SN-Y");
        let err = Setup::http(bmc.port)
            .managers()
            .status
            .unwrap()
            .power_status(&device)
            .await
            .unwrap_err();
        assert!(matches!(&err, DeviceError::Rejected(_)), "{err:?}");

        // A redirect to the third host is not followed (with or without the login).
        let mut tree = root(json!({}));
        tree.insert(
            "/redfish/v1/Systems".into(),
            (307, vec![("Location", systems.clone())], json!({})),
        );
        let bmc = Listener::start(tree).await;
        let device = tray(ComponentType::Compute, Some(&bmc.ip), "SN-Z");
        let err = Setup::http(bmc.port)
            .managers()
            .status
            .unwrap()
            .power_status(&device)
            .await;
        assert!(err.is_err(), "{err:?}");
        assert!(bmc.connections() > 0, "the BMC itself was asked");
        assert_eq!(third.connections(), 0, "{:?}", third.heads.lock().unwrap());
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn an_editor_cannot_point_a_bmc_outside_the_management_network() {
    tokio::time::timeout(BOUND, async {
        let attacker = Listener::start(HashMap::new()).await;
        let mut config = flow::config::Config::default();
        config.components.bmc_allowed_networks = vec!["127.0.0.1/32".into()];
        let app = TestApp::with_config(Backend::Sqlite, config).await;
        let component = |ip: &str| {
            json!({"type": "compute", "name": "c-1", "manufacturer": "NVIDIA",
                "serial_number": "SN-ED-1",
                "bmcs": [{"type": "host", "mac_address": "02:00:00:00:ee:01", "ip_address": ip}]})
        };
        for ip in [attacker.ip.as_str(), "169.254.169.254", "0.0.0.0", "::1"] {
            let body = component(ip);
            let r = app.post("/v1/components", &body).await;
            r.assert_invalid_field("bmcs[0].ip_address", &body);
        }
        let r = app.post("/v1/components", &component("127.0.0.1")).await;
        assert_eq!(r.status, 201, "{}", r.text);
        let path = format!("/v1/components/{}", r.body["id"].as_str().unwrap());
        let body = json!({"bmcs": [{"type": "host", "mac_address": "02:00:00:00:ee:01",
            "ip_address": attacker.ip}]});
        let r = app.patch(&path, &body).await;
        r.assert_invalid_field("bmcs[0].ip_address", &body);

        let rack = json!({"name": "r-ed", "manufacturer": "NVIDIA", "serial_number": "R-ED",
            "components": [component(&attacker.ip)]});
        let r = app.post("/v1/expected-racks", &rack).await;
        r.assert_invalid_field("components[0].bmcs[0].ip_address", &rack);
        let rack = json!({"name": "r-ed", "manufacturer": "NVIDIA", "serial_number": "R-ED"});
        let r = app.post("/v1/expected-racks", &rack).await;
        assert_eq!(r.status, 201, "{}", r.text);
        let rack_path = format!("/v1/racks/{}", r.body["id"].as_str().unwrap());
        let mut other = component(&attacker.ip);
        other["serial_number"] = json!("SN-ED-2");
        other["bmcs"][0]["mac_address"] = json!("02:00:00:00:ee:02");
        let body = json!({"components": [other]});
        let r = app.patch(&rack_path, &body).await;
        r.assert_invalid_field("components[0].bmcs[0].ip_address", &body);
        assert_eq!(attacker.connections(), 0);
    })
    .await
    .expect("bounded");
}
