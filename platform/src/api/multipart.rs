//! The `multipart/form-data` body of a cohort upload, read part by part.
//!
//! The caller is authorised and the parent checked (404 unknown, 409 for an `ended` or
//! `cancelled` campaign) before a byte of the body is read; a `Content-Length` above
//! `max_upload_bytes` is a 413 at once. The parts are read in any order: `name` and
//! `cohort_category` (text, at most [`TEXT_PART_MAX_BYTES`]), `cohort_transformation_file`
//! (JSON, at most [`TRANSFORMATION_MAX_BYTES`], checked with
//! [`validate::transformation_config`]), and `cohort_file`, which is handed to
//! [`Receiving::store_file`] as it arrives. Every problem is reported at once (422, `loc`
//! under `["body", <part>]`). Past `max_upload_bytes` of body the answer is 413. On any
//! failure the upload is aborted (what was stored is deleted) before the answer.

use std::collections::HashMap;

use bytes::Bytes;
use contracts::error::{ErrorType, Loc, ValidationErrors};
use contracts::model::{Name, Transformation};
use contracts::validate;
use contracts::wire::{Cohort, CohortCategory};
use futures_util::{Stream, TryStreamExt};
use serde_json::Value;

use crate::app::App;
use crate::auth::Principal;
use crate::error::ApiError;
use crate::ingest::TRANSFORMATION_MAX_BYTES;
use crate::service::cohorts::Receiving;
use crate::store::cohorts::Parent;

/// The largest `name` or `cohort_category` part read.
pub(crate) const TEXT_PART_MAX_BYTES: usize = 4096;

/// The multipart parts of an upload.
const PARTS: [&str; 4] = [
    "name",
    "cohort_file",
    "cohort_transformation_file",
    "cohort_category",
];

/// Parts of an upload that [`upload`] names as ignored, at most.
pub(crate) const IGNORED_PARTS_MAX: usize = 20;

/// Reads a cohort upload's multipart body, storing its `cohort_file` as it arrives, and
/// queues the cohort for processing. The caller has authorised `who`. The names of parts
/// the operation does not know (read past, unless strict mode refuses them) go to `ignored`
/// (at most [`IGNORED_PARTS_MAX`]), for the request journal, whatever the answer.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn upload<S, O, E>(
    app: &App,
    who: &Principal,
    parent: &Parent,
    content_type: Option<&str>,
    content_length: Option<u64>,
    body: S,
    trace_id: Option<&str>,
    ignored: &mut Vec<String>,
) -> Result<Cohort, ApiError>
where
    S: Stream<Item = Result<O, E>> + Send + 'static,
    O: Into<Bytes> + 'static,
    E: Into<Box<dyn std::error::Error + Send + Sync>> + 'static,
{
    let limit = app.config.max_upload_bytes;
    let boundary = multipart_boundary(content_type)?;
    if content_length.is_some_and(|n| n > limit) {
        return Err(ApiError::TooLarge { limit });
    }
    let mut receiving = Receiving::begin(app, who, parent, trace_id).await?;
    let constraints =
        multer::Constraints::new().size_limit(multer::SizeLimit::new().whole_stream(limit));
    let mut form = multer::Multipart::with_constraints(body, boundary, constraints);
    let mut errors = ValidationErrors::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut name: Option<Name> = None;
    let mut cohort_category = CohortCategory::Cohort;
    let mut transformation = None;
    let mut has_file = false;
    loop {
        let mut field = match form.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => break,
            // A body with no part at all (only the closing delimiter, or nothing): report
            // the missing parts below rather than a malformed stream.
            Err(multer::Error::IncompleteStream) if seen.is_empty() => break,
            Err(e) => return Err(receiving.abort(multipart_error(e, limit)).await),
        };
        let part = field.name().unwrap_or("").to_string();
        let loc = Loc::body().at(part.as_str());
        let count = seen.entry(part.clone()).or_insert(0);
        *count += 1;
        let read = if *count > 1 && PARTS.contains(&part.as_str()) {
            errors.value_error(
                &loc,
                format_args!("the part '{part}' was sent more than once"),
            );
            drain(&mut field).await
        } else {
            match part.as_str() {
                "name" => read_part(&mut field, TEXT_PART_MAX_BYTES).await.map(|raw| {
                    if let Some(text) = text_part(raw, &loc, &mut errors) {
                        match Name::parse(&text) {
                            Ok(n) => name = Some(n),
                            Err(e) => errors.add(&loc, e.error_type(), e.message()),
                        }
                    }
                }),
                "cohort_category" => read_part(&mut field, TEXT_PART_MAX_BYTES).await.map(|raw| {
                    if let Some(text) = text_part(raw, &loc, &mut errors) {
                        match category(&text) {
                            Some(c) => cohort_category = c,
                            None => errors.add(
                                &loc,
                                ErrorType::Enum,
                                "Input should be 'cohort' or 'stop_file'",
                            ),
                        }
                    }
                }),
                "cohort_transformation_file" => {
                    read_part(&mut field, TRANSFORMATION_MAX_BYTES as usize)
                        .await
                        .map(|raw| transformation = transformation_part(raw, &mut errors))
                }
                "cohort_file" => {
                    has_file = true;
                    if errors.is_empty() {
                        let bytes = field.map_err(|e| multipart_error(e, limit));
                        if let Err(e) = receiving.store_file(bytes).await {
                            return Err(receiving.abort(e).await);
                        }
                        Ok(())
                    } else {
                        // Nothing will be stored: read on only to report every problem.
                        drain(&mut field).await
                    }
                }
                _ => {
                    if ignored.len() < IGNORED_PARTS_MAX && !ignored.contains(&part) {
                        ignored.push(part.clone());
                    }
                    if app.validation.strict {
                        errors.add(
                            &loc,
                            ErrorType::ExtraForbidden,
                            "Extra inputs are not permitted",
                        );
                    }
                    drain(&mut field).await
                }
            }
        };
        if let Err(e) = read {
            return Err(receiving.abort(multipart_error(e, limit)).await);
        }
    }
    for (part, present) in [
        ("name", seen.contains_key("name")),
        ("cohort_file", has_file),
        (
            "cohort_transformation_file",
            seen.contains_key("cohort_transformation_file"),
        ),
    ] {
        if !present {
            errors.add(&Loc::body().at(part), ErrorType::Missing, "Field required");
        }
    }
    match (name, transformation) {
        (Some(name), Some(t)) if errors.is_empty() => {
            receiving.accept(name, cohort_category, t).await
        }
        _ => Err(receiving.abort(ApiError::Validation(errors)).await),
    }
}

/// The boundary of a `multipart/form-data` request, or why the request is not one.
fn multipart_boundary(content_type: Option<&str>) -> Result<String, ApiError> {
    let Some(ct) = content_type else {
        return Err(ApiError::UnsupportedMediaType {
            message: "this route reads multipart/form-data (parts name, cohort_file, cohort_transformation_file, cohort_category); the request has no Content-Type".into(),
        });
    };
    let essence = crate::media_type::essence(ct);
    if essence != "multipart/form-data" {
        return Err(ApiError::UnsupportedMediaType {
            message: format!(
                "this route reads multipart/form-data (parts name, cohort_file, cohort_transformation_file, cohort_category), not '{essence}'"
            ),
        });
    }
    multer::parse_boundary(ct).map_err(|_| {
        ValidationErrors::single(
            &Loc::header().at("content-type"),
            ErrorType::ValueError,
            "Value error, multipart/form-data needs a boundary parameter",
        )
        .into()
    })
}

fn multipart_error(e: multer::Error, limit: u64) -> ApiError {
    match e {
        multer::Error::StreamSizeExceeded { .. } => ApiError::TooLarge { limit },
        other => ValidationErrors::single(
            &Loc::body(),
            ErrorType::ValueError,
            format!("Value error, the multipart body could not be read: {other}"),
        )
        .into(),
    }
}

/// Reads a small part whole; `Ok(None)` (the rest drained) when it is larger than `cap`.
async fn read_part(
    field: &mut multer::Field<'static>,
    cap: usize,
) -> Result<Option<Vec<u8>>, multer::Error> {
    let mut buf = Vec::new();
    let mut over = false;
    while let Some(chunk) = field.chunk().await? {
        if over || buf.len() + chunk.len() > cap {
            over = true;
            continue;
        }
        buf.extend_from_slice(&chunk);
    }
    Ok((!over).then_some(buf))
}

async fn drain(field: &mut multer::Field<'static>) -> Result<(), multer::Error> {
    while field.chunk().await?.is_some() {}
    Ok(())
}

/// A text part: `Some(text)` or the failures recorded.
fn text_part(raw: Option<Vec<u8>>, loc: &Loc, errors: &mut ValidationErrors) -> Option<String> {
    let Some(raw) = raw else {
        errors.add(
            loc,
            ErrorType::StringTooLong,
            format!("String should have at most {TEXT_PART_MAX_BYTES} bytes"),
        );
        return None;
    };
    match String::from_utf8(raw) {
        Ok(s) => Some(s),
        Err(_) => {
            errors.add(
                loc,
                ErrorType::StringType,
                "Input should be a valid string, unable to parse raw data as a unicode string",
            );
            None
        }
    }
}

fn category(s: &str) -> Option<CohortCategory> {
    match s {
        "cohort" => Some(CohortCategory::Cohort),
        "stop_file" => Some(CohortCategory::StopFile),
        _ => None,
    }
}

/// The transformation config: its bytes as uploaded and the checked config, or the
/// failures recorded.
fn transformation_part(
    raw: Option<Vec<u8>>,
    errors: &mut ValidationErrors,
) -> Option<(Vec<u8>, Transformation)> {
    let loc = Loc::body().at("cohort_transformation_file");
    let Some(raw) = raw else {
        errors.value_error(
            &loc,
            format_args!("the transformation file is larger than {TRANSFORMATION_MAX_BYTES} bytes"),
        );
        return None;
    };
    if raw.iter().all(u8::is_ascii_whitespace) {
        errors.add(
            &loc,
            ErrorType::JsonInvalid,
            "the transformation file is empty; it must hold a JSON object",
        );
        return None;
    }
    let value: Value = match serde_json::from_slice(&raw) {
        Ok(v) => v,
        Err(e) => {
            errors.add(
                &loc,
                ErrorType::JsonInvalid,
                format!("the transformation file is not JSON: {e}"),
            );
            return None;
        }
    };
    // Read leniently even in strict mode: `validate::transformation_config` checks the
    // free-form maps `app_variables` and `app_overrides` as objects of known keys, so strict
    // mode would refuse every variable name (and an unknown override key must fail the
    // processing, not the upload).
    match validate::transformation_config(&value, &loc, validate::Options::default()) {
        Ok(t) => Some((raw, t)),
        Err(e) => {
            errors.extend(e);
            None
        }
    }
}
