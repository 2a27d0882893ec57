//! One call to the key service over HTTP: the headers every call carries, the timeout, the
//! answer read into a zeroed buffer of at most [`MAX_ANSWER_BYTES`], and a successful answer
//! read as JSON.

use contracts::clock::{Stopwatch, format_instant};
use contracts::wire::byok::{HEADER_REQUEST_ID, HEADER_REQUEST_TIMESTAMP, HEADER_TRACE_ID};
use serde::Deserialize;
use zeroize::Zeroizing;

use super::error::{CallError, clean};
use super::shape::Shape;
use super::{ByokKeyService, Endpoint};
use crate::keys::{KeyCallReason, KeyServiceError};

/// The largest answer read from the key service; a larger one is unusable.
pub(crate) const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// What a call got back.
pub(super) struct Answer {
    status: u16,
    content_type: Option<String>,
    body: Zeroizing<Vec<u8>>,
}

/// How a request authenticates.
pub(super) enum Credentials<'a> {
    Basic { id: &'a str, secret: &'a str },
    Bearer(&'a str),
}

/// A string that is zeroed when dropped, read from JSON.
pub(super) struct SecretText(pub(super) Zeroizing<String>);

impl<'de> Deserialize<'de> for SecretText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(|s| SecretText(Zeroizing::new(s)))
    }
}

#[derive(Deserialize)]
struct ErrorAnswer {
    error: ErrorAnswerInfo,
}

#[derive(Deserialize)]
struct ErrorAnswerInfo {
    code: Option<String>,
    message: Option<String>,
}

impl ByokKeyService {
    /// One HTTP call with the headers every call carries; `reason` (why it is made) is
    /// recorded by its request id.
    pub(super) async fn send(
        &self,
        endpoint: Endpoint,
        trace: &str,
        credentials: Credentials<'_>,
        body: &[u8],
        form: bool,
        reason: KeyCallReason,
    ) -> Result<Answer, CallError> {
        let request_id = self.ids.uuid_v4().hyphenated().to_string();
        self.reasons.record(&request_id, reason);
        let mut req = self
            .http
            .post(self.url(endpoint))
            .timeout(self.timeout)
            .header(HEADER_REQUEST_ID, &request_id)
            .header(HEADER_REQUEST_TIMESTAMP, format_instant(self.clock.now()))
            .header(HEADER_TRACE_ID, trace)
            .header(reqwest::header::ACCEPT, "application/json")
            .header(
                reqwest::header::CONTENT_TYPE,
                if form {
                    "application/x-www-form-urlencoded"
                } else {
                    "application/json"
                },
            )
            .body(body.to_vec());
        req = match credentials {
            Credentials::Basic { id, secret } => req.basic_auth(id, Some(secret)),
            Credentials::Bearer(token) => req.bearer_auth(token),
        };
        let watch = Stopwatch::start();
        let result = self.exchange(req).await;
        let outcome = match &result {
            Ok(a) => a.status.to_string(),
            Err(CallError::Status { status, .. }) => status.to_string(),
            Err(CallError::Transport(m)) => m.clone(),
        };
        tracing::debug!(
            workspace = %self.ws, %endpoint, %request_id, trace_id = trace,
            reason = reason.as_str(), elapsed_ms = watch.elapsed_ms(), %outcome,
            "key service call"
        );
        result
    }

    async fn exchange(&self, req: reqwest::RequestBuilder) -> Result<Answer, CallError> {
        let mut resp = req.send().await.map_err(|e| self.transport(&e))?;
        let status = resp.status().as_u16();
        let header = |name| {
            resp.headers()
                .get(name)
                .and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
                .map(str::to_string)
        };
        let content_type = header(reqwest::header::CONTENT_TYPE);
        let retry_after = header(reqwest::header::RETRY_AFTER);
        // Allocated once at full size, so the buffer never moves (which would leave an
        // unzeroed copy of a key behind).
        let mut body = Zeroizing::new(Vec::with_capacity(MAX_ANSWER_BYTES));
        while let Some(chunk) = resp.chunk().await.map_err(|e| self.transport(&e))? {
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(CallError::Transport(format!(
                    "the answer is larger than {MAX_ANSWER_BYTES} bytes"
                )));
            }
            body.extend_from_slice(&chunk);
        }
        if (200..300).contains(&status) {
            return Ok(Answer {
                status,
                content_type,
                body,
            });
        }
        let (code, message) = match serde_json::from_slice::<ErrorAnswer>(&body) {
            Ok(e) => (e.error.code, e.error.message),
            Err(_) => (None, None),
        };
        Err(CallError::Status {
            status,
            code,
            message,
            retry_after,
        })
    }

    fn transport(&self, e: &reqwest::Error) -> CallError {
        CallError::Transport(if e.is_timeout() {
            format!("no answer within {} ms", self.timeout.as_millis())
        } else if e.is_connect() {
            "could not connect".to_string()
        } else if e.is_body() || e.is_decode() {
            "the answer was cut off".to_string()
        } else {
            e.to_string()
        })
    }

    /// A successful answer read as JSON of type `T` (of `shape`); anything else is unusable,
    /// and the message names the first field that is missing or of the wrong type.
    pub(super) fn json<T: serde::de::DeserializeOwned>(
        &self,
        endpoint: Endpoint,
        answer: &Answer,
        shape: &Shape,
    ) -> Result<T, KeyServiceError> {
        let ct = answer.content_type.as_deref().unwrap_or("");
        if !crate::media_type::is_json(ct) {
            return Err(KeyServiceError::Unavailable(format!(
                "{endpoint} answered {} with content type '{}', not JSON",
                answer.status,
                clean(ct)
            )));
        }
        // The parser's own message is not quoted: it could hold part of a key.
        serde_json::from_slice(&answer.body).map_err(|e| {
            KeyServiceError::Unavailable(match e.classify() {
                serde_json::error::Category::Data => {
                    let problem = serde_json::from_slice::<serde_json::Value>(&answer.body)
                        .ok()
                        .and_then(|v| shape.problem(&v));
                    match problem {
                        Some(p) => format!(
                            "{endpoint} answered {} with {p}; the interface answers {}",
                            answer.status, shape.text
                        ),
                        None => format!(
                            "{endpoint} answered {} with JSON that is not {}",
                            answer.status, shape.text
                        ),
                    }
                }
                _ => format!(
                    "{endpoint} answered {} with a body that is not JSON",
                    answer.status
                ),
            })
        })
    }
}
