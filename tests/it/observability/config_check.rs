//! `flow config check`: the effective configuration with secrets redacted, or the setting at
//! fault named and a non-zero exit.

use std::process::Output;

fn check(env: &[(&str, &str)]) -> Output {
    run(&["config", "check"], env)
}

/// `flow ARGS` with only `env` of the settings.
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_flow"));
    command.args(args);
    // Only what the test sets: the developer's own FLOW_* or OTEL_* must not leak in.
    for (key, _) in std::env::vars() {
        if key.starts_with("FLOW_")
            || key.starts_with("OTEL_")
            || key.starts_with("DB_")
            || key.starts_with("TEMPORAL_")
            || key == "PSM_API_URL"
        {
            command.env_remove(key);
        }
    }
    command.envs(env.iter().copied());
    command.output().expect("run flow")
}

#[test]
fn config_check_prints_the_effective_configuration_with_secrets_redacted() {
    let out = check(&[
        (
            "FLOW_DATABASE_URL",
            "postgres://flow:s3cret@db.internal:5432/flow",
        ),
        ("FLOW_REQUEST_TIMEOUT_SECS", "45"),
        ("FLOW_COMPONENT_MANAGERS", "compute=sim,powershelf=psm"),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stdout.contains("s3cret"), "{stdout}");
    assert!(
        stdout.contains("database_url = \"postgres://flow:***@db.internal:5432/flow\""),
        "{stdout}"
    );
    assert!(stdout.contains("request_timeout_secs = 45\n"), "{stdout}");
    assert!(
        stdout.contains("component_managers = \"compute=sim,powershelf=psm\""),
        "{stdout}"
    );
    // The output is a configuration file flow accepts as it is.
    let dir = std::env::temp_dir().join(format!("flow-config-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("effective.toml");
    std::fs::write(&file, stdout.replace("***", "pw").as_bytes()).unwrap();
    let again = check(&[("FLOW_CONFIG", file.to_str().unwrap())]);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn config_check_names_each_bad_setting_and_exits_non_zero() {
    for (key, value, named) in [
        (
            "FLOW_REQUEST_TIMEOUT_SECS",
            "0",
            "FLOW_REQUEST_TIMEOUT_SECS",
        ),
        (
            "FLOW_REQUEST_TIMEOUT_SECS",
            "99999999",
            "FLOW_REQUEST_TIMEOUT_SECS",
        ),
        ("FLOW_MAX_BODY_BYTES", "0", "FLOW_MAX_BODY_BYTES"),
        ("FLOW_LOG", "info,flow=loud", "FLOW_LOG"),
        ("FLOW_LOG_FORMAT", "xml", "FLOW_LOG_FORMAT"),
        ("FLOW_DATABASE_URL", "mysql://db/flow", "FLOW_DATABASE_URL"),
        (
            "FLOW_DATABASE_URL",
            "sqlite:///no/such/dir/flow.db",
            "FLOW_DATABASE_URL",
        ),
        (
            "FLOW_TEMPORAL_ADDRESS",
            "temporal:7233:x",
            "FLOW_TEMPORAL_ADDRESS",
        ),
        ("FLOW_PSM_URL", "ftp://psm:50052", "FLOW_PSM_URL"),
        ("FLOW_PSM_TIMEOUT_SECS", "0", "FLOW_PSM_TIMEOUT_SECS"),
        (
            "FLOW_OBSERVE_TIMEOUT_SECS",
            "100000",
            "FLOW_OBSERVE_TIMEOUT_SECS",
        ),
        (
            "FLOW_DRIFT_SYNC_INTERVAL_SECS",
            "10000000",
            "FLOW_DRIFT_SYNC_INTERVAL_SECS",
        ),
        ("FLOW_SIM_LATENCY_MS", "86400000", "FLOW_SIM_LATENCY_MS"),
        ("FLOW_CONFIG", "/no/such/flow.toml", "/no/such/flow.toml"),
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "collector:4318",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
        ),
        (
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "grpc",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ),
    ] {
        let out = check(&[(key, value)]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{key}={value}: {stderr}");
        assert!(stderr.contains(named), "{key}={value}: {stderr}");
        assert!(
            out.stdout.is_empty(),
            "{key}={value} printed a configuration"
        );
    }
}

#[test]
fn settings_from_the_config_file_are_checked_too() {
    let dir = std::env::temp_dir().join(format!("flow-config-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (line, named) in [
        ("log_format = \"xml\"", "FLOW_LOG_FORMAT (log_format)"),
        ("max_body_bytes = 0", "FLOW_MAX_BODY_BYTES (max_body_bytes)"),
        ("log = \"flow=loud\"", "FLOW_LOG (log)"),
    ] {
        let file = dir.join("flow.toml");
        std::fs::write(&file, format!("{line}\n")).unwrap();
        let out = check(&[("FLOW_CONFIG", file.to_str().unwrap())]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{line}: {stderr}");
        assert!(stderr.contains(named), "{line}: {stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn serve_refuses_to_start_on_a_bad_setting_and_names_it() {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_flow"));
    let out = command
        .arg("serve")
        .env("FLOW_REQUEST_TIMEOUT_SECS", "0")
        .env("FLOW_DATABASE_URL", "sqlite::memory:")
        .output()
        .expect("run flow serve");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("FLOW_REQUEST_TIMEOUT_SECS"), "{stderr}");
}

#[test]
fn config_check_builds_the_otlp_exporter_as_serve_would() {
    // Building it creates its TLS-capable HTTP client: the step that panicked at start while
    // no rustls provider was installed. Nothing needs to listen there.
    for endpoint in ["http://127.0.0.1:4318", "https://127.0.0.1:4318"] {
        let out = check(&[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)]);
        assert!(
            out.status.success(),
            "{endpoint}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn config_check_redacts_secrets_in_url_query_strings() {
    let out = check(&[
        (
            "FLOW_DATABASE_URL",
            "postgres://flow@db.internal/flow?sslmode=require&password=q-s3cret&sslpassword=k-s3cret",
        ),
        (
            "FLOW_TEMPORAL_ADDRESS",
            "https://temporal.internal:7233/?api_key=t-s3cret",
        ),
        ("FLOW_AUTH", "jwt"),
        (
            "FLOW_JWT_JWKS_URL",
            "https://idp.internal/jwks?access_token=j-s3cret&tenant=dc1",
        ),
        ("FLOW_JWT_ISSUER", "https://idp.internal"),
        ("FLOW_JWT_AUDIENCE", "flow"),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stdout.contains("s3cret"), "{stdout}");
    assert!(
        stdout.contains("?sslmode=require&password=***&sslpassword=***"),
        "what is not secret stays: {stdout}"
    );
    assert!(stdout.contains("access_token=***&tenant=dc1"), "{stdout}");
    assert!(stdout.contains("token_max_days = 365\n"), "{stdout}");
}

#[test]
fn a_bad_firmware_catalog_is_named_by_config_check_and_stops_serve() {
    let dir = std::env::temp_dir().join(format!("flow-bad-catalog-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let image = dir.join("bmc.fwpkg");
    std::fs::write(&image, b"image").unwrap();
    let head = "[[firmware]]\ntype = \"compute\"\nversion = \"gb200-r1\"\n[[firmware.bundle]]\n";
    for (bundle, why) in [
        (
            "image_uri = \"http://fw/bmc.fwpkg\"\nactivate = \"reboot\"\n".to_string(),
            "unknown activate \"reboot\"",
        ),
        (
            "activate = \"bmc_reset\"\n".to_string(),
            "needs exactly one of file or image_uri",
        ),
        (
            format!(
                "file = {:?}\n",
                dir.join("absent.fwpkg").display().to_string()
            ),
            "cannot be read",
        ),
        (
            format!(
                "file = {:?}\nsha256 = \"00\"\n",
                image.display().to_string()
            ),
            "checksum mismatch",
        ),
    ] {
        let catalog = dir.join("catalog.toml");
        std::fs::write(&catalog, format!("{head}{bundle}")).unwrap();
        let path = catalog.to_str().unwrap();
        let out = check(&[("FLOW_FIRMWARE_CATALOG", path)]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{why}: {stderr}");
        for named in ["FLOW_FIRMWARE_CATALOG", "entry 1 (type ", why] {
            assert!(stderr.contains(named), "{why}: lacks {named}: {stderr}");
        }
        assert!(out.stdout.is_empty(), "{why}: printed a configuration");
        // `serve` stops at start-up on it, before it would listen or need Temporal.
        let served = run(
            &["serve"],
            &[
                ("FLOW_FIRMWARE_CATALOG", path),
                ("FLOW_DATABASE_URL", "sqlite::memory:"),
                ("FLOW_LISTEN", "127.0.0.1:0"),
                ("FLOW_AUTH", "none"),
            ],
        );
        let stderr = String::from_utf8_lossy(&served.stderr);
        assert!(!served.status.success(), "{why}: serve started");
        assert!(stderr.contains(why), "{why}: {stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
