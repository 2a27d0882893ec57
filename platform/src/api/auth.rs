//! API-key authentication of a request: [`authorize`], which checks a request's
//! `X-API-Key` against the workspace of its path, [`authorize_scope`] for the journal and
//! the fault rules (a workspace's key sees its own workspace's, an operator's key
//! everyone's: [`Scope`]), and [`authorize_clock`] for the one clock of the instance. The
//! keys themselves are [`crate::auth`].

use super::RequestMeta;
use crate::app::App;
use crate::auth::{ClockMover, Principal, Scope};
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

/// The journal and fault routes: a workspace's key sees and clears its workspace's entries
/// and rules, an operator's key everyone's. Answers what the key may see.
pub fn authorize_scope(app: &App, meta: &RequestMeta) -> Result<Scope, ApiError> {
    let Some(presented) = meta.header("x-api-key") else {
        return Err(ApiError::Unauthorized {
            code: "missing_api_key",
            message: "send a workspace's key (or an operator's key) in the X-API-Key header".into(),
        });
    };
    app.auth.scope(presented).ok_or(ApiError::Unauthorized {
        code: "invalid_api_key",
        message: "the X-API-Key is not a key of this platform".into(),
    })
}

/// The reset of one workspace: its own key, or an operator's key.
pub fn authorize_reset(
    app: &App,
    meta: &RequestMeta,
    org_id: &str,
    workspace_id: &str,
) -> Result<WorkspaceRef, ApiError> {
    let ws = WorkspaceRef::new(org_id, workspace_id);
    if let Some(presented) = meta.header("x-api-key")
        && app.auth.scope(presented) == Some(Scope::Operator)
    {
        return Ok(ws);
    }
    authorize(app, meta, org_id, workspace_id).map(|p| p.ws)
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
