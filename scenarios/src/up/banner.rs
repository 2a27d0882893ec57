//! What `harness up` prints: the connection details as text, or as one JSON object (the
//! same object the ready file holds), with curl commands that work when pasted.

use serde::Serialize;

use crate::stack::StackInfo;

/// The number the example call goes to: a magic number, connected for 90 s.
pub(crate) const EXAMPLE_CALLEE: &str = "+14155550100";
/// The number the example call leaves from.
pub(crate) const EXAMPLE_AGENT_NUMBER: &str = "+14155550199";

/// The connection details and the example commands.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Details {
    /// The stack.
    #[serde(flatten)]
    pub(crate) info: StackInfo,
    /// Shell commands, one line each.
    pub(crate) curl: Examples,
}

/// Shell commands that use the stack, each one line that works when pasted.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Examples {
    /// An instant outbound call in the BYOK workspace: the platform seals it with the
    /// workspace's data key, which the key service decrypts the first time.
    pub(crate) outbound_call: String,
    /// The workspace's data keys (`provider: byok`).
    pub(crate) data_keys: String,
    /// The key service's audit log (`/auth`, `/decrypt-key` calls).
    pub(crate) key_service_audit: String,
}

/// `s` quoted for a POSIX shell.
pub(crate) fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/' | b':' | b'+' | b'=')
        })
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

impl Examples {
    /// The commands for `info`.
    pub(crate) fn new(info: &StackInfo) -> Examples {
        let p = &info.platform;
        let ws = format!("orgs/{}/workspaces/{}", p.org_id, p.workspace_id);
        let key = shell_quote(&format!("X-API-Key: {}", p.api_key));
        let body = serde_json::json!({
            "app_config": {
                "app_id": "app-1",
                "app_version": 1,
                "connection_config": {"connection_id": "conn-a", "agent_phone_number": EXAMPLE_AGENT_NUMBER}
            },
            "user_config": {"user_phone_number": EXAMPLE_CALLEE}
        });
        Examples {
            outbound_call: format!(
                "curl -sS -X POST {} -H {key} -H 'content-type: application/json' -d {}",
                shell_quote(&format!("{}/api/outbounds/v1/{ws}/outbounds", p.url)),
                shell_quote(&body.to_string()),
            ),
            data_keys: format!(
                "curl -sS {} -H {key}",
                shell_quote(&format!("{}/admin/v1/{ws}/data-keys", p.url)),
            ),
            key_service_audit: format!(
                "curl -sS {} -H {}",
                shell_quote(&format!("{}/audit", info.key_service.admin_url)),
                shell_quote(&format!(
                    "Authorization: Bearer {}",
                    info.key_service.admin_token
                )),
            ),
        }
    }
}

impl Details {
    /// The details of `info`.
    pub(crate) fn new(info: &StackInfo) -> Details {
        Details {
            curl: Examples::new(info),
            info: info.clone(),
        }
    }

    /// One JSON object on one line.
    pub(crate) fn json(&self) -> String {
        serde_json::to_string(self).expect("plain data serialises")
    }

    /// The text banner.
    pub(crate) fn text(&self) -> String {
        let i = &self.info;
        let p = &i.platform;
        let k = &i.key_service;
        let database = if p.database.kept {
            p.database.path.clone()
        } else if p.database.path == ":memory:" {
            ":memory: (lost at exit)".to_string()
        } else {
            format!(
                "{} (temporary, removed at exit; --database PATH keeps one)",
                p.database.path
            )
        };
        let clock = match &i.clock.sim_start {
            Some(t) => format!("simulated, from {t}; move it with POST /sim/v1/clock/advance"),
            None => "real".to_string(),
        };
        let mut seed = format!("{}  (repeat with --seed {})", i.seed, i.seed);
        if p.seed != i.seed || k.seed != i.seed {
            seed = format!(
                "{}  (platform {}, key service {}: their configurations pin their own)",
                i.seed, p.seed, k.seed
            );
        }
        let telephony = format!(
            "simulated, inside the platform (seed {}){}",
            i.telephony.seed,
            if i.telephony.magic_numbers {
                "; magic numbers (+1 NXX 555-01YY) on"
            } else {
                ""
            }
        );
        let rows: Vec<(&str, String)> = vec![
            ("platform", p.url.clone()),
            ("  OpenAPI", p.openapi_url.clone()),
            (
                "  live page",
                format!("{}  (open it in a browser)", p.ui_url),
            ),
            (
                "  API key",
                format!("{}  (send it as X-API-Key)", p.api_key),
            ),
            ("  org", p.org_id.clone()),
            (
                "  workspace",
                format!(
                    "{}  (BYOK: its data keys come from the key service)",
                    p.workspace_id
                ),
            ),
            ("  database", database),
            ("  webhook secret", p.webhook_secret.clone()),
            (
                "key service",
                format!(
                    "{}  (customer-kms-sim: /auth, /decrypt-key, /rotate-key)",
                    k.byok_base_url
                ),
            ),
            ("  client id", k.client_id.clone()),
            ("  client secret", k.client_secret.clone()),
            ("  key alias", k.key_alias.clone()),
            ("  admin API", k.admin_url.clone()),
            (
                "  admin token",
                format!("{}  (Authorization: Bearer ...)", k.admin_token),
            ),
            ("telephony", telephony),
            ("clock", clock),
            ("seed", seed),
        ];
        let mut out = format!(
            "harness up: the platform, its customer's key service and the telephony simulator, BYOK on for {}/{}\n\n",
            p.org_id, p.workspace_id
        );
        for (label, value) in &rows {
            out.push_str(&format!("{label:<17} {value}\n"));
        }
        out.push_str(&format!(
            "\nTry it: an outbound call (sealed with the workspace's data key, which the key service\n\
             decrypts), then the workspace's data keys and the key service's audit log:\n\n\
             {}\n{}\n{}\n\n\
             Ctrl-C stops everything.\n",
            self.curl.outbound_call, self.curl.data_keys, self.curl.key_service_audit
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quoting_survives_quotes_and_spaces() {
        assert_eq!(shell_quote("sk-local-12ab"), "sk-local-12ab");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf %s {}", shell_quote("x'y \"$HOME\" `z`")))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), "x'y \"$HOME\" `z`");
    }
}
