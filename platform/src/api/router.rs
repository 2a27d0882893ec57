//! Every route of the platform, chosen by the path's first segments before warp tries any.
//!
//! warp tries the filters of an `.or()` chain in turn: a request to the last module was
//! offered to every module before it, each making and dropping its futures and rejections.
//! Every route of a module begins with the same literal segments ([`MODULES`]: `api` and
//! `app-authoring` for the deployments), so a request can only match the modules whose
//! segments its path begins with. [`Routes`] keeps, for each such beginning, the chain of
//! those modules alone, in the order of the whole chain, with the same refusal and route-miss
//! answers behind it; a path that begins otherwise goes to the whole chain. The answer is the
//! same either way, only reached sooner (a test compares the two on every route).
//!
//! The path is split as warp splits it (one leading `/` skipped, then at each `/`, empty
//! segments included, no decoding), so a path the table sends to a group could match no
//! module outside it.
//!
//! The deployment list, the route most asked for, does not go through warp at all: it is
//! recognised by its method and path first and answered by its handler directly
//! ([`deployments::list_direct`]), with the same answer (the same test compares them).

use std::sync::Arc;

use bytes::Bytes;
use http_body::Body;
use tower_service::Service as _;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::Request;
use warp::reply::Response;

use super::{
    Later, Routed, admin, auth, campaigns, cohorts, deployments, docs, faults, health, journal,
    live, outbound, route_miss, sim, ui,
};
use crate::app::App;
use crate::auth::KeyMatch;
use crate::engine::driver::Driver;

/// The leading segments every route of a module begins with: the first, and the second
/// when all its routes share one.
type Prefix = (&'static str, Option<&'static str>);

/// A module of routes, built from the app and the engine's driver.
type Build = fn(&App, &Arc<Driver>) -> BoxedFilter<(Response,)>;

/// Every module of routes, in the order warp tries them, with the segments its routes
/// begin with.
const MODULES: &[(Prefix, Build)] = &[
    (("openapi.json", None), |_, _| docs::routes()),
    (("ui", None), |_, _| ui::routes()),
    (("sim", None), |app, driver| {
        live::routes(app.clone(), driver.clone())
    }),
    (("sim", None), |app, driver| {
        sim::routes(app.clone(), driver.clone())
    }),
    (("api", Some("outbounds")), |app, _| {
        outbound::routes(app.clone())
    }),
    (("api", Some("scheduling")), |app, _| {
        campaigns::routes(app.clone())
    }),
    (("api", Some("app-authoring")), |app, _| {
        deployments::routes(app.clone())
    }),
    (("api", Some("scheduling")), |app, _| {
        cohorts::routes(app.clone())
    }),
    (("admin", None), |app, _| admin::routes(app.clone())),
    (("healthz", None), |app, _| health::routes(app.clone())),
    (("sim", None), |app, _| journal::routes(app.clone())),
    (("sim", None), |app, _| faults::routes(app.clone())),
];

/// The platform's routes: a chain per beginning of a path, and the whole chain.
#[derive(Clone)]
pub(crate) struct Routes {
    /// For each beginning of [`MODULES`], the chain of the modules with that beginning.
    groups: Arc<[(Prefix, BoxedFilter<(Response,)>)]>,
    /// Every module in turn, for a path no group takes.
    all: BoxedFilter<(Response,)>,
    /// The app, for the route answered without warp.
    app: App,
}

impl std::fmt::Debug for Routes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Routes")
            .field(
                "groups",
                &self.groups.iter().map(|(p, _)| p).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Routes {
    /// Every route of the platform over `app`, the simulation's routes moving `driver`.
    pub(crate) fn new(app: &App, driver: &Arc<Driver>) -> Routes {
        let built: Vec<(Prefix, BoxedFilter<(Response,)>)> = MODULES
            .iter()
            .map(|(prefix, build)| (*prefix, build(app, driver)))
            .collect();
        let mut prefixes: Vec<Prefix> = Vec::new();
        for (prefix, _) in &built {
            if !prefixes.contains(prefix) {
                prefixes.push(*prefix);
            }
        }
        let groups = prefixes
            .iter()
            .map(|prefix| {
                let chain = chain(built.iter().filter(|(p, _)| p == prefix).map(|(_, f)| f));
                (*prefix, chain)
            })
            .collect();
        Routes {
            groups,
            all: chain(built.iter().map(|(_, f)| f)),
            app: app.clone(),
        }
    }

    /// The chain that answers a request to `path`.
    pub(crate) fn for_path(&self, path: &str) -> &BoxedFilter<(Response,)> {
        let mut segments =
            contracts::operations::path_segments(path.strip_prefix('/').unwrap_or(path));
        let first = segments.next();
        let second = segments.next();
        self.groups
            .iter()
            .find(|((a, b), _)| Some(*a) == first && (b.is_none() || *b == second))
            .map_or(&self.all, |(_, f)| f)
    }

    /// The whole chain, every module in turn.
    #[cfg(test)]
    pub(crate) fn all(&self) -> &BoxedFilter<(Response,)> {
        &self.all
    }

    /// Answers `req` now when its route does not wait (a list answered before, a refused
    /// key), else the rest to await, boxed.
    pub(crate) fn answer_or_later<B>(&self, req: Request<B>) -> Result<Response, Later>
    where
        B: Body<Data = Bytes> + Send + Sync + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        match self.answer_now(req) {
            Routed::Now(answer) => Ok(answer),
            Routed::Later(answer) => Err(answer),
            Routed::Warp(req) => {
                let routes = self.clone();
                Err(Box::pin(async move { routes.warp(req).await }))
            }
        }
    }

    /// What becomes of `req` without awaiting anything: the route answered without warp
    /// answers it, or gives the work that waits; any other request is warp's.
    pub(crate) fn answer_now<B>(&self, req: Request<B>) -> Routed<B> {
        self.answer_keyed(req, None)
    }

    /// [`Routes::answer_now`], the request's key checked with `keys`, the configured keys
    /// it matched ([`crate::auth::KeyTable::matching`] of this app's table), when found
    /// before: the list answered without warp takes them as they are; a request for warp
    /// carries them as an extension, which warp's key filters read.
    pub(crate) fn answer_keyed<B>(&self, req: Request<B>, keys: Option<KeyMatch>) -> Routed<B> {
        match deployments::list_direct(&self.app, req, keys.as_ref()) {
            Routed::Warp(mut req) => {
                if let Some(keys) = keys {
                    req.extensions_mut().insert(keys);
                }
                Routed::Warp(req)
            }
            answered => answered,
        }
    }

    /// Answers `req` with warp's filters, the chain of its path's group.
    pub(crate) async fn warp<B>(&self, req: Request<B>) -> Response
    where
        B: Body<Data = Bytes> + Send + Sync + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let filter = self.for_path(req.uri().path()).clone();
        match warp::service(filter).call(req).await {
            Ok(r) => r,
            Err(never) => match never {},
        }
    }
}

/// `filters` tried in turn, a key refusal answered once none takes the request
/// ([`auth::answer_refusal`]), then [`route_miss`].
fn chain<'a>(
    filters: impl Iterator<Item = &'a BoxedFilter<(Response,)>>,
) -> BoxedFilter<(Response,)> {
    let mut filters = filters.cloned();
    let first = filters.next().expect("a chain of at least one module");
    let tried = filters.fold(first, |chain, next| chain.or(next).unify().boxed());
    tried
        .recover(auth::answer_refusal)
        .unify()
        .or(warp::path::full().and(warp::method()).map(route_miss))
        .unify()
        .boxed()
}

#[cfg(test)]
mod tests {
    use warp::http::Method;

    use super::*;
    use crate::config::{ApiKeyConfig, ClockMode, PlatformConfig};
    use crate::server::Platform;

    /// A platform on a simulated clock with one workspace key: two built alike answer alike.
    fn platform() -> Platform {
        let config = PlatformConfig {
            database: ":memory:".into(),
            api_keys: vec![ApiKeyConfig::parse("org-1/ws-1=sk-1:ci").unwrap()],
            seed: Some(7),
            clock: ClockMode::Simulated,
            sim_start: Some("2026-03-02T12:00:00Z".into()),
            ..Default::default()
        };
        Platform::from_config(App::builder(config).build().unwrap()).unwrap()
    }

    /// Every path of the OpenAPI document (its parameters filled in), the harness's own
    /// routes, and paths no route takes, some close to real ones.
    fn paths() -> Vec<String> {
        let mut out: Vec<String> = contracts::openapi::platform_document()["paths"]
            .as_object()
            .unwrap()
            .keys()
            .map(|p| {
                p.replace("{org_id}", "org-1")
                    .replace("{workspace_id}", "ws-1")
                    .split('/')
                    .map(|s| if s.starts_with('{') { "x-1" } else { s })
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .collect();
        out.extend(
            [
                "/openapi.json",
                "/ui",
                "/ui/",
                "/ui/app.js",
                "/ui/nope.js",
                "/healthz",
                "/sim/v1/clock",
                "/sim/v1/clock/advance",
                "/sim/v1/stack",
                "/sim/v1/journal",
                "/sim/v1/journal/summary",
                "/sim/v1/faults",
                "/sim/v1/faults/f-1",
                "/sim/v1/orgs/org-1/workspaces/ws-1/campaigns/c-1/activity",
                "/sim/v1/orgs/org-1/workspaces/ws-1/key-service/calls",
                "/sim/v1/orgs/org-1/workspaces/ws-1/webhook-deliveries",
                "/sim/v1/orgs/org-1/workspaces/ws-1/inbound-calls",
                "/admin/v1/orgs/org-1/workspaces/ws-1/data-keys",
                "/admin/v1/orgs/org-1/workspaces/ws-1/data-keys/rotate",
                "/",
                "/api",
                "/api/",
                "/api/app-authoring",
                "/api/nope/v1/orgs/org-1/workspaces/ws-1/deployments",
                "//api/app-authoring/v1/orgs/org-1/workspaces/ws-1/deployments",
                "/api//app-authoring/v1/orgs/org-1/workspaces/ws-1/deployments",
                "/API/app-authoring/v1/orgs/org-1/workspaces/ws-1/deployments",
                "/api/app-authoring/v1/orgs/org-1/workspaces/ws-1/deployments/",
                "/api/app-authoring/v1/orgs/org-1/workspaces/ws-1/deployments//",
                "/api/app-authoring/v1/orgs/org-1/workspaces//deployments",
                "/api/app-authoring/v1/orgs//workspaces/ws-1/deployments",
                "/api/app-authoring/v1/orgs/org%2D1/workspaces/ws-1/deployments",
                "/api/app-authoring/v1/orgs/org-1/workspaces/ws-1/deployments%2F",
                "/api/app-authoring/v1/orgs/org-1/workspaces/ws-1/Deployments",
                "/api/app-authoring/v1/orgs/org-1/workspaces/ws-1/deployments/x",
                "/api/scheduling/v1/orgs/org-1/workspaces/ws-1/deployments",
                "/api/app-authoring/v1/orgs/org-1/workspaces/ws-1/campaigns",
                "/sim",
                "/sim/v2/clock",
                "/healthz/x",
                "/nope",
            ]
            .map(str::to_string),
        );
        out
    }

    /// The answer to `method` on `path` with `key` and `body`, as status, headers and body:
    /// from the routes as the server asks them ([`Routes::answer_or_later`]: a group, or no warp at
    /// all), or, with `whole`, from the whole chain.
    async fn answer(
        routes: &Routes,
        whole: bool,
        method: &Method,
        path: &str,
        key: Option<&str>,
        body: &'static str,
    ) -> String {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header("host", "127.0.0.1:8080")
            .header("content-type", "application/json");
        if let Some(key) = key {
            req = req.header("x-api-key", key);
        }
        let req = req
            .body(http_body_util::Full::new(Bytes::from_static(
                body.as_bytes(),
            )))
            .unwrap();
        let r = if whole {
            match warp::service(routes.all().clone()).call(req).await {
                Ok(r) => r,
                Err(never) => match never {},
            }
        } else {
            match routes.answer_or_later(req) {
                Ok(r) => r,
                Err(later) => later.await,
            }
        };
        let (head, body) = r.into_parts();
        let body = http_body_util::BodyExt::collect(body)
            .await
            .unwrap()
            .to_bytes();
        format!(
            "{} {:?} {}",
            head.status,
            head.headers,
            String::from_utf8_lossy(&body)
        )
    }

    /// A deployment of the workspace, so that its list has an item.
    const DEPLOYMENT: &str = r#"{"name": "Front desk", "app_id": "app-1", "app_version": 1,
        "connection_configs": [{"connection_id": "conn", "phone_numbers": ["+14155550100"]}]}"#;

    #[tokio::test]
    async fn each_request_gets_from_the_routes_the_answer_of_the_whole_chain() {
        let (grouped, whole) = (platform(), platform());
        let grouped = Routes::new(&grouped.app, &grouped.driver);
        let whole = Routes::new(&whole.app, &whole.driver);
        let list = "/api/app-authoring/v1/orgs/org-1/workspaces/ws-1/deployments";
        for (routes, whole) in [(&grouped, false), (&whole, true)] {
            let created = answer(routes, whole, &Method::POST, list, Some("sk-1"), DEPLOYMENT);
            assert!(created.await.starts_with("200"), "a deployment to list");
        }
        let methods = [
            Method::GET,
            Method::HEAD,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
            Method::OPTIONS,
        ];
        let mut paths = paths();
        // The list with queries: pages, a refused limit, a search, a sort.
        paths.extend(
            [
                "?limit=1",
                "?limit=0",
                "?offset=-1",
                "?search=front&limit=5",
                "?sort_by=name",
            ]
            .map(|q| format!("{list}{q}")),
        );
        let mut compared = 0;
        let mut grouped_paths = 0;
        let mut direct = 0;
        for path in paths {
            if !std::ptr::eq(grouped.for_path(&path), grouped.all()) {
                grouped_paths += 1;
            }
            for method in &methods {
                if deployments::list_request(method, path.split('?').next().unwrap_or("")).is_some()
                {
                    direct += 1;
                }
                for key in [None, Some("sk-1"), Some("sk-wrong")] {
                    // Twice: the list's second answer comes from the workspace's snapshot.
                    for _ in 0..2 {
                        let a = answer(&grouped, false, method, &path, key, "{}").await;
                        let b = answer(&whole, true, method, &path, key, "{}").await;
                        assert_eq!(a, b, "{method} {path} with key {key:?}");
                        compared += 1;
                    }
                }
            }
        }
        assert!(compared > 1000, "{compared} requests compared");
        assert!(
            grouped_paths > 30,
            "most paths go to a group ({grouped_paths})"
        );
        assert!(direct >= 12, "the list is answered without warp ({direct})");
    }

    /// A GET of `path` with `key`, as the server hands it to the routes.
    fn get(path: &str, key: &str) -> Request<http_body_util::Full<Bytes>> {
        Request::builder()
            .uri(path)
            .header("host", "127.0.0.1:8080")
            .header("x-api-key", key)
            .body(http_body_util::Full::new(Bytes::new()))
            .unwrap()
    }

    async fn text(r: Response) -> (u16, String) {
        let (head, body) = r.into_parts();
        let bytes = http_body_util::BodyExt::collect(body)
            .await
            .unwrap()
            .to_bytes();
        (head.status.as_u16(), String::from_utf8_lossy(&bytes).into())
    }

    #[tokio::test]
    async fn a_list_answered_before_and_a_refused_key_are_answered_without_waiting() {
        let p = platform();
        let routes = Routes::new(&p.app, &p.driver);
        let list = "/api/app-authoring/v1/orgs/org-1/workspaces/ws-1/deployments?limit=5";
        let Routed::Now(refused) = routes.answer_now(get(list, "sk-wrong")) else {
            panic!("a refused key is answered at once")
        };
        assert_eq!(text(refused).await.0, 401);
        let Routed::Later(load) = routes.answer_now(get(list, "sk-1")) else {
            panic!("the first list is loaded")
        };
        let first = text(load.await).await;
        assert_eq!(first.0, 200, "{}", first.1);
        let Routed::Now(again) = routes.answer_now(get(list, "sk-1")) else {
            panic!("the same list again is answered from memory")
        };
        assert_eq!(text(again).await, first);
        let other = "/api/app-authoring/v1/orgs/org-1/workspaces/ws-1/deployments/d-1";
        assert!(matches!(
            routes.answer_now(get(other, "sk-1")),
            Routed::Warp(_)
        ));
    }

    /// The answer of `routes` to `req`, its key checked with `keys` when given
    /// ([`Routes::answer_keyed`]), as status and body.
    async fn keyed(
        routes: &Routes,
        req: Request<http_body_util::Full<Bytes>>,
        keys: Option<KeyMatch>,
    ) -> (u16, String) {
        match routes.answer_keyed(req, keys) {
            Routed::Now(r) => text(r).await,
            Routed::Later(later) => text(later.await).await,
            Routed::Warp(req) => text(routes.warp(req).await).await,
        }
    }

    #[tokio::test]
    async fn a_key_matched_before_gets_the_answer_the_routes_own_check_gives() {
        let p = platform();
        let routes = Routes::new(&p.app, &p.driver);
        let ws1 = "/api/app-authoring/v1/orgs/org-1/workspaces/ws-1/deployments";
        let ws2 = "/api/app-authoring/v1/orgs/org-1/workspaces/ws-2/deployments";
        let created = keyed(&routes, post(ws1, DEPLOYMENT), None).await;
        assert_eq!(created.0, 200, "{}", created.1);
        // The list (without warp), a deployment and the simulation's routes (warp), of the
        // key's workspace and of another; a valid key, a wrong one, none.
        let paths = [
            format!("{ws1}?limit=5"),
            format!("{ws2}?limit=5"),
            format!("{ws1}/d-nope"),
            format!("{ws2}/d-nope"),
            "/sim/v1/orgs/org-1/workspaces/ws-1/webhook-deliveries".to_string(),
            "/sim/v1/orgs/org-1/workspaces/ws-2/webhook-deliveries".to_string(),
        ];
        let mut statuses = Vec::new();
        for path in &paths {
            for key in [Some("sk-1"), Some("sk-wrong"), None] {
                let req = || {
                    let mut r = get(path, key.unwrap_or_default());
                    if key.is_none() {
                        r.headers_mut().remove("x-api-key");
                    }
                    r
                };
                let checked = keyed(&routes, req(), None).await;
                let matched = keyed(&routes, req(), Some(p.app.auth.matching(key))).await;
                assert_eq!(matched, checked, "{path} with {key:?}");
                statuses.push(checked.0);
            }
        }
        assert!(statuses.contains(&200) && statuses.contains(&404) && statuses.contains(&401));
        // What the routes decide with comes from the match handed to them: a match of the
        // valid key opens the workspace to a request whose key is wrong.
        for path in [&paths[0], &paths[2], &paths[4]] {
            let lied = keyed(
                &routes,
                get(path, "sk-wrong"),
                Some(p.app.auth.matching(Some("sk-1"))),
            );
            assert_ne!(lied.await.0, 401, "{path}");
        }
    }

    /// A POST of `body` to `path` with the workspace's key.
    fn post(path: &str, body: &'static str) -> Request<http_body_util::Full<Bytes>> {
        Request::builder()
            .method(Method::POST)
            .uri(path)
            .header("host", "127.0.0.1:8080")
            .header("content-type", "application/json")
            .header("x-api-key", "sk-1")
            .body(http_body_util::Full::new(Bytes::from_static(
                body.as_bytes(),
            )))
            .unwrap()
    }

    #[test]
    fn a_path_goes_to_the_group_of_its_first_segments_or_to_the_whole_chain() {
        let p = platform();
        let routes = Routes::new(&p.app, &p.driver);
        let group = |path: &str| {
            routes
                .groups
                .iter()
                .find(|(_, f)| std::ptr::eq(f, routes.for_path(path)))
                .map(|(prefix, _)| *prefix)
        };
        let list = "/api/app-authoring/v1/orgs/o/workspaces/w/deployments";
        assert_eq!(group(list), Some(("api", Some("app-authoring"))));
        assert_eq!(group("/sim/v1/clock"), Some(("sim", None)));
        assert_eq!(group("/healthz"), Some(("healthz", None)));
        assert_eq!(group("/ui/app.js"), Some(("ui", None)));
        for other in [
            "/",
            "",
            "/api",
            "/api/x/v1",
            "//api/app-authoring/v1",
            "/Api/app-authoring",
        ] {
            assert_eq!(group(other), None, "{other}");
            assert!(
                std::ptr::eq(routes.for_path(other), routes.all()),
                "{other}"
            );
        }
    }
}
