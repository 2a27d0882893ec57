//! Where each part of an answer comes from: the spec, a recorded fact of the reference
//! documentation (`ref` in docs/interface.md), or this project's own assumption. A
//! difference from the reference is an error on the first two and a warning on the third;
//! some parts are free by the contract (an error message's wording) and not compared at all.
//!
//! Parts are named by the answer's resource ([`Resource`]: what the operation answers) and
//! the JSON field that holds them (the last key of the path), which is how the spec and
//! docs/interface.md name them: `created_at` is a spec field of a deployment, a recorded one
//! of a campaign or a cohort, and the project's own in the answer to a cohort upload (the
//! spec shows `cohort_id` and `status` there, nothing more). A field the table does not name
//! is the project's (assumed), so that nothing the contract does not fix can fail a platform.

use serde::Serialize;

/// What fixes a part of an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The interface spec.
    Spec,
    /// A recorded fact of the reference documentation (docs/interface.md, "ref").
    Ref,
    /// This project's assumption (docs/interface.md, "assumed"): a difference is a warning.
    Assumed,
    /// Free by the contract: not compared (wording, who made a change).
    Free,
}

impl Source {
    /// Whether a difference on it breaks the contract (else it is advice, or not judged).
    pub fn is_contract(self) -> bool {
        matches!(self, Source::Spec | Source::Ref)
    }
}

/// The rule a part answers to: where it comes from and which row says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// Spec, ref, assumed or free.
    pub source: Source,
    /// The row of the spec or of docs/interface.md.
    pub row: &'static str,
}

/// What an answer is, as the rules name its fields: the resource an operation answers with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Resource {
    /// A campaign (its create, read, PATCH and status answers, and a list's items).
    Campaign,
    /// A deployment, or the list of deployments.
    Deployment,
    /// A cohort record as read (GET, a list's items).
    Cohort,
    /// The answer to making a cohort (upload, stream): the spec shows `cohort_id` and
    /// `status` only.
    CohortMade,
    /// Anything else (an instant call, an error body, an event): named by the field alone.
    #[default]
    Other,
}

impl Resource {
    /// The resource the operation `operation_id` (of the platform's OpenAPI document)
    /// answers with.
    pub fn of_operation(operation_id: &str) -> Resource {
        match operation_id {
            "upload_campaign_cohort"
            | "upload_deployment_cohort"
            | "stream_campaign_cohort"
            | "stream_deployment_cohort" => Resource::CohortMade,
            "get_campaign_cohort"
            | "get_deployment_cohort"
            | "list_campaign_cohorts"
            | "list_deployment_cohorts" => Resource::Cohort,
            "create_campaign"
            | "get_campaign"
            | "list_campaigns"
            | "patch_campaign"
            | "set_campaign_status" => Resource::Campaign,
            "create_deployment"
            | "get_deployment"
            | "list_deployments"
            | "patch_deployment"
            | "set_deployment_status" => Resource::Deployment,
            _ => Resource::Other,
        }
    }
}

const SPEC_RESOURCES: &str = "spec: Resources and their fields";
const SPEC_DEPLOYMENT: &str = "spec: Deployment (create request, response, list items)";
const SPEC_LIST: &str = "spec: Paginated deployment list";
const SPEC_ERRORS: &str = "spec: Errors";
const REF_CAMPAIGN: &str = "interface.md: Campaign request and summary (ref)";
const REF_COHORT: &str = "interface.md: Cohorts, cohort record (ref)";
const SPEC_COHORT: &str = "spec: Cohort (cohort_id, status, result.rejected_records)";
const SPEC_UPLOAD: &str = "spec: Endpoints, cohort upload (answers cohort_id, status: processing)";
const ASSUMED_UPLOAD: &str = "interface.md: The spec's numbered open points 5, the upload's answer beyond cohort_id and status (assumed)";
const SPEC_CAMPAIGN: &str = "spec: Campaign (create request, summary)";
const REF_CAMPAIGN_SUMMARY: &str = "interface.md: Campaign summary field names (ref)";
const REF_EVENTS: &str = "interface.md: Webhooks (events) (ref)";
const REF_STATUS: &str =
    "interface.md: Errors and status codes, success 200 and validation 422 (ref)";
const ASSUMED_STATUS: &str =
    "interface.md: Errors and status codes, 204, 401, 404, 409, 413 (assumed)";
const ASSUMED: &str = "interface.md: a field or value of this project's own (assumed)";
const FREE_WORDING: &str = "free: the wording of a message is the platform's";
const FREE_WHO: &str = "free: how the platform names the caller who made a change";

/// Fields whose names the spec gives.
const SPEC_FIELDS: &[&str] = &[
    "campaign_id",
    "cohort_id",
    "attempt_id",
    "status",
    "rejected_records",
    "result",
    "start_timestamp",
    "end_timestamp",
    "description",
    "attempts_per_second",
    "max_retries",
    "retry_on",
    "threshold_seconds",
    "connection_configs",
    "weight",
];

/// Fields of the deployment and its list, which the spec lists with their types.
const SPEC_DEPLOYMENT_FIELDS: &[&str] = &[
    "deployment_id",
    "app_id",
    "app_version",
    "channel_direction",
    "created_at",
    "updated_at",
    "name",
    "inbound_config",
    "phone_numbers",
    "start_time",
    "end_time",
    "allowed_days",
    "timezone",
];

const SPEC_LIST_FIELDS: &[&str] = &[
    "items",
    "total",
    "limit",
    "offset",
    "next_page_uri",
    "prev_page_uri",
];

const SPEC_ERROR_FIELDS: &[&str] = &["detail", "loc", "error", "type", "code"];

/// Fields the reference documentation names (docs/interface.md, "ref").
const REF_FIELDS: &[&str] = &[
    "app_type",
    "app_config",
    "allowed_schedule",
    "allowed_start_time",
    "allowed_end_time",
    "retry_config",
    "webhook_config",
    "url",
    "metadata",
    "connection_id",
    "agent_phone_number",
    "total_records",
    "valid_records",
    "source_type",
    "cohort_category",
];

/// Fields of the webhook events (docs/interface.md, "Webhooks (events)", ref).
const EVENT_FIELDS: &[&str] = &[
    "completion_status",
    "connectivity_status",
    "user_identifier",
    "user_phone_number",
    "duration",
    "interaction_id",
    "retry_attempt",
    "executed_at",
    "initial_agent_variables",
    "final_agent_variables",
    "output_agent_variables",
    "start_datetime",
    "end_datetime",
    "channel_info",
    "channel_type",
    "channel_provider",
];

/// The rule of the field `field` (the last key of a path) at the top of an answer of
/// `resource`, or inside one (`top` false): the resource's own table first, then the field
/// alone.
fn field_of(resource: Resource, name: &str, top: bool) -> Rule {
    let rule = |source, row| Rule { source, row };
    match (resource, name) {
        (_, "msg" | "message" | "failure_reason" | "rejected_reason") => {
            return rule(Source::Free, FREE_WORDING);
        }
        (Resource::CohortMade, "cohort_id" | "status") if top => {
            return rule(Source::Spec, SPEC_UPLOAD);
        }
        (_, "created_by" | "updated_by") => return rule(Source::Free, FREE_WHO),
        (Resource::CohortMade, _) => return rule(Source::Assumed, ASSUMED_UPLOAD),
        (Resource::Cohort, "cohort_id" | "status" | "rejected_records") => {
            return rule(Source::Spec, SPEC_COHORT);
        }
        (
            Resource::Cohort,
            "name" | "source_type" | "cohort_category" | "result" | "total_records"
            | "valid_records" | "created_at" | "updated_at",
        ) => return rule(Source::Ref, REF_COHORT),
        (Resource::Campaign, "campaign_id" | "status" | "description") if top => {
            return rule(Source::Spec, SPEC_CAMPAIGN);
        }
        (
            Resource::Campaign,
            "name" | "app_id" | "app_type" | "app_version" | "created_at" | "updated_at",
        ) if top => return rule(Source::Ref, REF_CAMPAIGN_SUMMARY),
        _ => {}
    }
    field(name)
}

/// The rule of the field `field` (the last key of a path), in an answer, whatever its
/// resource.
pub fn field(field: &str) -> Rule {
    let rule = |source, row| Rule { source, row };
    match field {
        "msg" | "message" | "failure_reason" | "rejected_reason" => {
            rule(Source::Free, FREE_WORDING)
        }
        "created_by" | "updated_by" => rule(Source::Free, FREE_WHO),
        // Which next action goes with which outcome, and the turns of a transcript, are the
        // project's reading of the reference (its values and names are recorded, their
        // mapping assumed).
        "next_action_status" | "interaction_transcript" => rule(Source::Assumed, ASSUMED),
        f if SPEC_DEPLOYMENT_FIELDS.contains(&f) => rule(Source::Spec, SPEC_DEPLOYMENT),
        f if SPEC_LIST_FIELDS.contains(&f) => rule(Source::Spec, SPEC_LIST),
        f if SPEC_ERROR_FIELDS.contains(&f) => rule(Source::Spec, SPEC_ERRORS),
        f if SPEC_FIELDS.contains(&f) => rule(Source::Spec, SPEC_RESOURCES),
        "name" => rule(Source::Ref, REF_COHORT),
        f if REF_FIELDS.contains(&f) => rule(Source::Ref, REF_CAMPAIGN),
        f if EVENT_FIELDS.contains(&f) => rule(Source::Ref, REF_EVENTS),
        _ => rule(Source::Assumed, ASSUMED),
    }
}

/// The rule of a path (`/items/0/statistics/users_total`) in an answer of `resource`: the
/// first field on it that is the project's own or free wins (a field inside an assumed
/// object is assumed), else the last field's. A list's `items` hold the resource; the list's
/// own fields are named by the field alone.
pub fn path(resource: Resource, path: &[String]) -> Rule {
    let fields: Vec<&str> = path
        .iter()
        .map(String::as_str)
        .filter(|s| s.parse::<usize>().is_err())
        .collect();
    // Where the resource itself starts: under a list's `items`, else at the top.
    let start = usize::from(fields.first() == Some(&"items"));
    let of = |i: usize, f: &str| {
        if i < start {
            field(f)
        } else {
            field_of(resource, f, i == start)
        }
    };
    for (i, f) in fields.iter().enumerate() {
        let r = of(i, f);
        if !r.source.is_contract() {
            return r;
        }
    }
    match fields.last() {
        Some(f) => of(fields.len() - 1, f),
        None => Rule {
            source: Source::Spec,
            row: SPEC_RESOURCES,
        },
    }
}

/// The rule of a field's presence (and type) at `path` in an answer of `resource`: a field
/// whose value is free (a message's wording, who made a change) is still one the contract
/// names, except in the answer to making a cohort, where the spec shows `cohort_id` and
/// `status` only.
pub fn presence(resource: Resource, path: &[String]) -> Rule {
    let r = self::path(resource, path);
    if r.source != Source::Free {
        return r;
    }
    if resource == Resource::CohortMade {
        return Rule {
            source: Source::Assumed,
            row: ASSUMED_UPLOAD,
        };
    }
    match path.last().map(String::as_str).unwrap_or("") {
        "msg" | "message" => Rule {
            source: Source::Spec,
            row: "spec: Errors (the error bodies' fields)",
        },
        _ => Rule {
            source: Source::Ref,
            row: "interface.md: the resource's fields (ref)",
        },
    }
}

/// The rule of an answer's status: a success is 200 (ref; a delete's 204 assumed), a
/// validation refusal 422 (ref); the other refusals are assumed.
pub fn status(reference: u16) -> Rule {
    let source = match reference {
        200 | 422 => Source::Ref,
        _ => Source::Assumed,
    };
    Rule {
        source,
        row: if source == Source::Ref {
            REF_STATUS
        } else {
            ASSUMED_STATUS
        },
    }
}

/// The rule of an answer's media type: JSON unless the spec says otherwise.
pub fn media_type() -> Rule {
    Rule {
        source: Source::Spec,
        row: "spec: Endpoints (bodies are JSON unless stated)",
    }
}

/// Arrays whose order the contract does not fix: compared as collections.
pub fn unordered(field: &str) -> bool {
    matches!(
        field,
        "detail" | "retry_on" | "allowed_days" | "phone_numbers" | "items"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|s| s.to_string()).collect()
    }

    fn path(parts: &[&str]) -> Rule {
        super::path(Resource::Other, &p(parts))
    }

    #[test]
    fn a_field_is_judged_by_the_resource_that_holds_it() {
        let at = |r, parts: &[&str]| super::path(r, &p(parts));
        // The upload's answer: what the spec shows is the spec's, the rest the project's.
        assert_eq!(
            at(Resource::CohortMade, &["cohort_id"]).source,
            Source::Spec
        );
        assert_eq!(at(Resource::CohortMade, &["status"]).source, Source::Spec);
        assert_eq!(
            at(Resource::CohortMade, &["created_at"]).source,
            Source::Assumed
        );
        assert_eq!(
            at(Resource::CohortMade, &["result", "status"]).source,
            Source::Assumed
        );
        // A cohort as read: recorded, not the deployment's spec row.
        let read = at(Resource::Cohort, &["created_at"]);
        assert_eq!((read.source, read.row), (Source::Ref, REF_COHORT));
        assert_eq!(
            at(Resource::Cohort, &["items", "0", "result", "valid_records"]).source,
            Source::Ref
        );
        assert_eq!(
            at(Resource::Cohort, &["result", "rejected_records"]).source,
            Source::Spec
        );
        // A campaign's created_at is the summary's recorded name; a deployment's the spec's.
        assert_eq!(
            at(Resource::Campaign, &["items", "3", "created_at"]).row,
            REF_CAMPAIGN_SUMMARY
        );
        assert_eq!(
            at(Resource::Deployment, &["created_at"]).row,
            SPEC_DEPLOYMENT
        );
        // A list's own fields are the list's, whatever it holds.
        assert_eq!(at(Resource::Cohort, &["total"]).row, SPEC_LIST);
        // Wording stays free everywhere; in the upload's answer even its presence is the
        // project's, elsewhere the contract names the field.
        assert_eq!(
            at(Resource::CohortMade, &["failure_reason"]).source,
            Source::Free
        );
        assert_eq!(
            presence(Resource::CohortMade, &p(&["failure_reason"])).source,
            Source::Assumed
        );
        assert_eq!(
            presence(Resource::CohortMade, &p(&["created_by"])).source,
            Source::Assumed
        );
        assert_eq!(
            presence(Resource::Cohort, &p(&["created_by"])).source,
            Source::Ref
        );
        assert_eq!(
            presence(Resource::Other, &p(&["detail", "0", "msg"])).source,
            Source::Spec
        );
    }

    #[test]
    fn a_field_inside_an_assumed_object_is_assumed() {
        assert_eq!(path(&["statistics", "users_total"]).source, Source::Assumed);
        assert_eq!(path(&["items", "0", "campaign_id"]).source, Source::Spec);
        assert_eq!(path(&["detail", "1", "msg"]).source, Source::Free);
        assert_eq!(path(&["result", "valid_records"]).source, Source::Ref);
        assert_eq!(path(&["app_config", "retry_config"]).source, Source::Ref);
        assert_eq!(
            path(&["app_config", "retry_config", "max_retries"]).source,
            Source::Spec
        );
        assert_eq!(path(&["whatever_new"]).source, Source::Assumed);
    }

    #[test]
    fn statuses() {
        assert!(status(200).source.is_contract());
        assert!(status(422).source.is_contract());
        assert!(!status(409).source.is_contract());
        assert!(!status(204).source.is_contract());
    }
}
