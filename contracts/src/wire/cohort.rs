//! Cohorts: users to call (campaigns) or to recognise (deployments), under the scheduling base
//! `{base_url}/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}`, below
//! `/campaigns/{id}` or `/deployments/{id}`:
//!
//! | Method | Path | Body | Answer |
//! |---|---|---|---|
//! | POST | `/cohorts/upload` | multipart [`CohortUploadForm`] | [`Cohort`], status `processing` |
//! | POST | `/cohorts/stream` | [`CohortStreamRequest`] | [`Cohort`] |
//! | GET | `/cohorts` | query offset, limit | [`crate::wire::Page`] of [`Cohort`] |
//! | GET | `/cohorts/{cohort_id}` | | [`Cohort`] |
//! | GET | `/cohorts/{cohort_id}/files` | query [`CohortFilesQuery`] | the file |

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::common::{AppOverrides, JsonObject};

/// Processing state of a cohort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CohortStatus {
    /// Uploaded; rows are being read.
    Processing,
    /// Every row was read; `result` counts them.
    Completed,
    /// The upload as a whole was refused; `failure_reason` says why.
    Failed,
}

impl CohortStatus {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            CohortStatus::Processing => "processing",
            CohortStatus::Completed => "completed",
            CohortStatus::Failed => "failed",
        }
    }
}

/// What a cohort is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CohortCategory {
    /// Users to call (the default).
    #[default]
    Cohort,
    /// Users never to call: an exclusion list for users already in the campaign.
    StopFile,
}

impl CohortCategory {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            CohortCategory::Cohort => "cohort",
            CohortCategory::StopFile => "stop_file",
        }
    }
}

/// How a cohort arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CohortSourceType {
    /// A multipart CSV upload.
    FileUpload,
    /// A JSON stream of users (assumed name).
    Stream,
}

/// Counts of a processed cohort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
pub struct CohortResult {
    /// Data rows read.
    pub total_records: u64,
    /// Rows accepted.
    pub valid_records: u64,
    /// Rows rejected; see the `rejected_records` file.
    pub rejected_records: u64,
}

/// A cohort as answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Cohort {
    /// The cohort's id (`coh-…`).
    pub cohort_id: String,
    /// Its name.
    pub name: String,
    /// `processing`, `completed` or `failed`.
    pub status: CohortStatus,
    /// How it arrived.
    pub source_type: CohortSourceType,
    /// `cohort` or `stop_file`.
    pub cohort_category: CohortCategory,
    /// Counts, once processing has finished; null before and on failure.
    pub result: Option<CohortResult>,
    /// Why the whole upload failed (status `failed`); null otherwise.
    pub failure_reason: Option<String>,
    /// Who uploaded it.
    pub created_by: String,
    /// Who changed it last.
    pub updated_by: String,
    /// When it was uploaded.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: DateTime<Utc>,
}

/// The multipart form of `POST .../cohorts/upload`.
#[derive(Debug, Clone, ToSchema)]
pub struct CohortUploadForm {
    /// Cohort name, pattern `^[\w\- ]{1,50}$`.
    pub name: String,
    /// The users: a UTF-8 CSV with a header row and at least one data row.
    #[schema(value_type = String, format = Binary)]
    pub cohort_file: Vec<u8>,
    /// The [`TransformationConfig`] as a JSON file.
    #[schema(value_type = String, format = Binary)]
    pub cohort_transformation_file: Vec<u8>,
    /// `cohort` (default) or `stop_file`.
    pub cohort_category: Option<CohortCategory>,
}

/// Which column holds the phone number, and the country for national numbers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PhoneNumberMapping {
    /// CSV column name.
    pub column_name: String,
    /// ISO 3166-1 alpha-2 region (or calling code) for numbers without `+`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country_code: Option<String>,
}

/// A CSV column, and whether a row without a value there is rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ColumnMapping {
    /// CSV column name.
    pub column_name: String,
    /// Reject rows where the column is empty (default false).
    #[serde(default)]
    pub required: bool,
}

/// A CSV column that sets an agent override.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct OverrideMapping {
    /// CSV column name.
    pub column_name: String,
}

/// The agent overrides a cohort may set from its columns.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
pub struct OverrideMappings {
    /// Column for `initial_bot_message`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_bot_message: Option<OverrideMapping>,
    /// Column for `initial_state_name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_state_name: Option<OverrideMapping>,
    /// Column for `initial_language_name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_language_name: Option<OverrideMapping>,
}

/// How CSV columns become users: the `cohort_transformation_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TransformationConfig {
    /// The phone-number column.
    pub phone_number: PhoneNumberMapping,
    /// The user-identifier column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_identifier: Option<ColumnMapping>,
    /// Agent variables, each from a column.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub app_variables: BTreeMap<String, ColumnMapping>,
    /// Agent overrides, each from a column; a key other than the three passes the upload and
    /// fails the cohort (status `failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_overrides: Option<OverrideMappings>,
}

/// One user of a JSON stream (assumed shape: the reference names the endpoint only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CohortStreamUser {
    /// The user's number: E.164, or national with the request's `country_code`.
    pub phone_number: String,
    /// The user's identifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_identifier: Option<String>,
    /// Agent variables for this user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub app_variables: Option<JsonObject>,
    /// Agent overrides for this user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_overrides: Option<AppOverrides>,
}

/// Body of `POST .../cohorts/stream`: 1 to 1000 users.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CohortStreamRequest {
    /// Cohort name, pattern `^[\w\- ]{1,50}$`.
    pub name: String,
    /// `cohort` (default) or `stop_file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cohort_category: Option<CohortCategory>,
    /// Region for numbers without `+` (ISO 3166-1 alpha-2 or calling code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country_code: Option<String>,
    /// The users, 1 to 1000.
    pub users: Vec<CohortStreamUser>,
}

/// The files of a cohort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CohortFileType {
    /// The CSV as uploaded (`text/csv`).
    Cohort,
    /// The rejected rows: the original columns plus `rejected_reason` (`text/csv`).
    RejectedRecords,
    /// The transformation config as uploaded (`application/json`).
    CohortTransformation,
}

impl CohortFileType {
    /// Every file type.
    pub const ALL: [CohortFileType; 3] = [
        CohortFileType::Cohort,
        CohortFileType::RejectedRecords,
        CohortFileType::CohortTransformation,
    ];

    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            CohortFileType::Cohort => "cohort",
            CohortFileType::RejectedRecords => "rejected_records",
            CohortFileType::CohortTransformation => "cohort_transformation",
        }
    }
}

/// Query of `GET .../cohorts/{cohort_id}/files`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CohortFilesQuery {
    /// Which file.
    pub(crate) file_type: CohortFileType,
}

/// Query of `GET .../cohorts`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct CohortListQuery {
    /// Matches to skip (at least 0; default 0).
    pub(crate) offset: Option<i64>,
    /// Page size (1 to 100; default 20).
    pub(crate) limit: Option<i64>,
}
