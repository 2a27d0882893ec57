//! What the validator sends: a [`Call`] (endpoint, method, credentials, body, which tracing
//! headers) and, once sent, the [`Sent`] request that evidence shows beside its answer.

use reqwest::Method;
use serde_json::{Value, json};

use contracts::wire::byok::Endpoint;

/// Request bodies longer than this are shown by their size only.
const MAX_SENT_BODY: usize = 64 * 1024;

/// Which tracing headers a call carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Headers {
    /// `x-request-id`, `x-request-timestamp` (now) and `x-trace-id`, as the platform sends.
    Standard,
    /// The same without the optional `x-trace-id`.
    NoTraceId,
    /// The standard headers with the timestamp this many seconds in the past.
    TimestampAgo(i64),
    /// The standard headers with one of them set to another value, or left out (`None`).
    Override(&'static str, Option<&'static str>),
}

/// One request.
#[derive(Clone, Debug)]
pub(super) struct Call {
    /// Where.
    pub(crate) endpoint: Endpoint,
    /// How.
    pub(crate) method: Method,
    /// The whole `Authorization` value, if any.
    pub(crate) authorization: Option<String>,
    /// The `Content-Type`, if any.
    pub(crate) content_type: Option<&'static str>,
    /// The body.
    pub(crate) body: Vec<u8>,
    /// Which tracing headers.
    pub(crate) headers: Headers,
    /// Sends `Connection: close`: the connection is not used again (for a body the service
    /// may refuse without reading, which would leave the connection unusable).
    pub(crate) close: bool,
    /// Sends the body in chunks (`Transfer-Encoding: chunked`), without `Content-Length`.
    pub(crate) chunked: bool,
    /// A query string (without `?`).
    pub(crate) query: Option<String>,
    /// More headers (a cookie).
    pub(crate) extra: Vec<(&'static str, String)>,
}

impl Call {
    /// A POST without body or credentials, with the standard headers.
    pub(super) fn post(endpoint: Endpoint) -> Call {
        Call {
            endpoint,
            method: Method::POST,
            authorization: None,
            content_type: None,
            body: Vec::new(),
            headers: Headers::Standard,
            close: false,
            chunked: false,
            query: None,
            extra: Vec::new(),
        }
    }

    /// Adds a header.
    pub(crate) fn header(mut self, name: &'static str, value: impl Into<String>) -> Call {
        self.extra.push((name, value.into()));
        self
    }

    /// Adds a query string (without `?`).
    pub(crate) fn query(mut self, query: impl Into<String>) -> Call {
        self.query = Some(query.into());
        self
    }

    /// Sends the body in chunks, without announcing its length.
    pub(crate) fn chunked(mut self) -> Call {
        self.chunked = true;
        self
    }

    /// Any body, with any `Content-Type` or none.
    pub(super) fn raw(
        mut self,
        body: impl Into<Vec<u8>>,
        content_type: Option<&'static str>,
    ) -> Call {
        self.body = body.into();
        self.content_type = content_type;
        self
    }

    /// Closes the connection after this call.
    pub(crate) fn close_connection(mut self) -> Call {
        self.close = true;
        self
    }

    /// Sets `Authorization`.
    pub(super) fn authorization(mut self, value: impl Into<String>) -> Call {
        self.authorization = Some(value.into());
        self
    }

    /// Sets `Authorization` to `value` when there is one.
    pub(crate) fn maybe_authorization(mut self, value: Option<String>) -> Call {
        self.authorization = value;
        self
    }

    /// A JSON body, labelled `application/json`.
    pub(super) fn json(mut self, body: &Value) -> Call {
        self.body = body.to_string().into_bytes();
        self.content_type = Some("application/json");
        self
    }

    /// A form body, labelled `application/x-www-form-urlencoded`.
    pub(super) fn form(mut self, body: &str) -> Call {
        self.body = body.as_bytes().to_vec();
        self.content_type = Some("application/x-www-form-urlencoded");
        self
    }

    /// Sets the method.
    pub(super) fn method(mut self, method: Method) -> Call {
        self.method = method;
        self
    }

    /// Sets the tracing headers.
    pub(super) fn headers(mut self, headers: Headers) -> Call {
        self.headers = headers;
        self
    }
}

/// A request as it was sent: method, URL path, headers and body (secrets are removed from
/// the report later, with everything else).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Sent {
    /// The method.
    pub(crate) method: Method,
    /// The URL path (`/acme/byok/v1/decrypt-key`).
    pub(crate) path: String,
    /// The headers the validator set, in the order set.
    pub(crate) headers: Vec<(&'static str, String)>,
    /// The body: JSON when it is, else text; a body over 64 KiB by its size.
    pub(crate) body: Option<Value>,
}

impl Sent {
    /// A request without headers or body.
    pub(super) fn new(method: Method, path: impl Into<String>) -> Sent {
        Sent {
            method,
            path: path.into(),
            headers: Vec::new(),
            body: None,
        }
    }

    /// `{"method", "path", "headers": {...}, "body"}`, as evidence.
    pub(super) fn to_value(&self) -> Value {
        let headers: serde_json::Map<String, Value> = self
            .headers
            .iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.clone())))
            .collect();
        let mut v = json!({
            "method": self.method.as_str(),
            "path": self.path,
            "headers": headers,
        });
        if let Some(b) = &self.body {
            v["body"] = b.clone();
        }
        v
    }

    pub(super) fn body_of(body: &[u8]) -> Option<Value> {
        if body.is_empty() {
            return None;
        }
        if body.len() > MAX_SENT_BODY {
            return Some(json!({"bytes": body.len()}));
        }
        Some(
            serde_json::from_slice(body)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned())),
        )
    }
}
