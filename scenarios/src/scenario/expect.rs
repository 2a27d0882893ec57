//! Expectations: what must hold, each judged into one check of the report.
//!
//! Each `[[expect]]` entry is an [`Expectation`]: an optional `name`, an optional time `at`
//! (default: the end of the run) and what is asserted, named by `check`. Counts are a
//! [`Count`]: a number (exactly) or `{ at_least = N, at_most = M }`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::kms::KmsFaultKind;
use super::time::At;
use contracts::wire::byok::EndpointScope;

/// One expectation.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
pub(crate) struct Expectation {
    /// Its name in reports (default: the check and what it is about).
    #[serde(default)]
    pub(crate) name: Option<String>,
    /// When it is judged (default: the end of the run).
    #[serde(default)]
    pub(crate) at: Option<At>,
    /// What must hold.
    #[serde(flatten)]
    pub(crate) check: Expect,
}

/// What must hold; `check` names it.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "check", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Expect {
    /// The campaign's `status` (from `GET .../campaigns/{id}`).
    CampaignStatus {
        /// The campaign's key.
        campaign: String,
        /// `scheduled`, `active`, `paused`, `ended` or `cancelled`.
        status: StatusName,
    },
    /// Whether the campaign's `statistics.capacity_warning` is set (rule 3: its attempt
    /// budget exceeds what its rate allows in the open window time left). The platform
    /// warns until the campaign ends: judge it with an `at` before the end.
    CapacityWarning {
        /// The campaign's key.
        campaign: String,
        /// Whether a warning is expected.
        warned: bool,
    },
    /// Attempts (dials) of every user of the campaign, or of one number.
    AttemptsPerUser {
        /// The campaign's key.
        campaign: String,
        /// Only this number (E.164); default every user of the campaign's cohorts.
        #[serde(default)]
        number: Option<String>,
        /// Attempts each.
        attempts: Count,
    },
    /// Attempts by result (the campaign's `statistics.attempts_by_outcome`); only the
    /// results given are judged.
    Outcomes {
        /// The campaign's key.
        campaign: String,
        /// Every attempt.
        #[serde(default)]
        total: Option<Count>,
        /// `connected`.
        #[serde(default)]
        connected: Option<Count>,
        /// `short_duration`.
        #[serde(default)]
        short_duration: Option<Count>,
        /// `busy`.
        #[serde(default)]
        busy: Option<Count>,
        /// `no_answer`.
        #[serde(default)]
        no_answer: Option<Count>,
        /// `failed`.
        #[serde(default)]
        failed: Option<Count>,
        /// `provider_error`.
        #[serde(default)]
        provider_error: Option<Count>,
        /// `internal_error`.
        #[serde(default)]
        internal_error: Option<Count>,
    },
    /// User counts of the campaign's `statistics`; only those given are judged.
    Users {
        /// The campaign's key.
        campaign: String,
        /// `users_total`.
        #[serde(default)]
        total: Option<Count>,
        /// `users_done`.
        #[serde(default)]
        done: Option<Count>,
        /// `users_unfinished`.
        #[serde(default)]
        unfinished: Option<Count>,
        /// `users_excluded`.
        #[serde(default)]
        excluded: Option<Count>,
        /// `users_pending`.
        #[serde(default)]
        pending: Option<Count>,
    },
    /// The achieved dial rate between two times: dials divided by the seconds the calling
    /// window was open between them (closed stretches do not count).
    DialRate {
        /// The campaign's key.
        campaign: String,
        /// From (default: the campaign's start).
        #[serde(default)]
        from: Option<At>,
        /// Until (default: the campaign's end or the end of the run).
        #[serde(default)]
        until: Option<At>,
        /// Dials per second expected.
        rate: f64,
        /// Allowed relative difference (default 0.05: within 5 %).
        #[serde(default)]
        tolerance: Option<f64>,
    },
    /// The share of dials on each connection (rule 4).
    WeightSplit {
        /// The campaign's key.
        campaign: String,
        /// Expected share by `connection_id` (shares add up to 1).
        shares: BTreeMap<String, f64>,
        /// Allowed absolute difference of each share (default 0.02).
        #[serde(default)]
        tolerance: Option<f64>,
    },
    /// Rule 4: the phone numbers inside a connection are used equally: the dials of its most
    /// and least used numbers differ by at most `spread`.
    NumbersUsedEqually {
        /// The campaign's key.
        campaign: String,
        /// Only this `connection_id` (default: every connection of the campaign).
        #[serde(default)]
        connection: Option<String>,
        /// The largest difference allowed between the dials of two numbers of one connection
        /// (default 1: numbers in turn).
        #[serde(default)]
        spread: Option<u64>,
    },
    /// No dial of the campaign started outside its calling window or its start and end.
    NoDialOutsideWindow {
        /// The campaign's key.
        campaign: String,
    },
    /// No dial was placed twice: every attempt id once, every user's attempt index once.
    NoDialRepeated {
        /// The campaign's key.
        campaign: String,
    },
    /// Calls to the key service (from its audit log).
    KeyServiceCalls {
        /// `auth`, `decrypt-key`, `rotate-key` or `all` (default).
        #[serde(default)]
        endpoint: EndpointScope,
        /// Only calls with this outcome (`OK`, `SERVICE_UNAVAILABLE`, ...); default every call.
        #[serde(default)]
        outcome: Option<String>,
        /// Only calls served this fault kind (`latency`, `hang`, `malformed_json`, ...), as
        /// the key service's log records it; default every call. A damaged 200 has the
        /// outcome `OK`: this is how to see it was served.
        #[serde(default)]
        fault: Option<KmsFaultKind>,
        /// How many.
        calls: Count,
    },
    /// Webhook events of the campaign's attempts, as the runner's receiver got them (the
    /// campaign needs `webhooks = true`): events per attempt, each signature valid.
    Webhooks {
        /// The campaign's key.
        campaign: String,
        /// Events received per attempt (default exactly 1).
        #[serde(default)]
        per_attempt: Option<Count>,
    },
    /// An inbound call (a timeline `inbound_call` step): answered or not, and what the agent
    /// received.
    Inbound {
        /// The call's key.
        call: String,
        /// Whether the agent answered.
        answered: bool,
        /// Why not (`deployment_paused`, `outside_schedule`, `no_deployment`).
        #[serde(default)]
        rejection: Option<String>,
        /// The variables the agent received (exactly these).
        #[serde(default)]
        #[schemars(with = "Option<BTreeMap<String, Value>>")]
        variables: Option<Value>,
    },
    /// The cohort's `result.rejected_records`.
    RejectedRecords {
        /// The cohort's key.
        cohort: String,
        /// How many rows were rejected.
        rejected: Count,
    },
}

impl Expect {
    /// The `check` name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Expect::CampaignStatus { .. } => "campaign_status",
            Expect::CapacityWarning { .. } => "capacity_warning",
            Expect::AttemptsPerUser { .. } => "attempts_per_user",
            Expect::Outcomes { .. } => "outcomes",
            Expect::Users { .. } => "users",
            Expect::DialRate { .. } => "dial_rate",
            Expect::WeightSplit { .. } => "weight_split",
            Expect::NumbersUsedEqually { .. } => "numbers_used_equally",
            Expect::NoDialOutsideWindow { .. } => "no_dial_outside_window",
            Expect::NoDialRepeated { .. } => "no_dial_repeated",
            Expect::KeyServiceCalls { .. } => "key_service_calls",
            Expect::Webhooks { .. } => "webhooks",
            Expect::Inbound { .. } => "inbound",
            Expect::RejectedRecords { .. } => "rejected_records",
        }
    }

    /// The campaign it is about, if any.
    pub(crate) fn campaign(&self) -> Option<&str> {
        match self {
            Expect::CampaignStatus { campaign, .. }
            | Expect::CapacityWarning { campaign, .. }
            | Expect::AttemptsPerUser { campaign, .. }
            | Expect::Outcomes { campaign, .. }
            | Expect::Users { campaign, .. }
            | Expect::DialRate { campaign, .. }
            | Expect::WeightSplit { campaign, .. }
            | Expect::NumbersUsedEqually { campaign, .. }
            | Expect::NoDialOutsideWindow { campaign }
            | Expect::NoDialRepeated { campaign }
            | Expect::Webhooks { campaign, .. } => Some(campaign),
            _ => None,
        }
    }
}

/// A campaign status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StatusName {
    /// Before its start.
    Scheduled,
    /// Dialling (inside its window).
    Active,
    /// Paused.
    Paused,
    /// Past its end.
    Ended,
    /// Cancelled.
    Cancelled,
}

impl StatusName {
    /// The wire value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            StatusName::Scheduled => "scheduled",
            StatusName::Active => "active",
            StatusName::Paused => "paused",
            StatusName::Ended => "ended",
            StatusName::Cancelled => "cancelled",
        }
    }
}

/// A count: exactly `N`, or within `{ at_least, at_most }` (either or both).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Count {
    /// The least allowed.
    pub(crate) at_least: Option<u64>,
    /// The most allowed.
    pub(crate) at_most: Option<u64>,
}

impl Count {
    /// Exactly `n`.
    pub(crate) fn exactly(n: u64) -> Count {
        Count {
            at_least: Some(n),
            at_most: Some(n),
        }
    }

    /// Whether `n` is allowed.
    pub(crate) fn admits(&self, n: u64) -> bool {
        self.at_least.is_none_or(|l| n >= l) && self.at_most.is_none_or(|m| n <= m)
    }
}

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.at_least, self.at_most) {
            (Some(a), Some(b)) if a == b => write!(f, "exactly {a}"),
            (Some(a), Some(b)) => write!(f, "{a} to {b}"),
            (Some(a), None) => write!(f, "at least {a}"),
            (None, Some(b)) => write!(f, "at most {b}"),
            (None, None) => f.write_str("any number"),
        }
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Count;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a count: a whole number, or a table { at_least = N, at_most = M }")
            }

            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Count, E> {
                u64::try_from(v)
                    .map(Count::exactly)
                    .map_err(|_| E::custom(format!("a count cannot be negative ({v})")))
            }

            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Count, E> {
                Ok(Count::exactly(v))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Count, A::Error> {
                let mut c = Count {
                    at_least: None,
                    at_most: None,
                };
                while let Some(key) = map.next_key::<String>()? {
                    let slot = match key.as_str() {
                        "at_least" => &mut c.at_least,
                        "at_most" => &mut c.at_most,
                        "exactly" => {
                            let n: u64 = map.next_value()?;
                            c.at_least = Some(n);
                            c.at_most = Some(n);
                            continue;
                        }
                        other => {
                            return Err(serde::de::Error::unknown_field(
                                other,
                                &["at_least", "at_most", "exactly"],
                            ));
                        }
                    };
                    *slot = Some(map.next_value()?);
                }
                match (c.at_least, c.at_most) {
                    (None, None) => Err(serde::de::Error::custom(
                        "an empty count: give at_least, at_most or exactly",
                    )),
                    (Some(a), Some(b)) if a > b => Err(serde::de::Error::custom(format!(
                        "at_least ({a}) is above at_most ({b})"
                    ))),
                    _ => Ok(c),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Count {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        if let Some(a) = self.at_least {
            m.serialize_entry("at_least", &a)?;
        }
        if let Some(b) = self.at_most {
            m.serialize_entry("at_most", &b)?;
        }
        m.end()
    }
}

impl JsonSchema for Count {
    fn schema_name() -> Cow<'static, str> {
        "Count".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A count: a whole number (exactly), or a table with at_least, at_most or exactly.",
            "anyOf": [
                {"type": "integer", "minimum": 0},
                {
                    "type": "object",
                    "properties": {
                        "at_least": {"type": "integer", "minimum": 0},
                        "at_most": {"type": "integer", "minimum": 0},
                        "exactly": {"type": "integer", "minimum": 0}
                    },
                    "additionalProperties": false,
                    "minProperties": 1
                }
            ]
        })
    }
}
