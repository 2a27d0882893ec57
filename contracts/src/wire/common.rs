//! Types shared by several resources: the paginated list, sort order, weekday names, the agent
//! type, webhook targets and agent overrides.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use utoipa::ToSchema;

/// A free-form JSON object (agent variables, webhook metadata).
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// The agent type; the interface knows one value, `agent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, ToSchema)]
pub enum AppType {
    /// A conversational voice agent.
    #[default]
    #[serde(rename = "agent")]
    Agent,
}

/// Where call notifications go.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WebhookConfig {
    /// Address the notifications are POSTed to.
    pub url: String,
    /// Free-form, attached to every notification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<JsonObject>,
}

/// Overrides of the agent's opening, per call.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
pub struct AppOverrides {
    /// The first thing the agent says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_bot_message: Option<String>,
    /// The state the agent starts in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_state_name: Option<String>,
    /// The language the agent starts in (cohort overrides only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_language_name: Option<String>,
}

/// Sort direction of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SortOrder {
    /// Smallest first.
    Asc,
    /// Largest first (the default).
    #[default]
    Desc,
}

/// A weekday name as used in `allowed_schedule.allowed_days` and `inbound_config.allowed_days`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
pub enum DayOfWeek {
    /// Monday.
    Monday,
    /// Tuesday.
    Tuesday,
    /// Wednesday.
    Wednesday,
    /// Thursday.
    Thursday,
    /// Friday.
    Friday,
    /// Saturday.
    Saturday,
    /// Sunday.
    Sunday,
}

impl DayOfWeek {
    /// Every day, Monday first.
    pub const ALL: [DayOfWeek; 7] = [
        DayOfWeek::Monday,
        DayOfWeek::Tuesday,
        DayOfWeek::Wednesday,
        DayOfWeek::Thursday,
        DayOfWeek::Friday,
        DayOfWeek::Saturday,
        DayOfWeek::Sunday,
    ];

    /// The chrono weekday.
    pub(crate) fn weekday(self) -> chrono::Weekday {
        match self {
            DayOfWeek::Monday => chrono::Weekday::Mon,
            DayOfWeek::Tuesday => chrono::Weekday::Tue,
            DayOfWeek::Wednesday => chrono::Weekday::Wed,
            DayOfWeek::Thursday => chrono::Weekday::Thu,
            DayOfWeek::Friday => chrono::Weekday::Fri,
            DayOfWeek::Saturday => chrono::Weekday::Sat,
            DayOfWeek::Sunday => chrono::Weekday::Sun,
        }
    }

    /// The wire name for a chrono weekday.
    pub(crate) fn from_weekday(d: chrono::Weekday) -> Self {
        DayOfWeek::ALL[d.num_days_from_monday() as usize]
    }
}

/// An org and a workspace: whose a journal entry is, which workspace a reset emptied.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
pub struct WorkspaceId {
    /// The org (`*` where an API key that opens every org made the request).
    pub org_id: String,
    /// The workspace (`*` where an API key that opens every workspace of the org made it).
    pub workspace_id: String,
}

/// One page of a list: `{items, total, limit, offset, next_page_uri, prev_page_uri}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Page<T> {
    /// This page.
    pub items: Vec<T>,
    /// How many items match the query in all.
    pub total: u64,
    /// The most items a page holds.
    pub limit: u32,
    /// How many matching items come before this page.
    pub offset: u64,
    /// The full URI of the next page, with the other query parameters kept; null on the last page.
    pub next_page_uri: Option<String>,
    /// The full URI of the previous page; null on the first page.
    pub prev_page_uri: Option<String>,
}

/// A field of a PATCH body: absent (leave as is), `null` (clear) or a value (set).
///
/// Serialises as the value or `null`; an absent field is skipped with
/// `#[serde(default, skip_serializing_if = "Patch::is_absent")]`; in the OpenAPI documents
/// such a field is described as `Option<T>` with `#[schema(value_type = Option<T>)]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Patch<T> {
    /// Not in the body: leave the field as it is.
    #[default]
    Absent,
    /// `null`: clear the field.
    Null,
    /// A new value.
    Value(T),
}

impl<T> Patch<T> {
    /// Whether the field was left out.
    pub(crate) fn is_absent(&self) -> bool {
        matches!(self, Patch::Absent)
    }
}

impl<T: Serialize> Serialize for Patch<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Patch::Absent | Patch::Null => s.serialize_none(),
            Patch::Value(v) => v.serialize(s),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Patch<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Option::<T>::deserialize(d)? {
            None => Patch::Null,
            Some(v) => Patch::Value(v),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct P {
        #[serde(default, skip_serializing_if = "Patch::is_absent")]
        description: Patch<String>,
    }

    #[test]
    fn patch_tells_absent_null_and_value_apart() {
        let absent: P = serde_json::from_str("{}").unwrap();
        let null: P = serde_json::from_str(r#"{"description":null}"#).unwrap();
        let value: P = serde_json::from_str(r#"{"description":"x"}"#).unwrap();
        assert_eq!(absent.description, Patch::Absent);
        assert_eq!(null.description, Patch::Null);
        assert_eq!(value.description, Patch::Value("x".into()));
        assert_eq!(serde_json::to_string(&absent).unwrap(), "{}");
        assert_eq!(
            serde_json::to_string(&null).unwrap(),
            r#"{"description":null}"#
        );
    }

    #[test]
    fn weekdays_round_trip() {
        for d in DayOfWeek::ALL {
            assert_eq!(DayOfWeek::from_weekday(d.weekday()), d);
        }
        assert_eq!(
            serde_json::to_string(&DayOfWeek::Monday).unwrap(),
            r#""Monday""#
        );
    }
}
