//! The runner's client of the platform: every call through the platform's HTTP routes, with
//! the workspace's key, failing with the status and the body the platform answered.

use anyhow::{Context, Result};
use reqwest::Method;
use serde_json::Value;

/// A client of one platform workspace.
#[derive(Clone, Debug)]
pub(crate) struct Api {
    http: reqwest::Client,
    base: String,
    key: String,
    org: String,
    ws: String,
}

impl Api {
    /// A client of `base` (`http://127.0.0.1:PORT`) for one workspace.
    pub(crate) fn new(base: &str, key: &str, org: &str, ws: &str) -> Api {
        Api {
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(4)
                .build()
                .expect("an HTTP client without TLS settings builds"),
            base: base.trim_end_matches('/').to_string(),
            key: key.to_string(),
            org: org.to_string(),
            ws: ws.to_string(),
        }
    }

    /// `/api/scheduling/v1/orgs/{org}/workspaces/{ws}`.
    pub(crate) fn scheduling(&self) -> String {
        format!(
            "/api/scheduling/v1/orgs/{}/workspaces/{}",
            self.org, self.ws
        )
    }

    /// `/api/app-authoring/v1/orgs/{org}/workspaces/{ws}`.
    pub(crate) fn authoring(&self) -> String {
        format!(
            "/api/app-authoring/v1/orgs/{}/workspaces/{}",
            self.org, self.ws
        )
    }

    /// `/sim/v1/orgs/{org}/workspaces/{ws}`.
    pub(crate) fn sim(&self) -> String {
        format!("/sim/v1/orgs/{}/workspaces/{}", self.org, self.ws)
    }

    /// `/admin/v1/orgs/{org}/workspaces/{ws}`.
    pub(crate) fn admin(&self) -> String {
        format!("/admin/v1/orgs/{}/workspaces/{}", self.org, self.ws)
    }

    /// Sends a request; answers the JSON body (null when empty) of a 2xx answer.
    pub(crate) async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value> {
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .header("x-api-key", &self.key);
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req
            .send()
            .await
            .with_context(|| format!("{method} {path}: the platform did not answer"))?;
        answer(&method, path, resp).await
    }

    /// `GET`.
    pub(crate) async fn get(&self, path: &str) -> Result<Value> {
        self.call(Method::GET, path, None).await
    }

    /// `POST` with a JSON body.
    pub(crate) async fn post(&self, path: &str, body: &Value) -> Result<Value> {
        self.call(Method::POST, path, Some(body)).await
    }

    /// Uploads a cohort as multipart: the CSV and its transformation config.
    pub(crate) async fn upload_cohort(
        &self,
        path: &str,
        name: &str,
        category: Option<&str>,
        csv: Vec<u8>,
        transformation: &Value,
    ) -> Result<Value> {
        use reqwest::multipart::{Form, Part};
        let mut form = Form::new()
            .text("name", name.to_string())
            .part(
                "cohort_file",
                Part::bytes(csv)
                    .file_name("cohort.csv")
                    .mime_str("text/csv")?,
            )
            .part(
                "cohort_transformation_file",
                Part::bytes(serde_json::to_vec(transformation)?)
                    .file_name("transformation.json")
                    .mime_str("application/json")?,
            );
        if let Some(c) = category {
            form = form.text("cohort_category", c.to_string());
        }
        let resp = self
            .http
            .post(format!("{}{path}", self.base))
            .header("x-api-key", &self.key)
            .multipart(form)
            .send()
            .await
            .with_context(|| format!("POST {path}: the platform did not answer"))?;
        answer(&Method::POST, path, resp).await
    }
}

/// An answer of the platform that is not a success: its status and body.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{method} {path} answered {status}: {body}")]
pub(crate) struct Refused {
    /// The request's method.
    pub(crate) method: String,
    /// The request's path.
    pub(crate) path: String,
    /// The status answered.
    pub(crate) status: u16,
    /// The body answered, as text.
    pub(crate) body: String,
}

impl Refused {
    /// The body as JSON when it is, else as a string.
    pub(crate) fn body_json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|_| Value::String(self.body.clone()))
    }

    /// The platform's reason in a few words: `409 invalid_status_transition: cannot pause
    /// a campaign that is cancelled`, or the first validation failure of a 422.
    pub(crate) fn summary(&self) -> String {
        let v = self.body_json();
        let reason = if let Some(e) = v.get("error") {
            format!(
                "{}: {}",
                e["code"].as_str().unwrap_or("?"),
                e["message"].as_str().unwrap_or("")
            )
        } else if let Some(d) = v["detail"].as_array().and_then(|d| d.first()) {
            let loc: Vec<String> = d["loc"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|l| l.as_str().map_or_else(|| l.to_string(), str::to_string))
                .collect();
            format!("{}: {}", loc.join("."), d["msg"].as_str().unwrap_or(""))
        } else {
            self.body.clone()
        };
        format!("{} {reason}", self.status)
    }
}

async fn answer(method: &Method, path: &str, resp: reqwest::Response) -> Result<Value> {
    let status = resp.status();
    let bytes = resp.bytes().await.context("reading the answer")?;
    if !status.is_success() {
        return Err(Refused {
            method: method.to_string(),
            path: path.to_string(),
            status: status.as_u16(),
            body: String::from_utf8_lossy(&bytes).into_owned(),
        }
        .into());
    }
    if bytes.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(&bytes)
        .with_context(|| format!("{method} {path}: the answer is not JSON"))
}
