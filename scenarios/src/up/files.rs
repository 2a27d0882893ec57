//! The configuration files of `harness up`: one stack file (`--config`), or the platform's and
//! the key service's own files (`--platform-config`, `--kms-config`).
//!
//! The stack file:
//!
//! ```toml
//! org_id = "org-1"          # the workspace wired to the key service (BYOK)
//! workspace_id = "ws-1"
//!
//! [byok]                    # how the platform uses the key service for that workspace
//! client_id = "platform"    # default: the key service's first client
//! key_alias = "tenant-a"    # default: the client's default_alias, else the first alias
//! data_key_cache_secs = 300
//! request_timeout_ms = 5000
//! # rotation_period_secs = 86400
//!
//! [platform]                # any key of the platform's own file (platform serve --config)
//! seed = 42
//!
//! [kms]                     # any key of the key service's own file
//! partner = "acme"
//! ```

use std::path::Path;

use anyhow::{Context, bail};
use customer_kms_sim::KmsConfig;
use platform::config::PlatformConfig;
use serde::Deserialize;

use crate::stack::ByokOptions;

/// The stack file of `--config`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct StackFile {
    org_id: Option<String>,
    workspace_id: Option<String>,
    #[serde(default)]
    byok: ByokOptions,
    platform: Option<PlatformConfig>,
    kms: Option<KmsConfig>,
}

/// What the files say, with which platform keys they set (a flag wins over a key that is
/// set; a key left out leaves the stack's default).
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    /// `org_id` of the stack file.
    pub(crate) org_id: Option<String>,
    /// `workspace_id` of the stack file.
    pub(crate) workspace_id: Option<String>,
    /// `[byok]` of the stack file.
    pub(crate) byok: ByokOptions,
    /// The platform's configuration (`[platform]` or `--platform-config`).
    pub(crate) platform: Option<PlatformConfig>,
    /// The top-level keys the platform's configuration sets.
    pub(crate) platform_keys: Vec<String>,
    /// Where the platform's configuration came from, for messages.
    pub(crate) platform_source: Option<String>,
    /// The key service's configuration (`[kms]` or `--kms-config`).
    pub(crate) kms: Option<KmsConfig>,
}

impl Loaded {
    /// Whether the platform's configuration sets `key`.
    pub(crate) fn platform_sets(&self, key: &str) -> bool {
        self.platform_keys.iter().any(|k| k == key)
    }
}

fn read(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// The top-level keys of `table` in a TOML text that already parsed.
fn keys_of(text: &str, table: Option<&str>) -> Vec<String> {
    let Ok(doc) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let t = match table {
        Some(name) => match doc.get(name).and_then(|v| v.as_table()) {
            Some(t) => t.clone(),
            None => return Vec::new(),
        },
        None => doc,
    };
    t.keys().cloned().collect()
}

/// Reads the files given; none gives the defaults.
pub(crate) fn load(
    config: Option<&Path>,
    platform_config: Option<&Path>,
    kms_config: Option<&Path>,
) -> anyhow::Result<Loaded> {
    let mut loaded = Loaded::default();
    if let Some(path) = config {
        let text = read(path)?;
        let file: StackFile = toml::from_str(&text)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("parsing {}", path.display()))?;
        if file.platform.is_some() && platform_config.is_some() {
            bail!(
                "{} has a [platform] table and --platform-config names another file: keep one",
                path.display()
            );
        }
        if file.kms.is_some() && kms_config.is_some() {
            bail!(
                "{} has a [kms] table and --kms-config names another file: keep one",
                path.display()
            );
        }
        if let Some(kms) = &file.kms {
            kms.validate()
                .with_context(|| format!("{}: [kms]", path.display()))?;
        }
        loaded.org_id = file.org_id;
        loaded.workspace_id = file.workspace_id;
        loaded.byok = file.byok;
        if file.platform.is_some() {
            loaded.platform_keys = keys_of(&text, Some("platform"));
            loaded.platform_source = Some(format!("[platform] of {}", path.display()));
        }
        loaded.platform = file.platform;
        loaded.kms = file.kms;
    }
    if let Some(path) = platform_config {
        let text = read(path)?;
        let config = PlatformConfig::from_toml(&text)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("parsing {}", path.display()))?;
        loaded.platform_keys = keys_of(&text, None);
        loaded.platform_source = Some(path.display().to_string());
        loaded.platform = Some(config);
    }
    if let Some(path) = kms_config {
        loaded.kms = Some(
            KmsConfig::from_file(path)
                .map_err(anyhow::Error::from)
                .with_context(|| format!("reading {}", path.display()))?,
        );
    }
    Ok(loaded)
}
