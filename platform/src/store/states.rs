//! The stored states and kinds of the engine's rows, each an enum with one string form.
//!
//! The string of each value is written once, in the table of its enum below; `as_str`,
//! `parse`, `Display`, serde and SQL (`ToSql`/`FromSql`) all go through that table, so no
//! state is compared as a string literal elsewhere in Rust code. (SQL text in the store's
//! statements names the same strings, e.g. the partial index on calls not `ended`: SQLite
//! only uses a partial index whose predicate it can match literally.)

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

/// Declares an enum whose every value has one string form, and derives from that one table
/// its `as_str`/`parse`, `Display`, serde and SQL conversions.
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every value, in declaration order (the statistics count users by state with
            /// it; tests go through it for the others).
            #[cfg_attr(not(test), allow(dead_code))]
            $vis const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The one string form (stored, and in JSON).
            $vis const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }

            /// The value of a string form (`None`: not one of them).
            $vis fn parse(s: &str) -> Option<Self> {
                match s {
                    $( $text => Some($name::$variant), )+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                $name::parse(&s).ok_or_else(|| {
                    serde::de::Error::unknown_variant(&s, &[$($text),+])
                })
            }
        }

        impl ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(ToSqlOutput::Borrowed(ValueRef::Text(self.as_str().as_bytes())))
            }
        }

        impl FromSql for $name {
            fn column_result(v: ValueRef<'_>) -> FromSqlResult<Self> {
                let s = v.as_str()?;
                $name::parse(s).ok_or_else(|| {
                    FromSqlError::Other(
                        format!(concat!("not a ", stringify!($name), ": {:?}"), s).into(),
                    )
                })
            }
        }
    };
}

string_enum! {
    /// Where a user of a campaign stands (`campaign_users.state`).
    pub(crate) enum UserState {
        /// Waiting for a dial (first or retry), due at `due_ms`.
        Ready = "ready",
        /// In a call.
        Calling = "calling",
        /// Finished: reached, out of attempts, or not retried.
        Done = "done",
        /// Never dialled: the number is in a stop file of the campaign.
        Excluded = "excluded",
        /// The campaign ended or was cancelled before the user finished.
        Unfinished = "unfinished",
    }
}

string_enum! {
    /// Where a call (an attempt) stands (`attempts.status`).
    pub(crate) enum CallStatus {
        /// An instant outbound call not dialled yet.
        Queued = "queued",
        /// Dialled, not ended.
        Calling = "calling",
        /// Ended, with its result.
        Ended = "ended",
    }
}

string_enum! {
    /// What started a call (`attempts.kind`).
    pub(crate) enum CallKind {
        /// A dial of a campaign.
        Campaign = "campaign",
        /// An instant outbound call.
        Outbound = "outbound",
    }
}

string_enum! {
    /// Where a webhook delivery stands (`webhook_deliveries.status`).
    pub(crate) enum DeliveryState {
        /// Not delivered yet; tried again at `next_try_ms`.
        Pending = "pending",
        /// Answered with a success.
        Delivered = "delivered",
        /// Given up after the last try.
        Failed = "failed",
    }
}

string_enum! {
    /// What a webhook delivery tells of (`webhook_deliveries.kind`).
    pub(crate) enum DeliveryKind {
        /// The end of an instant outbound call.
        Outbound = "outbound",
        /// The end of a campaign call.
        Campaign = "campaign",
        /// The end of an inbound call of a deployment.
        Deployment = "deployment",
    }
}

impl DeliveryState {
    /// The state after a try: delivered, pending with a next try, or failed (given up).
    pub(crate) fn after_try(delivered: bool, retried: bool) -> Self {
        match (delivered, retried) {
            (true, _) => DeliveryState::Delivered,
            (false, true) => DeliveryState::Pending,
            (false, false) => DeliveryState::Failed,
        }
    }
}

impl From<DeliveryState> for contracts::wire::DeliveryStatus {
    fn from(s: DeliveryState) -> Self {
        match s {
            DeliveryState::Pending => contracts::wire::DeliveryStatus::Pending,
            DeliveryState::Delivered => contracts::wire::DeliveryStatus::Delivered,
            DeliveryState::Failed => contracts::wire::DeliveryStatus::Failed,
        }
    }
}

impl From<CallKind> for DeliveryKind {
    fn from(k: CallKind) -> Self {
        match k {
            CallKind::Campaign => DeliveryKind::Campaign,
            CallKind::Outbound => DeliveryKind::Outbound,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trips<T>(all: &[T])
    where
        T: Copy + PartialEq + std::fmt::Debug + ToSql + FromSql + serde::Serialize,
        T: for<'de> serde::Deserialize<'de>,
    {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        for v in all {
            let back: T = c.query_row("SELECT ?1", [v], |r| r.get(0)).unwrap();
            assert_eq!(back, *v);
            let json = serde_json::to_string(v).unwrap();
            assert_eq!(serde_json::from_str::<T>(&json).unwrap(), *v);
        }
    }

    #[test]
    fn every_state_has_one_string_through_sql_and_json() {
        round_trips(UserState::ALL);
        round_trips(CallStatus::ALL);
        round_trips(CallKind::ALL);
        round_trips(DeliveryState::ALL);
        round_trips(DeliveryKind::ALL);
        assert_eq!(UserState::Unfinished.as_str(), "unfinished");
        assert_eq!(
            serde_json::to_string(&DeliveryState::Delivered).unwrap(),
            "\"delivered\""
        );
        assert_eq!(CallStatus::parse("ended"), Some(CallStatus::Ended));
    }

    #[test]
    fn an_unknown_stored_string_is_an_error_naming_it() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        let e = c
            .query_row("SELECT 'dialling'", [], |r| r.get::<_, CallStatus>(0))
            .unwrap_err();
        assert!(e.to_string().contains("dialling"), "{e}");
        assert!(serde_json::from_str::<UserState>("\"waiting\"").is_err());
    }
}
