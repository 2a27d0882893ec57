//! API-key authentication: the configured keys ([`KeyTable`], compared in constant time),
//! who a request is ([`Principal`]), [`authorize`], which checks a request's `X-API-Key`
//! against the workspace of its path, and [`authorize_any`] and [`authorize_clock`] for the
//! routes that act on the whole instance.

use subtle::ConstantTimeEq;

use super::RequestMeta;
use crate::app::App;
use crate::config::ApiKeyConfig;
use crate::error::ApiError;
use crate::store::WorkspaceRef;

/// Checks `X-API-Key` against the workspace of the path.
pub fn authorize(
    app: &App,
    meta: &RequestMeta,
    org_id: &str,
    workspace_id: &str,
) -> Result<Principal, ApiError> {
    let ws = WorkspaceRef::new(org_id, workspace_id);
    let Some(presented) = meta.header("x-api-key") else {
        return Err(ApiError::Unauthorized {
            code: "missing_api_key",
            message: "send the workspace's key in the X-API-Key header".into(),
        });
    };
    match app.auth.check(presented, &ws) {
        Some(name) => Ok(Principal { ws, name }),
        None => Err(ApiError::Unauthorized {
            code: "invalid_api_key",
            message: format!(
                "the X-API-Key is not valid for org '{org_id}' and workspace '{workspace_id}'"
            ),
        }),
    }
}

/// The journal and fault routes act on the whole instance: any workspace's key opens
/// them. Answers the key's configured name.
pub fn authorize_any(app: &App, meta: &RequestMeta) -> Result<String, ApiError> {
    let Some(presented) = meta.header("x-api-key") else {
        return Err(ApiError::Unauthorized {
            code: "missing_api_key",
            message: "send a workspace's key in the X-API-Key header".into(),
        });
    };
    app.auth.check_any(presented).ok_or(ApiError::Unauthorized {
        code: "invalid_api_key",
        message: "the X-API-Key is not a key of this platform".into(),
    })
}

/// The clock routes act on the whole instance: any workspace's key (or a clock admin key)
/// reads the clock; moving it takes a clock admin key once the platform has any
/// (`clock_admin_keys`), else any workspace's key.
pub fn authorize_clock(app: &App, meta: &RequestMeta, moving: bool) -> Result<(), ApiError> {
    let Some(presented) = meta.header("x-api-key") else {
        return Err(ApiError::Unauthorized {
            code: "missing_api_key",
            message: "send a workspace's key in the X-API-Key header".into(),
        });
    };
    let unknown = || ApiError::Unauthorized {
        code: "invalid_api_key",
        message: "the X-API-Key is not a key of this platform".into(),
    };
    if !moving {
        return app
            .auth
            .may_read_clock(presented)
            .then_some(())
            .ok_or_else(unknown);
    }
    match app.auth.clock_mover(presented) {
        ClockMover::Allowed => Ok(()),
        ClockMover::NotAdmin => Err(ApiError::Forbidden {
            code: "clock_admin_key_required",
            message: "this platform lets only its clock admin keys move the shared simulated clock (--clock-admin-key); a workspace's key may read it with GET /sim/v1/clock".into(),
        }),
        ClockMover::Unknown => Err(unknown()),
    }
}

/// The configured API keys, checked in constant time.
#[derive(Debug, Clone)]
pub struct KeyTable {
    keys: Vec<ApiKeyConfig>,
    clock_admins: Vec<String>,
}

/// Who may move the simulated clock, as [`KeyTable::clock_mover`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClockMover {
    /// A clock admin key, or any workspace's key when no clock admin key is configured.
    Allowed,
    /// A workspace's key, while clock admin keys are configured.
    NotAdmin,
    /// No key of this platform.
    Unknown,
}

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The workspace of the path.
    pub ws: WorkspaceRef,
    /// The key's name (`created_by`, `updated_by`).
    pub name: String,
}

impl KeyTable {
    /// A table of these keys.
    pub fn new(keys: Vec<ApiKeyConfig>) -> Self {
        KeyTable {
            keys,
            clock_admins: Vec::new(),
        }
    }

    /// The same table with these clock admin keys (see
    /// [`crate::config::PlatformConfig::clock_admin_keys`]).
    pub fn with_clock_admins(mut self, keys: Vec<String>) -> Self {
        self.clock_admins = keys;
        self
    }

    /// Whether `presented` is a clock admin key (constant time per key).
    fn is_clock_admin(&self, presented: &str) -> bool {
        let mut found = false;
        for k in &self.clock_admins {
            found |= bool::from(k.as_bytes().ct_eq(presented.as_bytes()));
        }
        found
    }

    /// Whether `presented` may read the clock: a key of any workspace or a clock admin key.
    pub fn may_read_clock(&self, presented: &str) -> bool {
        let admin = self.is_clock_admin(presented);
        self.check_any(presented).is_some() || admin
    }

    /// Whether `presented` may move the simulated clock.
    pub fn clock_mover(&self, presented: &str) -> ClockMover {
        let admin = self.is_clock_admin(presented);
        let workspace = self.check_any(presented).is_some();
        match (admin, workspace) {
            (true, _) => ClockMover::Allowed,
            (false, true) if self.clock_admins.is_empty() => ClockMover::Allowed,
            (false, true) => ClockMover::NotAdmin,
            (false, false) => ClockMover::Unknown,
        }
    }

    /// The keys.
    pub fn keys(&self) -> &[ApiKeyConfig] {
        &self.keys
    }

    /// The name of the key, if `presented` is a key of any workspace (the simulation API's
    /// instance-wide routes).
    pub fn check_any(&self, presented: &str) -> Option<String> {
        let mut found = None;
        for k in &self.keys {
            if bool::from(k.key.as_bytes().ct_eq(presented.as_bytes())) && found.is_none() {
                found = Some(k.name.clone());
            }
        }
        found
    }

    /// The name of the key that opens `ws`, if `presented` is one.
    pub fn check(&self, presented: &str, ws: &WorkspaceRef) -> Option<String> {
        let mut found = None;
        // Compare against every key, without stopping early, in constant time per key.
        for k in &self.keys {
            if bool::from(k.key.as_bytes().ct_eq(presented.as_bytes()))
                && k.opens(ws)
                && found.is_none()
            {
                found = Some(k.name.clone());
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_open_only_their_workspace() {
        let t = KeyTable::new(vec![
            ApiKeyConfig::parse("o/a=ka:alice").unwrap(),
            ApiKeyConfig::parse("*/*=kall:local").unwrap(),
        ]);
        let a = WorkspaceRef::new("o", "a");
        let b = WorkspaceRef::new("o", "b");
        assert_eq!(t.check("ka", &a).as_deref(), Some("alice"));
        assert_eq!(t.check("ka", &b), None);
        assert_eq!(t.check("kall", &b).as_deref(), Some("local"));
        assert_eq!(t.check("k", &a), None);
        assert_eq!(t.check("", &a), None);
    }

    #[test]
    fn clock_admin_keys_alone_move_the_clock_once_configured() {
        let keys = vec![ApiKeyConfig::parse("o/a=ka:alice").unwrap()];
        let open = KeyTable::new(keys.clone());
        assert_eq!(open.clock_mover("ka"), ClockMover::Allowed);
        assert_eq!(open.clock_mover("nope"), ClockMover::Unknown);
        let closed = KeyTable::new(keys).with_clock_admins(vec!["k-clock".into()]);
        assert_eq!(closed.clock_mover("ka"), ClockMover::NotAdmin);
        assert_eq!(closed.clock_mover("k-clock"), ClockMover::Allowed);
        assert_eq!(closed.clock_mover("nope"), ClockMover::Unknown);
        assert!(closed.may_read_clock("ka") && closed.may_read_clock("k-clock"));
        assert!(!closed.may_read_clock("nope"));
        assert_eq!(
            closed.check_any("k-clock"),
            None,
            "an admin key opens no workspace"
        );
    }
}
