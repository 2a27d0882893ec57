//! Validated domain types: what a request means once every rule holds.
//!
//! Parse, don't validate: each type can only be built through [`crate::validate`] (or the
//! `TryFrom` impls from typed wire values, which are there too), so holding one proves the
//! rules. Each converts
//! back to its wire form for answers.
//!
//! A [`CampaignSpec`] also has a serde form, the one the platform stores: reading it back
//! checks each value's own type ([`Name`], [`E164`], [`CallingWindow`] ...) but not the rules
//! that tie fields together or depend on the time of creation, which held when it was written.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::domain::phone::E164;
use crate::domain::schedule::CallingWindow;
use crate::error::ErrorType;
use crate::validate::limits;
use crate::wire::{self, AppOverrides, AppType, DayOfWeek, JsonObject, RetryOutcome};

/// A campaign, deployment or cohort name: `^[\w\- ]{1,50}$` (`\w` as in Unicode regular
/// expressions: letters, digits, marks and connector punctuation such as `_`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Name(String);

/// Why a name or description was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextError {
    /// Empty.
    TooShort,
    /// Longer than allowed (characters, not bytes).
    TooLong(usize),
    /// A character outside `[\w\- ]`.
    Pattern,
    /// A NUL character (U+0000), which no text of the interface holds.
    Nul,
}

impl TextError {
    /// The validation type of this failure.
    pub fn error_type(self) -> ErrorType {
        match self {
            TextError::TooShort => ErrorType::StringTooShort,
            TextError::TooLong(_) => ErrorType::StringTooLong,
            TextError::Pattern => ErrorType::StringPatternMismatch,
            TextError::Nul => ErrorType::ValueError,
        }
    }

    /// The validation message of this failure.
    pub fn message(self) -> String {
        match self {
            TextError::TooShort => "String should have at least 1 character".into(),
            TextError::TooLong(max) => format!("String should have at most {max} characters"),
            TextError::Pattern => format!("String should match pattern '{}'", limits::NAME_PATTERN),
            TextError::Nul => "String must not contain a NUL character (U+0000)".into(),
        }
    }
}

fn is_word_char(c: char) -> bool {
    // Python's `\w` for str patterns: alphanumerics (any script) and the underscore; Rust's
    // `char::is_alphanumeric` covers the same letters and digits.
    c.is_alphanumeric() || c == '_'
}

impl Name {
    /// Checks a name against `^[\w\- ]{1,50}$`.
    pub fn parse(s: &str) -> Result<Name, TextError> {
        let n = s.chars().count();
        if n == 0 {
            return Err(TextError::TooShort);
        }
        if n > limits::NAME_MAX_CHARS {
            return Err(TextError::TooLong(limits::NAME_MAX_CHARS));
        }
        if !s.chars().all(|c| is_word_char(c) || c == '-' || c == ' ') {
            return Err(TextError::Pattern);
        }
        Ok(Name(s.to_string()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A description of at most 150 characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Description(String);

impl TryFrom<String> for Name {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        Name::parse(&s).map_err(|e| format!("name {s:?}: {}", e.message()))
    }
}

impl From<Name> for String {
    fn from(n: Name) -> String {
        n.0
    }
}

impl TryFrom<String> for Description {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        Description::parse(&s).map_err(|e| format!("description: {}", e.message()))
    }
}

impl From<Description> for String {
    fn from(d: Description) -> String {
        d.0
    }
}

impl Description {
    /// Checks the length (characters, not bytes) and refuses NUL, which C-string tools and
    /// many databases cut text at.
    pub(crate) fn parse(s: &str) -> Result<Description, TextError> {
        if s.chars().count() > limits::DESCRIPTION_MAX_CHARS {
            return Err(TextError::TooLong(limits::DESCRIPTION_MAX_CHARS));
        }
        if s.contains('\0') {
            return Err(TextError::Nul);
        }
        Ok(Description(s.to_string()))
    }

    /// The description.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Where call notifications go: an `http(s)` URL and optional metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhookTarget {
    /// The URL.
    pub url: String,
    /// Attached to every notification.
    pub metadata: Option<JsonObject>,
}

impl WebhookTarget {
    /// The wire form.
    pub fn to_wire(&self) -> wire::WebhookConfig {
        wire::WebhookConfig {
            url: self.url.clone(),
            metadata: self.metadata.clone(),
        }
    }
}

/// A campaign connection: its numbers and its share of the dials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WeightedConnection {
    /// The telephony connection.
    pub connection_id: String,
    /// Numbers the calls leave from, used in turn (at least one).
    pub phone_numbers: Vec<E164>,
    /// Relative share of the dials (at least 1).
    pub weight: u32,
}

impl WeightedConnection {
    /// The wire form.
    pub(crate) fn to_wire(&self) -> wire::CampaignConnectionConfig {
        wire::CampaignConnectionConfig {
            connection_id: self.connection_id.clone(),
            phone_numbers: self.phone_numbers.iter().map(|p| p.to_string()).collect(),
            weight: self.weight,
        }
    }
}

/// When and how often a user is dialled again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Retries after the first dial.
    pub max_retries: u32,
    /// Outcomes that are retried.
    pub retry_on: BTreeSet<RetryOutcome>,
    /// A connected call shorter than this is `short_duration`.
    pub threshold_seconds: u32,
    /// Least gap between an attempt's end and the next dial of that user.
    pub retry_interval_minutes: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 0,
            retry_on: BTreeSet::new(),
            threshold_seconds: limits::THRESHOLD_DEFAULT,
            retry_interval_minutes: limits::RETRY_INTERVAL_DEFAULT,
        }
    }
}

impl RetryPolicy {
    /// Whether an outcome is retried.
    pub fn retries(&self, outcome: RetryOutcome) -> bool {
        self.retry_on.contains(&outcome)
    }

    /// The most attempts a user can get: `max_retries + 1` (rule 1).
    pub fn max_attempts(&self) -> u32 {
        self.max_retries + 1
    }

    /// The wire (list) form.
    pub fn to_wire(&self) -> wire::RetryConfig {
        wire::RetryConfig {
            max_retries: self.max_retries,
            retry_on: self.retry_on.iter().copied().collect(),
            threshold_seconds: self.threshold_seconds,
            retry_interval_minutes: self.retry_interval_minutes,
        }
    }
}

/// The calling window as the wire answers it.
pub(crate) fn allowed_schedule_wire(w: &CallingWindow) -> wire::AllowedSchedule {
    wire::AllowedSchedule {
        timezone: w.timezone().name().to_string(),
        allowed_days: w.days().iter().map(DayOfWeek::from_weekday).collect(),
        allowed_start_time: w.start().to_string(),
        allowed_end_time: w.end().to_string(),
    }
}

/// The inbound window as the wire answers it.
pub(crate) fn inbound_config_wire(w: &CallingWindow) -> wire::InboundConfig {
    wire::InboundConfig {
        start_time: w.start().to_string(),
        end_time: w.end().to_string(),
        allowed_days: w.days().iter().map(DayOfWeek::from_weekday).collect(),
        timezone: w.timezone().name().to_string(),
    }
}

/// A campaign as created: every rule of the Limits table holds. Its serde form is how the
/// platform stores it (see the module documentation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CampaignSpec {
    /// Its name.
    pub name: Name,
    /// Its description.
    pub description: Option<Description>,
    /// When dialling may begin.
    pub start: DateTime<Utc>,
    /// When the campaign ends.
    pub end: DateTime<Utc>,
    /// The calling window.
    pub window: CallingWindow,
    /// The agent.
    pub app_id: String,
    /// The agent version.
    pub app_version: i64,
    /// `agent`.
    pub app_type: AppType,
    /// Dials per second, 0.1 to 500.
    pub attempts_per_second: f64,
    /// Connections and weights, at least one.
    pub connections: Vec<WeightedConnection>,
    /// The retry policy.
    pub retry: RetryPolicy,
    /// Where each attempt's notification goes.
    pub webhook: Option<WebhookTarget>,
}

impl CampaignSpec {
    /// The agent configuration as answered.
    pub fn app_config_wire(&self) -> wire::CampaignAppConfig {
        wire::CampaignAppConfig {
            app_id: self.app_id.clone(),
            app_version: self.app_version,
            app_type: self.app_type,
            attempts_per_second: self.attempts_per_second,
            connection_configs: self.connections.iter().map(|c| c.to_wire()).collect(),
            retry_config: self.retry.to_wire(),
            webhook_config: self.webhook.as_ref().map(WebhookTarget::to_wire),
        }
    }

    /// The calling window as answered.
    pub fn allowed_schedule_wire(&self) -> wire::AllowedSchedule {
        allowed_schedule_wire(&self.window)
    }

    /// This campaign as a create request, e.g. to send it again.
    pub fn to_create_request(&self) -> wire::CampaignCreateRequest {
        let app = self.app_config_wire();
        wire::CampaignCreateRequest {
            name: self.name.as_str().to_string(),
            description: self.description.as_ref().map(|d| d.as_str().to_string()),
            start_timestamp: self.start,
            end_timestamp: self.end,
            allowed_schedule: self.allowed_schedule_wire(),
            app_config: wire::CampaignAppConfigRequest {
                app_id: app.app_id,
                app_version: app.app_version,
                app_type: Some(app.app_type),
                attempts_per_second: app.attempts_per_second,
                connection_configs: app.connection_configs,
                retry_config: Some(wire::RetryConfigRequest {
                    max_retries: Some(app.retry_config.max_retries),
                    retry_on: Some(wire::RetryOn::List(app.retry_config.retry_on)),
                    threshold_seconds: Some(app.retry_config.threshold_seconds),
                    retry_interval_minutes: Some(app.retry_config.retry_interval_minutes),
                }),
                webhook_config: app.webhook_config,
            },
        }
    }
}

/// A connection of a deployment: its numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeploymentConnection {
    /// The telephony connection.
    pub(crate) connection_id: String,
    /// Numbers routed to the deployment.
    pub(crate) phone_numbers: Vec<E164>,
}

impl DeploymentConnection {
    /// The wire form.
    pub(crate) fn to_wire(&self) -> wire::DeploymentConnectionConfig {
        wire::DeploymentConnectionConfig {
            connection_id: self.connection_id.clone(),
            phone_numbers: self.phone_numbers.iter().map(|p| p.to_string()).collect(),
        }
    }
}

/// A deployment as created or patched.
#[derive(Debug, Clone, PartialEq)]
pub struct DeploymentSpec {
    /// Its name.
    pub(crate) name: Name,
    /// The agent.
    pub(crate) app_id: String,
    /// The deployed version.
    pub app_version: i64,
    /// Connections and numbers, at least one; no number twice.
    pub(crate) connections: Vec<DeploymentConnection>,
    /// Its description.
    pub description: Option<Description>,
    /// When calls are answered; `None`: always.
    pub inbound: Option<CallingWindow>,
}

impl DeploymentSpec {
    /// Every number of every connection, in order.
    pub fn phone_numbers(&self) -> Vec<E164> {
        self.connections
            .iter()
            .flat_map(|c| c.phone_numbers.iter().cloned())
            .collect()
    }

    /// This deployment as a create request, e.g. to store it.
    pub fn to_create_request(&self) -> wire::DeploymentCreateRequest {
        wire::DeploymentCreateRequest {
            name: self.name.as_str().to_string(),
            app_id: self.app_id.clone(),
            app_version: self.app_version,
            connection_configs: self.connections.iter().map(|c| c.to_wire()).collect(),
            description: self.description.as_ref().map(|d| d.as_str().to_string()),
            inbound_config: self.inbound.as_ref().map(inbound_config_wire),
        }
    }
}

/// An instant outbound call as requested.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboundCall {
    /// The agent.
    pub app_id: String,
    /// The agent version.
    pub app_version: i64,
    /// `agent`.
    pub app_type: AppType,
    /// The telephony connection.
    pub connection_id: String,
    /// The number the call leaves from.
    pub agent_phone_number: E164,
    /// Variables for the agent.
    pub agent_variables: JsonObject,
    /// Overrides of the agent's opening.
    pub app_overrides: AppOverrides,
    /// Who to call.
    pub user_phone_number: E164,
    /// Where the notification goes.
    pub webhook: Option<WebhookTarget>,
}

/// One agent variable of a transformation: a CSV column, and whether it must be filled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnRule {
    /// The CSV column.
    pub column: String,
    /// Reject rows where it is empty.
    pub required: bool,
}

/// A transformation config, structurally valid. The columns it names are checked against the
/// CSV header when the file is processed (a missing column fails the whole upload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transformation {
    /// The phone-number column.
    pub phone_column: String,
    /// Region for national numbers (alpha-2 or calling code), if any.
    pub country_code: Option<String>,
    /// The user-identifier column.
    pub user_identifier: Option<ColumnRule>,
    /// Agent variables by name.
    pub app_variables: Vec<(String, ColumnRule)>,
    /// Agent overrides: `initial_bot_message`, `initial_state_name`, `initial_language_name`.
    pub app_overrides: Vec<(String, String)>,
    /// Override keys outside the three; the notes fail the whole upload for these.
    pub unknown_overrides: Vec<String>,
}

impl Transformation {
    /// Every column the config names, each once, in a stable order.
    pub fn columns(&self) -> Vec<&str> {
        let named = std::iter::once(self.phone_column.as_str())
            .chain(self.user_identifier.iter().map(|u| u.column.as_str()))
            .chain(self.app_variables.iter().map(|(_, r)| r.column.as_str()))
            .chain(self.app_overrides.iter().map(|(_, c)| c.as_str()));
        let mut out: Vec<&str> = Vec::new();
        for c in named {
            if !out.contains(&c) {
                out.push(c);
            }
        }
        out
    }
}

/// A cohort stream as requested; users are checked one by one when processed (a bad number
/// rejects that user, not the stream).
#[derive(Debug, Clone, PartialEq)]
pub struct CohortStream {
    /// The cohort's name.
    pub name: Name,
    /// `cohort` or `stop_file`.
    pub category: wire::CohortCategory,
    /// Region for national numbers.
    pub country_code: Option<String>,
    /// The users, 1 to 1000.
    pub users: Vec<wire::CohortStreamUser>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("Spring sale", true)]
    #[case("a", true)]
    #[case("under_score-and-hyphen 123", true)]
    #[case("Ünïcödé naïve", true)]
    #[case("", false)]
    #[case("dot.", false)]
    #[case("slash/", false)]
    #[case("tab\t", false)]
    fn name_pattern(#[case] name: &str, #[case] ok: bool) {
        assert_eq!(Name::parse(name).is_ok(), ok, "{name:?}");
    }

    #[rstest]
    #[case(50, None)]
    #[case(51, Some(TextError::TooLong(50)))]
    fn name_length(#[case] n: usize, #[case] err: Option<TextError>) {
        assert_eq!(Name::parse(&"é".repeat(n)).err(), err);
    }

    #[rstest]
    #[case(150, true)]
    #[case(151, false)]
    fn description_length_counts_characters(#[case] n: usize, #[case] ok: bool) {
        assert_eq!(Description::parse(&"ü".repeat(n)).is_ok(), ok);
    }
}
