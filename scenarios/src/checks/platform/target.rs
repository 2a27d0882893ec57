//! The target under check: its address and workspaces, the path of every operation of the
//! contract, and the client that records each call as an [`Exchange`] (`exchange.rs`).
//!
//! A failed call (no connection, a timeout) is not an error of the check run: it becomes an
//! [`Exchange`] with status 0 and the transport error, so that the check that made it fails
//! with that as evidence and the run goes on.

use std::time::Duration;

use contracts::clock::Stopwatch;
use reqwest::Method;
use url::Url;

use super::exchange::{Body, Exchange, FormPart, Sent};

/// An org and workspace and the key that opens it.
#[derive(Clone, Debug)]
pub struct Workspace {
    /// The org id of the paths.
    pub org: String,
    /// The workspace id of the paths.
    pub workspace: String,
    /// Its `X-API-Key`.
    pub key: String,
}

/// The parent of a cohort: a campaign or a deployment.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Parent<'a> {
    /// `.../campaigns/{id}/cohorts`.
    Campaign(&'a str),
    /// `.../deployments/{id}/cohorts`.
    Deployment(&'a str),
}

/// Path segments of every operation of one workspace, as the contract names them.
#[derive(Clone, Debug)]
pub(crate) struct Paths {
    org: String,
    workspace: String,
}

impl Paths {
    /// The paths of `org`/`workspace`.
    pub(crate) fn new(org: &str, workspace: &str) -> Paths {
        Paths {
            org: org.to_string(),
            workspace: workspace.to_string(),
        }
    }

    fn under(&self, api: &str, rest: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = vec!["api".into(), api.into(), "v1".into(), "orgs".into()];
        v.push(self.org.clone());
        v.push("workspaces".into());
        v.push(self.workspace.clone());
        v.extend(rest.iter().map(|s| s.to_string()));
        v
    }

    /// `POST /api/outbounds/v1/orgs/{o}/workspaces/{w}/outbounds`.
    pub(crate) fn outbounds(&self) -> Vec<String> {
        self.under("outbounds", &["outbounds"])
    }

    /// `/api/scheduling/v1/orgs/{o}/workspaces/{w}/campaigns`.
    pub(crate) fn campaigns(&self) -> Vec<String> {
        self.under("scheduling", &["campaigns"])
    }

    /// `.../campaigns/{id}`.
    pub(crate) fn campaign(&self, id: &str) -> Vec<String> {
        self.under("scheduling", &["campaigns", id])
    }

    /// `.../campaigns/{id}/status`.
    pub(crate) fn campaign_status(&self, id: &str) -> Vec<String> {
        self.under("scheduling", &["campaigns", id, "status"])
    }

    /// `/api/app-authoring/v1/orgs/{o}/workspaces/{w}/deployments`.
    pub(crate) fn deployments(&self) -> Vec<String> {
        self.under("app-authoring", &["deployments"])
    }

    /// `.../deployments/{id}`.
    pub(crate) fn deployment(&self, id: &str) -> Vec<String> {
        self.under("app-authoring", &["deployments", id])
    }

    /// `.../deployments/{id}/status`.
    pub(crate) fn deployment_status(&self, id: &str) -> Vec<String> {
        self.under("app-authoring", &["deployments", id, "status"])
    }

    /// `/api/scheduling/v1/.../{campaigns|deployments}/{id}/cohorts`, then `rest`.
    pub(crate) fn cohorts(&self, parent: Parent<'_>, rest: &[&str]) -> Vec<String> {
        let (kind, id) = match parent {
            Parent::Campaign(id) => ("campaigns", id),
            Parent::Deployment(id) => ("deployments", id),
        };
        let mut segs = vec![kind, id, "cohorts"];
        segs.extend_from_slice(rest);
        self.under("scheduling", &segs)
    }

    /// `/sim/v1/orgs/{o}/workspaces/{w}/inbound-calls` (the harness's simulation API).
    pub(crate) fn sim_inbound_calls(&self) -> Vec<String> {
        vec![
            "sim".into(),
            "v1".into(),
            "orgs".into(),
            self.org.clone(),
            "workspaces".into(),
            self.workspace.clone(),
            "inbound-calls".into(),
        ]
    }
}

/// `/sim/v1/clock`.
pub(crate) fn sim_clock() -> Vec<String> {
    vec!["sim".into(), "v1".into(), "clock".into()]
}

/// `/sim/v1/clock/advance`.
pub(crate) fn sim_clock_advance() -> Vec<String> {
    vec!["sim".into(), "v1".into(), "clock".into(), "advance".into()]
}

/// Which `X-API-Key` a request sends.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Key<'a> {
    /// No `X-API-Key` header.
    Missing,
    /// This key.
    Value(&'a str),
}

/// The HTTP side of the target: its base URL, a client, and the oracle every request is
/// also sent to, when there is one.
#[derive(Clone, Debug)]
pub(crate) struct Http {
    base: Url,
    client: reqwest::Client,
    oracle: Option<std::sync::Arc<dyn Mirror>>,
}

impl Http {
    /// A client of `base` with a per-request `timeout`.
    pub(crate) fn new(base: &str, timeout: Duration) -> anyhow::Result<Http> {
        let mut base = Url::parse(base).map_err(|e| {
            anyhow::anyhow!("--base-url '{base}' is not a URL ({e}); give it as http://HOST:PORT")
        })?;
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            anyhow::bail!("--base-url '{base}' must be an http:// or https:// address");
        }
        base.set_query(None);
        base.set_fragment(None);
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Http {
            base,
            client,
            oracle: None,
        })
    }

    /// This client with `oracle` judging every answer.
    pub(crate) fn with_oracle(mut self, oracle: std::sync::Arc<dyn Mirror>) -> Http {
        self.oracle = Some(oracle);
        self
    }

    /// The oracle, when there is one.
    pub(crate) fn oracle(&self) -> Option<&dyn Mirror> {
        self.oracle.as_deref()
    }

    /// The base URL as given.
    pub(crate) fn base(&self) -> &Url {
        &self.base
    }

    /// The base URL for reports: any user name and password in it left out.
    pub(crate) fn shown(&self) -> String {
        let mut u = self.base.clone();
        let _ = u.set_username("");
        let _ = u.set_password(None);
        u.to_string()
    }

    /// The URL of `segments` (each percent-encoded) below the base, with `query`.
    pub(crate) fn url(&self, segments: &[String], query: &[(&str, String)]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty();
            path.extend(segments);
        }
        if !query.is_empty() {
            url.query_pairs_mut()
                .extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
        }
        url
    }

    /// Sends one request to `segments` and records the exchange.
    pub(crate) async fn call(
        &self,
        method: Method,
        segments: &[String],
        query: &[(&str, String)],
        key: Key<'_>,
        body: Body,
    ) -> Exchange {
        let url = self.url(segments, query);
        self.call_url(method, url, key, body).await
    }

    /// Sends one request to a full URL (a page URI the target answered) and records it; the
    /// oracle, when there is one, is sent the same and judges the answer.
    pub(crate) async fn call_url(
        &self,
        method: Method,
        url: Url,
        key: Key<'_>,
        body: Body,
    ) -> Exchange {
        let Some(oracle) = &self.oracle else {
            return exchange(&self.client, method, url, key, body).await;
        };
        let x = exchange(&self.client, method.clone(), url.clone(), key, body.clone()).await;
        oracle.mirror(&method, &url, key, body, &x).await;
        x
    }

    /// Sends one request to `segments` and records it, never to an oracle (the oracle's own
    /// references are called so).
    pub(crate) async fn call_plain(
        &self,
        method: Method,
        segments: &[String],
        query: &[(&str, String)],
        key: Key<'_>,
        body: Body,
    ) -> Exchange {
        exchange(&self.client, method, self.url(segments, query), key, body).await
    }
}

/// What is sent every request the target is sent, with the target's answer: the oracle
/// (`super::oracle::Oracle`, which this module does not know).
pub(crate) trait Mirror: Send + Sync + std::fmt::Debug {
    /// Sends the request `target` answered to the references and judges the answer.
    fn mirror<'a>(
        &'a self,
        method: &'a Method,
        url: &'a Url,
        key: Key<'a>,
        body: Body,
        target: &'a Exchange,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>>;

    /// As `Any`, for the one that knows its type.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// Sends one request and records the exchange.
async fn exchange(
    client: &reqwest::Client,
    method: Method,
    url: Url,
    key: Key<'_>,
    body: Body,
) -> Exchange {
    let sent = Sent::new(&method, &url, &body);
    let mut req = client.request(method, url);
    if let Key::Value(k) = key {
        req = req.header("x-api-key", k);
    }
    req = match body {
        Body::Empty => req,
        Body::Json(v) => req.json(&v),
        Body::Raw(ct, bytes) => req.header("content-type", ct).body(bytes),
        Body::Multipart(parts) => req.multipart(form(parts)),
    };
    let watch = Stopwatch::start();
    let answer = async {
        let resp = req.send().await?;
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let bytes = resp.bytes().await?;
        Ok::<_, reqwest::Error>((status, content_type, bytes))
    }
    .await;
    let elapsed_ms = watch.elapsed().as_secs_f64() * 1000.0;
    match answer {
        Ok((status, content_type, bytes)) => Exchange {
            request: sent.line(),
            sent,
            status,
            content_type,
            text: String::from_utf8_lossy(&bytes).into_owned(),
            json: serde_json::from_slice(&bytes).ok(),
            error: None,
            elapsed_ms,
        },
        Err(e) => Exchange {
            request: sent.line(),
            sent,
            status: 0,
            content_type: None,
            text: String::new(),
            json: None,
            error: Some(error_chain(&e)),
            elapsed_ms,
        },
    }
}

fn form(parts: Vec<FormPart>) -> reqwest::multipart::Form {
    let mut form = reqwest::multipart::Form::new();
    for p in parts {
        let mut part = reqwest::multipart::Part::bytes(p.bytes);
        if let Some(f) = p.file_name {
            part = part.file_name(f);
        }
        if let Some(m) = p.mime {
            part = part.mime_str(m).expect("the harness's media types parse");
        }
        form = form.part(p.name, part);
    }
    form
}

/// An error with its causes, `a: b: c`.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let c = cause.to_string();
        if !s.contains(&c) {
            s.push_str(": ");
            s.push_str(&c);
        }
        source = cause.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_the_contracts_with_segments_encoded() {
        let http = Http::new("http://h:1/prefix/", Duration::from_secs(1)).unwrap();
        let p = Paths::new("org 1", "ws/2");
        assert_eq!(
            http.url(&p.deployments(), &[("limit", "1".into())])
                .as_str(),
            "http://h:1/prefix/api/app-authoring/v1/orgs/org%201/workspaces/ws%2F2/deployments?limit=1"
        );
        let p = Paths::new("o", "w");
        assert_eq!(
            http.url(&p.cohorts(Parent::Deployment("d"), &["upload"]), &[])
                .path(),
            "/prefix/api/scheduling/v1/orgs/o/workspaces/w/deployments/d/cohorts/upload"
        );
        assert_eq!(
            http.url(&p.outbounds(), &[]).path(),
            "/prefix/api/outbounds/v1/orgs/o/workspaces/w/outbounds"
        );
        assert!(Http::new("ftp://x", Duration::from_secs(1)).is_err());
        let secret = Http::new("https://u:p@h/", Duration::from_secs(1)).unwrap();
        assert_eq!(secret.shown(), "https://h/");
        assert!(Http::new("localhost:8080", Duration::from_secs(1)).is_err());
    }
}
