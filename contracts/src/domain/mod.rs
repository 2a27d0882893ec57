//! Domain helpers shared by every crate: the parsed, always-valid forms of the values the
//! wire types carry as plain strings.
//!
//! - [`schedule`]: times of day, weekdays, IANA time zones and the [`schedule::CallingWindow`]
//!   that decides when a campaign may dial and when a deployment answers: whether an instant
//!   is inside, when the window next opens, and how many seconds it is open over a span.
//! - [`phone`]: E.164 telephone numbers, strict parsing for numbers in requests, and the
//!   lenient normalisation that cohort CSV files need.
//!
//! Wire types keep strings (so a validation failure can name its `loc`); they convert into
//! these types, and the campaign engine, inbound routing and cohort processing work only
//! with the converted values.

pub mod phone;
pub mod schedule;
