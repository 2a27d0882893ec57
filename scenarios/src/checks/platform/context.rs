//! What every group of checks works with: the target's HTTP side and workspaces, the
//! schemas, the settings of created resources, the ledger of what was created, the target's
//! time. [`super::verdicts::Verdicts`] collects what the checks find.

use chrono::{DateTime, Utc};
use contracts::clock::{Clock, SystemClock};
use reqwest::Method;
use serde_json::Value;

use super::exchange::Body;
use super::exchange::Exchange;
use super::fixtures::{Agent, Created, Ledger, Names, Side};
use super::schema::Schemas;
use super::target::{Http, Key, Paths, Workspace, sim_clock};
use crate::checks::Evidence;

/// Settings of a run beyond the target.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// The agent and connection of created resources.
    pub(crate) agent: Agent,
    /// The number the instant outbound call of the endpoint check dials.
    pub(crate) user_phone_number: String,
    /// Whether the target offers the simulation API (`--sim`).
    pub(crate) sim: bool,
    /// On a real clock, how far from a time limit the checks stay to allow for clock skew
    /// and latency.
    pub(crate) clock_margin_secs: i64,
    /// How long to wait for a cohort to finish processing.
    pub(crate) cohort_timeout_secs: u64,
    /// Where the simulation checks receive webhooks: the address to listen on.
    pub(crate) webhook_listen: String,
    /// The URL the target posts webhooks to, when not `http://{webhook_listen}`.
    pub(crate) webhook_public_url: Option<String>,
    /// The secret the target signs its webhooks with (`--webhook-secret`), when known.
    pub(crate) webhook_secret: Option<String>,
}

/// The other workspace, when given: its key and paths.
#[derive(Clone, Debug)]
pub(crate) struct Other {
    /// Its org, workspace and key.
    pub(crate) ws: Workspace,
    /// Its paths.
    pub(crate) paths: Paths,
}

/// Everything a group of checks needs.
#[derive(Debug)]
pub(crate) struct Ctx {
    /// The target's HTTP side.
    pub(crate) http: Http,
    /// The workspace under check.
    pub(crate) main: Workspace,
    /// Its paths.
    pub(crate) paths: Paths,
    /// Another workspace, for the authorisation checks.
    pub(crate) other: Option<Other>,
    /// The contract's schemas.
    pub(crate) schemas: Schemas,
    /// Settings.
    pub(crate) settings: Settings,
    /// Names and numbers of this run.
    pub(crate) names: Names,
    /// What was created and not yet removed.
    pub(crate) ledger: Ledger,
    /// Whether the target's clock is simulated (it answered `GET /sim/v1/clock` with
    /// `"simulated": true`, with or without `--sim`): times are then read from it.
    pub(crate) simulated_clock: bool,
}

/// The target's time and how precisely it is known.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Now {
    /// The time.
    pub(crate) at: DateTime<Utc>,
    /// How far a check must stay from a limit that depends on it: on a simulated clock the
    /// millisecond its answer shows (its time may carry digits beyond it), else
    /// `--clock-margin`.
    pub(crate) margin: chrono::Duration,
}

impl Ctx {
    /// A request with the workspace's key.
    pub(crate) async fn call(
        &self,
        method: Method,
        path: &[String],
        query: &[(&str, String)],
        body: Body,
    ) -> Exchange {
        self.http
            .call(method, path, query, Key::Value(&self.main.key), body)
            .await
    }

    /// `GET` with the workspace's key.
    pub(crate) async fn get(&self, path: &[String], query: &[(&str, String)]) -> Exchange {
        self.call(Method::GET, path, query, Body::Empty).await
    }

    /// A JSON request with the workspace's key.
    pub(crate) async fn send(&self, method: Method, path: &[String], body: Value) -> Exchange {
        self.call(method, path, &[], Body::Json(body)).await
    }

    /// The target's time: its simulated clock when it has one (`--sim` or found by the
    /// preflight), else this machine's clock with the configured margin.
    pub(crate) async fn now(&self) -> Result<Now, Exchange> {
        if self.settings.sim || self.simulated_clock {
            let x = self.get(&sim_clock(), &[]).await;
            let at = x
                .str_field("now")
                .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
                .map(|t| t.with_timezone(&Utc));
            return match at {
                Some(at) if x.status == 200 => Ok(Now {
                    at,
                    margin: chrono::Duration::milliseconds(1),
                }),
                _ => Err(x),
            };
        }
        Ok(Now {
            at: SystemClock.now(),
            margin: chrono::Duration::seconds(self.settings.clock_margin_secs),
        })
    }

    /// The workspace `side` and its paths (the one under check when no other was given:
    /// the checks that need another one do not run then).
    pub(crate) fn side(&self, side: Side) -> (&Workspace, &Paths) {
        match (side, &self.other) {
            (Side::Other, Some(o)) => (&o.ws, &o.paths),
            _ => (&self.main, &self.paths),
        }
    }

    /// A JSON request with the key of the workspace `side`.
    pub(crate) async fn send_as(
        &self,
        side: Side,
        method: Method,
        path: &[String],
        body: Value,
    ) -> Exchange {
        let (ws, _) = self.side(side);
        self.http
            .call(method, path, &[], Key::Value(&ws.key), Body::Json(body))
            .await
    }

    /// Creates a campaign from `body`; records it for cancelling when the answer names it.
    pub(crate) async fn create_campaign(&self, body: Value) -> Exchange {
        self.create_campaign_in(Side::Main, body).await
    }

    /// Creates a campaign in the workspace `side`.
    pub(crate) async fn create_campaign_in(&self, side: Side, body: Value) -> Exchange {
        let path = self.side(side).1.campaigns();
        let x = self.send_as(side, Method::POST, &path, body).await;
        if x.is_success()
            && let Some(id) = x.str_field("campaign_id")
        {
            self.ledger.add(Created::Campaign(side, id.to_string()));
        }
        x
    }

    /// Creates a deployment from `body`; records it for deleting when the answer names it.
    pub(crate) async fn create_deployment(&self, body: Value) -> Exchange {
        self.create_deployment_in(Side::Main, body).await
    }

    /// Creates a deployment in the workspace `side`.
    pub(crate) async fn create_deployment_in(&self, side: Side, body: Value) -> Exchange {
        let path = self.side(side).1.deployments();
        let x = self.send_as(side, Method::POST, &path, body).await;
        if x.is_success()
            && let Some(id) = x.str_field("deployment_id")
        {
            self.ledger.add(Created::Deployment(side, id.to_string()));
        }
        x
    }

    /// Creates a campaign named `name` (the fixture: starting an hour from the target's
    /// time, for a day, no users); answers the time's read when it fails.
    pub(crate) async fn create_scheduled_campaign(&self, name: &str) -> Exchange {
        let start = match self.now().await {
            Ok(n) => n.at + chrono::Duration::seconds(3600),
            Err(x) => return x,
        };
        self.create_campaign(super::fixtures::campaign(
            &self.settings.agent,
            name,
            &self.names.number(),
            start,
            start + chrono::Duration::seconds(86_400),
        ))
        .await
    }

    /// Creates a deployment named `name` (the fixture: one number of this run, no schedule).
    pub(crate) async fn create_plain_deployment(&self, name: &str) -> Exchange {
        self.create_deployment(super::fixtures::deployment(
            &self.settings.agent,
            name,
            &[self.names.number()],
        ))
        .await
    }

    /// Deletes a deployment of the workspace under check; forgets it when the target did.
    pub(crate) async fn delete_deployment(&self, id: &str) -> Exchange {
        self.delete_deployment_in(Side::Main, id).await
    }

    /// Deletes a deployment of the workspace `side`; forgets it when the target did.
    async fn delete_deployment_in(&self, side: Side, id: &str) -> Exchange {
        let (ws, paths) = self.side(side);
        let x = self
            .http
            .call(
                Method::DELETE,
                &paths.deployment(id),
                &[],
                Key::Value(&ws.key),
                Body::Empty,
            )
            .await;
        if x.is_success() || x.status == 404 {
            self.ledger
                .remove(&Created::Deployment(side, id.to_string()));
        }
        x
    }

    /// Removes what is recorded in the ledger: deployments deleted, campaigns cancelled, in
    /// the workspace each was created in. A campaign that already ended or was cancelled
    /// (409) needs nothing more. Answers what could not be removed.
    pub(crate) async fn clean_up(&self) -> Vec<String> {
        let mut left = Vec::new();
        for c in self.ledger.take() {
            match c {
                Created::Deployment(side, id) => {
                    let x = self.delete_deployment_in(side, &id).await;
                    if !(x.is_success() || x.status == 404) {
                        left.push(format!("deployment {id} (delete: {})", x.outcome()));
                    }
                }
                Created::Campaign(side, id) => {
                    let (_, paths) = self.side(side);
                    let x = self
                        .send_as(
                            side,
                            Method::PUT,
                            &paths.campaign_status(&id),
                            serde_json::json!({"action": "cancel"}),
                        )
                        .await;
                    if !(x.is_success() || x.status == 409 || x.status == 404) {
                        left.push(format!("campaign {id} (cancel: {})", x.outcome()));
                    }
                }
            }
        }
        left
    }

    /// The violations of the schema `name` by a success body, as evidence and verdict.
    /// A violation of a point only this project assumed is shown, not failed.
    pub(crate) fn conforms(&self, x: &Exchange, schema: &str) -> (bool, Evidence) {
        let (violations, assumed) = match &x.json {
            Some(v) => self.schemas.classified(schema, v, x.resource()),
            None => (vec!["the body is not JSON".to_string()], Vec::new()),
        };
        let ok = x.is_success() && violations.is_empty();
        let mut e = x.evidence();
        if !violations.is_empty() && x.is_success() {
            e = e.with("schema", schema).with("violations", violations);
        }
        if !assumed.is_empty() && x.is_success() {
            e = e.with("assumptions_not_met", assumed);
        }
        (ok, e)
    }
}

/// `{"detail": [{"loc", "msg", "type"}]}` with an entry at exactly `loc`: the 422 answer of
/// the contract, naming the field.
pub(crate) fn names_loc(x: &Exchange, loc: &[Value]) -> bool {
    x.status == 422
        && x.body()["detail"].as_array().is_some_and(|d| {
            d.iter()
                .any(|e| e["loc"].as_array().is_some_and(|l| l.as_slice() == loc))
        })
}

/// Whether a body has the validation error shape: `detail` a non-empty list of `{loc: [string
/// or integer], msg: string, type: string}`.
pub(crate) fn is_validation_shape(body: &Value) -> bool {
    body["detail"].as_array().is_some_and(|d| {
        !d.is_empty()
            && d.iter().all(|e| {
                e["msg"].is_string()
                    && e["type"].is_string()
                    && e["loc"].as_array().is_some_and(|l| {
                        !l.is_empty() && l.iter().all(|p| p.is_string() || p.is_u64())
                    })
            })
    })
}

/// Whether a body has the platform error shape: `error` with string `message`, `type` and
/// `code`.
pub(crate) fn is_error_shape(body: &Value) -> bool {
    let e = &body["error"];
    e["message"].is_string() && e["type"].is_string() && e["code"].is_string()
}

/// A `loc` path of string parts: `loc(&["body", "name"])`.
pub(crate) fn loc(parts: &[&str]) -> Vec<Value> {
    parts.iter().map(|p| Value::String(p.to_string())).collect()
}
