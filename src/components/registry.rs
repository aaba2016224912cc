//! Which provider drives each component type, built once from `FLOW_COMPONENT_MANAGERS`.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::clients::redfish::{Credentials, Login, RedfishSettings};
use crate::components::ManagerSet;
use crate::components::metered::metered;
use crate::components::providers::{
    Providers, PsmManager, PsmSettings, PsmTls, RedfishManager, RedfishSetup, SimConfig, SimDevices,
};
use crate::config::{self, Managers};
pub use crate::config::{ProviderKind, parse_spec};
use crate::domain::{ComponentType, ManagementNetworks};

/// The manager set of every configured component type; types left out have no manager.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    sets: BTreeMap<ComponentType, ManagerSet>,
    /// Login sources to re-read on SIGHUP.
    credentials: Vec<Arc<Credentials>>,
}

impl Registry {
    /// A registry with no managers; add some with [`with`](Self::with).
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds the providers the spec names. Nothing connects yet: a PSM that is down fails its
    /// calls later, per device, instead of preventing start-up.
    pub fn from_spec(spec: &str, providers: &Providers) -> Result<Self, String> {
        Self::from_managers(&spec.parse()?, providers)
    }

    /// [`from_spec`](Self::from_spec) for a spec parsed at load.
    pub fn from_managers(managers: &Managers, providers: &Providers) -> Result<Self, String> {
        let mut registry = Self::new();
        let mut psm: Option<Arc<PsmManager>> = None;
        let mut redfish: Option<Arc<RedfishManager>> = None;
        for &(kind, provider) in managers.entries() {
            let set = match provider {
                ProviderKind::Sim => sim_set(providers.sim.clone()),
                ProviderKind::Redfish => {
                    let manager = match &redfish {
                        Some(m) => m.clone(),
                        None => {
                            let made = providers.redfish.manager()?;
                            registry.credentials.push(made.credentials().clone());
                            redfish.insert(made).clone()
                        }
                    };
                    redfish_set(manager)
                }
                ProviderKind::Psm => {
                    let manager = match &psm {
                        Some(m) => m.clone(),
                        None => psm.insert(PsmManager::new(&providers.psm)?).clone(),
                    };
                    psm_set(manager)
                }
            };
            registry = registry.with(kind, set);
        }
        Ok(registry)
    }

    /// The registry `FLOW_COMPONENT_MANAGERS`, `FLOW_BMC_ALLOWED_NETWORKS`, `FLOW_PSM_URL` and
    /// `FLOW_PSM_TIMEOUT_SECS` describe, with `sim` entries on the given simulator (see
    /// [`sim_from_config`]).
    pub fn from_config(
        components: &config::Components,
        bmc: &config::Redfish,
        psm: &config::Psm,
        sim: Arc<SimDevices>,
    ) -> Result<Self, String> {
        let managers = &components.managers;
        // Checked at load, so a bad list cannot reach here.
        let networks =
            ManagementNetworks::parse(&components.bmc_allowed_networks).unwrap_or_default();
        let redfish = RedfishSetup {
            client: RedfishSettings {
                scheme: bmc.scheme.clone(),
                port: bmc.port,
                timeout: bmc.timeout,
                max_inflight_per_bmc: bmc.max_inflight_per_bmc,
                ca_file: bmc.ca_file.clone(),
                insecure: bmc.insecure,
                allowed_networks: networks.clone(),
            },
            default_login: match (&bmc.username, &bmc.password) {
                (Some(username), Some(password)) => Some(Login {
                    username: username.clone(),
                    password: password.expose().to_string(),
                }),
                _ => None,
            },
            credentials_file: bmc.credentials_file.clone(),
            catalog_file: bmc.firmware_catalog.clone(),
            firmware_members: bmc.firmware_member.clone(),
        };
        let uses_psm = managers.uses(ProviderKind::Psm);
        // PMC logins for RegisterPowershelves come from the same source as BMC logins.
        let logins = if uses_psm
            && (redfish.default_login.is_some() || redfish.credentials_file.is_some())
        {
            Some(redfish.credentials()?)
        } else {
            None
        };
        let providers = Providers {
            sim,
            psm: PsmSettings {
                url: psm.url.clone(),
                timeout: psm.timeout,
                pmc_credentials: None,
                logins,
                allowed_networks: networks,
                tls: PsmTls {
                    ca_file: psm.ca_file.clone(),
                    client_cert_file: psm.client_cert_file.clone(),
                    client_key_file: psm.client_key_file.clone(),
                },
            },
            redfish,
        };
        let mut registry = Self::from_managers(managers, &providers)?;
        registry.credentials.extend(providers.psm.logins);
        Ok(registry)
    }

    /// Re-reads every credentials file (SIGHUP); a broken file keeps its previous logins.
    pub fn reload_credentials(&self) -> Vec<String> {
        self.credentials
            .iter()
            .filter_map(|c| c.reload().err())
            .collect()
    }

    /// Adds or replaces the managers of one type (tests use it to plug in fakes). Every call
    /// into them is counted, timed and traced ([`metered`]), whichever provider they are.
    pub fn with(mut self, kind: ComponentType, set: ManagerSet) -> Self {
        self.sets.insert(kind, metered(set));
        self
    }

    /// The managers for a component type, `None` when none is configured.
    pub fn get(&self, kind: ComponentType) -> Option<&ManagerSet> {
        self.sets.get(&kind)
    }

    /// Every configured type with its managers, in type order.
    pub fn sets(&self) -> impl Iterator<Item = (ComponentType, &ManagerSet)> {
        self.sets.iter().map(|(kind, set)| (*kind, set))
    }

    /// Component type → provider name, for the start-up log.
    pub fn describe(&self) -> BTreeMap<ComponentType, String> {
        self.sets
            .iter()
            .map(|(kind, set)| (*kind, set.name.clone()))
            .collect()
    }

    /// Whether no type has a manager.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }
}

/// The simulator the `FLOW_SIM_*` settings describe, to share between the registry and whatever
/// inspects it.
/// The simulator the `FLOW_SIM_*` settings describe, installing the recipes of
/// `FLOW_FIRMWARE_CATALOG` when one is given; a bad catalog is an error naming its entry.
pub fn sim_from_config(
    config: &config::Sim,
    catalog: Option<&std::path::Path>,
) -> Result<Arc<SimDevices>, String> {
    let mut sim = SimConfig::from_config(config);
    if let Some(path) = catalog {
        sim.catalog = super::providers::redfish::Catalog::load(path)?;
    }
    Ok(Arc::new(SimDevices::new(sim)))
}

/// Every capability, served by the simulator.
pub fn sim_set(sim: Arc<SimDevices>) -> ManagerSet {
    ManagerSet {
        name: ProviderKind::Sim.as_str().into(),
        power: Some(sim.clone()),
        status: Some(sim.clone()),
        firmware: Some(sim.clone()),
        registration: Some(sim.clone()),
        inventory: Some(sim),
        preflight: None,
    }
}

/// Every capability, served by PSM.
pub fn psm_set(psm: Arc<PsmManager>) -> ManagerSet {
    ManagerSet {
        name: ProviderKind::Psm.as_str().into(),
        power: Some(psm.clone()),
        status: Some(psm.clone()),
        firmware: Some(psm.clone()),
        registration: Some(psm.clone()),
        inventory: Some(psm),
        preflight: None,
    }
}

/// Every capability, served by each device's BMC over Redfish.
pub fn redfish_set(redfish: Arc<RedfishManager>) -> ManagerSet {
    ManagerSet {
        name: ProviderKind::Redfish.as_str().into(),
        power: Some(redfish.clone()),
        status: Some(redfish.clone()),
        firmware: Some(redfish.clone()),
        registration: Some(redfish.clone()),
        inventory: Some(redfish.clone()),
        preflight: Some(redfish),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn providers() -> Providers {
        Providers {
            sim: Arc::new(SimDevices::new(SimConfig::default())),
            psm: PsmSettings {
                url: "http://127.0.0.1:1".into(),
                timeout: Duration::from_millis(100),
                pmc_credentials: None,
                ..Default::default()
            },
            redfish: RedfishSetup::default(),
        }
    }

    #[test]
    fn a_spec_maps_each_type_to_its_provider() {
        let entries =
            parse_spec(" powershelf=PSM, NVSwitch=sim ,COMPONENT_TYPE_COMPUTE=sim,").unwrap();
        assert_eq!(
            entries,
            vec![
                (ComponentType::PowerShelf, ProviderKind::Psm),
                (ComponentType::NvSwitch, ProviderKind::Sim),
                (ComponentType::Compute, ProviderKind::Sim),
            ]
        );
        assert!(parse_spec("").unwrap().is_empty());
        assert!(parse_spec(" , ").unwrap().is_empty());
    }

    #[test]
    fn bad_entries_are_named_in_the_error() {
        for (spec, entry, why) in [
            ("compute=sim,gpu=sim", "gpu=sim", "unknown component type"),
            ("compute=nico", "compute=nico", "unknown provider"),
            ("compute=redfsh", "compute=redfsh", "sim, psm or redfish"),
            ("compute", "compute", "expected <type>=<provider>"),
            ("compute=sim,compute=sim", "compute=sim", "more than once"),
            ("switch=sim,nvswitch=sim", "nvswitch=sim", "more than once"),
            ("compute=psm", "compute=psm", "power shelves only"),
        ] {
            let err = parse_spec(spec).unwrap_err();
            assert!(err.contains(&format!("{entry:?}")), "{spec}: {err}");
            assert!(err.contains(why), "{spec}: {err}");
        }
    }

    #[test]
    fn from_spec_builds_sets_without_connecting_or_a_runtime() {
        let registry =
            Registry::from_spec("powershelf=psm,nvswitch=sim,compute=sim", &providers()).unwrap();
        let described: Vec<_> = registry
            .describe()
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        assert_eq!(described, ["compute=sim", "nvswitch=sim", "powershelf=psm"]);
        let shelf = registry.get(ComponentType::PowerShelf).unwrap();
        assert!(shelf.power.is_some() && shelf.firmware.is_some() && shelf.registration.is_some());
        assert!(registry.get(ComponentType::Cdu).is_none());
    }

    #[test]
    fn an_unusable_psm_address_is_a_start_up_error() {
        let mut providers = providers();
        providers.psm.url = "http://bad host:50052".into();
        let err = Registry::from_spec("powershelf=psm", &providers).unwrap_err();
        assert!(err.contains("PSM address"), "{err}");
    }

    #[test]
    fn unreadable_redfish_files_are_start_up_errors_naming_the_setting() {
        let missing = std::path::PathBuf::from("/nonexistent/flow-test-file");
        for (setting, configure) in [
            (
                "FLOW_REDFISH_CA_FILE",
                (|r: &mut RedfishSetup, p| r.client.ca_file = Some(p)) as fn(&mut RedfishSetup, _),
            ),
            ("FLOW_REDFISH_CREDENTIALS_FILE", |r, p| {
                r.credentials_file = Some(p)
            }),
            ("FLOW_FIRMWARE_CATALOG", |r, p| r.catalog_file = Some(p)),
        ] {
            let mut providers = providers();
            configure(&mut providers.redfish, missing.clone());
            let err = Registry::from_spec("compute=redfish", &providers).unwrap_err();
            assert!(err.contains(setting), "{err}");
        }
        let registry =
            Registry::from_spec("compute=redfish,nvswitch=redfish", &providers()).unwrap();
        let set = registry.get(ComponentType::Compute).unwrap();
        assert_eq!(set.name, "redfish");
        assert!(set.preflight.is_some() && set.inventory.is_some());
        assert!(registry.reload_credentials().is_empty());
    }

    #[test]
    fn an_empty_spec_configures_nothing() {
        assert!(Registry::from_spec("", &providers()).unwrap().is_empty());
    }
}
