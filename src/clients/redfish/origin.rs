//! Where a request may go: only the BMC's own `scheme://address:port`, and only when the
//! address is inside the management network. A URL from an answer naming anything else is
//! refused before any request (or login) is sent.

use super::{Bmc, RedfishClient, RedfishError};

impl RedfishClient {
    /// The BMC's own origin, `scheme://ip:port`.
    pub(super) fn origin(&self, ip: &str) -> String {
        let host = if ip.contains(':') && !ip.starts_with('[') {
            format!("[{ip}]")
        } else {
            ip.to_string()
        };
        format!("{}://{host}:{}", self.settings.scheme, self.settings.port)
    }

    /// The BMC's origin + path. A path that is already a URL (a task monitor, a `Location`)
    /// is kept only when it names that same origin: anything else is refused, naming only the
    /// foreign host, so no request (and no login) ever goes there.
    pub(super) fn url(&self, ip: &str, path: &str) -> Result<reqwest::Url, RedfishError> {
        let origin = self.origin(ip);
        let refused = |why: String| RedfishError::Credentials {
            status: None,
            message: format!("BMC {ip}: {why}"),
        };
        let own = reqwest::Url::parse(&origin)
            .map_err(|_| refused(format!("{ip:?} is not an address")))?;
        let url = match reqwest::Url::parse(path) {
            Ok(absolute) => absolute,
            Err(_) => {
                let slash = if path.starts_with('/') { "" } else { "/" };
                reqwest::Url::parse(&format!("{origin}{slash}{path}"))
                    .map_err(|_| refused("the answer names an unusable path".into()))?
            }
        };
        let same = url.scheme() == own.scheme()
            && url.host() == own.host()
            && url.port_or_known_default() == own.port_or_known_default()
            && url.username().is_empty()
            && url.password().is_none();
        if !same {
            let host = url.host_str().unwrap_or("no host");
            return Err(refused(format!(
                "its answer points at another origin (host {host}); not followed, and no \
                 login is sent there"
            )));
        }
        Ok(url)
    }

    /// Refuses an address outside the management network before anything is sent.
    pub(super) fn confined(&self, bmc: Bmc<'_>) -> Result<(), RedfishError> {
        self.settings
            .allowed_networks
            .allows(bmc.ip)
            .map_err(|why| RedfishError::Credentials {
                status: None,
                message: format!("BMC {} not contacted: {why}", bmc.ip),
            })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::super::{Credentials, RedfishClient, RedfishError, RedfishSettings};
    use crate::domain::ManagementNetworks;

    fn client() -> RedfishClient {
        let settings = RedfishSettings {
            scheme: "https".into(),
            port: 443,
            timeout: Duration::from_secs(1),
            max_inflight_per_bmc: 1,
            ca_file: None,
            insecure: false,
            allowed_networks: ManagementNetworks::parse(&["10.0.0.0/8"]).unwrap(),
        };
        RedfishClient::new(settings, Arc::new(Credentials::new(None, None).unwrap())).unwrap()
    }

    #[test]
    fn only_the_bmcs_own_origin_is_ever_addressed() {
        let c = client();
        let url = |path: &str| c.url("10.0.0.1", path).map(|u| u.to_string());
        assert_eq!(
            url("/redfish/v1/Systems").unwrap(),
            "https://10.0.0.1/redfish/v1/Systems"
        );
        // A task monitor or `Location` on the BMC itself is kept as it is.
        assert_eq!(
            url("https://10.0.0.1:443/redfish/v1/TaskService/TaskMonitors/1").unwrap(),
            "https://10.0.0.1/redfish/v1/TaskService/TaskMonitors/1"
        );
        for foreign in [
            "https://10.0.0.2/redfish/v1/TaskService/TaskMonitors/1",
            "https://10.0.0.1:8443/redfish/v1/Systems",
            "http://10.0.0.1/redfish/v1/Systems",
            "https://admin:pw@10.0.0.1/redfish/v1/Systems",
            "https://temporal.internal:7233/x",
        ] {
            let err = url(foreign).unwrap_err();
            assert!(matches!(err, RedfishError::Credentials { .. }), "{foreign}");
            let text = err.to_string();
            assert!(
                text.contains("another origin")
                    && !text.contains("/redfish")
                    && !text.contains("://"),
                "{foreign}: {text}"
            );
        }
        // A path cannot change the authority it is joined to.
        assert!(
            url("//10.0.0.2/x")
                .unwrap()
                .starts_with("https://10.0.0.1/")
        );
        assert!(url("@10.0.0.2/x").unwrap().starts_with("https://10.0.0.1/"));
    }
}
