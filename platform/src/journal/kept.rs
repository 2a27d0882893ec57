//! The form in which the ring keeps a request: judged and redacted like the wire's
//! [`JournalEntry`], but in one allocation for a request that conforms (its texts,
//! [`Texts`]; more only for violations, kept bodies and faults) instead of twenty, so that
//! recording a request (and dropping the oldest when the ring is full) costs the platform
//! little. The wire entry is built when the journal is listed ([`Kept::to_entry`]); what it
//! repeats of the OpenAPI document (operation id, path template, org and workspace) comes
//! from the catalogue then.

use chrono::{DateTime, Utc};
use contracts::operations::{Catalogue, Resolved};
use contracts::wire::{
    ApiKeyUse, AppliedFault, JournalBody, JournalEntry, UploadedCohort, Verdict, Violation,
    ViolationExample, ViolationKind, WorkspaceId,
};
use serde_json::{Map, Value};
use warp::http::Method;

use crate::store::WorkspaceRef;

/// The media type of a body, as kept.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Media {
    /// No `Content-Type`.
    None,
    /// Exactly `application/json`, the type of nearly every body.
    Json,
    /// Another type, as sent.
    Other(Box<str>),
}

impl Media {
    /// The media type of a `Content-Type` header.
    pub(crate) fn of(content_type: Option<&str>) -> Media {
        match content_type {
            None => Media::None,
            Some("application/json") => Media::Json,
            Some(other) => Media::Other(other.into()),
        }
    }

    fn text(&self) -> Option<String> {
        match self {
            Media::None => None,
            Media::Json => Some("application/json".into()),
            Media::Other(t) => Some(t.to_string()),
        }
    }
}

/// Why a body's JSON is not kept, when a body was there.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Note {
    /// Its JSON is kept, or there was no body.
    None,
    /// Larger than the body limit (in bytes).
    TooLarge(usize),
    /// The platform did not read it to the end.
    NotReadToEnd,
    /// Said to be JSON, but not JSON.
    NotValidJson,
    /// Not JSON.
    NotJson,
    /// The body of a successful answer, which the settings do not keep.
    NotKept,
    /// As an earlier run wrote it in the database.
    Text(Box<str>),
}

impl Note {
    fn text(&self) -> Option<String> {
        Some(match self {
            Note::None => return None,
            Note::TooLarge(limit) => {
                format!("larger than the journal's body limit of {limit} bytes")
            }
            Note::NotReadToEnd => "not read to the end by the platform".into(),
            Note::NotValidJson => "not valid JSON".into(),
            Note::NotJson => "not JSON".into(),
            Note::NotKept => "not kept: the journal keeps the bodies of answers of 400 and above ([journal] response_bodies = \"all\" keeps every one)".into(),
            Note::Text(t) => t.to_string(),
        })
    }
}

/// A request or response body, as kept.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KeptBody {
    /// Its media type.
    pub(crate) media: Media,
    /// Its size in bytes.
    pub(crate) bytes: u64,
    /// Its JSON, redacted.
    pub(crate) json: Option<Box<Value>>,
    /// Why the JSON is absent.
    pub(crate) note: Note,
}

impl KeptBody {
    fn to_wire(&self) -> JournalBody {
        JournalBody {
            content_type: self.media.text(),
            bytes: self.bytes,
            json: self.json.as_deref().cloned(),
            note: self.note.text(),
        }
    }

    fn from_wire(b: JournalBody) -> KeptBody {
        KeptBody {
            media: Media::of(b.content_type.as_deref()),
            bytes: b.bytes,
            json: b.json.map(Box::new),
            note: b.note.map_or(Note::None, |t| Note::Text(t.into())),
        }
    }
}

/// The text an entry keeps of its request: the path as requested, the query as kept
/// (redacted, URL-encoded) and the configured name of a valid key, in one allocation
/// (recording a request allocates once for them, and dropping the oldest frees once).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Texts {
    /// The path, then the query, then the key's name.
    all: Box<str>,
    /// Where the path ends in `all`.
    path_end: u32,
    /// Where the query ends in `all`.
    query_end: u32,
    /// Whether a key's name follows (a valid key's name may be empty).
    named: bool,
}

impl Texts {
    /// The texts of a request to `path` with its kept `query`, sent with the key named
    /// `key_name` (`None`: no valid key).
    pub(crate) fn new(path: &str, query: &str, key_name: Option<&str>) -> Texts {
        let name = key_name.unwrap_or("");
        let mut all = String::with_capacity(path.len() + query.len() + name.len());
        all.push_str(path);
        all.push_str(query);
        all.push_str(name);
        // A request's target is far below 4 GiB (the server refuses long ones first).
        let end = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Texts {
            path_end: end(path.len()),
            query_end: end(path.len() + query.len()),
            all: all.into_boxed_str(),
            named: key_name.is_some(),
        }
    }

    /// The path as requested.
    pub(crate) fn path(&self) -> &str {
        &self.all[..self.path_end as usize]
    }

    /// The query as kept: redacted, URL-encoded.
    pub(crate) fn query(&self) -> &str {
        &self.all[self.path_end as usize..self.query_end as usize]
    }

    /// The configured name of a valid key.
    pub(crate) fn key_name(&self) -> Option<&str> {
        self.named.then(|| &self.all[self.query_end as usize..])
    }
}

/// One request in the ring.
#[derive(Debug, Clone, PartialEq)]
pub struct Kept {
    /// Its number.
    pub(crate) seq: u64,
    /// When it arrived, on the platform's clock.
    pub(crate) at: DateTime<Utc>,
    /// The method.
    pub(crate) method: Method,
    /// The path, the query and the key's name.
    pub(crate) texts: Texts,
    /// The operation's index in the catalogue.
    pub(crate) operation: Option<u16>,
    /// What the key was.
    pub(crate) api_key: ApiKeyUse,
    /// The status answered.
    pub(crate) status: Option<u16>,
    /// Wall milliseconds until the answer.
    pub(crate) duration_ms: f64,
    /// The request body.
    pub(crate) request: KeptBody,
    /// The response body.
    pub(crate) response: KeptBody,
    /// The verdict.
    pub(crate) verdict: Verdict,
    /// How it breaks the contract.
    pub(crate) violations: Vec<Violation>,
    /// What real platforms treat otherwise (not violations).
    pub(crate) warnings: Vec<Violation>,
    /// The fault injected, if any.
    pub(crate) fault: Option<Box<AppliedFault>>,
    /// The cohort an upload answered 200 created, and what became of its file.
    pub(crate) cohort: Option<Box<UploadedCohort>>,
    /// The number of the workspace it belongs to, given by the journal when recorded.
    pub(crate) owner: Option<u32>,
}

impl Kept {
    /// The operation id of the entry: `unknown` filters match entries without one.
    pub(crate) fn operation_id<'c>(&self, catalogue: &'c Catalogue) -> Option<&'c str> {
        self.operation
            .and_then(|i| catalogue.operations().get(usize::from(i)))
            .map(|o| o.operation_id.as_str())
    }

    /// The summary's example of this entry.
    pub(crate) fn example(&self) -> ViolationExample {
        ViolationExample {
            seq: self.seq,
            method: self.method.as_str().to_string(),
            path: self.texts.path().to_string(),
            status: self.status,
            violations: self.violations.clone(),
        }
    }

    /// The summary's example of this entry's warnings of `kind`, when it has any.
    pub(crate) fn warning_example(&self, kind: ViolationKind) -> Option<ViolationExample> {
        let of_kind: Vec<Violation> = self
            .warnings
            .iter()
            .filter(|w| w.kind == kind)
            .cloned()
            .collect();
        (!of_kind.is_empty()).then(|| ViolationExample {
            seq: self.seq,
            method: self.method.as_str().to_string(),
            path: self.texts.path().to_string(),
            status: self.status,
            violations: of_kind,
        })
    }

    /// The answer's `error.message`, when its body was kept.
    pub(crate) fn error_message(&self) -> Option<String> {
        self.response
            .json
            .as_deref()?
            .pointer("/error/message")?
            .as_str()
            .map(str::to_string)
    }

    /// The wire entry, of the workspace `owner`.
    pub(crate) fn to_entry(
        &self,
        catalogue: &Catalogue,
        owner: Option<&WorkspaceRef>,
    ) -> JournalEntry {
        let (operation_id, path_template, org_id, workspace_id) =
            match catalogue.resolve(self.method.as_str(), self.texts.path()) {
                Resolved::Operation(_, op, params) => (
                    Some(op.operation_id.clone()),
                    Some(op.path.clone()),
                    params.get("org_id").map(str::to_string),
                    params.get("workspace_id").map(str::to_string),
                ),
                Resolved::WrongMethod { path, .. } => (None, Some(path.to_string()), None, None),
                Resolved::Unknown => (None, None, None, None),
            };
        let query: Map<String, Value> = url::form_urlencoded::parse(self.texts.query().as_bytes())
            .map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())))
            .collect();
        JournalEntry {
            seq: self.seq,
            at: self.at,
            method: self.method.as_str().to_string(),
            path: self.texts.path().to_string(),
            query,
            operation_id,
            path_template,
            org_id,
            workspace_id,
            owner: owner.map(|o| WorkspaceId {
                org_id: o.org_id.clone(),
                workspace_id: o.workspace_id.clone(),
            }),
            api_key: self.api_key,
            key_name: self.texts.key_name().map(str::to_string),
            status: self.status,
            duration_ms: self.duration_ms,
            request: self.request.to_wire(),
            response: self.response.to_wire(),
            verdict: self.verdict,
            violations: self.violations.clone(),
            warnings: self.warnings.clone(),
            fault: self.fault.as_deref().cloned(),
            cohort: self.cohort.as_deref().cloned(),
        }
    }

    /// The kept form of an entry an earlier run wrote in the database.
    pub(crate) fn from_entry(e: JournalEntry, catalogue: &Catalogue) -> Kept {
        let query = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(e.query.iter().map(|(k, v)| (k, v.as_str().unwrap_or(""))))
            .finish();
        Kept {
            seq: e.seq,
            at: e.at,
            method: Method::from_bytes(e.method.as_bytes()).unwrap_or(Method::GET),
            operation: e
                .operation_id
                .as_deref()
                .and_then(|id| catalogue.index_of(id))
                .and_then(|i| u16::try_from(i).ok()),
            texts: Texts::new(&e.path, &query, e.key_name.as_deref()),
            api_key: e.api_key,
            status: e.status,
            duration_ms: e.duration_ms,
            request: KeptBody::from_wire(e.request),
            response: KeptBody::from_wire(e.response),
            verdict: e.verdict,
            violations: e.violations,
            warnings: e.warnings,
            fault: e.fault.map(Box::new),
            cohort: e.cohort.map(Box::new),
            owner: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_read_back_from_the_database_lists_as_it_was_written() {
        let catalogue = Catalogue::platform();
        let entry = JournalEntry {
            seq: 7,
            at: "2026-03-02T12:00:00Z".parse().unwrap(),
            method: "GET".into(),
            path: "/api/app-authoring/v1/orgs/o/workspaces/w/deployments".into(),
            query: [
                ("limit".to_string(), Value::from("5")),
                ("search".to_string(), Value::from("<string>")),
            ]
            .into_iter()
            .collect(),
            operation_id: Some("list_deployments".into()),
            path_template: Some(
                "/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments".into(),
            ),
            org_id: Some("o".into()),
            workspace_id: Some("w".into()),
            owner: Some(WorkspaceId {
                org_id: "o".into(),
                workspace_id: "w".into(),
            }),
            api_key: ApiKeyUse::Valid,
            key_name: Some("ci".into()),
            status: Some(422),
            duration_ms: 1.5,
            request: JournalBody::default(),
            response: JournalBody {
                content_type: Some("application/json".into()),
                bytes: 99_999,
                json: None,
                note: Some("larger than the journal's body limit of 8192 bytes".into()),
            },
            verdict: Verdict::Violates,
            violations: vec![Violation {
                kind: ViolationKind::Validation,
                loc: vec![],
                msg: "m".into(),
                error_type: "t".into(),
            }],
            warnings: vec![Violation {
                kind: ViolationKind::TrailingSlash,
                loc: vec![],
                msg: "w".into(),
                error_type: "trailing_slash".into(),
            }],
            fault: Some(AppliedFault {
                fault_id: "flt-1".into(),
                kind: "delay".into(),
                effect: "delayed 5 ms".into(),
            }),
            cohort: Some(UploadedCohort {
                cohort_id: "coh-1".into(),
                status: contracts::wire::CohortStatus::Failed,
                failure_reason: Some("the header row has no column 'phone'".into()),
            }),
        };
        let kept = Kept::from_entry(entry.clone(), catalogue);
        assert_eq!(kept.operation_id(catalogue), Some("list_deployments"));
        let owner = WorkspaceRef::new("o", "w");
        assert_eq!(kept.to_entry(catalogue, Some(&owner)), entry);
    }

    #[test]
    fn texts_give_back_the_path_query_and_key_name_they_were_made_of() {
        let t = Texts::new("/api/x", "limit=5", Some("ci"));
        assert_eq!(
            (t.path(), t.query(), t.key_name()),
            ("/api/x", "limit=5", Some("ci"))
        );
        let t = Texts::new("/api/x", "", None);
        assert_eq!((t.path(), t.query(), t.key_name()), ("/api/x", "", None));
        let t = Texts::new("", "a=1", Some(""));
        assert_eq!((t.path(), t.query(), t.key_name()), ("", "a=1", Some("")));
    }

    #[test]
    fn notes_and_media_types_read_as_the_wire_says() {
        let body = KeptBody {
            media: Media::of(Some("text/csv")),
            bytes: 10,
            json: None,
            note: Note::NotJson,
        };
        assert_eq!(
            body.to_wire(),
            JournalBody {
                content_type: Some("text/csv".into()),
                bytes: 10,
                json: None,
                note: Some("not JSON".into()),
            }
        );
        assert_eq!(
            Note::TooLarge(8192).text().as_deref(),
            Some("larger than the journal's body limit of 8192 bytes")
        );
    }
}
