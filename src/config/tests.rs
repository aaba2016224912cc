//! The loader's behaviour: precedence, defaults, and each bad value named.

use std::time::Duration;

use super::*;

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// An environment of `pairs`; the config modules' own tests share it.
pub(super) fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Two duration settings, picked from a loaded config: their defaults with no variables, then
/// the values `vars` give them. Returns the config loaded from `vars` for further checks.
fn assert_two_durations(
    pick: fn(&Config) -> (Duration, Duration),
    defaults: (Duration, Duration),
    vars: &[(&str, &str)],
    set: (Duration, Duration),
) -> Config {
    assert_eq!(pick(&Config::load(&env(&[])).unwrap()), defaults);
    let c = Config::load(&env(vars)).unwrap();
    assert_eq!(pick(&c), set);
    c
}

#[test]
fn defaults_use_the_embedded_sqlite_database() {
    let c = Config::load(&env(&[])).unwrap();
    assert_eq!(c.database.url.expose(), "sqlite://flow.db?mode=rwc");
    assert_eq!(c.server.listen.port(), 8080);
}

#[test]
fn legacy_variables_build_urls_and_flow_variables_win() {
    let c = Config::load(&env(&[
        ("DB_ADDR", "db"),
        ("DB_USER", "flow"),
        ("DB_PASSWORD", "s3cret"),
        ("DB_DATABASE", "inventory"),
        ("TEMPORAL_HOST", "temporal"),
        ("PSM_API_URL", "psm:50052"),
    ]))
    .unwrap();
    assert_eq!(
        c.database.url.expose(),
        "postgres://flow:s3cret@db:5432/inventory"
    );
    assert_eq!(c.temporal.address, "http://temporal:7233");
    assert_eq!(c.psm.url, "http://psm:50052");
    assert!(!format!("{c:?}").contains("s3cret"));
    let bare = Config::load(&env(&[("FLOW_PSM_URL", "psm.internal:50052")])).unwrap();
    assert_eq!(bare.psm.url, "psm.internal:50052");
    let c = Config::load(&env(&[
        ("DB_ADDR", "db"),
        ("FLOW_DATABASE_URL", "sqlite://x.db"),
    ]))
    .unwrap();
    assert_eq!(c.database.url.expose(), "sqlite://x.db");
}

#[test]
fn bad_values_name_the_variable() {
    for (key, value) in [
        ("FLOW_LISTEN", "nope"),
        ("FLOW_COMPONENT_MANAGERS", "compute=nico"),
        ("FLOW_COMPONENT_MANAGERS", "gpu=sim"),
        ("FLOW_PSM_TIMEOUT_SECS", "soon"),
        ("FLOW_PSM_TIMEOUT_SECS", "0"),
        ("FLOW_SIM_LATENCY_MS", "-1"),
        ("FLOW_SIM_FIRMWARE_SECS", "5s"),
        ("FLOW_SIM_SLOW_MS", "x"),
        ("FLOW_SIM_FAILURE_RATE", "1.5"),
        ("FLOW_SIM_FAILURE_RATE", "NaN"),
        ("FLOW_SIM_FAILURE_RATE", "often"),
        ("FLOW_DRIFT_SYNC_INTERVAL_SECS", "1m"),
        ("FLOW_OBSERVE_TIMEOUT_SECS", "0"),
        ("FLOW_SCHEDULE_TICK_MS", "0"),
        ("FLOW_SCHEDULE_TICK_MS", "1s"),
        ("FLOW_TEMPORAL_ADDRESS", ""),
        ("FLOW_TEMPORAL_ADDRESS", "  "),
        ("FLOW_DB_ACQUIRE_TIMEOUT_SECS", "0"),
        ("FLOW_DB_ACQUIRE_TIMEOUT_SECS", "2s"),
        ("FLOW_SHUTDOWN_GRACE_SECS", "-1"),
        ("FLOW_REQUEST_TIMEOUT_SECS", "0"),
        ("FLOW_MAX_BODY_BYTES", "0"),
        ("FLOW_LOG", "info,flow=loud"),
        ("FLOW_LOG_FORMAT", "xml"),
        ("FLOW_DATABASE_URL", "mysql://db/flow"),
        ("FLOW_TEMPORAL_ADDRESS", "ftp://temporal:7233"),
        ("FLOW_TEMPORAL_NAMESPACE", " "),
        ("FLOW_PSM_URL", "ftp://psm:50052"),
        ("FLOW_PSM_URL", "psm host:50052"),
        ("FLOW_SIM_FIRMWARE_SECS", "1000000"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"),
    ] {
        let err = Config::load(&env(&[(key, value)])).unwrap_err();
        assert!(err.to_string().contains(key), "{key}={value}: {err}");
    }
}

#[test]
fn component_and_simulator_settings_come_from_variables() {
    let c = Config::load(&env(&[])).unwrap();
    assert_eq!(c.components.managers, "");
    assert_eq!(
        (c.psm.timeout, c.sim.latency, c.sim.firmware),
        (secs(30), ms(200), secs(5))
    );
    assert_eq!((c.sim.slow, c.sim.failure_rate), (ms(2000), 0.0));
    let c = Config::load(&env(&[
        ("FLOW_COMPONENT_MANAGERS", "powershelf=psm,compute=sim"),
        ("FLOW_PSM_TIMEOUT_SECS", "45"),
        ("FLOW_SIM_LATENCY_MS", "0"),
        ("FLOW_SIM_FIRMWARE_SECS", "1"),
        ("FLOW_SIM_FAIL_SERIALS", "SN1, SN2,"),
        ("FLOW_SIM_SLOW_SERIALS", "SN3"),
        ("FLOW_SIM_SLOW_MS", "10"),
        ("FLOW_SIM_FAILURE_RATE", "0.25"),
    ]))
    .unwrap();
    assert_eq!(c.components.managers, "powershelf=psm,compute=sim");
    assert_eq!(
        (c.psm.timeout, c.sim.latency, c.sim.firmware),
        (secs(45), ms(0), secs(1))
    );
    assert_eq!(c.sim.fail_serials, ["SN1", "SN2"]);
    assert_eq!(c.sim.slow_serials, ["SN3"]);
    assert_eq!((c.sim.slow, c.sim.failure_rate), (ms(10), 0.25));
}

#[test]
fn fault_settings_have_prompt_defaults_and_none_means_inventory_only() {
    let c = assert_two_durations(
        |c| (c.database.acquire_timeout, c.server.shutdown_grace),
        (secs(2), secs(20)),
        &[
            ("FLOW_DB_ACQUIRE_TIMEOUT_SECS", "5"),
            ("FLOW_SHUTDOWN_GRACE_SECS", "3"),
            ("FLOW_TEMPORAL_ADDRESS", "none"),
        ],
        (secs(5), secs(3)),
    );
    assert_eq!(c.temporal.address, "none");
}

#[test]
fn redfish_settings_come_from_variables_and_the_password_stays_hidden() {
    let c = Config::load(&env(&[])).unwrap();
    assert_eq!((c.redfish.scheme.as_str(), c.redfish.port), ("https", 443));
    assert_eq!(
        (c.redfish.timeout, c.redfish.max_inflight_per_bmc),
        (secs(30), 2)
    );
    let c = Config::load(&env(&[
        ("FLOW_COMPONENT_MANAGERS", "compute=redfish,powershelf=psm"),
        ("FLOW_REDFISH_SCHEME", "HTTP"),
        ("FLOW_REDFISH_PORT", "8000"),
        ("FLOW_REDFISH_USERNAME", "admin"),
        ("FLOW_REDFISH_PASSWORD", "bmc-s3cret"),
        ("FLOW_REDFISH_INSECURE", "true"),
        ("FLOW_REDFISH_MAX_INFLIGHT_PER_BMC", "4"),
        ("FLOW_FIRMWARE_CATALOG", "/etc/flow/firmware.toml"),
        ("FLOW_PSM_CA_FILE", "/etc/flow/psm-ca.pem"),
        ("FLOW_PSM_CLIENT_CERT_FILE", "/etc/flow/c.pem"),
        ("FLOW_PSM_CLIENT_KEY_FILE", "/etc/flow/c.key"),
    ]))
    .unwrap();
    assert_eq!((c.redfish.scheme.as_str(), c.redfish.port), ("http", 8000));
    assert!(c.redfish.insecure);
    assert_eq!(c.redfish.max_inflight_per_bmc, 4);
    assert_eq!(
        c.redfish.password.as_ref().map(Secret::expose),
        Some("bmc-s3cret")
    );
    assert!(!format!("{c:?}").contains("bmc-s3cret"));
}

#[test]
fn managers_that_send_logins_need_the_management_network() {
    let load = |pairs: &[(&str, &str)]| Config::load(&env(pairs)).unwrap();
    for managers in ["compute=redfish", "powershelf=psm"] {
        let c = load(&[
            ("FLOW_COMPONENT_MANAGERS", managers),
            ("FLOW_REDFISH_USERNAME", "admin"),
            ("FLOW_REDFISH_PASSWORD", "pw"),
        ]);
        let err = c.check_bmc_confinement().unwrap_err().to_string();
        assert!(err.contains("FLOW_BMC_ALLOWED_NETWORKS"), "{err}");
    }
    let c = load(&[
        ("FLOW_COMPONENT_MANAGERS", "powershelf=psm"),
        ("FLOW_BMC_ALLOWED_NETWORKS", "10.20.0.0/16, fd00:20::/48"),
    ]);
    assert!(c.check_bmc_confinement().is_ok());
    assert!(c.bmc_networks().allows("10.20.1.2").is_ok());
    assert!(
        load(&[("FLOW_COMPONENT_MANAGERS", "compute=sim")])
            .check_bmc_confinement()
            .is_ok()
    );
    let err = Config::load(&env(&[("FLOW_BMC_ALLOWED_NETWORKS", "10.0.0.0/99")])).unwrap_err();
    assert!(
        err.to_string().contains("FLOW_BMC_ALLOWED_NETWORKS"),
        "{err}"
    );
}

#[test]
fn redfish_without_credentials_or_with_bad_settings_refuses_to_start() {
    for (pairs, key) in [
        (
            vec![("FLOW_COMPONENT_MANAGERS", "compute=redfish")],
            "FLOW_REDFISH_USERNAME",
        ),
        (
            vec![
                ("FLOW_COMPONENT_MANAGERS", "nvswitch=redfish"),
                ("FLOW_REDFISH_USERNAME", "admin"),
            ],
            "FLOW_REDFISH_CREDENTIALS_FILE",
        ),
        (vec![("FLOW_REDFISH_SCHEME", "ftp")], "FLOW_REDFISH_SCHEME"),
        (vec![("FLOW_REDFISH_PORT", "70000")], "FLOW_REDFISH_PORT"),
        (
            vec![("FLOW_REDFISH_MAX_INFLIGHT_PER_BMC", "0")],
            "FLOW_REDFISH_MAX_INFLIGHT_PER_BMC",
        ),
        (
            vec![("FLOW_REDFISH_INSECURE", "maybe")],
            "FLOW_REDFISH_INSECURE",
        ),
        (
            vec![("FLOW_PSM_CLIENT_CERT_FILE", "/c.pem")],
            "FLOW_PSM_CLIENT_KEY_FILE",
        ),
        (
            vec![("FLOW_COMPONENT_MANAGERS", "compute=bmc")],
            "FLOW_COMPONENT_MANAGERS",
        ),
    ] {
        let err = Config::load(&env(&pairs)).unwrap_err().to_string();
        assert!(err.contains(key), "{pairs:?}: {err}");
    }
    let with_file = Config::load(&env(&[
        ("FLOW_COMPONENT_MANAGERS", "compute=redfish"),
        ("FLOW_REDFISH_CREDENTIALS_FILE", "/etc/flow/bmc.toml"),
    ]));
    assert!(with_file.is_ok());
}

#[test]
fn drift_sync_settings_come_from_variables_and_zero_turns_the_sync_off() {
    assert_two_durations(
        |c| (c.drift.sync_interval, c.components.observe_timeout),
        (secs(60), secs(10)),
        &[
            ("FLOW_DRIFT_SYNC_INTERVAL_SECS", "0"),
            ("FLOW_OBSERVE_TIMEOUT_SECS", "3"),
        ],
        (secs(0), secs(3)),
    );
}

#[test]
fn auth_settings_are_checked_together_and_name_the_variable() {
    let c = Config::load(&env(&[])).unwrap();
    assert_eq!((c.auth_modes(), c.audit.retention_days), (None, 365));
    let c = Config::load(&env(&[("FLOW_AUTH", "none")])).unwrap();
    assert!(c.auth_modes().unwrap().is_none());
    let c = Config::load(&env(&[
        ("FLOW_AUTH", "jwt,token"),
        ("FLOW_JWT_JWKS_URL", "https://idp.example/jwks"),
        ("FLOW_JWT_ISSUER", "https://idp.example"),
        ("FLOW_JWT_AUDIENCE", "flow"),
        ("FLOW_JWT_ROLE_MAP", "dc-admins=admin,noc=operator"),
    ]))
    .unwrap();
    let modes = c.auth_modes().unwrap();
    assert!(modes.jwt && modes.token);
    for (pairs, key) in [
        (vec![("FLOW_AUTH", "basic")], "FLOW_AUTH"),
        (vec![("FLOW_AUTH", "jwt")], "FLOW_JWT_JWKS_URL"),
        (
            vec![
                ("FLOW_AUTH", "jwt"),
                ("FLOW_JWT_JWKS_FILE", "/k.json"),
                ("FLOW_JWT_ISSUER", "i"),
            ],
            "FLOW_JWT_AUDIENCE",
        ),
        (
            vec![
                ("FLOW_AUTH", "jwt"),
                ("FLOW_JWT_JWKS_FILE", "/k.json"),
                ("FLOW_JWT_ISSUER", "i"),
                ("FLOW_JWT_AUDIENCE", "a"),
                ("FLOW_JWT_ROLE_MAP", "noc=root"),
            ],
            "FLOW_JWT_ROLE_MAP",
        ),
        (
            vec![("FLOW_AUDIT_RETENTION_DAYS", "0")],
            "FLOW_AUDIT_RETENTION_DAYS",
        ),
    ] {
        let err = Config::load(&env(&pairs)).unwrap_err();
        assert!(err.to_string().contains(key), "{pairs:?}: {err}");
    }
}

#[test]
fn the_config_file_takes_component_settings_and_rejects_unknown_keys() {
    let dir = std::env::temp_dir().join(format!("flow-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.toml");
    std::fs::write(
        &good,
        "component_managers = \"nvswitch=sim\"\nsim_fail_serials = [\"SN9\"]\nsim_failure_rate = 0.5\n",
    )
    .unwrap();
    let c = Config::load(&env(&[("FLOW_CONFIG", good.to_str().unwrap())])).unwrap();
    assert_eq!(c.components.managers, "nvswitch=sim");
    assert_eq!(c.sim.fail_serials, ["SN9"]);
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "component_manager = \"nvswitch=sim\"\n").unwrap();
    assert!(Config::load(&env(&[("FLOW_CONFIG", bad.to_str().unwrap())])).is_err());
    let invalid = dir.join("invalid.toml");
    std::fs::write(&invalid, "component_managers = \"nvswitch=nsm\"\n").unwrap();
    let err = Config::load(&env(&[("FLOW_CONFIG", invalid.to_str().unwrap())])).unwrap_err();
    assert!(err.to_string().contains("FLOW_COMPONENT_MANAGERS"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
