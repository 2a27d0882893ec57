//! The instant outbound body.

use serde_json::Value;

use super::{Ctx, Options};
use crate::error::{Loc, ValidationErrors};
use crate::model::OutboundCall;
use crate::wire::{AppOverrides, AppType};

const BODY_KEYS: &[&str] = &["app_config", "user_config", "webhook_config"];
const APP_KEYS: &[&str] = &[
    "app_id",
    "app_version",
    "connection_config",
    "agent_variables",
    "app_type",
    "app_overrides",
];
const CONNECTION_KEYS: &[&str] = &["connection_id", "agent_phone_number"];
const OVERRIDE_KEYS: &[&str] = &["initial_bot_message", "initial_state_name"];

/// Checks an instant outbound body. Required: `app_config.app_id`, `app_config.app_version`,
/// `app_config.connection_config.{connection_id, agent_phone_number}`,
/// `user_config.user_phone_number` (assumed: the spec shows no required marks). Both numbers
/// must be E.164.
pub fn outbound_request(body: &Value, opts: Options) -> Result<OutboundCall, ValidationErrors> {
    let mut c = Ctx::new(opts);
    let call = parse(&mut c, body);
    c.into_result(call)
}

fn parse(c: &mut Ctx, body: &Value) -> Option<OutboundCall> {
    let loc = Loc::body();
    let m = c.object(body, &loc, BODY_KEYS)?;

    let app = c.required(m, "app_config", &loc).and_then(|v| {
        let l = loc.at("app_config");
        let am = c.object(v, &l, APP_KEYS)?;
        let app_id = c
            .required(am, "app_id", &l)
            .and_then(|v| c.nonempty_string(v, &l.at("app_id")));
        let app_version = c
            .required(am, "app_version", &l)
            .and_then(|v| c.app_version(v, &l.at("app_version")));
        let conn = c.required(am, "connection_config", &l).and_then(|v| {
            let cl = l.at("connection_config");
            let cm = c.object(v, &cl, CONNECTION_KEYS)?;
            let id = c
                .required(cm, "connection_id", &cl)
                .and_then(|v| c.nonempty_string(v, &cl.at("connection_id")));
            let number = c
                .required(cm, "agent_phone_number", &cl)
                .and_then(|v| c.e164(v, &cl.at("agent_phone_number")));
            Some((id?, number?))
        });
        let variables = match Ctx::optional(am, "agent_variables") {
            Some(v) => c.dict(v, &l.at("agent_variables")),
            None => Some(Default::default()),
        };
        let app_type = match Ctx::optional(am, "app_type") {
            Some(v) => c.choice(v, &l.at("app_type"), &[("agent", AppType::Agent)]),
            None => Some(AppType::Agent),
        };
        let overrides = match Ctx::optional(am, "app_overrides") {
            Some(v) => overrides(c, v, &l.at("app_overrides")),
            None => Some(AppOverrides::default()),
        };
        Some((
            app_id?,
            app_version?,
            conn?,
            variables?,
            app_type?,
            overrides?,
        ))
    });

    let user = c.required(m, "user_config", &loc).and_then(|v| {
        let l = loc.at("user_config");
        let um = c.object(v, &l, &["user_phone_number"])?;
        c.required(um, "user_phone_number", &l)
            .and_then(|v| c.e164(v, &l.at("user_phone_number")))
    });

    let webhook = match Ctx::optional(m, "webhook_config") {
        Some(v) => c.webhook(v, &loc.at("webhook_config")).map(Some),
        None => Some(None),
    };

    let (
        app_id,
        app_version,
        (connection_id, agent_phone_number),
        agent_variables,
        app_type,
        app_overrides,
    ) = app?;
    Some(OutboundCall {
        app_id,
        app_version,
        app_type,
        connection_id,
        agent_phone_number,
        agent_variables,
        app_overrides,
        user_phone_number: user?,
        webhook: webhook?,
    })
}

fn overrides(c: &mut Ctx, v: &Value, loc: &Loc) -> Option<AppOverrides> {
    let m = c.object(v, loc, OVERRIDE_KEYS)?;
    let mut out = AppOverrides::default();
    let mut ok = true;
    for key in OVERRIDE_KEYS {
        if let Some(v) = Ctx::optional(m, key) {
            match c.string(v, &loc.at(*key)) {
                Some(s) => {
                    let s = Some(s.to_string());
                    match *key {
                        "initial_bot_message" => out.initial_bot_message = s,
                        _ => out.initial_state_name = s,
                    }
                }
                None => ok = false,
            }
        }
    }
    ok.then_some(out)
}
