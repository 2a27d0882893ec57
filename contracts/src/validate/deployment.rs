//! Deployment bodies: create, patch, status.

use serde_json::{Map, Value};

use super::patch::Patch;
use super::{Ctx, INBOUND_CONFIG_KEYS, Options, limits};
use crate::domain::phone::E164;
use crate::domain::schedule::CallingWindow;
use crate::error::{Loc, ValidationErrors};
use crate::model::{DeploymentConnection, DeploymentSpec};
use crate::wire::DeploymentAction;

const CREATE_KEYS: &[&str] = &[
    "name",
    "app_id",
    "app_version",
    "connection_configs",
    "description",
    "inbound_config",
];
const CONNECTION_KEYS: &[&str] = &["connection_id", "phone_numbers"];
const INBOUND_KEYS: &[&str] = &["start_time", "end_time", "allowed_days", "timezone"];
const ACTIONS: &[(&str, DeploymentAction)] = &[
    ("pause", DeploymentAction::Pause),
    ("resume", DeploymentAction::Resume),
];

/// Checks a deployment create body.
pub fn deployment_create(body: &Value, opts: Options) -> Result<DeploymentSpec, ValidationErrors> {
    let mut c = Ctx::new(opts);
    let spec = create(&mut c, body);
    c.into_result(spec)
}

fn create(c: &mut Ctx, body: &Value) -> Option<DeploymentSpec> {
    let loc = Loc::body();
    let m = c.object(body, &loc, CREATE_KEYS)?;
    let name = c
        .required(m, "name", &loc)
        .and_then(|v| c.name(v, &loc.at("name")));
    let app_id = c
        .required(m, "app_id", &loc)
        .and_then(|v| c.nonempty_string(v, &loc.at("app_id")));
    let app_version = c
        .required(m, "app_version", &loc)
        .and_then(|v| c.app_version(v, &loc.at("app_version")));
    let connections = c
        .required(m, "connection_configs", &loc)
        .and_then(|v| connections(c, v, &loc.at("connection_configs")));
    let description_v = Ctx::optional(m, "description");
    let description = c.description(description_v, &loc.at("description"));
    let inbound = match Ctx::optional(m, "inbound_config") {
        Some(v) => inbound(c, v, &loc.at("inbound_config")).map(Some),
        None => Some(None),
    };
    if description_v.is_some() && description.is_none() {
        return None;
    }
    Some(DeploymentSpec {
        name: name?,
        app_id: app_id?,
        app_version: app_version?,
        connections: connections?,
        description,
        inbound: inbound?,
    })
}

fn inbound(c: &mut Ctx, v: &Value, loc: &Loc) -> Option<CallingWindow> {
    let m = c.object(v, loc, INBOUND_KEYS)?;
    c.window(m, loc, INBOUND_CONFIG_KEYS)
}

/// At least one connection; a number appears once across all of them.
fn connections(c: &mut Ctx, v: &Value, loc: &Loc) -> Option<Vec<DeploymentConnection>> {
    let items = c.array_len(v, loc, limits::CONNECTION_CONFIGS_MIN, None)?;
    let mut out: Vec<DeploymentConnection> = Vec::with_capacity(items.len());
    let mut seen: Vec<E164> = Vec::new();
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let l = loc.at(i);
        let Some(m) = c.object(item, &l, CONNECTION_KEYS) else {
            ok = false;
            continue;
        };
        let connection_id = c
            .required(m, "connection_id", &l)
            .and_then(|v| c.nonempty_string(v, &l.at("connection_id")));
        let numbers = c
            .required(m, "phone_numbers", &l)
            .and_then(|v| c.e164_list(v, &l.at("phone_numbers")));
        if let Some(numbers) = &numbers {
            for (j, p) in numbers.iter().enumerate() {
                if seen.contains(p) {
                    c.value_error(
                        &l.at("phone_numbers").at(j),
                        format_args!(
                            "{p} is already listed in another connection of this deployment"
                        ),
                    );
                    ok = false;
                } else {
                    seen.push(p.clone());
                }
            }
        }
        match (connection_id, numbers) {
            (Some(connection_id), Some(phone_numbers)) => out.push(DeploymentConnection {
                connection_id,
                phone_numbers,
            }),
            _ => ok = false,
        }
    }
    ok.then_some(out)
}

const PATCH_KEYS: &[&str] = &[
    "name",
    "description",
    "app_id",
    "app_version",
    "connection_configs",
    "inbound_config",
];

/// Checks a deployment PATCH body against the deployment as it is, and answers the deployment
/// as it would become. `app_id` cannot change (its current value is accepted); `null` clears
/// `description` and `inbound_config`.
pub fn deployment_patch(
    body: &Value,
    current: &DeploymentSpec,
    opts: Options,
) -> Result<DeploymentSpec, ValidationErrors> {
    let mut c = Ctx::new(opts);
    let spec = patch(&mut c, body, current);
    c.into_result(spec)
}

fn patch(c: &mut Ctx, body: &Value, cur: &DeploymentSpec) -> Option<DeploymentSpec> {
    let loc = Loc::body();
    let m: &Map<String, Value> = c.object(body, &loc, PATCH_KEYS)?;
    let mut next = cur.clone();
    let mut p = Patch::new(m, &loc);
    p.fixed(
        c,
        "app_id",
        &cur.app_id,
        "app_id cannot be changed; create a new deployment for another agent",
    );
    p.set(c, "name", &mut next.name, |c, v, l| c.name(v, l));
    p.set_or_clear(c, "description", &mut next.description, |c, v, l| {
        c.description(Some(v), l)
    });
    p.set(c, "app_version", &mut next.app_version, |c, v, l| {
        c.app_version(v, l)
    });
    p.set(c, "connection_configs", &mut next.connections, connections);
    p.set_or_clear(c, "inbound_config", &mut next.inbound, inbound);
    p.passed().then_some(next)
}

/// Checks a deployment status body: `{"action": "pause" | "resume"}`.
pub fn deployment_status(
    body: &Value,
    opts: Options,
) -> Result<DeploymentAction, ValidationErrors> {
    let mut c = Ctx::new(opts);
    let loc = Loc::body();
    let action = c.object(body, &loc, &["action"]).and_then(|m| {
        c.required(m, "action", &loc)
            .and_then(|v| c.choice(v, &loc.at("action"), ACTIONS))
    });
    c.into_result(action)
}
