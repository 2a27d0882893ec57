//! [`ByokSettings`]: the one description of a workspace's BYOK settings, for the
//! configuration file, the flags and the environment, and how they are laid over each other.

use serde::Deserialize;

use super::{BYOK_DATA_KEY_CACHE_SECS, BYOK_REQUEST_TIMEOUT_MS, ByokConfig, Secret};

/// A secret given as a flag or an environment variable.
fn parse_secret(s: &str) -> Result<Secret, String> {
    Ok(Secret::new(s))
}

/// The BYOK settings of one workspace, each optional: a `[[byok]]` entry of the
/// configuration file (its keys are the field names), or the `--byok-...` flags and
/// `PLATFORM_BYOK_...` environment variables, which name the workspace with
/// `--byok-workspace ORG/WORKSPACE` instead of `org_id` and `workspace_id`. The file's
/// entries need every required setting ([`ByokConfig`]); the flags and environment
/// override the fields of the file's entry for their workspace, or make one
/// ([`ByokSettings::apply`]), so a file can hold everything but the secret.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, clap::Args)]
#[serde(deny_unknown_fields, default)]
#[command(next_help_heading = "BYOK (one workspace; more with [[byok]] in the file)")]
pub struct ByokSettings {
    /// The workspace whose data keys come from the customer's key service: ORG/WORKSPACE.
    #[arg(long = "byok-workspace", env = "PLATFORM_BYOK_WORKSPACE")]
    #[serde(skip)]
    pub(crate) workspace: Option<String>,
    /// The org of the workspace (file only).
    #[arg(skip)]
    pub(crate) org_id: Option<String>,
    /// The workspace (file only).
    #[arg(skip)]
    pub(crate) workspace_id: Option<String>,
    /// The customer's address: {customer_base_url}/{partner}/byok/v1/...
    #[arg(long = "byok-base-url", env = "PLATFORM_BYOK_BASE_URL")]
    pub(crate) customer_base_url: Option<String>,
    /// The {partner} path segment.
    #[arg(long = "byok-partner", env = "PLATFORM_BYOK_PARTNER")]
    pub(crate) partner: Option<String>,
    /// Client id (client credentials, exchanged at /auth for a token).
    #[arg(long = "byok-client-id", env = "PLATFORM_BYOK_CLIENT_ID")]
    pub(crate) client_id: Option<String>,
    /// Client secret; prefer the environment variable (flags show in process lists).
    #[arg(long = "byok-client-secret", env = "PLATFORM_BYOK_CLIENT_SECRET", hide_env_values = true, value_parser = parse_secret)]
    pub(crate) client_secret: Option<Secret>,
    /// A static API key instead of client credentials (/auth is then never called).
    #[arg(long = "byok-api-key", env = "PLATFORM_BYOK_API_KEY", hide_env_values = true, value_parser = parse_secret)]
    pub(crate) api_key: Option<Secret>,
    /// The alias of the master key that decrypts the data key.
    #[arg(long = "byok-key-alias", env = "PLATFORM_BYOK_KEY_ALIAS")]
    pub(crate) key_alias: Option<String>,
    /// The encrypted data key, byok:v1:...
    #[arg(long = "byok-encrypted-key", env = "PLATFORM_BYOK_ENCRYPTED_KEY")]
    pub(crate) encrypted_key: Option<String>,
    /// Seconds a decrypted data key stays in memory [default: 300].
    #[arg(
        long = "byok-data-key-cache-secs",
        env = "PLATFORM_BYOK_DATA_KEY_CACHE_SECS"
    )]
    pub(crate) data_key_cache_secs: Option<u64>,
    /// Milliseconds one call to the key service may take [default: 5000].
    #[arg(
        long = "byok-request-timeout-ms",
        env = "PLATFORM_BYOK_REQUEST_TIMEOUT_MS"
    )]
    pub(crate) request_timeout_ms: Option<u64>,
    /// Rotate the data key when the active one is this many seconds old [default: never].
    #[arg(
        long = "byok-rotation-period-secs",
        env = "PLATFORM_BYOK_ROTATION_PERIOD_SECS"
    )]
    pub(crate) rotation_period_secs: Option<u64>,
}

/// The required settings, with their file key and flag, in the order they are reported.
const REQUIRED: [(&str, &str); 6] = [
    ("org_id", "--byok-workspace"),
    ("workspace_id", "--byok-workspace"),
    ("customer_base_url", "--byok-base-url"),
    ("partner", "--byok-partner"),
    ("key_alias", "--byok-key-alias"),
    ("encrypted_key", "--byok-encrypted-key"),
];

impl ByokSettings {
    /// Whether no setting is given.
    pub(crate) fn is_empty(&self) -> bool {
        *self == ByokSettings::default()
    }

    /// These settings laid over `lower`: each setting given here wins. A method of
    /// authentication given here replaces `lower`'s: a static key drops its client
    /// credentials, and a client id or secret drops its static key (a static key wins when
    /// both are given here).
    pub(crate) fn over(self, lower: ByokSettings) -> ByokSettings {
        let ByokSettings {
            workspace,
            org_id,
            workspace_id,
            customer_base_url,
            partner,
            client_id,
            client_secret,
            api_key,
            key_alias,
            encrypted_key,
            data_key_cache_secs,
            request_timeout_ms,
            rotation_period_secs,
        } = self;
        let (client_id, client_secret, api_key) = if api_key.is_some() {
            (None, None, api_key)
        } else if client_id.is_some() || client_secret.is_some() {
            (
                client_id.or(lower.client_id),
                client_secret.or(lower.client_secret),
                None,
            )
        } else {
            (lower.client_id, lower.client_secret, lower.api_key)
        };
        ByokSettings {
            workspace: workspace.or(lower.workspace),
            org_id: org_id.or(lower.org_id),
            workspace_id: workspace_id.or(lower.workspace_id),
            customer_base_url: customer_base_url.or(lower.customer_base_url),
            partner: partner.or(lower.partner),
            client_id,
            client_secret,
            api_key,
            key_alias: key_alias.or(lower.key_alias),
            encrypted_key: encrypted_key.or(lower.encrypted_key),
            data_key_cache_secs: data_key_cache_secs.or(lower.data_key_cache_secs),
            request_timeout_ms: request_timeout_ms.or(lower.request_timeout_ms),
            rotation_period_secs: rotation_period_secs.or(lower.rotation_period_secs),
        }
    }

    /// The complete entry, the defaults filled in; `Err` lists the required settings that
    /// are missing (as file keys and flags, in [`REQUIRED`] order).
    fn complete(self) -> Result<ByokConfig, Vec<(&'static str, &'static str)>> {
        let given = [
            self.org_id.is_some(),
            self.workspace_id.is_some(),
            self.customer_base_url.is_some(),
            self.partner.is_some(),
            self.key_alias.is_some(),
            self.encrypted_key.is_some(),
        ];
        let missing: Vec<_> = REQUIRED
            .iter()
            .zip(given)
            .filter(|(_, given)| !given)
            .map(|(r, _)| *r)
            .collect();
        if !missing.is_empty() {
            return Err(missing);
        }
        Ok(ByokConfig {
            org_id: self.org_id.unwrap_or_default(),
            workspace_id: self.workspace_id.unwrap_or_default(),
            customer_base_url: self.customer_base_url.unwrap_or_default(),
            partner: self.partner.unwrap_or_default(),
            client_id: self.client_id,
            client_secret: self.client_secret,
            api_key: self.api_key,
            key_alias: self.key_alias.unwrap_or_default(),
            encrypted_key: self.encrypted_key.unwrap_or_default(),
            data_key_cache_secs: self.data_key_cache_secs.unwrap_or(BYOK_DATA_KEY_CACHE_SECS),
            request_timeout_ms: self.request_timeout_ms.unwrap_or(BYOK_REQUEST_TIMEOUT_MS),
            rotation_period_secs: self.rotation_period_secs,
        })
    }

    /// Lays these settings (the flags and environment) over `entries` (the file's): over the
    /// entry of the workspace they name, or as a new entry, which then needs every required
    /// setting. Nothing given: nothing changes.
    pub(crate) fn apply(self, entries: &mut Vec<ByokConfig>) -> Result<(), String> {
        if self.is_empty() {
            return Ok(());
        }
        let Some(scope) = self.workspace.clone() else {
            return Err(
                "the BYOK flags need --byok-workspace ORG/WORKSPACE (PLATFORM_BYOK_WORKSPACE)"
                    .into(),
            );
        };
        let (org_id, workspace_id) = scope
            .split_once('/')
            .ok_or_else(|| format!("--byok-workspace '{scope}': expected ORG/WORKSPACE"))?;
        let index = entries
            .iter()
            .position(|e| e.org_id == org_id && e.workspace_id == workspace_id);
        let lower = match index {
            Some(i) => ByokSettings::from(entries[i].clone()),
            None => ByokSettings {
                org_id: Some(org_id.into()),
                workspace_id: Some(workspace_id.into()),
                ..ByokSettings::default()
            },
        };
        let entry = self.over(lower).complete().map_err(|missing| {
            let flags: Vec<&str> = missing.iter().map(|(_, flag)| *flag).collect();
            format!(
                "BYOK for {scope} is not in the configuration file, so {} must be given too",
                flags.join(", ")
            )
        })?;
        match index {
            Some(i) => entries[i] = entry,
            None => entries.push(entry),
        }
        Ok(())
    }
}

impl From<ByokConfig> for ByokSettings {
    fn from(c: ByokConfig) -> Self {
        ByokSettings {
            workspace: None,
            org_id: Some(c.org_id),
            workspace_id: Some(c.workspace_id),
            customer_base_url: Some(c.customer_base_url),
            partner: Some(c.partner),
            client_id: c.client_id,
            client_secret: c.client_secret,
            api_key: c.api_key,
            key_alias: Some(c.key_alias),
            encrypted_key: Some(c.encrypted_key),
            data_key_cache_secs: Some(c.data_key_cache_secs),
            request_timeout_ms: Some(c.request_timeout_ms),
            rotation_period_secs: c.rotation_period_secs,
        }
    }
}

impl TryFrom<ByokSettings> for ByokConfig {
    type Error = String;

    /// A file's entry: the first required key missing is named as serde names it.
    fn try_from(s: ByokSettings) -> Result<Self, String> {
        s.complete()
            .map_err(|missing| format!("missing field `{}`", missing[0].0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PlatformConfig;
    use crate::config::byok::ByokAuth;
    use crate::config::byok::tests::BYOK_TOML;

    #[test]
    fn byok_flags_override_the_file_entry_or_make_one() {
        let mut entries = PlatformConfig::from_toml(BYOK_TOML).unwrap().byok;
        // The secret from the environment, the rest from the file; a static key replaces
        // the client credentials.
        ByokSettings {
            workspace: Some("o/w".into()),
            api_key: Some(Secret::new("sk_env")),
            data_key_cache_secs: Some(60),
            ..Default::default()
        }
        .apply(&mut entries)
        .unwrap();
        assert_eq!(entries.len(), 1);
        assert!(
            matches!(entries[0].auth().unwrap(), ByokAuth::ApiKey(k) if k.expose() == "sk_env")
        );
        assert_eq!(entries[0].data_key_cache_secs, 60);
        assert_eq!(entries[0].partner, "acme");
        // Another workspace needs every required setting.
        let partial = ByokSettings {
            workspace: Some("o/other".into()),
            partner: Some("acme".into()),
            ..Default::default()
        };
        let err = partial.clone().apply(&mut entries).unwrap_err();
        assert!(
            err.contains("--byok-base-url, --byok-key-alias, --byok-encrypted-key"),
            "{err}"
        );
        ByokSettings {
            customer_base_url: Some("http://127.0.0.1:8700".into()),
            key_alias: Some("tenant-b".into()),
            encrypted_key: Some("byok:v1:BBBB".into()),
            client_id: Some("platform".into()),
            client_secret: Some(Secret::new("x")),
            ..partial
        }
        .apply(&mut entries)
        .unwrap();
        assert_eq!(entries.len(), 2);
        entries[1].validate().unwrap();
        let no_ws = ByokSettings {
            partner: Some("acme".into()),
            ..Default::default()
        };
        assert!(
            no_ws
                .apply(&mut entries)
                .unwrap_err()
                .contains("--byok-workspace")
        );
        assert!(ByokSettings::default().apply(&mut entries).is_ok());
    }

    #[test]
    fn a_file_entry_needs_every_required_key_and_names_the_first_missing() {
        let err = PlatformConfig::from_toml(
            "seed = 1\n\n[[byok]]\norg_id = \"o\"\nworkspace_id = \"w\"\ncustomer_base_url = \"http://x\"\n",
        )
        .unwrap_err();
        assert!(
            err.starts_with("TOML parse error at line 3, column 1")
                && err.ends_with("missing field `partner`\n"),
            "{err}"
        );
        let entry = PlatformConfig::from_toml(&format!(
            "{BYOK_TOML}data_key_cache_secs = 60\nrotation_period_secs = 3600\n"
        ))
        .unwrap()
        .byok
        .remove(0);
        assert_eq!(
            (
                entry.data_key_cache_secs,
                entry.request_timeout_ms,
                entry.rotation_period_secs
            ),
            (60, BYOK_REQUEST_TIMEOUT_MS, Some(3600))
        );
    }

    #[derive(clap::Parser, Debug)]
    struct Flags {
        #[command(flatten)]
        byok: ByokSettings,
    }

    #[test]
    fn flags_fill_the_same_settings_as_the_file() {
        use clap::Parser;
        let flags = Flags::try_parse_from([
            "platform",
            "--byok-workspace",
            "o/w",
            "--byok-base-url",
            "https://kms.example.com/base/",
            "--byok-partner",
            "acme",
            "--byok-client-id",
            "platform",
            "--byok-client-secret",
            "s3cret-value",
            "--byok-key-alias",
            "tenant-a",
            "--byok-encrypted-key",
            "byok:v1:AAAA",
        ])
        .unwrap()
        .byok;
        let mut from_flags = Vec::new();
        flags.apply(&mut from_flags).unwrap();
        let from_file = PlatformConfig::from_toml(BYOK_TOML).unwrap().byok;
        assert_eq!(from_flags, from_file);
        assert!(
            Flags::try_parse_from(["platform", "--byok-data-key-cache-secs", "soon"]).is_err(),
            "numbers are checked as they are read"
        );
    }

    /// The README's BYOK table is the contract: each row's file keys, flags and environment
    /// variables are one field of [`ByokSettings`], and every field has its row.
    #[test]
    fn the_readme_table_names_each_setting_once() {
        use clap::CommandFactory;
        let readme = include_str!("../../../../docs/guide/platform-configuration.md");
        let start = readme
            .find("| File key (`[[byok]]`) | Flag | Environment | Default |")
            .expect("the BYOK table");
        let command = Flags::command();
        let file_keys = match toml::from_str::<ByokSettings>("not_a_key = 1") {
            Err(e) => e.to_string(),
            Ok(_) => panic!("an unknown key is refused"),
        };
        let ticked = |cell: &str| -> Vec<String> {
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(|t| t.split(' ').next().unwrap_or("").to_string())
                .collect()
        };
        let mut seen = Vec::new();
        for row in readme[start..].lines().skip(2) {
            if !row.starts_with('|') {
                break;
            }
            let cells: Vec<&str> = row.split(" | ").collect();
            let (keys, flags, envs) = (ticked(cells[0]), ticked(cells[1]), ticked(cells[2]));
            assert_eq!(flags.len(), envs.len(), "{row}");
            for (flag, env) in flags.iter().zip(&envs) {
                let arg = command
                    .get_arguments()
                    .find(|a| a.get_long().map(|l| format!("--{l}")).as_deref() == Some(flag))
                    .unwrap_or_else(|| panic!("no flag {flag}"));
                assert_eq!(
                    arg.get_env().and_then(|e| e.to_str()),
                    Some(env.as_str()),
                    "{flag}"
                );
                let id = arg.get_id().as_str();
                if id == "workspace" {
                    assert_eq!(keys, ["org_id", "workspace_id"], "{row}");
                } else {
                    assert!(keys.iter().any(|k| k == id), "{flag} sets {id}: {row}");
                }
                seen.push(id.to_string());
            }
            for key in &keys {
                assert!(file_keys.contains(&format!("`{key}`")), "file key {key}");
            }
        }
        let mut all: Vec<String> = command
            .get_arguments()
            .map(|a| a.get_id().as_str().to_string())
            .filter(|id| id != "help")
            .collect();
        all.sort();
        seen.sort();
        assert_eq!(seen, all, "every flag has its row");
    }
}
