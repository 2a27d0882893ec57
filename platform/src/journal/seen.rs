//! What the journal sees of one exchange: a body as it passed on the wire, what a request
//! asked before its answer, and how it was answered. Both the verdict (`verdict.rs`) and the
//! causes it names (`causes.rs`) read these.

use chrono::{DateTime, Utc};
use contracts::operations::Resolved;
use contracts::wire::AppliedFault;
use serde_json::Value;
use warp::http::{HeaderValue, Method};

use super::kept::{KeptBody, Media, Note};
use super::redact;
use crate::store::WorkspaceRef;

/// A body as seen on the wire: what was captured of it.
#[derive(Debug, Clone, Default)]
pub struct SeenBody {
    /// Its `Content-Type` (a header's value: cloning it copies nothing).
    pub content_type: Option<HeaderValue>,
    /// The bytes captured (all of them when `complete`).
    pub bytes: bytes::Bytes,
    /// Bytes that passed, captured or not.
    pub size: u64,
    /// Whether `bytes` is the whole body.
    pub complete: bool,
    /// Left unread on purpose: the body of a successful answer, which the journal's
    /// settings do not keep.
    pub not_kept: bool,
}

impl SeenBody {
    /// Its `Content-Type` as text (none when not visible ASCII).
    pub(crate) fn media_type(&self) -> Option<&str> {
        self.content_type.as_ref().and_then(|v| v.to_str().ok())
    }

    pub(super) fn is_json(&self) -> bool {
        self.media_type().is_some_and(crate::media_type::is_json)
    }

    /// The JSON, when the body is complete JSON.
    pub(super) fn parsed(&self) -> Option<Value> {
        (self.complete && !self.bytes.is_empty() && (self.is_json() || self.content_type.is_none()))
            .then(|| serde_json::from_slice(&self.bytes).ok())
            .flatten()
    }

    /// The journal's copy: redacted JSON within `limit` bytes, else a note.
    pub(super) fn record(&self, parsed: Option<&Value>, limit: usize) -> KeptBody {
        let mut out = KeptBody {
            media: Media::of(self.media_type()),
            bytes: self.size,
            json: None,
            note: Note::None,
        };
        if self.size == 0 {
            return out;
        }
        out.note = if self.not_kept {
            Note::NotKept
        } else if self.size > limit as u64 {
            Note::TooLarge(limit)
        } else if !self.complete {
            Note::NotReadToEnd
        } else if let Some(v) = parsed {
            out.json = Some(Box::new(redact::json(v)));
            return out;
        } else if self.is_json() {
            Note::NotValidJson
        } else {
            Note::NotJson
        };
        out
    }
}

/// What a request asked: everything known of it before its answer.
#[derive(Debug)]
pub struct Asked<'a> {
    /// When it arrived, on the platform's clock.
    pub at: DateTime<Utc>,
    /// The method.
    pub method: &'a Method,
    /// The path.
    pub path: &'a str,
    /// The raw query string.
    pub query: &'a str,
    /// The `X-API-Key` header, if any.
    pub api_key: Option<&'a str>,
    /// Without `X-API-Key`: where the request seems to have sent its key
    /// (`misplaced_key`).
    pub key_elsewhere: Option<&'a str>,
    /// The workspace the path names (`path_workspace`).
    pub path_workspace: Option<&'a WorkspaceRef>,
    /// What the method and path are in the document.
    pub resolved: &'a Resolved<'a>,
}

/// How a request was answered.
#[derive(Debug)]
pub struct Answered<'a> {
    /// Multipart parts the handler ignored (`IgnoredParts`).
    pub ignored_parts: &'a [String],
    /// The cohort an upload created (`AcceptedUpload`).
    pub accepted_upload: Option<&'a str>,
    /// The status answered (`None`: no answer).
    pub status: Option<u16>,
    /// Wall milliseconds until the answer.
    pub duration_ms: f64,
    /// The request body.
    pub request: &'a SeenBody,
    /// The response body.
    pub response: &'a SeenBody,
    /// The fault injected, if any.
    pub fault: Option<AppliedFault>,
    /// Whether the platform's handlers saw the request (not when a fault answered first).
    pub handled: bool,
}
