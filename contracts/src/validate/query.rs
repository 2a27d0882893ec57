//! Query strings of the list and file endpoints.
//!
//! Input is the decoded `(key, value)` pairs in order; when a key repeats, the last value
//! counts. Unknown keys are ignored.

use super::{Ctx, enum_message, limits};
use crate::error::{ErrorType, Loc, ValidationErrors};
use crate::operations::Catalogue;
use crate::wire::{
    CampaignSortBy, CampaignStatus, CohortFileType, DeploymentSortBy, SortOrder, Verdict,
};

/// Paging, sorting and search of a list, with the defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListParams<S> {
    /// Matches to skip.
    pub offset: u64,
    /// Page size, 1 to 100.
    pub limit: u32,
    /// Sort field.
    pub sort_by: S,
    /// Sort direction.
    pub sort_order: SortOrder,
    /// Case-insensitive substring to match; `None` when absent or empty.
    pub search: Option<String>,
}

fn last<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn int_param(c: &mut Ctx, raw: &str, loc: &Loc, min: i64, max: Option<i64>) -> Option<i64> {
    let Ok(i) = raw.trim().parse::<i64>() else {
        c.add(
            loc,
            ErrorType::IntParsing,
            "Input should be a valid integer, unable to parse string as an integer",
        );
        return None;
    };
    c.bounds(i as f64, loc, Some(min as f64), max.map(|m| m as f64))
        .then_some(i)
}

fn enum_param<T: Copy>(
    c: &mut Ctx,
    raw: &str,
    loc: &Loc,
    options: &[(&'static str, T)],
) -> Option<T> {
    match options.iter().find(|(n, _)| *n == raw) {
        Some((_, t)) => Some(*t),
        None => {
            c.add(
                loc,
                ErrorType::Enum,
                enum_message(options.iter().map(|(n, _)| *n)),
            );
            None
        }
    }
}

fn paging(c: &mut Ctx, pairs: &[(String, String)]) -> (Option<u64>, Option<u32>) {
    let q = Loc::query();
    let offset = match last(pairs, "offset") {
        Some(raw) => {
            int_param(c, raw, &q.at("offset"), limits::LIST_OFFSET_MIN, None).map(|i| i as u64)
        }
        None => Some(0),
    };
    let limit = match last(pairs, "limit") {
        Some(raw) => int_param(
            c,
            raw,
            &q.at("limit"),
            limits::LIST_LIMIT_MIN,
            Some(limits::LIST_LIMIT_MAX),
        )
        .map(|i| i as u32),
        None => Some(limits::LIST_LIMIT_DEFAULT as u32),
    };
    (offset, limit)
}

fn list<S: Copy + Default>(
    c: &mut Ctx,
    pairs: &[(String, String)],
    sort_fields: &[(&'static str, S)],
) -> Option<ListParams<S>> {
    let q = Loc::query();
    let (offset, limit) = paging(c, pairs);
    let sort_by = match last(pairs, "sort_by") {
        Some(raw) => enum_param(c, raw, &q.at("sort_by"), sort_fields),
        None => Some(S::default()),
    };
    let sort_order = match last(pairs, "sort_order") {
        Some(raw) => enum_param(
            c,
            raw,
            &q.at("sort_order"),
            &[("asc", SortOrder::Asc), ("desc", SortOrder::Desc)],
        ),
        None => Some(SortOrder::Desc),
    };
    let search = match last(pairs, "search").filter(|s| !s.is_empty()) {
        Some(s) if s.chars().count() > limits::LIST_SEARCH_MAX_CHARS => {
            c.add(
                &q.at("search"),
                ErrorType::StringTooLong,
                format!(
                    "String should have at most {} characters",
                    limits::LIST_SEARCH_MAX_CHARS
                ),
            );
            None
        }
        Some(s) if s.contains('\0') => {
            c.value_error(&q.at("search"), "search must not contain a NUL character");
            None
        }
        other => other.map(str::to_string),
    };
    Some(ListParams {
        offset: offset?,
        limit: limit?,
        sort_by: sort_by?,
        sort_order: sort_order?,
        search,
    })
}

/// `GET /campaigns`: `campaign_status`, `offset`, `limit`, `sort_by`, `sort_order`, `search`.
pub fn campaign_list_query(
    pairs: &[(String, String)],
) -> Result<(ListParams<CampaignSortBy>, Option<CampaignStatus>), ValidationErrors> {
    let mut c = Ctx::default();
    let sort: Vec<(&'static str, CampaignSortBy)> = CampaignSortBy::ALL
        .iter()
        .map(|s| (s.as_str(), *s))
        .collect();
    let params = list(&mut c, pairs, &sort);
    let status = match last(pairs, "campaign_status") {
        Some(raw) => {
            let options: Vec<(&'static str, CampaignStatus)> = CampaignStatus::ALL
                .iter()
                .map(|s| (s.as_str(), *s))
                .collect();
            enum_param(&mut c, raw, &Loc::query().at("campaign_status"), &options).map(Some)
        }
        None => Some(None),
    };
    let both = match (params, status) {
        (Some(p), Some(s)) => Some((p, s)),
        _ => None,
    };
    c.into_result(both)
}

/// `GET /deployments`: `offset`, `limit`, `sort_by`, `sort_order`, `search`.
pub fn deployment_list_query(
    pairs: &[(String, String)],
) -> Result<ListParams<DeploymentSortBy>, ValidationErrors> {
    let mut c = Ctx::default();
    let sort: Vec<(&'static str, DeploymentSortBy)> = DeploymentSortBy::ALL
        .iter()
        .map(|s| (s.as_str(), *s))
        .collect();
    let params = list(&mut c, pairs, &sort);
    c.into_result(params)
}

/// `GET .../cohorts`: `offset` and `limit`; cohorts list in upload order.
pub fn cohort_list_query(pairs: &[(String, String)]) -> Result<(u64, u32), ValidationErrors> {
    let mut c = Ctx::default();
    let (offset, limit) = paging(&mut c, pairs);
    let both = offset.zip(limit);
    c.into_result(both)
}

/// The largest `status` the journal filter takes (0 stands for "closed without an answer").
pub const JOURNAL_STATUS_MAX: i64 = 599;

/// A checked `GET /sim/v1/journal` query: filters and paging.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalFilter {
    /// Only this `operationId`, or `unknown` (requests to no operation).
    pub operation: Option<String>,
    /// Only this status (`0`: closed without an answer).
    pub status: Option<u16>,
    /// Only this verdict.
    pub verdict: Option<Verdict>,
    /// Matches to skip.
    pub offset: u64,
    /// Page size.
    pub limit: u32,
}

/// `GET /sim/v1/journal`: `operation`, `status`, `verdict`, `offset`, `limit`.
pub fn journal_query(pairs: &[(String, String)]) -> Result<JournalFilter, ValidationErrors> {
    let mut c = Ctx::default();
    let q = Loc::query();
    let (offset, limit) = paging(&mut c, pairs);
    let operation = match last(pairs, "operation") {
        Some(op) if op == "unknown" || Catalogue::platform().get(op).is_some() => {
            Some(Some(op.to_string()))
        }
        Some(op) => {
            c.value_error(
                &q.at("operation"),
                format_args!(
                    "no operation '{op}' in the platform's interface; give the operationId of an operation under /api/ in GET /openapi.json, or unknown"
                ),
            );
            None
        }
        None => Some(None),
    };
    let status = match last(pairs, "status") {
        Some(raw) => int_param(&mut c, raw, &q.at("status"), 0, Some(JOURNAL_STATUS_MAX))
            .map(|s| Some(s as u16)),
        None => Some(None),
    };
    let verdict = match last(pairs, "verdict") {
        Some(raw) => enum_param(
            &mut c,
            raw,
            &q.at("verdict"),
            &[
                ("conforms", Verdict::Conforms),
                ("violates", Verdict::Violates),
                ("not_judged", Verdict::NotJudged),
            ],
        )
        .map(Some),
        None => Some(None),
    };
    let filter = (|| {
        Some(JournalFilter {
            operation: operation?,
            status: status?,
            verdict: verdict?,
            offset: offset?,
            limit: limit?,
        })
    })();
    c.into_result(filter)
}

/// `GET .../cohorts/{id}/files`: `file_type` is required.
pub fn cohort_files_query(pairs: &[(String, String)]) -> Result<CohortFileType, ValidationErrors> {
    let mut c = Ctx::default();
    let loc = Loc::query().at("file_type");
    let ft = match last(pairs, "file_type") {
        Some(raw) => {
            let options: Vec<(&'static str, CohortFileType)> = CohortFileType::ALL
                .iter()
                .map(|f| (f.as_str(), *f))
                .collect();
            enum_param(&mut c, raw, &loc, &options)
        }
        None => {
            c.add(&loc, ErrorType::Missing, "Field required");
            None
        }
    };
    c.into_result(ft)
}

/// `GET .../key-service/calls`: `after` (a sequence number, default 0) and `limit` (the
/// bounds of every list's, default the largest).
pub fn key_service_calls_query(pairs: &[(String, String)]) -> Result<(u64, u32), ValidationErrors> {
    let mut c = Ctx::default();
    let q = Loc::query();
    let after = match last(pairs, "after") {
        Some(raw) => int_param(&mut c, raw, &q.at("after"), 0, None).map(|n| n as u64),
        None => Some(0),
    };
    let limit = match last(pairs, "limit") {
        Some(raw) => int_param(
            &mut c,
            raw,
            &q.at("limit"),
            limits::LIST_LIMIT_MIN,
            Some(limits::LIST_LIMIT_MAX),
        )
        .map(|n| n as u32),
        None => Some(limits::LIST_LIMIT_MAX as u32),
    };
    c.into_result(after.zip(limit))
}

/// `GET .../campaigns/{campaign_id}/chart`: `width`, the drawing's width in pixels,
/// [`crate::report::chart::Frame::MIN_WIDTH`] to `MAX_WIDTH` (default the report's 1,000).
pub fn live_chart_query(pairs: &[(String, String)]) -> Result<u32, ValidationErrors> {
    use crate::report::chart::Frame;
    let mut c = Ctx::default();
    let width = match last(pairs, "width") {
        Some(raw) => int_param(
            &mut c,
            raw,
            &Loc::query().at("width"),
            i64::from(Frame::MIN_WIDTH),
            Some(i64::from(Frame::MAX_WIDTH)),
        )
        .map(|n| n as u32),
        None => Some(Frame::REPORT.width),
    };
    c.into_result(width)
}

#[cfg(test)]
mod live_chart_tests {
    use super::*;
    use crate::error::LocItem;

    #[test]
    fn the_width_has_a_default_and_bounds() {
        let q = |pairs: &[(&str, &str)]| {
            let pairs: Vec<(String, String)> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            live_chart_query(&pairs)
        };
        assert_eq!(q(&[]).unwrap(), 1000);
        assert_eq!(q(&[("width", "358")]).unwrap(), 358);
        for bad in ["279", "2401", "wide", "-1"] {
            let e = q(&[("width", bad)]).unwrap_err();
            assert_eq!(
                e.details()[0].loc,
                [LocItem::from("query"), LocItem::from("width")],
                "{bad}: {e:?}"
            );
        }
    }
}

#[cfg(test)]
mod key_service_calls_tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Result<(u64, u32), ValidationErrors> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        key_service_calls_query(&pairs)
    }

    #[test]
    fn after_and_limit_have_defaults_and_bounds() {
        assert_eq!(q(&[]).unwrap(), (0, 100));
        assert_eq!(q(&[("after", "41"), ("limit", "7")]).unwrap(), (41, 7));
        for bad in [
            &[("limit", "0")][..],
            &[("limit", "101")],
            &[("after", "-1")],
            &[("after", "x")],
        ] {
            let e = q(bad).unwrap_err();
            assert_eq!(e.details()[0].loc.len(), 2, "{bad:?}: {e:?}");
        }
    }
}
