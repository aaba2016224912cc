//! BMC addresses confined at write time: every write that can set a BMC's (or a power shelf's
//! PMC's) `ip_address` — a new component, a new rack, a component or rack patch — is refused
//! with `400` naming the field when the address is outside `FLOW_BMC_ALLOWED_NETWORKS`. Unset,
//! nothing is checked here: no manager that sends logins may then run (`flow serve` refuses).

use crate::domain::ManagementNetworks;
use crate::error::{Error, FieldError, Result};
use crate::inventory::model::NewBmc;

/// Fails with every address outside `networks` among `bmcs`, listed under `path`
/// (`bmcs`, `components[3].bmcs`).
fn outside(networks: &ManagementNetworks, path: &str, bmcs: &[NewBmc]) -> Vec<FieldError> {
    bmcs.iter()
        .enumerate()
        .filter_map(|(i, b)| {
            let ip = b.ip_address?.to_string();
            networks
                .allows(&ip)
                .err()
                .map(|why| FieldError::new(format!("{path}[{i}].ip_address"), why))
        })
        .collect()
}

/// `400` naming each BMC `ip_address` outside the management network, for a set of BMC
/// lists each under its path.
pub fn ensure_allowed<'a>(
    networks: &ManagementNetworks,
    lists: impl IntoIterator<Item = (String, &'a [NewBmc])>,
) -> Result<()> {
    if networks.is_empty() {
        return Ok(());
    }
    let errors: Vec<FieldError> = lists
        .into_iter()
        .flat_map(|(path, bmcs)| outside(networks, &path, bmcs))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Error::Invalid(errors))
    }
}

/// The BMC lists of a rack's components, under `components[i].bmcs`.
pub fn of_components(
    components: &[crate::inventory::model::NewComponent],
) -> impl Iterator<Item = (String, &[NewBmc])> {
    components
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("components[{i}].bmcs"), c.bmcs.as_slice()))
}
