//! Every request to the platform's interface (the paths under `/api/`) passes here: the
//! fault rules first ([`crate::faults`]), then the routes, then the journal
//! ([`crate::journal`]), which records the request before its answer leaves. A request to
//! any other path passes here too while the journal is on: it is recorded when no route
//! served it ([`crate::api::RouteMiss`]), so that a client with a wrong base path is judged
//! rather than ignored; the harness's own routes are not recorded, and no fault rule
//! touches them.
//!
//! The request is attributed to its workspace once ([`crate::auth::KeyTable::owner`]):
//! fault rules made with a workspace's key apply to that workspace's requests only, and the
//! journal counts the request in that workspace's verdict.
//!
//! The connection's service ([`crate::connection::service`]) hands such a request to
//! [`Intercept::answer`]; others go straight to the routes. What the journal needs of the
//! request is taken before the routes answer ([`Pending`]), so that a request whose route
//! does not wait is answered and recorded without an allocated future. The request's body
//! is wrapped in a [`TeeBody`] that keeps a copy of what the routes read (JSON only, up to
//! the body limit).
//!
//! Modules: [`faulted`] (the answers fault rules make), [`tee`] (the request body's copy).

mod faulted;
mod tee;

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use contracts::clock::Stopwatch;
use contracts::operations::{Catalogue, Resolved};
use contracts::wire::AppliedFault;
use http_body::Body;
use http_body_util::BodyExt;
use warp::http::{Request, header};
use warp::reply::Response;

use crate::api::router::Routes;
use crate::api::{Later, RouteMiss, Routed};
use crate::app::App;
use crate::auth::KeyMatch;
use crate::config::journal::ResponseBodies;
use crate::faults::{Decision, FaultRequest};
use crate::journal::verdict::{
    AcceptedUpload, Answered, Asked, IgnoredParts, Pending, SeenBody, misplaced_key, path_workspace,
};
use crate::media_type;
use crate::store::WorkspaceRef;

use faulted::{drop_connection, fault_answer, truncated};
use tee::TeeBody;

/// Largest 422 answer read for its items when it is above the journal's body limit.
const VALIDATION_ANSWER_MAX: u64 = 1024 * 1024;

/// The fault rules and the journal of one platform, in front of its routes.
#[derive(Clone)]
pub(crate) struct Intercept {
    app: App,
}

impl std::fmt::Debug for Intercept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Intercept").finish_non_exhaustive()
    }
}

impl Intercept {
    /// The intercept of `app`'s journal and fault rules.
    pub(crate) fn new(app: App) -> Intercept {
        Intercept { app }
    }

    /// Whether a request to `path` goes through [`Intercept::answer`]: any path while the
    /// journal is on, a path of the interface while a fault rule is set.
    pub(crate) fn observes(&self, path: &str) -> bool {
        self.app.journal.enabled()
            || (path.starts_with(contracts::openapi::INTERFACE_PREFIX) && self.app.faults.any())
    }

    /// Answers `req` with `routes`: a fault rule may answer first, delay it, cut its answer
    /// or drop the connection; the journal records it with its verdict. The answer is given
    /// now when nothing on the way waits, else as the rest to await.
    pub(crate) fn answer<B>(&self, req: Request<B>, routes: &Routes) -> Result<Response, Later>
    where
        B: Body<Data = Bytes> + Send + Sync + Unpin + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let watch = Stopwatch::start();
        let app = &self.app;
        let at = app.clock.now();
        let (parts, body) = req.into_parts();
        let path = parts.uri.path();
        let resolved = Catalogue::platform().resolve(parts.method.as_str(), path);
        let api_key = parts
            .headers
            .get(&crate::api::auth::API_KEY)
            .map(|v| v.to_str().ok());
        let key_elsewhere = api_key
            .is_none()
            .then(|| misplaced_key(&parts.headers))
            .flatten();
        let api_key = api_key.flatten();
        let request_type = parts.headers.get(header::CONTENT_TYPE).cloned();
        let mut path_ws = path_workspace(&resolved, path);
        // The key is compared with the configured keys once, here: the owner, the
        // journal's verdict and the route's check all follow from what it matched.
        let keys = app.auth.matching(api_key);
        let owner = app.auth.owner(&keys, path_ws.as_ref());
        let pending = app.journal.enabled().then(|| {
            let asked = Asked {
                at,
                method: &parts.method,
                path,
                query: parts.uri.query().unwrap_or(""),
                api_key,
                key_elsewhere: key_elsewhere.as_deref(),
                path_workspace: path_ws.as_ref(),
                resolved: &resolved,
            };
            Pending::new(&asked, app.auth.name_for(&keys, path_ws.as_ref()))
        });
        let unread = SeenBody {
            content_type: request_type.clone(),
            ..SeenBody::default()
        };
        let interface = path.starts_with(contracts::openapi::INTERFACE_PREFIX);
        // No fault rule touches the harness's own routes.
        let decision = if interface {
            let operation_id = match &resolved {
                Resolved::Operation(_, op, _) => Some(op.operation_id.as_str()),
                _ => None,
            };
            app.faults.decide(&FaultRequest {
                operation_id,
                path,
                method: parts.method.as_str(),
                path_workspace: path_ws.as_ref(),
                owner: owner.as_deref(),
                api_key,
                now: at,
            })
        } else {
            Decision::PROCEED
        };
        let owner = owner.map(other_owner);
        let mut observed = Observed {
            watch,
            pending,
            owner: owned(owner, &mut path_ws),
            applied: None,
            truncate: false,
            seen_request: None,
            unread,
        };
        if !interface {
            // Not the interface: recorded only when no route served it.
            let this = self.clone();
            return route(
                routes,
                Request::from_parts(parts, body),
                keys,
                move |response| Ok(this.outside(observed, response)),
            );
        }
        let delay = match decision {
            Decision::Answer {
                status,
                retry_after,
                applied,
            } => {
                let (response, seen) = fault_answer(status, retry_after, &applied);
                let unread = std::mem::take(&mut observed.unread);
                observed.record(
                    app,
                    Some(status),
                    &unread,
                    &seen,
                    Some(applied),
                    false,
                    &Extras::default(),
                );
                return Ok(response);
            }
            Decision::Drop { applied } => {
                let unread = std::mem::take(&mut observed.unread);
                let none = SeenBody::default();
                observed.record(
                    app,
                    None,
                    &unread,
                    &none,
                    Some(applied),
                    false,
                    &Extras::default(),
                );
                drop_connection();
            }
            Decision::Proceed {
                delay,
                truncate,
                applied,
            } => {
                observed.truncate = truncate;
                observed.applied = applied;
                delay
            }
        };
        let capture = if app.journal.enabled()
            && request_type
                .as_ref()
                .is_none_or(|t| t.to_str().is_ok_and(media_type::is_json))
        {
            app.config.max_body_bytes as usize
        } else {
            0
        };
        // A request without a body (a GET) is not watched.
        let watched = body.size_hint().exact() != Some(0);
        let tee = TeeBody::new(body, watched.then_some((capture, request_type)));
        observed.seen_request = tee.seen.clone();
        let req = Request::from_parts(parts, tee);
        let this = self.clone();
        let then = move |response| this.answered(observed, response);
        match delay {
            None => route(routes, req, keys, then),
            Some(d) => {
                let routes = routes.clone();
                Err(Box::pin(async move {
                    tokio::time::sleep(d).await;
                    match route(&routes, req, keys, then) {
                        Ok(response) => response,
                        Err(later) => later.await,
                    }
                }))
            }
        }
    }

    /// The answer to a request outside the interface, recorded when no route served it.
    fn outside(&self, observed: Observed, response: Response) -> Response {
        if response.extensions().get::<RouteMiss>().is_some() {
            let status = response.status().as_u16();
            let seen = SeenBody {
                content_type: response.headers().get(header::CONTENT_TYPE).cloned(),
                not_kept: true,
                ..SeenBody::default()
            };
            let unread = observed.unread.clone();
            observed.record(
                &self.app,
                Some(status),
                &unread,
                &seen,
                None,
                true,
                &Extras::default(),
            );
        }
        response
    }

    /// The answer to a request of the interface, recorded with what the journal keeps of
    /// its body (read first when kept, or cut by a fault), and cut when a fault says so.
    fn answered(&self, observed: Observed, response: Response) -> Result<Response, Later> {
        let (head, body) = response.into_parts();
        let status = head.status.as_u16();
        let response_type = head.headers.get(header::CONTENT_TYPE).cloned();
        let size = body.size_hint().exact();
        let settings = self.app.journal.settings();
        let limit = settings.body_limit_bytes as u64;
        let kept = self.app.journal.enabled()
            && (settings.response_bodies == ResponseBodies::All
                || status >= 400
                || observed.applied.is_some());
        let keep = kept
            && response_type
                .as_ref()
                .is_some_and(|t| t.to_str().is_ok_and(media_type::is_json))
            && size.is_some_and(|n| n <= limit || (status == 422 && n <= VALIDATION_ANSWER_MAX));
        let seen = SeenBody {
            content_type: response_type,
            size: size.unwrap_or(0),
            not_kept: !kept,
            ..SeenBody::default()
        };
        if !(keep || observed.truncate) {
            return Ok(self.finish(observed, Response::from_parts(head, body), None, seen));
        }
        let this = self.clone();
        Err(Box::pin(async move {
            let (response, read) = match body.collect().await {
                Ok(c) => {
                    let bytes = c.to_bytes();
                    (
                        Response::from_parts(head, bytes.clone().into()),
                        Some(bytes),
                    )
                }
                Err(e) => {
                    tracing::warn!(error = %e, "answer body could not be read");
                    (Response::from_parts(head, Bytes::new().into()), None)
                }
            };
            this.finish(observed, response, read, seen)
        }))
    }

    /// Records the request answered with `response` (`read`: its body, when the journal
    /// read it; `seen`: what the journal saw of it before), and gives the answer, cut when a
    /// fault says so.
    fn finish(
        &self,
        observed: Observed,
        mut response: Response,
        read: Option<Bytes>,
        mut seen: SeenBody,
    ) -> Response {
        let status = response.status().as_u16();
        let extras = Extras {
            ignored_parts: response
                .extensions_mut()
                .remove::<IgnoredParts>()
                .unwrap_or_default()
                .0,
            accepted_upload: response
                .extensions_mut()
                .remove::<AcceptedUpload>()
                .map(|a| a.0),
        };
        if let Some(bytes) = &read {
            if seen.size == 0 {
                seen.size = bytes.len() as u64;
            }
            seen.complete = true;
            seen.bytes = bytes.clone();
        }
        let response = match read {
            Some(bytes) if observed.truncate => truncated(response.into_parts().0, bytes),
            _ => response,
        };
        let request = match &observed.seen_request {
            Some(seen) => seen
                .lock()
                .map_or_else(|p| p.into_inner().clone(), |s| s.clone()),
            None => observed.unread.clone(),
        };
        let applied = observed.applied.clone();
        observed.record(
            &self.app,
            Some(status),
            &request,
            &seen,
            applied,
            true,
            &extras,
        );
        response
    }
}

/// `route`'s answer to `req` given to `then`: now when the route does not wait, else as a
/// future (one box, whatever waits). The routes check the request's key with `keys`, the
/// configured keys it matched, instead of comparing it again ([`Routes::answer_keyed`]).
fn route<B>(
    routes: &Routes,
    req: Request<B>,
    keys: KeyMatch,
    then: impl FnOnce(Response) -> Result<Response, Later> + Send + 'static,
) -> Result<Response, Later>
where
    B: Body<Data = Bytes> + Send + Sync + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let waiting: Later = match routes.answer_keyed(req, Some(keys)) {
        Routed::Now(response) => return then(response),
        Routed::Later(answer) => answer,
        Routed::Warp(req) => {
            let routes = routes.clone();
            Box::pin(async move { routes.warp(req).await })
        }
    };
    Err(Box::pin(async move {
        match then(waiting.await) {
            Ok(response) => response,
            Err(later) => later.await,
        }
    }))
}

/// An owner as [`crate::auth::KeyTable::owner`] finds it: `None` for the path's workspace
/// (borrowed), else the other.
fn other_owner(owner: Cow<'_, WorkspaceRef>) -> Option<WorkspaceRef> {
    match owner {
        Cow::Borrowed(_) => None,
        Cow::Owned(ws) => Some(ws),
    }
}

/// The owner of a request ([`other_owner`] of it), owned: the path's workspace is moved out
/// of `path_ws`, not copied.
fn owned(
    owner: Option<Option<WorkspaceRef>>,
    path_ws: &mut Option<WorkspaceRef>,
) -> Option<WorkspaceRef> {
    match owner {
        Some(Some(ws)) => Some(ws),
        Some(None) => path_ws.take(),
        None => None,
    }
}

/// What a route put on its answer for the journal: the multipart parts it ignored, the
/// cohort an upload created.
#[derive(Debug, Default)]
struct Extras {
    ignored_parts: Vec<String>,
    accepted_upload: Option<String>,
}

/// What the intercept knows of a request while the routes answer it (owned, so that it
/// waits across the answer).
struct Observed {
    watch: Stopwatch,
    /// The request judged on what it asked; `None` while the journal is off.
    pending: Option<Pending>,
    /// The workspace it belongs to.
    owner: Option<WorkspaceRef>,
    /// The fault applied, if any.
    applied: Option<AppliedFault>,
    /// Whether a fault cuts the answer.
    truncate: bool,
    /// The copy of the request body the routes read, when it is watched.
    seen_request: Option<Arc<Mutex<SeenBody>>>,
    /// The request body as seen when nobody read it.
    unread: SeenBody,
}

impl Observed {
    /// Records the request in the journal (when on) with its answer.
    #[allow(clippy::too_many_arguments)]
    fn record(
        self,
        app: &App,
        status: Option<u16>,
        request: &SeenBody,
        response: &SeenBody,
        fault: Option<AppliedFault>,
        handled: bool,
        extras: &Extras,
    ) {
        let Some(pending) = self.pending else {
            return;
        };
        let answered = Answered {
            ignored_parts: &extras.ignored_parts,
            accepted_upload: extras.accepted_upload.as_deref(),
            status,
            duration_ms: self.watch.elapsed().as_secs_f64() * 1000.0,
            request,
            response,
            fault,
            handled,
        };
        let entry = pending.finish(
            &answered,
            Catalogue::platform(),
            app.journal.settings().body_limit_bytes,
        );
        app.journal.record(entry, self.owner.as_ref());
    }
}

#[cfg(test)]
mod tests {
    use contracts::wire::{ApiKeyUse, FaultKind, FaultRule, Verdict};
    use http_body_util::{BodyExt, Full};

    use super::*;
    use crate::auth::Scope;
    use crate::config::{ApiKeyConfig, PlatformConfig};
    use crate::server::Platform;

    fn list() -> Request<Full<Bytes>> {
        Request::builder()
            .uri("/api/app-authoring/v1/orgs/org-1/workspaces/ws-1/deployments?limit=5")
            .header("host", "127.0.0.1:8080")
            .header("x-api-key", "sk-1")
            .body(Full::new(Bytes::new()))
            .unwrap()
    }

    async fn body(r: Response) -> Bytes {
        r.into_body().collect().await.unwrap().to_bytes()
    }

    #[tokio::test]
    async fn a_list_answered_before_is_answered_and_recorded_without_waiting() {
        let config = PlatformConfig {
            database: ":memory:".into(),
            api_keys: vec![ApiKeyConfig::parse("org-1/ws-1=sk-1:ci").unwrap()],
            seed: Some(7),
            ..Default::default()
        };
        let platform = Platform::from_config(App::builder(config).build().unwrap()).unwrap();
        let (app, routes) = (&platform.app, platform.routes());
        let intercept = Intercept::new(app.clone());
        let first = match intercept.answer(list(), &routes) {
            Err(load) => body(load.await).await,
            Ok(_) => panic!("the first list is loaded"),
        };
        let Ok(again) = intercept.answer(list(), &routes) else {
            panic!("the same list again is answered without waiting")
        };
        assert_eq!(body(again).await, first);
        let filter = contracts::validate::journal_query(&[]).unwrap();
        let (entries, total) = app.journal.list(&filter, &Scope::Operator);
        assert_eq!(total, 2, "both recorded");
        for e in &entries {
            assert_eq!(e.status, Some(200));
            assert_eq!(e.verdict, Verdict::Conforms, "{e:?}");
            assert_eq!(e.operation_id.as_deref(), Some("list_deployments"));
            assert_eq!(e.api_key, ApiKeyUse::Valid);
            assert_eq!(e.key_name.as_deref(), Some("ci"));
            assert_eq!(e.query["limit"], "5");
            assert_eq!(e.response.bytes, first.len() as u64);
            assert_eq!(
                e.owner.as_ref().map(|o| o.workspace_id.as_str()),
                Some("ws-1")
            );
        }
        // A fault's delay is waited for, even on a list answered before.
        let mut rule = FaultRule::new(FaultKind::Delay);
        rule.delay_ms = Some(1);
        app.faults.add(rule, None);
        let Err(delayed) = intercept.answer(list(), &routes) else {
            panic!("a delayed answer waits")
        };
        assert_eq!(body(delayed.await).await, first);
        assert_eq!(app.journal.list(&filter, &Scope::Operator).1, 3);
    }
}
