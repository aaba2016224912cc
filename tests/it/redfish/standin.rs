//! What `sushy-emulator` cannot show, against an in-test Redfish BMC (axum): sessions and
//! re-login, 503 + Retry-After, `@Message.ExtendedInfo`, task monitors, discovery among several
//! systems, the per-BMC bound on calls in flight, oversized answers, and secrets kept out of
//! errors and `Debug`.

mod server;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use flow::components::{DeviceError, DevicePower, FirmwareRequest, FirmwareState, PowerOp};
use flow::domain::ComponentType;
use server::start;

use super::{Setup, tray};
use crate::support::redfish::{PASSWORD, TempDir, USER};

fn device(serial: &str) -> flow::components::Device {
    tray(ComponentType::Compute, Some("127.0.0.1"), serial)
}

#[tokio::test]
async fn a_session_is_opened_once_and_renewed_after_a_401() {
    let (port, bmc) = start(|b| b.sessions = true).await;
    let m = Setup::http(port).managers();
    let status = m.status.unwrap();
    assert_eq!(
        status.power_status(&device("SN-A")).await,
        Ok(DevicePower::Off)
    );
    assert_eq!(
        status.power_status(&device("SN-A")).await,
        Ok(DevicePower::Off)
    );
    assert_eq!(bmc.lock().unwrap().logins, 1);
    bmc.lock().unwrap().tokens.clear();
    assert_eq!(
        status.power_status(&device("SN-A")).await,
        Ok(DevicePower::Off)
    );
    let b = bmc.lock().unwrap();
    assert_eq!(b.logins, 2, "logged in again after the 401");
    assert_eq!(
        b.basic_calls, 0,
        "every call after login used the session token"
    );
}

#[tokio::test]
async fn a_503_is_waited_out_per_retry_after_and_a_lasting_one_is_transient() {
    let (port, bmc) = start(|b| b.busy = 1).await;
    let status = Setup::http(port).managers().status.unwrap();
    let started = Instant::now();
    assert_eq!(
        status.power_status(&device("SN-A")).await,
        Ok(DevicePower::Off)
    );
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    bmc.lock().unwrap().busy = 100;
    let err = status.power_status(&device("SN-A")).await.unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    assert!(err.to_string().contains("HTTP 503"), "{err}");
}

#[tokio::test]
async fn refusals_carry_the_bmc_message_and_unlisted_reset_types_are_unsupported() {
    let (port, bmc) = start(|_| {}).await;
    let power = Setup::http(port).managers().power.unwrap();
    let err = power
        .set_power(&device("SN-A"), PowerOp::ForceRestart)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, DeviceError::Rejected(m)
            if m.contains("does not allow a ForceRestart") && m.contains("HTTP 400")),
        "{err:?}"
    );
    assert!(!err.is_retryable());
    // GracefulShutdown is not in ResetType@Redfish.AllowableValues: nothing is sent.
    let err = power
        .set_power(&device("SN-A"), PowerOp::Off)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, DeviceError::Unsupported(m) if m.contains("GracefulShutdown")),
        "{err:?}"
    );
    power.set_power(&device("SN-A"), PowerOp::On).await.unwrap();
    // A warm reset restarts the host gracefully, which this BMC does not list either.
    let err = power
        .set_power(&device("SN-A"), PowerOp::WarmReset)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, DeviceError::Unsupported(m) if m.contains("GracefulRestart")),
        "{err:?}"
    );
    assert_eq!(bmc.lock().unwrap().resets, ["ForceRestart", "On"]);
}

#[tokio::test]
async fn firmware_follows_the_task_monitor_then_reads_the_version_back() {
    let (port, bmc) = start(|_| {}).await;
    let dir = TempDir::new();
    let catalog = dir.write(
        "catalog.toml",
        "[[firmware]]\ntype = \"compute\"\nversion = \"2.0.0\"\nimage_uri = \"https://fw.example/good.bin\"\n\
         [[firmware]]\ntype = \"compute\"\nversion = \"2.0.1\"\nimage_uri = \"https://fw.example/bad.bin\"\n",
    );
    let mut setup = Setup::http(port);
    setup.catalog_file = Some(catalog);
    let firmware = setup.managers().firmware.unwrap();
    let request = |v: &str| FirmwareRequest {
        target_version: Some(v.into()),
        sub_targets: vec![],
    };
    let tray = device("SN-A");
    firmware
        .start_update(&tray, &request("2.0.0"))
        .await
        .unwrap();
    assert_eq!(
        bmc.lock().unwrap().target.as_deref(),
        Some("/redfish/v1/Systems/A"),
        "Targets come from discovery"
    );
    let mut states = Vec::new();
    loop {
        let s = firmware.update_status(&tray).await.unwrap();
        states.push(s.state);
        if s.state == FirmwareState::Completed {
            assert_eq!(s.version.as_deref(), Some("2.0.0"));
            break;
        }
        assert!(states.len() < 10, "{states:?}");
    }
    assert_eq!(
        states,
        [
            FirmwareState::InProgress,
            FirmwareState::InProgress,
            FirmwareState::Completed
        ]
    );

    firmware
        .start_update(&tray, &request("2.0.1"))
        .await
        .unwrap();
    let mut last = firmware.update_status(&tray).await.unwrap();
    for _ in 0..5 {
        if last.state == FirmwareState::Failed {
            break;
        }
        last = firmware.update_status(&tray).await.unwrap();
    }
    assert_eq!(last.state, FirmwareState::Failed, "{last:?}");
    assert!(
        last.error
            .unwrap()
            .contains("Image signature verification failed")
    );

    let err = firmware
        .start_update(&tray, &request("3.0"))
        .await
        .unwrap_err();
    assert!(matches!(err, DeviceError::Unsupported(_)), "{err:?}");
}

#[tokio::test]
async fn of_several_systems_the_one_whose_serial_matches_is_driven() {
    let (port, _bmc) = start(|_| {}).await;
    let m = Setup::http(port).manager();
    use flow::components::Registration;
    assert_eq!(m.register(&device("SN-B")).await, Ok(Some("uuid-B".into())));
    let stranger = device("SN-C");
    let other = Setup::http(port).manager();
    let err = other.register(&stranger).await.unwrap_err();
    assert!(err.to_string().contains("serial number SN-C"), "{err}");
}

#[tokio::test]
async fn at_most_max_inflight_calls_reach_one_bmc_at_once() {
    let (port, bmc) = start(|b| b.delay_ms = 150).await;
    let status = Setup::http(port).managers().status.unwrap();
    let tray = device("SN-A");
    let calls = (0..8).map(|_| status.power_status(&tray));
    for r in futures::future::join_all(calls).await {
        assert_eq!(r, Ok(DevicePower::Off));
    }
    assert_eq!(bmc.lock().unwrap().max_inflight, 2);
}

#[tokio::test]
async fn an_oversized_answer_is_an_error_not_a_crash() {
    let (port, bmc) = start(|_| {}).await;
    let status = Setup::http(port).managers().status.unwrap();
    assert_eq!(
        status.power_status(&device("SN-A")).await,
        Ok(DevicePower::Off)
    );
    bmc.lock().unwrap().huge = true;
    let err = status.power_status(&device("SN-A")).await.unwrap_err();
    assert!(err.to_string().contains("larger than"), "{err}");
}

#[tokio::test]
async fn secrets_stay_out_of_errors_and_debug_output() {
    let (port, _bmc) = start(|b| b.sessions = true).await;
    let dir = TempDir::new();
    let wrong = "Wr0ng-but-still-secret";
    let creds = dir.write(
        "credentials.toml",
        &format!("[default]\nusername = \"{USER}\"\npassword = \"{wrong}\"\n"),
    );
    let mut setup = Setup::http(port);
    setup.credentials_file = Some(creds);
    let manager = setup.manager();
    let err = flow::components::PowerStatus::power_status(manager.as_ref(), &device("SN-A"))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("credentials rejected by BMC 127.0.0.1"),
        "{err}"
    );
    let mut config = flow::config::Config::default();
    config.redfish.password = Some(PASSWORD.into());
    for text in [
        err.to_string(),
        format!("{err:?}"),
        format!("{manager:?}"),
        format!("{:?}", setup.redfish_setup()),
        format!("{config:?}"),
    ] {
        assert!(!text.contains(PASSWORD) && !text.contains(wrong), "{text}");
    }
}

/// A log sink for one test's `tracing` output.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn logs_warn_about_insecure_tls_and_never_carry_a_password() {
    let sink = Sink::default();
    let writer = sink.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let (port, _bmc) = start(|b| b.sessions = true).await;
    let dir = TempDir::new();
    let wrong = "An0ther-secret-pw";
    let creds = dir.write(
        "credentials.toml",
        &format!("[default]\nusername = \"{USER}\"\npassword = \"{wrong}\"\n"),
    );
    let mut setup = Setup::http(port);
    setup.insecure = true;
    setup.credentials_file = Some(creds.clone());
    let manager = setup.manager();
    let status = flow::components::registry::redfish_set(manager.clone())
        .status
        .unwrap();
    assert!(status.power_status(&device("SN-A")).await.is_err());
    // A broken file keeps the previous logins, and says so without quoting the file.
    std::fs::write(&creds, format!("password = \"{wrong}\" not toml")).unwrap();
    assert!(status.power_status(&device("SN-A")).await.is_err());

    let logs = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("FLOW_REDFISH_INSECURE=true"), "{logs}");
    assert!(
        logs.contains("keeping the previous BMC credentials"),
        "{logs}"
    );
    assert!(!logs.contains(wrong) && !logs.contains(PASSWORD), "{logs}");
}
