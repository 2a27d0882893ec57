//! The operations of the platform's interface, read from its OpenAPI document, and the
//! resolution of a request's method and path to one of them.
//!
//! The request journal names every request by the `operationId` and path template of
//! [`crate::openapi::platform_document`], and its coverage is counted per operation of that
//! document; fault rules match operation ids too. Deriving the table from the document (not
//! from a second list) keeps the three in agreement.
//!
//! Only the interface is catalogued: the paths under `/api/`. The harness's own routes
//! (`/sim/v1/...`, `/admin/v1/...`, `/openapi.json`, `/healthz`) are not operations a
//! client of the platform is judged on.

use std::sync::OnceLock;

use serde_json::Value;

use crate::openapi::INTERFACE_PREFIX;

/// One documented operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    /// `GET`, `POST`, `PUT`, `PATCH` or `DELETE`.
    pub method: &'static str,
    /// The path template, `{param}` for a path parameter.
    pub path: String,
    /// The document's `operationId`.
    pub operation_id: String,
    /// The document's first tag (`deployments`, `campaigns`, ...).
    pub tag: String,
    /// The documented response statuses of the route, ascending; without the HTTP layer's
    /// answers every operation shares (400, 408, 414, 431, declared by reference to
    /// `components/responses`), which say nothing of how a client uses the route.
    pub statuses: Vec<u16>,
    /// The documented query parameters.
    pub query_params: Vec<String>,
    /// Whether the operation takes a JSON body.
    pub json_body: bool,
    /// The media type of the body the operation reads (`application/json`,
    /// `multipart/form-data`), when it reads one.
    pub request_media_type: Option<String>,
    segments: Vec<Segment>,
    /// How many of `segments` are parameters.
    params: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Param(String),
}

/// The segments of a request path between its `/`, as `path.split('/')` gives them (`/a//b`
/// is `""`, `a`, `""`, `b`): [`split_ascii`] at `/`. Every request's path is split a few
/// times on its way.
pub fn path_segments(path: &str) -> SplitAscii<'_> {
    split_ascii(path, b'/')
}

/// The pieces of `text` between its bytes `sep` (an ASCII character), as `split` gives
/// them, found by a plain scan of the bytes: for a text of a few short pieces (a path, a
/// query), several times cheaper than `split`'s search.
pub fn split_ascii(text: &str, sep: u8) -> SplitAscii<'_> {
    debug_assert!(sep.is_ascii(), "an ASCII separator");
    SplitAscii {
        rest: Some(text),
        sep,
    }
}

/// The iterator of [`split_ascii`].
#[derive(Debug, Clone)]
pub struct SplitAscii<'a> {
    rest: Option<&'a str>,
    sep: u8,
}

impl<'a> Iterator for SplitAscii<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let rest = self.rest?;
        match rest.bytes().position(|b| b == self.sep) {
            Some(at) => {
                self.rest = Some(&rest[at + 1..]);
                Some(&rest[..at])
            }
            None => {
                self.rest = None;
                Some(rest)
            }
        }
    }
}

/// The most segments a path of the interface has; a longer path is no operation.
const MAX_SEGMENTS: usize = 16;

/// The path parameters of a resolved request, by name: the request path's segments, kept
/// as resolving found them (borrowed: nothing is copied), read at the template's place of
/// the parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathParams<'a> {
    operation: &'a Operation,
    segments: [&'a str; MAX_SEGMENTS],
}

impl<'a> PathParams<'a> {
    /// The value of the parameter `name`, if the template has it.
    pub fn get(&self, name: &str) -> Option<&'a str> {
        let at = self
            .operation
            .segments
            .iter()
            .position(|s| matches!(s, Segment::Param(p) if p == name))?;
        self.segments.get(at).copied()
    }
}

/// What a method and path are, in the document's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)] // made once a request, on the stack: boxing would allocate
pub enum Resolved<'a> {
    /// One documented operation (its index in [`Catalogue::operations`]), with the values
    /// of its path parameters.
    Operation(usize, &'a Operation, PathParams<'a>),
    /// A documented path that does not take this method; the methods it takes.
    WrongMethod {
        /// The path template.
        path: &'a str,
        /// The methods the path takes.
        allowed: Vec<&'static str>,
    },
    /// No documented path.
    Unknown,
}

/// Every operation of the platform's interface.
#[derive(Debug, Clone)]
pub struct Catalogue {
    operations: Vec<Operation>,
    /// Each path template once, with its operations.
    templates: Vec<Template>,
    /// The indexes of the templates by their number of segments: a path is compared only
    /// with the templates of its length, each once whatever its methods.
    by_length: Vec<Vec<usize>>,
}

/// One path template of the document and its operations.
#[derive(Debug, Clone)]
struct Template {
    segments: Vec<Segment>,
    /// How many of `segments` are parameters.
    params: usize,
    /// The indexes of its operations, in document order.
    operations: Vec<usize>,
}

impl Template {
    /// Whether a path's segments (as many as the template's) fit; compared from the last,
    /// where templates of one length differ most.
    fn fits(&self, parts: &[&str]) -> bool {
        self.segments
            .iter()
            .zip(parts)
            .rev()
            .all(|(seg, part)| match seg {
                Segment::Literal(l) => l == part,
                Segment::Param(_) => !part.is_empty(),
            })
    }
}

const METHODS: [(&str, &str); 5] = [
    ("get", "GET"),
    ("post", "POST"),
    ("put", "PUT"),
    ("patch", "PATCH"),
    ("delete", "DELETE"),
];

impl Catalogue {
    /// The catalogue of [`crate::openapi::platform_document`], built once.
    pub fn platform() -> &'static Catalogue {
        static CATALOGUE: OnceLock<Catalogue> = OnceLock::new();
        CATALOGUE.get_or_init(|| Catalogue::from_document(&crate::openapi::platform_document()))
    }

    /// The operations under `/api/` of an OpenAPI document (JSON), in document order.
    pub(crate) fn from_document(doc: &Value) -> Catalogue {
        let mut operations = Vec::new();
        let Some(paths) = doc["paths"].as_object() else {
            return Catalogue {
                operations,
                templates: Vec::new(),
                by_length: Vec::new(),
            };
        };
        for (path, item) in paths {
            if !path.starts_with(INTERFACE_PREFIX) {
                continue;
            }
            for (key, method) in METHODS {
                let Some(op) = item.get(key) else { continue };
                let mut statuses: Vec<u16> = op["responses"]
                    .as_object()
                    .map(|r| {
                        r.iter()
                            .filter(|(_, answer)| {
                                !answer["$ref"]
                                    .as_str()
                                    .is_some_and(|t| t.starts_with("#/components/responses/"))
                            })
                            .filter_map(|(k, _)| k.parse().ok())
                            .collect()
                    })
                    .unwrap_or_default();
                statuses.sort_unstable();
                let query_params = op["parameters"]
                    .as_array()
                    .map(|ps| {
                        ps.iter()
                            .filter(|p| p["in"] == "query")
                            .filter_map(|p| p["name"].as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                let segments = segments(path);
                let content = op["requestBody"]["content"].as_object();
                let json_body = content.is_some_and(|c| c.keys().any(|k| k.contains("json")));
                let request_media_type = content.and_then(|c| c.keys().next().cloned());
                operations.push(Operation {
                    method,
                    path: path.clone(),
                    operation_id: op["operationId"]
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("{method} {path}")),
                    tag: op["tags"][0].as_str().unwrap_or("other").to_string(),
                    statuses,
                    query_params,
                    json_body,
                    request_media_type,
                    params: segments
                        .iter()
                        .filter(|s| matches!(s, Segment::Param(_)))
                        .count(),
                    segments,
                });
            }
        }
        // The operations of one path are next to each other.
        let mut templates: Vec<Template> = Vec::new();
        for (index, op) in operations.iter().enumerate() {
            match templates.last_mut() {
                Some(t) if t.segments == op.segments => t.operations.push(index),
                _ => templates.push(Template {
                    segments: op.segments.clone(),
                    params: op.params,
                    operations: vec![index],
                }),
            }
        }
        let mut by_length = vec![Vec::new(); MAX_SEGMENTS + 1];
        for (index, t) in templates.iter().enumerate() {
            if let Some(same) = by_length.get_mut(t.segments.len()) {
                same.push(index);
            }
        }
        Catalogue {
            operations,
            templates,
            by_length,
        }
    }

    /// Every operation, in document order.
    pub fn operations(&self) -> &[Operation] {
        &self.operations
    }

    /// The operation with this id.
    pub(crate) fn get(&self, operation_id: &str) -> Option<&Operation> {
        self.operations
            .iter()
            .find(|o| o.operation_id == operation_id)
    }

    /// The index of the operation with this id in [`Catalogue::operations`].
    pub fn index_of(&self, operation_id: &str) -> Option<usize> {
        self.operations
            .iter()
            .position(|o| o.operation_id == operation_id)
    }

    /// What `method` and `path` (without the query) are. A trailing `/` is ignored, as the
    /// server ignores it; `HEAD` resolves like `GET`. Where templates of several lengths of
    /// literal text match, the one with the fewest parameters wins, as in the server's
    /// routes (`GET .../cohorts/upload` is the upload path with another method, not a
    /// cohort named `upload`).
    pub fn resolve<'a>(&'a self, method: &str, path: &'a str) -> Resolved<'a> {
        let method = if method.eq_ignore_ascii_case("HEAD") {
            "GET"
        } else {
            method
        };
        let trimmed = path
            .strip_suffix('/')
            .filter(|p| !p.is_empty())
            .unwrap_or(path);
        // The path's segments, on the stack.
        let mut segments = [""; MAX_SEGMENTS];
        let mut count = 0;
        for part in path_segments(trimmed) {
            if count == segments.len() {
                return Resolved::Unknown;
            }
            segments[count] = part;
            count += 1;
        }
        let parts = &segments[..count];
        // The templates that match, with the fewest parameters (no allocation until the
        // one operation is known).
        let mut fewest = usize::MAX;
        let mut hits: [Option<usize>; METHODS.len()] = [None; METHODS.len()];
        let mut n = 0;
        let same_length = self.by_length.get(count).map_or(&[][..], Vec::as_slice);
        for template in same_length.iter().map(|&t| &self.templates[t]) {
            if !template.fits(parts) {
                continue;
            }
            if template.params < fewest {
                fewest = template.params;
                hits = [None; METHODS.len()];
                n = 0;
            }
            if template.params == fewest {
                for &index in &template.operations {
                    if n < hits.len() {
                        hits[n] = Some(index);
                        n += 1;
                    }
                }
            }
        }
        let hits = hits.iter().flatten().map(|&i| (i, &self.operations[i]));
        let mut allowed = Vec::new();
        let mut template = None;
        for (index, op) in hits {
            if op.method.eq_ignore_ascii_case(method) {
                return Resolved::Operation(
                    index,
                    op,
                    PathParams {
                        operation: op,
                        segments,
                    },
                );
            }
            template.get_or_insert(op.path.as_str());
            allowed.push(op.method);
        }
        match template {
            Some(path) => Resolved::WrongMethod { path, allowed },
            None => Resolved::Unknown,
        }
    }
}

fn segments(path: &str) -> Vec<Segment> {
    path.split('/')
        .map(
            |s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(name) => Segment::Param(name.to_string()),
                None => Segment::Literal(s.to_string()),
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_resolve_to_the_documents_operations() {
        let c = Catalogue::platform();
        let Resolved::Operation(_, op, params) = c.resolve(
            "GET",
            "/api/app-authoring/v1/orgs/o/workspaces/w/deployments/",
        ) else {
            panic!("the list resolves")
        };
        assert_eq!(op.operation_id, "list_deployments");
        assert_eq!(
            op.path,
            "/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments"
        );
        assert_eq!(params.get("workspace_id"), Some("w"));
        assert!(op.query_params.contains(&"limit".to_string()));
        assert!(op.statuses.contains(&200) && op.statuses.contains(&422));
        let Resolved::Operation(_, op, params) = c.resolve(
            "DELETE",
            "/api/app-authoring/v1/orgs/o/workspaces/w/deployments/d-1",
        ) else {
            panic!("the delete resolves")
        };
        assert_eq!(op.operation_id, "delete_deployment");
        assert_eq!(params.get("deployment_id"), Some("d-1"));
        assert!(!op.json_body);
        assert_eq!(op.request_media_type, None);
        let create = c.get("create_deployment").unwrap();
        assert!(create.json_body);
        assert_eq!(
            create.request_media_type.as_deref(),
            Some("application/json")
        );
        let upload = c.get("upload_campaign_cohort").unwrap();
        assert!(!upload.json_body);
        assert_eq!(
            upload.request_media_type.as_deref(),
            Some("multipart/form-data"),
            "the media type the operation really reads"
        );
    }

    #[test]
    fn a_query_splits_at_its_ampersands_as_split_does() {
        for query in ["", "&", "a=1&&b=2&", "limit=20&offset=40", "é=ü&ß"] {
            let ours: Vec<&str> = split_ascii(query, b'&').collect();
            let split: Vec<&str> = query.split('&').collect();
            assert_eq!(ours, split, "{query:?}");
        }
    }

    #[test]
    fn a_path_splits_into_the_segments_split_gives() {
        for path in [
            "",
            "/",
            "//",
            "a",
            "/a",
            "a/",
            "/a//b/",
            "/api/app-authoring/v1/orgs/o/workspaces/w/deployments",
            "/é/ü//ß",
        ] {
            let ours: Vec<&str> = path_segments(path).collect();
            let split: Vec<&str> = path.split('/').collect();
            assert_eq!(ours, split, "{path:?}");
        }
    }

    #[test]
    fn path_parameters_are_read_from_the_path_by_their_place_in_the_template() {
        let c = Catalogue::platform();
        let path = "/api/scheduling/v1/orgs/o-1/workspaces/w-1/campaigns/c-1/cohorts/k-1/";
        let Resolved::Operation(_, op, params) = c.resolve("GET", path) else {
            panic!("the cohort resolves")
        };
        assert_eq!(op.operation_id, "get_campaign_cohort");
        assert_eq!(
            ["org_id", "workspace_id", "campaign_id", "cohort_id"].map(|n| params.get(n)),
            [Some("o-1"), Some("w-1"), Some("c-1"), Some("k-1")],
            "each at its place, the trailing / ignored"
        );
        assert_eq!(params.get("deployment_id"), None, "not a parameter of it");
        assert_eq!(
            params.get("campaigns"),
            None,
            "a literal segment is no parameter"
        );
    }

    #[test]
    fn other_methods_and_paths_are_told_apart() {
        let c = Catalogue::platform();
        match c.resolve(
            "PUT",
            "/api/app-authoring/v1/orgs/o/workspaces/w/deployments",
        ) {
            Resolved::WrongMethod { allowed, .. } => assert_eq!(allowed, ["GET", "POST"]),
            other => panic!("{other:?}"),
        }
        assert_eq!(c.resolve("GET", "/api/nothing"), Resolved::Unknown);
        assert_eq!(
            c.resolve(
                "GET",
                "/api/app-authoring/v1/orgs/o/workspaces//deployments"
            ),
            Resolved::Unknown
        );
        match c.resolve(
            "GET",
            "/api/scheduling/v1/orgs/o/workspaces/w/campaigns/c/cohorts/upload",
        ) {
            Resolved::WrongMethod { path, allowed } => {
                assert!(path.ends_with("/cohorts/upload"), "{path}");
                assert_eq!(allowed, ["POST"]);
            }
            other => panic!("a literal segment wins over a parameter: {other:?}"),
        }
        assert!(
            c.operations().iter().all(|o| o.path.starts_with("/api/")),
            "the harness's own routes are not operations of the interface"
        );
    }
}
