//! The mock platform in process on port 0, bare or behind a mutant: a small proxy that
//! forwards every request to it and breaks exactly one rule of the contract on the way.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use contracts::clock::SimClock;
use platform::App;
use platform::config::{ApiKeyConfig, PlatformConfig};
use reqwest::Method;
use scenarios::checks::CheckReport;
use scenarios::checks::platform::target::Workspace;
use scenarios::checks::platform::{Options, check};
use serde_json::Value;
use tokio::sync::oneshot;
use warp::Filter;
use warp::http::HeaderMap;

/// Where the simulated clock starts (a Monday), with digits beyond the millisecond the
/// clock's answers show, as a clock started at the real time has.
pub const START: &str = "2026-03-02T08:00:00.123456789Z";
pub const ORG: &str = "org-1";
pub const WS: &str = "ws-1";
pub const KEY: &str = "sk-test-1";
pub const WS2: &str = "ws-2";
pub const KEY2: &str = "sk-test-2";
/// The secret the mock signs its webhooks with.
pub const WEBHOOK_SECRET: &str = "whsec_test";

/// A request on its way through the proxy.
pub struct Req {
    pub method: Method,
    pub path: String,
    pub query: String,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Req {
    /// The JSON body, if it is JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The value of a query parameter.
    pub fn param(&self, name: &str) -> Option<String> {
        url::form_urlencoded::parse(self.query.as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    }

    /// The path's segments.
    pub fn segments(&self) -> Vec<&str> {
        self.path.trim_start_matches('/').split('/').collect()
    }

    /// `/api/scheduling/v1/orgs/{o}/workspaces/{w}/campaigns/{id}`.
    pub fn is_campaign(&self) -> bool {
        let s = self.segments();
        s.len() == 9 && s[1] == "scheduling" && s[7] == "campaigns"
    }

    /// The id of `/api/app-authoring/v1/orgs/{o}/workspaces/{w}/deployments/{id}`.
    pub fn deployment_id(&self) -> Option<&str> {
        let s = self.segments();
        (s.len() == 9 && s[1] == "app-authoring" && s[7] == "deployments").then(|| s[8])
    }

    /// Whether the path is under `/cohorts/` of a campaign or deployment, with a cohort id.
    pub fn is_cohort(&self) -> bool {
        let s = self.segments();
        s.len() == 11 && s[1] == "scheduling" && s[9] == "cohorts"
    }

    /// The workspace of an `/api/...` path.
    pub fn workspace(&self) -> Option<&str> {
        let s = self.segments();
        (s.len() > 7 && s[0] == "api").then(|| s[6])
    }

    /// The segments of an `/api/...` path after `workspaces/{w}`: `["campaigns", id,
    /// "status"]`; empty for other paths.
    pub fn rest(&self) -> Vec<&str> {
        let s = self.segments();
        if s.len() > 7 && s[0] == "api" {
            s[7..].to_vec()
        } else {
            Vec::new()
        }
    }

    /// Whether this is `method` on the resource path `pattern`, `*` matching any segment:
    /// `req.is(Method::PUT, &["campaigns", "*", "status"])`.
    pub fn is(&self, method: Method, pattern: &[&str]) -> bool {
        let rest = self.rest();
        self.method == method
            && rest.len() == pattern.len()
            && rest.iter().zip(pattern).all(|(a, b)| *b == "*" || a == b)
    }

    /// Changes the JSON body with `f` (nothing when the body is not JSON).
    pub fn edit_json(&mut self, f: impl FnOnce(&mut Value)) {
        if let Some(mut v) = self.json() {
            f(&mut v);
            self.body = serde_json::to_vec(&v).unwrap();
        }
    }

    /// The text of the multipart field `name`, read naively (enough for the suite's forms).
    pub fn form_text(&self, name: &str) -> Option<String> {
        let body = String::from_utf8_lossy(&self.body);
        let head = format!("name=\"{name}\"\r\n\r\n");
        let start = body.find(&head)? + head.len();
        let end = body[start..].find("\r\n--")?;
        Some(body[start..start + end].to_string())
    }

    /// Makes the request a `GET` of `path` (the resource as it is): a change the proxy
    /// answers without making it.
    pub fn make_read(&mut self, path: String) {
        self.method = Method::GET;
        self.path = path;
        self.body.clear();
        self.headers.remove("content-type");
    }

    /// A query parameter set to `value` (added, or replacing every one of that name).
    pub fn set_param(&mut self, name: &str, value: &str) {
        let mut pairs: Vec<(String, String)> = url::form_urlencoded::parse(self.query.as_bytes())
            .filter(|(k, _)| k != name)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        pairs.push((name.into(), value.into()));
        self.query = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish();
    }
}

/// The last status each campaign or deployment was answered with, as a mutant sees them
/// pass (for mutants that break a rule in one state only).
#[derive(Clone, Default)]
pub struct Seen(Arc<std::sync::Mutex<std::collections::BTreeMap<String, String>>>);

impl Seen {
    /// Notes the status an answer shows.
    pub fn note(&self, resp: &Resp) {
        if let Some(v) = resp.json() {
            let id = v["campaign_id"].as_str().or(v["deployment_id"].as_str());
            if let (Some(id), Some(status)) = (id, v["status"].as_str()) {
                self.0
                    .lock()
                    .unwrap()
                    .insert(id.to_string(), status.to_string());
            }
        }
    }

    /// The last status of `id`.
    pub fn status(&self, id: &str) -> Option<String> {
        self.0.lock().unwrap().get(id).cloned()
    }
}

/// An answer on its way back.
pub struct Resp {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

impl Resp {
    /// The JSON body, if it is JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// Replaces the body with `v`.
    pub fn set_json(&mut self, v: &Value) {
        self.body = serde_json::to_vec(v).unwrap();
        self.content_type = Some("application/json".into());
    }

    /// A JSON answer.
    pub fn json_answer(status: u16, v: &Value) -> Resp {
        Resp {
            status,
            content_type: Some("application/json".into()),
            body: serde_json::to_vec(v).unwrap(),
        }
    }
}

type RequestHook = Box<dyn Fn(&mut Req) -> Option<Resp> + Send + Sync>;
type ResponseHook = Box<dyn Fn(&Req, &mut Resp) + Send + Sync>;
type EventHook = Box<dyn Fn(&mut Value) + Send + Sync>;

/// A contract-breaking change: a request hook (may answer in place of the platform), a
/// response hook (may change the answer), and an event hook (may change the webhook events
/// the platform sends: the proxy points every `webhook_config.url` at itself and passes
/// each event on, changed).
#[derive(Default)]
pub struct Mutation {
    pub request: Option<RequestHook>,
    pub response: Option<ResponseHook>,
    pub event: Option<EventHook>,
    /// Headers added to every answer.
    pub extra_headers: Vec<(&'static str, &'static str)>,
    /// Signs the events it passes on over something else than the bytes it sends (the
    /// proxy otherwise passes the platform's signature on, or signs a changed event again
    /// as the platform would).
    pub bad_signature: bool,
    /// Signs the events it passes on correctly but in another form than the record's.
    pub signed_as: Option<SignedAs>,
    /// Tells the platform each event it passes on was delivered (200), whatever the
    /// receiver answered: a failed delivery is never tried again.
    pub failures_hidden: bool,
}

/// A form of the signature headers other than the record's.
#[derive(Clone, Copy, Debug)]
pub enum SignedAs {
    /// The timestamp in Unix milliseconds (the signature made over it).
    Millis,
    /// The signature in upper-case hex.
    UpperHex,
}

/// Where the proxy takes the events it passes on.
const EVENTS_PATH: &str = "/__events";

/// A running mock.
pub struct Mock {
    pub url: String,
    stops: Vec<oneshot::Sender<()>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Mock {
    /// Stops the proxy and the platform.
    pub async fn stop(mut self) {
        for s in self.stops.drain(..) {
            let _ = s.send(());
        }
        for t in self.tasks.drain(..) {
            let _ = t.await;
        }
    }
}

fn config(public_url: Option<String>) -> PlatformConfig {
    PlatformConfig {
        database: ":memory:".into(),
        api_keys: vec![
            ApiKeyConfig::parse(&format!("{ORG}/{WS}={KEY}:ci")).unwrap(),
            ApiKeyConfig::parse(&format!("{ORG}/{WS2}={KEY2}:other")).unwrap(),
        ],
        seed: Some(11),
        webhook_secret: Some(WEBHOOK_SECRET.into()),
        public_url,
        ..Default::default()
    }
}

/// A simulated clock at [`START`].
pub fn sim_clock() -> SimClock {
    SimClock::at(START)
}

/// The mock on `clock` (else the real clock), behind `mutation` when given.
pub async fn spawn(clock: Option<SimClock>, mutation: Option<Mutation>) -> Mock {
    let outer = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let outer_addr = outer.local_addr().unwrap();
    let inner = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let inner_addr = inner.local_addr().unwrap();
    // Page links point at the address clients use: the proxy's when there is one.
    let public = mutation.as_ref().map(|_| format!("http://{outer_addr}"));
    let mut builder = App::builder(config(public));
    if let Some(c) = &clock {
        builder = builder.sim_clock(c.clone());
    }
    let app = builder.build().expect("the app builds");
    let platform = platform::server::Platform::from_config(app).expect("the platform builds");
    let (stop, stopped) = oneshot::channel::<()>();
    let mut stops = vec![stop];
    let mut tasks = vec![tokio::spawn(platform::server::serve(
        platform,
        inner,
        async {
            let _ = stopped.await;
        },
    ))];
    let url = match mutation {
        None => {
            drop(outer);
            format!("http://{inner_addr}")
        }
        Some(m) => {
            let (stop, stopped) = oneshot::channel::<()>();
            stops.push(stop);
            tasks.push(tokio::spawn(proxy(
                outer,
                outer_addr,
                inner_addr,
                Arc::new(m),
                async {
                    let _ = stopped.await;
                },
            )));
            format!("http://{outer_addr}")
        }
    };
    Mock { url, stops, tasks }
}

async fn proxy(
    listener: tokio::net::TcpListener,
    outer: SocketAddr,
    inner: SocketAddr,
    m: Arc<Mutation>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let client = reqwest::Client::new();
    let route = warp::method()
        .and(warp::path::full())
        .and(warp::query::raw().or(warp::any().map(String::new)).unify())
        .and(warp::header::headers_cloned())
        .and(warp::body::bytes())
        .then(
            move |method: Method,
                  path: warp::path::FullPath,
                  query: String,
                  headers: HeaderMap,
                  body: Bytes| {
                let client = client.clone();
                let m = m.clone();
                async move {
                    let mut req = Req {
                        method,
                        path: path.as_str().to_string(),
                        query,
                        headers,
                        body: body.to_vec(),
                    };
                    let ours = format!("http://{outer}{EVENTS_PATH}?to=");
                    if req.path == EVENTS_PATH {
                        let resp = pass_event(&client, &m, &req, &ours).await;
                        return warp::http::Response::builder()
                            .status(resp.status)
                            .body(resp.body)
                            .unwrap();
                    }
                    if m.event.is_some() && matches!(req.method, Method::POST | Method::PATCH) {
                        req.edit_json(|v| {
                            for at in ["/app_config/webhook_config/url", "/webhook_config/url"] {
                                if let Some(url) = v.pointer_mut(at)
                                    && let Some(sent) = url.as_str()
                                {
                                    let to: String =
                                        url::form_urlencoded::byte_serialize(sent.as_bytes())
                                            .collect();
                                    *url = serde_json::json!(format!("{ours}{to}"));
                                }
                            }
                        });
                    }
                    let mut resp = match m.request.as_ref().and_then(|h| h(&mut req)) {
                        Some(r) => r,
                        None => forward(&client, inner, &req).await,
                    };
                    if m.event.is_some()
                        && let Some(mut v) = resp.json()
                        && from_proxy(&mut v, &ours)
                    {
                        let ct = resp.content_type.clone();
                        resp.set_json(&v);
                        resp.content_type = ct;
                    }
                    if let Some(h) = &m.response {
                        h(&req, &mut resp);
                    }
                    let mut out = warp::http::Response::builder().status(resp.status);
                    if let Some(ct) = &resp.content_type {
                        out = out.header("content-type", ct);
                    }
                    for (name, value) in &m.extra_headers {
                        out = out.header(*name, *value);
                    }
                    out.body(resp.body).unwrap()
                }
            },
        );
    warp::serve(route)
        .incoming(listener)
        .graceful(shutdown)
        .run()
        .await;
}

/// Every webhook URL in `v` that the proxy pointed at itself (`ours` then the URL sent)
/// given back as the client sent it, as a transparent proxy must; whether any was.
fn from_proxy(v: &mut Value, ours: &str) -> bool {
    match v {
        Value::String(s) => match s.strip_prefix(ours) {
            Some(to) => {
                let sent: String = url::form_urlencoded::parse(format!("to={to}").as_bytes())
                    .map(|(_, v)| v.into_owned())
                    .next()
                    .unwrap_or_default();
                *s = sent;
                true
            }
            None => false,
        },
        Value::Array(a) => a.iter_mut().fold(false, |any, i| from_proxy(i, ours) | any),
        Value::Object(m) => m
            .values_mut()
            .fold(false, |any, i| from_proxy(i, ours) | any),
        _ => false,
    }
}

/// Passes a webhook event on to where the campaign or call sent it (its webhook URLs given
/// back as sent, see [`from_proxy`]), changed by the event hook.
async fn pass_event(client: &reqwest::Client, m: &Mutation, req: &Req, ours: &str) -> Resp {
    let Some(to) = req.param("to") else {
        return Resp::json_answer(400, &serde_json::json!({"error": "no to"}));
    };
    let header = |n: &str| {
        req.headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let (mut timestamp, mut signature) =
        (header("x-webhook-timestamp"), header("x-webhook-signature"));
    let mut body = req.body.clone();
    if let Some(h) = &m.event {
        let mut event: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        from_proxy(&mut event, ours);
        h(&mut event);
        body = serde_json::to_vec(&event).unwrap();
        if body != req.body
            && let Some(ts) = &timestamp
        {
            signature = Some(sign(ts, &body));
        }
    }
    if m.bad_signature {
        // Signed over the event as parsed and written again, not the bytes sent.
        let event: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let ts = timestamp.clone().unwrap_or_default();
        signature = Some(sign(
            &ts,
            serde_json::to_string_pretty(&event).unwrap().as_bytes(),
        ));
        timestamp = Some(ts);
    }
    match (m.signed_as, &timestamp) {
        (Some(SignedAs::Millis), Some(ts)) => {
            let millis = format!("{ts}000");
            signature = Some(sign(&millis, &body));
            timestamp = Some(millis);
        }
        (Some(SignedAs::UpperHex), Some(ts)) => {
            signature = Some(sign(ts, &body).to_uppercase());
        }
        _ => {}
    }
    let mut post = client
        .post(to)
        .header("content-type", "application/json")
        .body(body);
    if let Some(ts) = timestamp {
        post = post.header("x-webhook-timestamp", ts);
    }
    if let Some(sig) = signature {
        post = post.header("x-webhook-signature", sig);
    }
    match post.send().await {
        Ok(_) if m.failures_hidden => Resp {
            status: 200,
            content_type: None,
            body: Vec::new(),
        },
        Ok(r) => Resp {
            status: r.status().as_u16(),
            content_type: None,
            body: Vec::new(),
        },
        Err(_) => Resp {
            status: 502,
            content_type: None,
            body: Vec::new(),
        },
    }
}

/// The hex HMAC-SHA256 of `{timestamp}.{body}` under [`WEBHOOK_SECRET`], as the platform signs.
fn sign(timestamp: &str, body: &[u8]) -> String {
    use hmac::{Hmac, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(WEBHOOK_SECRET.as_bytes()).unwrap();
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

async fn forward(client: &reqwest::Client, inner: SocketAddr, req: &Req) -> Resp {
    let mut url = format!("http://{inner}{}", req.path);
    if !req.query.is_empty() {
        url.push('?');
        url.push_str(&req.query);
    }
    let mut r = client.request(req.method.clone(), url);
    for (name, value) in &req.headers {
        if name != "host" && name != "content-length" {
            r = r.header(name, value);
        }
    }
    let answer = r
        .body(req.body.clone())
        .send()
        .await
        .expect("the mock answers");
    let status = answer.status().as_u16();
    let content_type = answer
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    Resp {
        status,
        content_type,
        body: answer.bytes().await.unwrap().to_vec(),
    }
}

/// Options for a run against `url`: both workspaces, `--sim` when `sim`.
pub fn options(url: &str, sim: bool, other: bool) -> Options {
    let main = Workspace {
        org: ORG.into(),
        workspace: WS.into(),
        key: KEY.into(),
    };
    let other = other.then(|| Workspace {
        org: ORG.into(),
        workspace: WS2.into(),
        key: KEY2.into(),
    });
    Options::new(url, main, other, sim).with_webhook_secret(WEBHOOK_SECRET)
}

/// Runs every group against `url`.
pub async fn run(url: &str, sim: bool, other: bool) -> CheckReport {
    check(
        &options(url, sim, other),
        &mut |_| {},
        std::future::pending(),
    )
    .await
    .expect("the checks run")
}
