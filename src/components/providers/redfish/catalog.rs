//! The firmware catalog (`FLOW_FIRMWARE_CATALOG`): the recipes that install a version on a
//! component type, optionally per model. A recipe is an ordered list of bundles
//! (`[[firmware.bundle]]`), each a `file` Flow pushes to the BMC (with its `sha256`) or an
//! `image_uri` the BMC fetches itself through `SimpleUpdate`, the `targets` it is for, the
//! FirmwareInventory versions that prove it (`[firmware.bundle.expect]`) and the `activate`
//! step that makes it live (`none`, `bmc_reset`, `power_cycle`, `ac_cycle`). An entry with
//! `file`/`image_uri` and `[firmware.expect]` on itself is a recipe of that one bundle.
//!
//! Every entry is checked at load: a bad one is a start-up error naming it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::components::recipe::{Activation, BundleView, RecipeView};
use crate::domain::ComponentType;

/// One bundle of a recipe: an image and what proves and activates it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bundle {
    /// An image the BMC fetches (`SimpleUpdate`).
    pub image_uri: Option<String>,
    /// An image Flow pushes (`MultipartHttpPushUri`, else `HttpPushUri`).
    pub file: Option<PathBuf>,
    /// The file's SHA-256 (hex), checked at load and again before anything is sent.
    pub sha256: Option<String>,
    /// FirmwareInventory or Chassis URIs the image is for (`UpdateParameters.Targets`).
    #[serde(default)]
    pub targets: Vec<String>,
    /// FirmwareInventory member id → the version it runs once the bundle is live.
    #[serde(default)]
    pub expect: BTreeMap<String, String>,
    /// What makes the staged image live.
    #[serde(default, with = "activation")]
    pub activate: Activation,
    /// e.g. `sha256:…`, for the operator's records and BMCs that check it.
    pub checksum: Option<String>,
}

/// `activate` as its word; an unknown word names the ones allowed.
mod activation {
    use super::Activation;
    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Activation, D::Error> {
        let word = String::deserialize(d)?;
        Activation::parse(&word).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown activate {word:?} (expected one of: none, bmc_reset, power_cycle, ac_cycle)"
            ))
        })
    }
}

/// One catalog entry: a recipe for a version of one component type (and model, when it names
/// one).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Image {
    #[serde(rename = "type")]
    pub component_type: String,
    pub model: Option<String>,
    /// The recipe's name: what operators ask for.
    pub version: String,
    /// The one-bundle form: the entry's own image, targets and `expect`.
    pub image_uri: Option<String>,
    pub file: Option<PathBuf>,
    pub sha256: Option<String>,
    #[serde(default)]
    pub targets: Vec<String>,
    #[serde(default)]
    pub expect: BTreeMap<String, String>,
    pub checksum: Option<String>,
    /// The recipe's bundles, in install order.
    #[serde(default, rename = "bundle")]
    pub bundles: Vec<Bundle>,
}

impl Image {
    /// The bundles in install order: the listed ones, or the entry itself as the only one.
    pub fn recipe(&self) -> Vec<Bundle> {
        if !self.bundles.is_empty() {
            return self.bundles.clone();
        }
        vec![Bundle {
            image_uri: self.image_uri.clone(),
            file: self.file.clone(),
            sha256: self.sha256.clone(),
            targets: self.targets.clone(),
            expect: self.expect.clone(),
            activate: Activation::None,
            checksum: self.checksum.clone(),
        }]
    }

    /// The recipe as the workflow and the dry run see it.
    pub fn view(&self) -> RecipeView {
        RecipeView {
            version: self.version.clone(),
            bundles: self
                .recipe()
                .into_iter()
                .enumerate()
                .map(|(i, b)| BundleView {
                    index: i as u32,
                    activate: b.activate,
                    expect: b.expect,
                })
                .collect(),
        }
    }

    /// Every part the recipe proves, with its final version.
    pub fn expect_all(&self) -> BTreeMap<String, String> {
        self.view().expected()
    }

    /// What is wrong with the entry, if anything: a bundle without exactly one image, a file
    /// that cannot be read, a checksum that does not match, or both forms at once.
    fn check(&self) -> Result<(), String> {
        let inline = self.file.is_some() || self.image_uri.is_some() || !self.expect.is_empty();
        if inline && !self.bundles.is_empty() {
            return Err(
                "has file/image_uri/expect on the entry and [[firmware.bundle]] lists: \
                        use one form"
                    .into(),
            );
        }
        for (i, bundle) in self.recipe().iter().enumerate() {
            let at = if self.bundles.is_empty() {
                String::new()
            } else {
                format!("bundle {i}: ")
            };
            check_bundle(bundle).map_err(|why| format!("{at}{why}"))?;
        }
        Ok(())
    }
}

fn check_bundle(bundle: &Bundle) -> Result<(), String> {
    let Some(file) = &bundle.file else {
        return match bundle.image_uri {
            Some(_) => Ok(()),
            None => Err("needs exactly one of file or image_uri (it has neither)".into()),
        };
    };
    if bundle.image_uri.is_some() {
        return Err("needs exactly one of file or image_uri (it has both)".into());
    }
    let got = crate::clients::redfish::sha256_file_now(file)
        .map_err(|e| format!("file {} cannot be read: {e}", file.display()))?;
    match &bundle.sha256 {
        Some(want) if !got.eq_ignore_ascii_case(want.trim()) => Err(format!(
            "file {} has SHA-256 {got}, the catalog says {want} (checksum mismatch)",
            file.display()
        )),
        _ => Ok(()),
    }
}

/// Every recipe the site offers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    images: Vec<(ComponentType, Image)>,
}

impl Catalog {
    /// Reads `[[firmware]]` entries, checking each; the error names the setting and the entry.
    pub fn load(path: &Path) -> Result<Self, String> {
        let bad = |why: String| format!("FLOW_FIRMWARE_CATALOG {}: {why}", path.display());
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        let doc: toml::Table = toml::from_str(&text).map_err(|e| bad(e.to_string()))?;
        let entries = match doc.get("firmware") {
            None => Vec::new(),
            Some(toml::Value::Array(items)) => items.clone(),
            Some(_) => return Err(bad("firmware must be a list of [[firmware]] entries".into())),
        };
        let mut images = Vec::new();
        for (n, entry) in entries.into_iter().enumerate() {
            let name = entry_name(n, &entry);
            let image: Image = entry
                .try_into()
                .map_err(|e: toml::de::Error| bad(format!("{name}: {}", e.message())))?;
            let kind = ComponentType::parse(&image.component_type).ok_or_else(|| {
                bad(format!(
                    "{name}: unknown component type {:?}",
                    image.component_type
                ))
            })?;
            image.check().map_err(|why| bad(format!("{name}: {why}")))?;
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

    /// Whether the catalog lists anything for `kind` at all.
    pub fn covers(&self, kind: ComponentType) -> bool {
        self.images.iter().any(|(k, _)| *k == kind)
    }
}

/// How an error names an entry: its place, type, model and version as far as they are given.
fn entry_name(n: usize, entry: &toml::Value) -> String {
    let field = |k: &str| entry.get(k).and_then(toml::Value::as_str);
    let mut name = format!("entry {}", n + 1);
    if let Some(kind) = field("type") {
        name.push_str(&format!(" (type {kind}"));
        if let Some(model) = field("model") {
            name.push_str(&format!(", model {model}"));
        }
        if let Some(version) = field("version") {
            name.push_str(&format!(", version {version}"));
        }
        name.push(')');
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("flow-catalog-{}-{name}", uuid::Uuid::new_v4()))
    }

    #[test]
    fn a_model_entry_wins_over_the_generic_one() {
        let path = temp("models.toml");
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
        std::fs::remove_file(&path).unwrap();
        assert!(
            Catalog::load(&path)
                .unwrap_err()
                .contains("FLOW_FIRMWARE_CATALOG")
        );
    }

    #[test]
    fn the_one_bundle_form_is_a_recipe_of_one_bundle() {
        let (path, image) = (temp("one.toml"), temp("gb200.fwpkg"));
        std::fs::write(&image, b"bundle").unwrap();
        let sum = crate::clients::redfish::sha256_file_now(&image).unwrap();
        std::fs::write(
            &path,
            format!(
                "[[firmware]]\ntype = \"compute\"\nversion = \"25.06-2\"\nfile = {:?}\n\
                 sha256 = \"{sum}\"\ntargets = [\"/redfish/v1/UpdateService/FirmwareInventory/FW_BMC_0\"]\n\
                 [firmware.expect]\nFW_BMC_0 = \"25.06-2\"\n",
                image.display().to_string()
            ),
        )
        .unwrap();
        let c = Catalog::load(&path).unwrap();
        let entry = c.find(ComponentType::Compute, None, "25.06-2").unwrap();
        let recipe = entry.recipe();
        assert_eq!(recipe.len(), 1);
        assert_eq!(recipe[0].file.as_deref(), Some(image.as_path()));
        assert_eq!(recipe[0].expect["FW_BMC_0"], "25.06-2");
        assert_eq!(recipe[0].activate, Activation::None);
        assert_eq!(recipe[0].targets.len(), 1);
        assert!(!entry.view().needs_ac_cycle());
        std::fs::remove_file(&path).unwrap();
        std::fs::remove_file(&image).unwrap();
    }

    #[test]
    fn bundles_keep_their_order_activation_and_expected_parts() {
        let path = temp("recipe.toml");
        std::fs::write(
            &path,
            "[[firmware]]\ntype = \"compute\"\nmodel = \"GB200\"\nversion = \"gb200-2025.06\"\n\
             [[firmware.bundle]]\nimage_uri = \"http://x/bmc.fwpkg\"\nactivate = \"bmc_reset\"\n\
             [firmware.bundle.expect]\nFW_BMC_0 = \"25.06-2\"\n\
             [[firmware.bundle]]\nimage_uri = \"http://x/cpld.fwpkg\"\nactivate = \"ac_cycle\"\n\
             [firmware.bundle.expect]\nFW_CPLD_0 = \"0.1C\"\n\
             [[firmware.bundle]]\nimage_uri = \"http://x/bios.fwpkg\"\nactivate = \"power_cycle\"\n\
             [firmware.bundle.expect]\nUEFI = \"2.1\"\n",
        )
        .unwrap();
        let c = Catalog::load(&path).unwrap();
        let view = c
            .find(ComponentType::Compute, Some("gb200"), "gb200-2025.06")
            .unwrap()
            .view();
        let order: Vec<Activation> = view.bundles.iter().map(|b| b.activate).collect();
        assert_eq!(
            order,
            [
                Activation::BmcReset,
                Activation::AcCycle,
                Activation::PowerCycle
            ]
        );
        assert!(view.needs_ac_cycle());
        assert_eq!(view.expected().len(), 3);
        assert_eq!(view.bundles[1].expect["FW_CPLD_0"], "0.1C");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_bad_entry_is_refused_naming_it() {
        let path = temp("bad.toml");
        let head = "[[firmware]]\ntype = \"compute\"\nversion = \"9\"\n[[firmware.bundle]]\n";
        let missing = temp("missing.fwpkg");
        let image = temp("present.fwpkg");
        std::fs::write(&image, b"x").unwrap();
        let cases = [
            (
                format!("{head}image_uri = \"u\"\nactivate = \"reboot\"\n"),
                "unknown activate \"reboot\"",
            ),
            (
                format!("{head}activate = \"none\"\n"),
                "bundle 0: needs exactly one of file or image_uri",
            ),
            (
                format!("{head}file = {:?}\n", missing.display().to_string()),
                "cannot be read",
            ),
            (
                format!(
                    "{head}file = {:?}\nsha256 = \"00\"\n",
                    image.display().to_string()
                ),
                "checksum mismatch",
            ),
            (
                "[[firmware]]\ntype = \"compute\"\nversion = \"1\"\n".to_string(),
                "exactly one of file or image_uri",
            ),
            (
                "[[firmware]]\ntype = \"gpu\"\nversion = \"1\"\nimage_uri = \"u\"\n".to_string(),
                "unknown component type",
            ),
        ];
        for (text, want) in cases {
            std::fs::write(&path, &text).unwrap();
            let err = Catalog::load(&path).unwrap_err();
            assert!(err.contains("FLOW_FIRMWARE_CATALOG"), "{err}");
            assert!(err.contains("entry 1 (type "), "{err}");
            assert!(err.contains(want), "{want}: {err}");
        }
        std::fs::remove_file(&path).unwrap();
        std::fs::remove_file(&image).unwrap();
    }
}
