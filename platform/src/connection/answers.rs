//! The answers of the HTTP layer itself, in the platform's error shape
//! `{"error": {"message", "type", "code"}}`: as responses for the request service, and as raw
//! bytes for the connection to write once hyper has given it up.

use contracts::error::PlatformErrorBody;
use warp::http::header::{CONNECTION, HeaderValue};
use warp::http::{Response as HttpResponse, StatusCode};
use warp::reply::Response;

use super::{MAX_HEAD_BYTES, MAX_HEADERS, MAX_URI_BYTES};
use crate::error::json_response;

/// Why the HTTP layer refuses a request, before any route sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The request line or a header field is not HTTP/1.1 (400).
    Malformed,
    /// The request target is longer than [`MAX_URI_BYTES`] (414).
    UriTooLong,
    /// More than [`MAX_HEADERS`] header fields, or more than [`MAX_HEAD_BYTES`] (431).
    HeadersTooLarge,
    /// The header section did not arrive within the header read timeout (408).
    HeadTimeout {
        /// The timeout in milliseconds.
        ms: u64,
    },
    /// The body stopped arriving for longer than the body read timeout (408).
    BodyTimeout {
        /// The timeout in milliseconds.
        ms: u64,
    },
    /// The body arrived slower than the least average rate (408).
    BodyTooSlow {
        /// The least average rate, bytes per second.
        min_rate: u64,
        /// The grace before the rate counts, in milliseconds (the body read timeout).
        grace_ms: u64,
    },
    /// The body is not what its framing says (a broken chunk) (400).
    BodyMalformed,
}

impl Refusal {
    /// The refusal of hyper's automatic answer with this status (400, 414 or 431).
    pub(crate) fn of_status(status: u16) -> Option<Refusal> {
        match status {
            400 => Some(Refusal::Malformed),
            414 => Some(Refusal::UriTooLong),
            431 => Some(Refusal::HeadersTooLarge),
            _ => None,
        }
    }

    /// The status.
    pub(crate) fn status(self) -> StatusCode {
        match self {
            Refusal::Malformed | Refusal::BodyMalformed => StatusCode::BAD_REQUEST,
            Refusal::UriTooLong => StatusCode::URI_TOO_LONG,
            Refusal::HeadersTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Refusal::HeadTimeout { .. }
            | Refusal::BodyTimeout { .. }
            | Refusal::BodyTooSlow { .. } => StatusCode::REQUEST_TIMEOUT,
        }
    }

    /// The error body: type, code and a message that says how to fix the request.
    pub(crate) fn body(self) -> PlatformErrorBody {
        let (code, message) = match self {
            Refusal::Malformed => (
                "bad_request",
                "the request line or a header field is not valid HTTP/1.1 (RFC 9112): send \
                 `METHOD /path HTTP/1.1`, then one `Name: value` line per header field"
                    .to_string(),
            ),
            Refusal::UriTooLong => (
                "uri_too_long",
                format!(
                    "the request target is longer than {MAX_URI_BYTES} bytes; send long values in \
                     a JSON body"
                ),
            ),
            Refusal::HeadersTooLarge => (
                "request_header_fields_too_large",
                format!(
                    "the header section is too large: at most {MAX_HEADERS} header fields and \
                     {MAX_HEAD_BYTES} bytes with the request line"
                ),
            ),
            Refusal::HeadTimeout { ms } => (
                "request_timeout",
                format!(
                    "the request's header section did not arrive within {ms} ms; send the whole \
                     head at once"
                ),
            ),
            Refusal::BodyTimeout { ms } => (
                "request_timeout",
                format!(
                    "the request body stalled: nothing arrived for {ms} ms; send the body without \
                     pauses (Content-Length or chunked)"
                ),
            ),
            Refusal::BodyTooSlow { min_rate, grace_ms } => (
                "request_timeout",
                format!(
                    "the request body arrived too slowly: a body must arrive within {grace_ms} \
                     ms plus one second per {min_rate} bytes; send it at once"
                ),
            ),
            Refusal::BodyMalformed => (
                "bad_request",
                "the request body does not match its framing (a chunk of `Transfer-Encoding: \
                 chunked` is malformed, or the connection ended early): send \
                 `Content-Length` bytes, or chunks of `<hex size>\\r\\n<data>\\r\\n` ending \
                 with `0\\r\\n\\r\\n`"
                    .to_string(),
            ),
        };
        PlatformErrorBody::new("invalid_request_error", code, message)
    }

    /// The answer as a response, announcing that the connection closes after it.
    pub(crate) fn response(self) -> Response {
        let mut r = json_response(self.status(), &self.body());
        close_after(&mut r);
        r
    }

    /// The answer as the raw bytes of an HTTP/1.1 response that closes the connection.
    pub(crate) fn raw(self) -> Vec<u8> {
        let body = serde_json::to_vec(&self.body()).expect("error bodies serialise");
        let status = self.status();
        let mut out = format!(
            "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            status.as_u16(),
            status.canonical_reason().unwrap_or(""),
            body.len()
        )
        .into_bytes();
        out.extend_from_slice(&body);
        out
    }
}

/// Adds `Connection: close`: the client learns that the connection ends after this answer
/// and sends its next request on a new one.
pub(crate) fn close_after<B>(r: &mut HttpResponse<B>) {
    r.headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
}

/// The status of `bytes` if they are exactly one of hyper's automatic answers to a request
/// head it could not parse: `HTTP/1.1 400|414|431 <reason>`, a head only (it ends with the
/// blank line), `content-length: 0` and no `content-type`. The platform's own answers with
/// these statuses always carry a JSON body, so they never look like this.
pub(crate) fn automatic_status(bytes: &[u8]) -> Option<u16> {
    let text = std::str::from_utf8(bytes).ok()?;
    let rest = text.strip_prefix("HTTP/1.1 ")?;
    let status: u16 = rest.get(..3)?.parse().ok()?;
    Refusal::of_status(status)?;
    let head = text.strip_suffix("\r\n\r\n")?;
    if head.contains("\r\n\r\n") {
        return None;
    }
    let lower = head.to_ascii_lowercase();
    let fields: Vec<&str> = lower.split("\r\n").skip(1).collect();
    let empty = fields
        .iter()
        .any(|f| f.replace(' ', "") == "content-length:0");
    let typed = fields.iter().any(|f| f.starts_with("content-type:"));
    (empty && !typed).then_some(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hyper_automatic_answers_are_recognised_and_nothing_else() {
        let auto = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: Mon, 02 Mar 2026 12:00:00 GMT\r\n\r\n";
        assert_eq!(automatic_status(auto), Some(431));
        assert_eq!(
            automatic_status(
                b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"
            ),
            Some(400)
        );
        for other in [
            &b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"[..],
            b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n{}",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n",
            b"{\"error\": {}}",
            b"",
        ] {
            assert_eq!(automatic_status(other), None, "{:?}", String::from_utf8_lossy(other));
        }
    }

    #[test]
    fn raw_answers_are_complete_http_responses_in_the_error_shape() {
        let raw = Refusal::UriTooLong.raw();
        let text = String::from_utf8(raw).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{head}");
        assert!(head.contains("connection: close"));
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], "uri_too_long");
        assert_eq!(v["error"]["type"], "invalid_request_error");
        assert_eq!(
            automatic_status(text.as_bytes()),
            None,
            "ours are not hyper's"
        );
    }
}
