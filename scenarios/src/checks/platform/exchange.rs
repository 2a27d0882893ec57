//! One request to the target and what came back, kept as evidence: the request as sent
//! (method, path, query and body) and the answer (status, body, time), so that a failed
//! check shows the request that showed it and the target's answer beside what the contract
//! expects. API keys travel in a header and never appear here; the report is redacted of
//! them all the same ([`super::check`]).

use reqwest::Method;
use serde_json::{Map, Value, json};
use url::Url;

use crate::checks::Evidence;

/// The most characters of a body kept as evidence.
const EVIDENCE_BODY_CHARS: usize = 2_000;

/// A request as it was sent.
#[derive(Clone, Debug)]
pub(crate) struct Sent {
    /// `GET`, `POST`, ...
    pub(crate) method: String,
    /// The path, percent-encoded as sent.
    pub(crate) path: String,
    /// The query string, when there is one.
    pub(crate) query: Option<String>,
    /// The body: JSON as sent, a multipart body as its parts, other bytes as text; long
    /// bodies shortened.
    pub(crate) body: Option<Value>,
}

impl Sent {
    /// What a request of `method` to `url` with `body` sends.
    pub(crate) fn new(method: &Method, url: &Url, body: &Body) -> Sent {
        Sent {
            method: method.to_string(),
            path: url.path().to_string(),
            query: url.query().map(str::to_string),
            body: summary(body),
        }
    }

    /// `POST /api/...?query`.
    pub(crate) fn line(&self) -> String {
        match &self.query {
            Some(q) => format!("{} {}?{q}", self.method, self.path),
            None => format!("{} {}", self.method, self.path),
        }
    }

    /// `{method, path, query?, body?}`.
    pub(crate) fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("method".into(), json!(self.method));
        m.insert("path".into(), json!(self.path));
        if let Some(q) = &self.query {
            m.insert("query".into(), json!(q));
        }
        if let Some(b) = &self.body {
            m.insert("body".into(), b.clone());
        }
        Value::Object(m)
    }
}

/// A body as evidence.
fn summary(body: &Body) -> Option<Value> {
    match body {
        Body::Empty => None,
        Body::Json(v) => Some(shorten_json(v)),
        Body::Raw(ct, bytes) => Some(json!({
            "content_type": ct,
            "text": shorten(&String::from_utf8_lossy(bytes)),
        })),
        Body::Multipart(parts) => {
            let mut m = Map::new();
            for p in parts {
                let text = shorten(&String::from_utf8_lossy(&p.bytes));
                let shown = match (&p.file_name, p.mime) {
                    (Some(f), Some(mime)) => json!({"file": f, "type": mime, "content": text}),
                    (Some(f), None) => json!({"file": f, "content": text}),
                    _ => json!(text),
                };
                m.insert(p.name.clone(), shown);
            }
            Some(Value::Object(m))
        }
    }
}

/// `v` itself when short, else its text shortened.
fn shorten_json(v: &Value) -> Value {
    let text = v.to_string();
    if text.chars().count() <= EVIDENCE_BODY_CHARS {
        v.clone()
    } else {
        Value::String(shorten(&text))
    }
}

/// At most [`EVIDENCE_BODY_CHARS`] characters, with the full length when cut.
fn shorten(text: &str) -> String {
    if text.chars().count() <= EVIDENCE_BODY_CHARS {
        return text.to_string();
    }
    let cut: String = text.chars().take(EVIDENCE_BODY_CHARS).collect();
    format!("{cut}... ({} characters in all)", text.chars().count())
}

/// One request and what came back.
#[derive(Clone, Debug)]
pub(crate) struct Exchange {
    /// `POST /api/...?query` as sent.
    pub request: String,
    /// The request in full.
    pub(crate) sent: Sent,
    /// The status, or 0 when no answer came.
    pub status: u16,
    /// The `content-type` of the answer.
    pub(crate) content_type: Option<String>,
    /// The body as text (lossy UTF-8).
    pub(crate) text: String,
    /// The body as JSON, when it is JSON.
    pub(crate) json: Option<Value>,
    /// Why no answer came.
    pub(crate) error: Option<String>,
    /// Wall time of the call.
    pub(crate) elapsed_ms: f64,
}

impl Exchange {
    /// Whether the status is 2xx.
    pub(crate) fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The JSON body, or `null`.
    pub(crate) fn body(&self) -> &Value {
        static NULL: Value = Value::Null;
        self.json.as_ref().unwrap_or(&NULL)
    }

    /// The resource the answer holds, named by the documented operation the request was
    /// (found below any prefix of the target's base URL, from the first `/api/`).
    pub(crate) fn resource(&self) -> crate::differ::rules::Resource {
        use contracts::operations::{Catalogue, Resolved};
        let (method, rest) = self.request.split_once(' ').unwrap_or(("", ""));
        let path = rest.split(['?', '#']).next().unwrap_or("");
        let Some(at) = path.find("/api/") else {
            return crate::differ::rules::Resource::Other;
        };
        match Catalogue::platform().resolve(method, &path[at..]) {
            Resolved::Operation(_, op, _) => {
                crate::differ::rules::Resource::of_operation(&op.operation_id)
            }
            _ => crate::differ::rules::Resource::Other,
        }
    }

    /// A string field of the JSON body.
    pub(crate) fn str_field(&self, name: &str) -> Option<&str> {
        self.body().get(name).and_then(Value::as_str)
    }

    /// The answer: `{status, body, elapsed_ms}` (the body shortened), or `{error}` when none
    /// came.
    pub(crate) fn response(&self) -> Value {
        if let Some(err) = &self.error {
            return json!({"error": err});
        }
        let mut m = Map::new();
        m.insert("status".into(), json!(self.status));
        if let Some(v) = &self.json {
            m.insert("body".into(), shorten_json(v));
        } else if !self.text.is_empty() {
            m.insert("body".into(), json!(shorten(&self.text)));
        }
        m.insert(
            "elapsed_ms".into(),
            json!((self.elapsed_ms * 10.0).round() / 10.0),
        );
        Value::Object(m)
    }

    /// `{request, response}` as evidence.
    pub(crate) fn evidence(&self) -> Evidence {
        Evidence::new()
            .with("request", self.sent.to_value())
            .with("response", self.response())
    }

    /// The evidence of several exchanges, under `calls`.
    pub(crate) fn all(exchanges: &[&Exchange]) -> Evidence {
        let calls: Vec<Value> = exchanges
            .iter()
            .map(|x| Value::Object(x.evidence().0))
            .collect();
        Evidence::new().with("calls", calls)
    }

    /// `status N` or the transport error, for messages.
    pub(crate) fn outcome(&self) -> String {
        match &self.error {
            Some(e) => format!("no answer ({e})"),
            None => format!("status {}", self.status),
        }
    }
}

/// A request body.
#[derive(Clone, Debug)]
pub(crate) enum Body {
    /// No body.
    Empty,
    /// A JSON body (`content-type: application/json`).
    Json(Value),
    /// Bytes as they are, with their content type.
    Raw(&'static str, Vec<u8>),
    /// A `multipart/form-data` body.
    Multipart(Vec<FormPart>),
}

/// One part of a multipart body.
#[derive(Clone, Debug)]
pub(crate) struct FormPart {
    /// The field name.
    pub(crate) name: String,
    /// The file name, for a file part.
    pub(crate) file_name: Option<String>,
    /// Its media type, for a file part.
    pub(crate) mime: Option<&'static str>,
    /// The content.
    pub(crate) bytes: Vec<u8>,
}

impl FormPart {
    /// A text field.
    pub(crate) fn text(name: &str, value: &str) -> FormPart {
        FormPart {
            name: name.into(),
            file_name: None,
            mime: None,
            bytes: value.as_bytes().to_vec(),
        }
    }

    /// A file.
    pub(crate) fn file(
        name: &str,
        file_name: &str,
        mime: &'static str,
        bytes: Vec<u8>,
    ) -> FormPart {
        FormPart {
            name: name.into(),
            file_name: Some(file_name.into()),
            mime: Some(mime),
            bytes,
        }
    }
}

/// The `status` field of an answer.
pub(crate) fn status(x: &Exchange) -> Option<&str> {
    x.str_field("status")
}

/// The `status` field of an answer as a value (null when there is none), for
/// [`super::verdicts::Verdicts::varied`].
pub(crate) fn status_value(x: &Exchange) -> Value {
    x.body()["status"].clone()
}

/// A 4xx answer.
pub(crate) fn is_4xx(x: &Exchange) -> bool {
    (400..500).contains(&x.status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange(body: &Body, text: &str) -> Exchange {
        let url = Url::parse("http://h/api/x?limit=1").unwrap();
        let sent = Sent::new(&Method::POST, &url, body);
        Exchange {
            request: sent.line(),
            sent,
            status: 200,
            content_type: None,
            text: text.into(),
            json: serde_json::from_str(text).ok(),
            error: None,
            elapsed_ms: 1.04,
        }
    }

    #[test]
    fn evidence_has_the_request_as_sent_and_the_answer() {
        let x = exchange(&Body::Json(json!({"name": "n"})), "{\"id\": 1}");
        assert_eq!(x.request, "POST /api/x?limit=1");
        let e = x.evidence().0;
        assert_eq!(
            e["request"],
            json!({"method": "POST", "path": "/api/x", "query": "limit=1", "body": {"name": "n"}})
        );
        assert_eq!(
            e["response"],
            json!({"status": 200, "body": {"id": 1}, "elapsed_ms": 1.0})
        );
        let parts = vec![
            FormPart::text("name", "c"),
            FormPart::file("cohort_file", "u.csv", "text/csv", b"a,b\n".to_vec()),
        ];
        let e = exchange(&Body::Multipart(parts), "").evidence().0;
        assert_eq!(
            e["request"]["body"],
            json!({"name": "c", "cohort_file": {"file": "u.csv", "type": "text/csv", "content": "a,b\n"}})
        );
        assert!(e["response"].get("body").is_none());
    }

    #[test]
    fn long_bodies_are_shortened_in_evidence() {
        let x = exchange(
            &Body::Json(json!({"d": "x".repeat(3000)})),
            &"a".repeat(5000),
        );
        let e = x.evidence().0;
        let body = e["response"]["body"].as_str().unwrap();
        assert!(body.ends_with("(5000 characters in all)"), "{body}");
        let sent = e["request"]["body"].as_str().unwrap();
        assert!(sent.ends_with("characters in all)"), "{sent}");
    }
}
