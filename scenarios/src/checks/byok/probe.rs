//! The HTTP side of the validator: one [`Probe`] sends every request, with the headers the
//! platform sends (`x-request-id`, `x-request-timestamp`, `x-trace-id`), at most
//! `--concurrency` at once, reads at most 64 KiB of each answer, and keeps a journal of the
//! answers (for the checks that judge every answer: trace echo, error bodies, secrets) and
//! every secret it handled, learnt from each request and answer as it passes (the
//! `secrets` module). Each answer keeps the request that got it ([`Sent`]), so evidence
//! shows both; nothing is shortened here (the report is, after its secrets are removed).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use contracts::clock::{Stopwatch, format_instant};
use contracts::ids::IdGen;
use contracts::wire::byok::{HEADER_REQUEST_ID, HEADER_REQUEST_TIMESTAMP, HEADER_TRACE_ID};
use reqwest::Method;
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

pub(super) use super::call::{Call, Headers, Sent};
pub(super) use super::secrets::SecretKind;
use super::secrets::Secrets;
use super::settings::Settings;
use crate::checks::Evidence;
use crate::checks::redact::Redactor;
/// The three customer-hosted endpoints (the simulator's own names for them).
pub(super) use customer_kms_sim::Endpoint;

/// Most bytes of an answer read.
pub(super) const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// An answer and what was sent to get it.
#[derive(Debug)]
pub(super) struct Exchange {
    /// The check that made the call.
    pub(crate) check: &'static str,
    /// Where it went.
    pub(crate) endpoint: Endpoint,
    /// The method used.
    pub method: Method,
    /// The `x-trace-id` sent, if any.
    pub(crate) trace_id: Option<String>,
    /// The request as sent.
    pub(crate) sent: Sent,
    /// The status.
    pub status: u16,
    /// The answer's headers.
    pub(crate) headers: HeaderMap,
    /// At most [`MAX_ANSWER_BYTES`] of the body.
    pub(crate) body: Bytes,
    /// Whether the body was longer.
    pub(crate) truncated: bool,
    /// Wall time from sending to the end of the body.
    pub(crate) elapsed: Duration,
}

impl Exchange {
    /// A header's value as text.
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Whether `Content-Type` is JSON (`application/json` or `+json`, any parameters).
    pub(crate) fn is_json_labelled(&self) -> bool {
        self.header(CONTENT_TYPE.as_str())
            .map(|v| {
                v.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase()
            })
            .is_some_and(|v| v == "application/json" || v.ends_with("+json"))
    }

    /// The body as JSON, when it is.
    pub(super) fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The body as shown in evidence: JSON when it is, else the text (whole: the report
    /// cuts long strings once their secrets are removed).
    pub(crate) fn body_evidence(&self) -> Value {
        if let Some(v) = self.json() {
            return v;
        }
        let mut text = String::from_utf8_lossy(&self.body).into_owned();
        if self.truncated {
            text.push_str("... (more than 64 KiB)");
        }
        Value::String(text)
    }

    /// The request sent, then the answer's status, content type, body and time, as
    /// evidence.
    pub(super) fn evidence(&self) -> Evidence {
        let mut e = Evidence::new().with("request", self.sent.to_value());
        e = e.status(self.status);
        if let Some(ct) = self.header(CONTENT_TYPE.as_str()) {
            e = e.with("content_type", ct);
        }
        e.body(self.body_evidence())
            .elapsed_ms(self.elapsed.as_secs_f64() * 1000.0)
    }

    /// `POST /decrypt-key`.
    pub(crate) fn request_line(&self) -> String {
        format!("{} /{}", self.method, self.endpoint.as_str())
    }
}

/// Why a request got no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CallErrorKind {
    /// Nothing listens, or the address does not resolve.
    Connect,
    /// No answer in time.
    Timeout,
    /// The TLS handshake failed: the certificate, or the protocol.
    Tls,
    /// The certificate chain did not verify.
    Certificate,
    /// Bytes came back that are not HTTP, or the connection closed mid-answer.
    Protocol,
}

/// A request that got no answer.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct CallError {
    /// The kind.
    pub(crate) kind: CallErrorKind,
    /// What happened, with the underlying causes.
    pub(crate) message: String,
    /// The request, when it was made.
    pub(crate) sent: Option<Box<Sent>>,
}

impl CallError {
    /// As evidence: the request sent (or `call`, `POST /auth`, when none was made) and
    /// what happened.
    pub(super) fn evidence(&self, call: &str) -> Evidence {
        let request = match &self.sent {
            Some(s) => s.to_value(),
            None => Value::String(call.to_string()),
        };
        Evidence::new()
            .with("request", request)
            .with("error", self.message.clone())
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Sends requests, keeps the journal and the secrets.
pub(crate) struct Probe {
    client: reqwest::Client,
    urls: [String; 3],
    paths: [String; 3],
    limit: Semaphore,
    journal: Mutex<Vec<Arc<Exchange>>>,
    secrets: Secrets,
    ids: IdGen,
    /// Requests sent so far (every other one's trace id is in upper case).
    sent: std::sync::atomic::AtomicUsize,
    timeout: Duration,
    time: super::time::CheckTime,
}

impl Probe {
    /// A probe for `settings`: the HTTP client with its TLS files read.
    pub(super) fn new(settings: &Settings) -> anyhow::Result<Probe> {
        let timeout = Duration::from_millis(settings.timeout_ms);
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("harness-check-byok/", env!("CARGO_PKG_VERSION")));
        if let Some(path) = &settings.tls.ca_cert {
            let pem = std::fs::read(path)
                .map_err(|e| anyhow::anyhow!("cannot read --ca-cert {}: {e}", path.display()))?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
                anyhow::anyhow!("--ca-cert {} is not PEM certificates: {e}", path.display())
            })?;
            if certs.is_empty() {
                anyhow::bail!("--ca-cert {} holds no certificate", path.display());
            }
            for c in certs {
                builder = builder.add_root_certificate(c);
            }
        }
        if let Some((cert, key)) = &settings.tls.client_identity {
            let mut pem = std::fs::read(cert).map_err(|e| {
                anyhow::anyhow!("cannot read --client-cert {}: {e}", cert.display())
            })?;
            pem.push(b'\n');
            pem.extend(
                std::fs::read(key).map_err(|e| {
                    anyhow::anyhow!("cannot read --client-key {}: {e}", key.display())
                })?,
            );
            let identity = reqwest::Identity::from_pem(&pem).map_err(|e| {
                anyhow::anyhow!(
                    "--client-cert {} and --client-key {} are not a PEM certificate and \
                     private key: {e}",
                    cert.display(),
                    key.display()
                )
            })?;
            builder = builder.identity(identity);
        }
        let client = builder
            .build()
            .map_err(|e| anyhow::anyhow!("cannot set up the HTTP client: {}", chain(&e)))?;
        let urls = [Endpoint::Auth, Endpoint::DecryptKey, Endpoint::RotateKey]
            .map(|e| settings.endpoint_url(e.as_str()));
        let paths = urls.clone().map(|u| {
            url::Url::parse(&u)
                .map(|u| u.path().to_string())
                .unwrap_or(u)
        });
        let mut probe = Probe {
            client,
            urls,
            paths,
            limit: Semaphore::new(settings.concurrency),
            journal: Mutex::new(Vec::new()),
            secrets: Secrets::new(settings.public_values()),
            ids: IdGen::from_entropy(),
            sent: std::sync::atomic::AtomicUsize::new(0),
            time: settings.time.clone(),
            timeout,
        };
        probe.secrets.given(settings.credential());
        if let Some(k) = &settings.key {
            probe.secret(k.expected_plaintext.expose(), SecretKind::Plaintext);
        }
        Ok(probe)
    }

    /// The URL of an endpoint.
    pub(super) fn url(&self, endpoint: Endpoint) -> &str {
        &self.urls[Self::index(endpoint)]
    }

    fn index(endpoint: Endpoint) -> usize {
        match endpoint {
            Endpoint::Auth => 0,
            Endpoint::DecryptKey => 1,
            Endpoint::RotateKey => 2,
        }
    }

    /// Remembers a secret: it is redacted from the report and looked for in answers.
    pub(super) fn secret(&self, value: impl Into<String>, kind: SecretKind) {
        self.secrets.add(value, kind);
    }

    /// A redactor of every secret handled so far.
    pub(super) fn redactor(&self) -> Redactor {
        self.secrets.redactor()
    }

    /// Every secret handled so far.
    pub(super) fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// Every answer recorded so far, in arrival order.
    pub(super) fn journal(&self) -> Vec<Arc<Exchange>> {
        self.journal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Sends `call` for `check` and records the answer in the journal.
    pub(super) async fn send(
        &self,
        check: &'static str,
        call: Call,
    ) -> Result<Arc<Exchange>, CallError> {
        let ex = Arc::new(self.exchange(check, call).await?);
        self.journal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(ex.clone());
        Ok(ex)
    }

    /// Sends `call` without recording the answer (the load phase).
    pub(crate) async fn send_unrecorded(
        &self,
        check: &'static str,
        call: Call,
    ) -> Result<Exchange, CallError> {
        self.exchange(check, call).await
    }

    /// Sends `call` as raw HTTP/1.1 with `Content-Length: {content_length}` as given (a
    /// value no client library sends, such as `abc`), over plain http only (`None` over
    /// https); answers the status and body the service gave, unrecorded.
    pub(crate) async fn raw(
        &self,
        check: &'static str,
        call: Call,
        content_length: &str,
    ) -> Option<Result<Exchange, CallError>> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let url = url::Url::parse(self.url(call.endpoint)).ok()?;
        if url.scheme() != "http" {
            return None;
        }
        let host = url.host_str()?.to_string();
        let port = url.port_or_known_default()?;
        let _permit = self
            .limit
            .acquire()
            .await
            .expect("the semaphore is never closed");
        let mut sent = Sent::new(call.method.clone(), url.path());
        sent.headers
            .push((HEADER_REQUEST_ID, self.ids.uuid_v4().to_string()));
        sent.headers
            .push((HEADER_REQUEST_TIMESTAMP, format_instant(self.time.now())));
        if let Some(a) = &call.authorization {
            sent.headers.push(("authorization", a.clone()));
        }
        sent.headers
            .push(("content-type", "application/json".to_string()));
        sent.headers
            .push(("content-length", content_length.to_string()));
        sent.headers.push(("connection", "close".to_string()));
        sent.body = Sent::body_of(&call.body);
        let mut head = format!(
            "{} {} HTTP/1.1\r\nhost: {host}:{port}\r\n",
            call.method,
            url.path()
        );
        for (name, value) in &sent.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let watch = Stopwatch::start();
        let failed = |what: String| CallError {
            kind: CallErrorKind::Protocol,
            message: what,
            sent: Some(Box::new(sent.clone())),
        };
        let talk = async {
            let mut stream = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(&call.body).await?;
            let mut answer = Vec::new();
            let _ = stream.read_to_end(&mut answer).await;
            Ok::<_, std::io::Error>(answer)
        };
        let answer = match tokio::time::timeout(self.timeout, talk).await {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => return Some(Err(failed(format!("the connection failed: {e}")))),
            Err(_) => return Some(Err(failed("no answer in time".into()))),
        };
        let text = String::from_utf8_lossy(&answer);
        let status = text
            .lines()
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|c| c.parse::<u16>().ok());
        let Some(status) = status else {
            return Some(Err(failed(
                "the connection closed without an HTTP answer".into(),
            )));
        };
        let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
        Some(Ok(Exchange {
            check,
            endpoint: call.endpoint,
            method: call.method,
            trace_id: None,
            sent,
            status,
            headers: HeaderMap::new(),
            body: Bytes::from(body.as_bytes().to_vec()),
            truncated: false,
            elapsed: watch.elapsed(),
        }))
    }

    async fn exchange(&self, check: &'static str, call: Call) -> Result<Exchange, CallError> {
        let _permit = self
            .limit
            .acquire()
            .await
            .expect("the semaphore is never closed");
        let base = self.url(call.endpoint);
        let path = &self.paths[Self::index(call.endpoint)];
        let (url, path) = match &call.query {
            Some(q) => (format!("{base}?{q}"), format!("{path}?{q}")),
            None => (base.to_string(), path.clone()),
        };
        let url = url.as_str();
        let mut sent = Sent::new(call.method.clone(), path);
        sent.headers
            .push((HEADER_REQUEST_ID, self.ids.uuid_v4().to_string()));
        let now = self.time.now();
        let timestamp = match call.headers {
            Headers::TimestampAgo(secs) => now - chrono::Duration::seconds(secs),
            _ => now,
        };
        sent.headers
            .push((HEADER_REQUEST_TIMESTAMP, format_instant(timestamp)));
        // Every other trace id in upper case: a UUID is the same in either case, and its
        // echo must be the text sent.
        let upper = self.sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 2 == 1;
        let mut trace_id = (call.headers != Headers::NoTraceId).then(|| {
            let t = self.ids.uuid_v4().to_string();
            if upper { t.to_ascii_uppercase() } else { t }
        });
        if let Some(t) = &trace_id {
            sent.headers.push((HEADER_TRACE_ID, t.clone()));
        }
        if let Headers::Override(name, value) = call.headers {
            sent.headers.retain(|(n, _)| *n != name);
            if let Some(v) = value {
                sent.headers.push((name, v.to_string()));
            }
            if name == HEADER_TRACE_ID {
                // What is echoed of a malformed trace id is not judged.
                trace_id = None;
            }
        }
        if let Some(a) = &call.authorization {
            self.secrets.learn_request(Some(a));
            sent.headers.push(("authorization", a.clone()));
        }
        if let Some(ct) = call.content_type {
            sent.headers.push(("content-type", ct.to_string()));
        }
        if call.close {
            sent.headers.push(("connection", "close".to_string()));
        }
        sent.headers.extend(call.extra.iter().cloned());
        sent.body = Sent::body_of(&call.body);
        let mut req = self.client.request(call.method.clone(), url);
        for (name, value) in &sent.headers {
            req = req.header(*name, value);
        }
        if call.chunked {
            // reqwest sends a body of unknown length chunked.
            sent.headers
                .push(("transfer-encoding", "chunked".to_string()));
            let chunks: Vec<Result<Bytes, std::io::Error>> = call
                .body
                .chunks(16 * 1024)
                .map(|c| Ok(Bytes::copy_from_slice(c)))
                .collect();
            req = req.body(reqwest::Body::wrap_stream(futures_util::stream::iter(
                chunks,
            )));
        } else if !call.body.is_empty() {
            req = req.body(call.body);
        }
        let watch = Stopwatch::start();
        let failed = |e: &reqwest::Error| {
            let mut err = self.classify(e, url);
            err.sent = Some(Box::new(sent.clone()));
            err
        };
        let mut resp = req.send().await.map_err(|e| failed(&e))?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let mut body = Vec::new();
        let mut truncated = false;
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    let room = MAX_ANSWER_BYTES - body.len();
                    if chunk.len() > room {
                        body.extend_from_slice(&chunk[..room]);
                        truncated = true;
                        break;
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => return Err(failed(&e)),
            }
        }
        self.secrets.learn_answer(call.endpoint, status, &body);
        Ok(Exchange {
            check,
            endpoint: call.endpoint,
            method: call.method,
            trace_id,
            sent,
            status,
            headers,
            body: Bytes::from(body),
            truncated,
            elapsed: watch.elapsed(),
        })
    }

    fn classify(&self, e: &reqwest::Error, url: &str) -> CallError {
        let causes = chain(e);
        let lower = causes.to_ascii_lowercase();
        let (kind, what) = if e.is_timeout() {
            (
                CallErrorKind::Timeout,
                format!("no answer within {} ms", self.timeout.as_millis()),
            )
        } else if lower.contains("invalid peer certificate") {
            (
                CallErrorKind::Certificate,
                "the TLS certificate did not verify".to_string(),
            )
        } else if lower.contains("tls")
            || lower.contains("handshake")
            || lower.contains("alert")
            || lower.contains("ssl")
        {
            (CallErrorKind::Tls, "the TLS handshake failed".to_string())
        } else if e.is_connect() {
            (CallErrorKind::Connect, "could not connect".to_string())
        } else {
            (
                CallErrorKind::Protocol,
                "the answer is not HTTP, or the connection closed before it ended".to_string(),
            )
        };
        CallError {
            kind,
            message: format!("{what}: {url}: {causes}"),
            sent: None,
        }
    }
}

/// An error and its causes, `: `-separated, without repeats.
pub(super) fn chain(e: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

/// Evidence of a call that got no answer or an answer.
pub(crate) fn outcome_evidence(call: &str, result: &Result<Arc<Exchange>, CallError>) -> Evidence {
    match result {
        Ok(ex) => ex.evidence(),
        Err(e) => e.evidence(call),
    }
}

/// A JSON value's type, for messages.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `{"data": {...}}` of a body, when it has that shape.
pub(crate) fn data_object(body: &Value) -> Option<&serde_json::Map<String, Value>> {
    body.get("data")?.as_object()
}

/// The JSON body of a decrypt request.
pub(crate) fn decrypt_body(alias: &str, encrypted_key: &str) -> Value {
    json!({"data": {"key_alias": alias, "encrypted_key": encrypted_key}})
}
