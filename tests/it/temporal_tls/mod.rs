//! Temporal with credentials: the client and the worker reach the dev server through a
//! TLS-terminating proxy that demands a client certificate, and every call carries the API key;
//! a CA, name or certificate that does not fit fails naming the setting.

mod proxy;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use flow::config::{Secret, Temporal};
use flow::workflows::worker;
use serde_json::json;

use crate::support::Backend;
use crate::support::fixtures::gb200_rack;
use crate::support::ops::{OpsBuilder, temporal_address};
use crate::support::redfish::{Pki, TempDir};
use proxy::TlsProxy;

const API_KEY: &str = "flow-test-key-7c1d";
/// The only name on the proxy's certificate: the address is an IP, so Flow must be told it.
const SERVER_NAME: &str = "temporal.test";

/// A proxy that wants a client certificate, and the files and settings that get through it.
struct Setup {
    proxy: TlsProxy,
    pki: Pki,
    dir: TempDir,
    settings: Temporal,
}

async fn setup() -> Setup {
    let pki = Pki::new();
    let upstream = temporal_address();
    let upstream = upstream.trim_start_matches("http://").trim_end_matches('/');
    let proxy = TlsProxy::start(
        "127.0.0.1",
        &pki.server(&[SERVER_NAME]),
        Some(&pki.ca_pem),
        upstream,
    )
    .await;
    let dir = TempDir::new();
    let client = pki.client("flow");
    let settings = Temporal {
        tls_ca_file: Some(dir.write("ca.pem", &pki.ca_pem)),
        tls_cert_file: Some(dir.write("flow.pem", &client.cert_pem)),
        tls_key_file: Some(dir.write("flow-key.pem", &client.key_pem)),
        tls_server_name: Some(SERVER_NAME.into()),
        api_key: Some(Secret::new(API_KEY)),
        ..worker::plain(&format!("https://{}", proxy.addr), "flow")
    };
    Setup {
        proxy,
        pki,
        dir,
        settings,
    }
}

#[tokio::test]
async fn an_operation_runs_through_mutual_tls_and_every_call_carries_the_api_key() {
    let s = setup().await;
    let builder = OpsBuilder::new(Backend::Sqlite).temporal(s.settings.clone());
    builder
        .run(|ops| async move {
            ops.app.create_rack(&gb200_rack(1, 2)).await;
            let r = ops
                .operate(
                    "power-on",
                    &json!({"target_spec": {"racks": [{"name": "rack-0001"}]}}),
                )
                .await;
            assert_eq!(r.status, 202, "{}", r.text);
            let id = r.body["task_ids"][0].as_str().unwrap().to_string();
            let task = ops.wait_end(&id).await;
            assert_eq!(task["status"], "succeeded", "{task}");
        })
        .await;
    let seen = s.proxy.authorizations();
    // The start, the worker's polls and completions: all of them went through the proxy.
    assert!(seen.len() >= 5, "{seen:?}");
    let bearer = format!("Bearer {API_KEY}");
    assert!(seen.iter().all(|a| *a == bearer), "{seen:?}");
}

async fn refused(settings: &Temporal) -> String {
    match worker::connect_with(settings, Duration::from_secs(5)).await {
        Ok(_) => panic!("connected with {settings:?}"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn a_wrong_ca_name_or_missing_client_certificate_is_refused_naming_the_setting() {
    let s = setup().await;
    let other = Pki::new();
    let wrong_ca = Temporal {
        tls_ca_file: Some(s.dir.write("other-ca.pem", &other.ca_pem)),
        ..s.settings.clone()
    };
    let e = refused(&wrong_ca).await;
    assert!(e.contains("FLOW_TEMPORAL_TLS_CA_FILE"), "{e}");

    let no_name = Temporal {
        tls_server_name: None,
        ..s.settings.clone()
    };
    let e = refused(&no_name).await;
    assert!(e.contains("FLOW_TEMPORAL_TLS_SERVER_NAME"), "{e}");

    // The proxy refuses a client without a certificate from its CA.
    let before = s.proxy.seen.refused.load(Ordering::SeqCst);
    let stranger = other.client("stranger");
    for creds in [None, Some(&stranger)] {
        let no_cert = Temporal {
            tls_cert_file: creds.map(|c| s.dir.write("c.pem", &c.cert_pem)),
            tls_key_file: creds.map(|c| s.dir.write("k.pem", &c.key_pem)),
            ..s.settings.clone()
        };
        refused(&no_cert).await;
    }
    assert!(s.proxy.seen.refused.load(Ordering::SeqCst) >= before + 2);

    let unreadable = Temporal {
        tls_ca_file: Some(PathBuf::from("/nonexistent/ca.pem")),
        ..s.settings.clone()
    };
    let e = refused(&unreadable).await;
    assert!(e.contains("FLOW_TEMPORAL_TLS_CA_FILE"), "{e}");
    // The right files still get through: the refusals above were the files' doing.
    worker::connect_with(&s.settings, Duration::from_secs(5))
        .await
        .expect("the right credentials connect");
    drop(s.pki);
}

fn config_check(env: &[(&str, &str)]) -> (bool, String) {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_flow"));
    command.args(["config", "check"]);
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("FLOW_")) {
        command.env_remove(key);
    }
    let out = command.envs(env.iter().copied()).output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
fn config_check_reports_unreadable_certificate_files_and_hides_the_api_key() {
    let https = ("FLOW_TEMPORAL_ADDRESS", "https://temporal.example:7233");
    for env in [
        "FLOW_TEMPORAL_TLS_CA_FILE",
        "FLOW_TEMPORAL_TLS_CERT_FILE",
        "FLOW_TEMPORAL_TLS_KEY_FILE",
    ] {
        let mut vars = vec![https, (env, "/nonexistent/temporal.pem")];
        // The key pair goes together, so the other half is a readable file.
        let readable = env!("CARGO_MANIFEST_DIR").to_string() + "/Cargo.toml";
        match env {
            "FLOW_TEMPORAL_TLS_CERT_FILE" => vars.push(("FLOW_TEMPORAL_TLS_KEY_FILE", &readable)),
            "FLOW_TEMPORAL_TLS_KEY_FILE" => vars.push(("FLOW_TEMPORAL_TLS_CERT_FILE", &readable)),
            _ => {}
        }
        let (ok, text) = config_check(&vars);
        assert!(!ok, "{text}");
        assert!(text.contains(env) && text.contains("cannot read"), "{text}");
    }
    let (ok, text) = config_check(&[
        ("FLOW_TEMPORAL_ADDRESS", "http://temporal.example:7233"),
        ("FLOW_TEMPORAL_API_KEY", API_KEY),
    ]);
    assert!(!ok && text.contains("https://"), "{text}");
    let (ok, text) = config_check(&[https, ("FLOW_TEMPORAL_API_KEY", API_KEY)]);
    assert!(ok, "{text}");
    assert!(!text.contains(API_KEY), "{text}");
    assert!(text.contains("temporal_api_key = \"***\""), "{text}");
}
