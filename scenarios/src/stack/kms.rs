//! The key service's side of a stack: its configuration completed with what the stack needs
//! (a client, an alias, an admin token), and the client and alias the platform uses.

use contracts::ids::IdGen;
use customer_kms_sim::KmsConfig;

use super::{ByokOptions, DEFAULT_CLIENT_ID, DEFAULT_KEY_ALIAS, DEFAULT_PARTNER, StackError};

/// The key service's configuration completed with what the stack needs, and the client and
/// alias the platform uses.
pub(super) struct KmsSetup {
    pub(super) config: KmsConfig,
    pub(super) client_id: String,
    pub(super) client_secret: String,
    pub(super) alias: String,
    pub(super) admin_token: String,
}

impl KmsSetup {
    pub(super) fn new(
        config: Option<KmsConfig>,
        byok: &ByokOptions,
        seed: u64,
        seed_given: bool,
    ) -> Result<Self, StackError> {
        let mut config = config.unwrap_or_else(|| KmsConfig::new(DEFAULT_PARTNER));
        if seed_given || config.seed.is_none() {
            config.seed = Some(seed);
        }
        if config.clients.is_empty() {
            config = config.with_client(DEFAULT_CLIENT_ID, &[&random_secret("kms-secret-")]);
        }
        if config.aliases.is_empty() {
            config = config.with_alias(DEFAULT_KEY_ALIAS, 1);
        }
        let admin_token = match &config.admin_token {
            Some(t) => t.expose().to_string(),
            None => {
                let t = random_secret("kms-admin-");
                config = config.with_admin_token(&t);
                t
            }
        };
        let client = match &byok.client_id {
            Some(id) => config.clients.iter().find(|c| &c.id == id).ok_or_else(|| {
                let ids: Vec<&str> = config.clients.iter().map(|c| c.id.as_str()).collect();
                StackError::KeyService(format!(
                    "no client '{id}' in the key service's configuration (clients: {})",
                    ids.join(", ")
                ))
            })?,
            None => &config.clients[0],
        };
        let client_secret = client
            .secrets
            .first()
            .map(|s| s.expose().to_string())
            .ok_or_else(|| {
                StackError::KeyService(format!(
                    "client '{}' has no secret; give it one in `secrets`",
                    client.id
                ))
            })?;
        let alias = byok
            .key_alias
            .clone()
            .or_else(|| client.default_alias.clone())
            .or_else(|| config.fallback_alias().map(str::to_string))
            .expect("the configuration has an alias");
        if !config.aliases.iter().any(|a| a.name == alias) {
            let names: Vec<&str> = config.aliases.iter().map(|a| a.name.as_str()).collect();
            return Err(StackError::KeyService(format!(
                "no alias '{alias}' in the key service's configuration (aliases: {})",
                names.join(", ")
            )));
        }
        Ok(KmsSetup {
            client_id: client.id.clone(),
            client_secret,
            alias,
            admin_token,
            config,
        })
    }
}

/// A random secret with a readable prefix.
fn random_secret(prefix: &str) -> String {
    let bytes: [u8; 16] = IdGen::from_entropy().bytes();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}{hex}")
}
