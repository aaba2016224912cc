//! The firmware catalog (`FLOW_FIRMWARE_CATALOG`): which image installs a version on a
//! component type, optionally per model: a `file` Flow pushes to the BMC (with its `sha256`,
//! the `targets` it is for, and the FirmwareInventory versions that prove it installed, in
//! `[firmware.expect]`), or an `image_uri` the BMC fetches itself through `SimpleUpdate`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::domain::ComponentType;

/// One image: a version of one component type (and model, when it names one).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Image {
    #[serde(rename = "type")]
    pub component_type: String,
    pub model: Option<String>,
    pub version: String,
    /// An image the BMC fetches (`SimpleUpdate`).
    pub image_uri: Option<String>,
    /// An image Flow pushes (`MultipartHttpPushUri`, else `HttpPushUri`).
    pub file: Option<PathBuf>,
    /// The file's SHA-256 (hex), checked before anything is sent.
    pub sha256: Option<String>,
    /// FirmwareInventory or Chassis URIs the image is for (`UpdateParameters.Targets`).
    #[serde(default)]
    pub targets: Vec<String>,
    /// FirmwareInventory member id → the version it runs once the image is installed.
    #[serde(default)]
    pub expect: BTreeMap<String, String>,
    /// e.g. `sha256:…`, for the operator's records and BMCs that check it.
    pub checksum: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    firmware: Vec<Image>,
}

/// Every image the site offers.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    images: Vec<(ComponentType, Image)>,
}

impl Catalog {
    /// Reads `[[firmware]]` entries; an unreadable file or an unknown type names the setting.
    pub fn load(path: &Path) -> Result<Self, String> {
        let bad = |why: String| format!("FLOW_FIRMWARE_CATALOG {}: {why}", path.display());
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        let file: File = toml::from_str(&text).map_err(|e| bad(e.to_string()))?;
        let mut images = Vec::new();
        for image in file.firmware {
            let kind = ComponentType::parse(&image.component_type)
                .ok_or_else(|| bad(format!("unknown component type {:?}", image.component_type)))?;
            if image.file.is_none() == image.image_uri.is_none() {
                return Err(bad(format!(
                    "version {} needs exactly one of file or image_uri",
                    image.version
                )));
            }
            images.push((kind, image));
        }
        Ok(Self { images })
    }

    /// The image for `version` on `kind`: an entry for the device's model wins over one for
    /// any model.
    pub fn find(&self, kind: ComponentType, model: Option<&str>, version: &str) -> Option<&Image> {
        let same = |a: &str, b: &str| a.trim().eq_ignore_ascii_case(b.trim());
        let candidates = || {
            self.images
                .iter()
                .filter(move |(k, i)| *k == kind && i.version.trim() == version.trim())
                .map(|(_, i)| i)
        };
        candidates()
            .find(|i| matches!((&i.model, model), (Some(m), Some(d)) if same(m, d)))
            .or_else(|| candidates().find(|i| i.model.is_none()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_entry_wins_over_the_generic_one() {
        let path = std::env::temp_dir().join(format!("flow-catalog-{}.toml", uuid::Uuid::new_v4()));
        std::fs::write(
            &path,
            "[[firmware]]\ntype = \"compute\"\nversion = \"1.1\"\nimage_uri = \"http://x/any.bin\"\n\
             [[firmware]]\ntype = \"compute\"\nmodel = \"GB200\"\nversion = \"1.1\"\nimage_uri = \"http://x/gb.bin\"\nchecksum = \"sha256:00\"\n",
        )
        .unwrap();
        let c = Catalog::load(&path).unwrap();
        let uri = |m| {
            c.find(ComponentType::Compute, m, "1.1")
                .and_then(|i| i.image_uri.as_deref())
        };
        assert_eq!(uri(Some("gb200")), Some("http://x/gb.bin"));
        assert_eq!(uri(Some("other")), Some("http://x/any.bin"));
        assert_eq!(uri(None), Some("http://x/any.bin"));
        assert!(c.find(ComponentType::Compute, None, "9.9").is_none());
        assert!(c.find(ComponentType::NvSwitch, None, "1.1").is_none());
        std::fs::write(
            &path,
            "[[firmware]]\ntype = \"compute\"\nversion = \"25.06-2\"\nfile = \"/fw/gb200.fwpkg\"\n\
             sha256 = \"ab\"\ntargets = [\"/redfish/v1/UpdateService/FirmwareInventory/FW_BMC_0\"]\n\
             [firmware.expect]\nFW_BMC_0 = \"25.06-2\"\n",
        )
        .unwrap();
        let c = Catalog::load(&path).unwrap();
        let pushed = c.find(ComponentType::Compute, None, "25.06-2").unwrap();
        assert_eq!(pushed.file.as_deref(), Some(Path::new("/fw/gb200.fwpkg")));
        assert_eq!(pushed.expect["FW_BMC_0"], "25.06-2");
        assert_eq!(pushed.targets.len(), 1);
        std::fs::write(&path, "[[firmware]]\ntype = \"compute\"\nversion = \"1\"\n").unwrap();
        assert!(
            Catalog::load(&path)
                .unwrap_err()
                .contains("exactly one of file or image_uri")
        );
        std::fs::write(
            &path,
            "[[firmware]]\ntype = \"gpu\"\nversion = \"1\"\nimage_uri = \"u\"\n",
        )
        .unwrap();
        assert!(
            Catalog::load(&path)
                .unwrap_err()
                .contains("FLOW_FIRMWARE_CATALOG")
        );
        std::fs::remove_file(&path).unwrap();
        assert!(
            Catalog::load(&path)
                .unwrap_err()
                .contains("FLOW_FIRMWARE_CATALOG")
        );
    }
}
