//! Simulated telephony for the harness: what happens when the platform dials a number.
//!
//! The platform's campaign engine and instant outbound calls place calls through
//! [`TelephonySim::dial`], which answers an [`Outcome`] (`connected`, `busy`, `no_answer`,
//! `voicemail`, `failed`, `provider_error`, `internal_error`) with its timings (ring and talk
//! time) in a [`DialResult`]. Scenarios and tests decide what numbers do: by a seeded
//! statistical [`Model`], by magic numbers, and by scripted rules in the manner of
//! wiremock-rs. Every dial is journaled. Inbound callers come from an [`InboundGenerator`].
//!
//! The crate reads no clock: every instant is a parameter (`DialRequest::at`), and results
//! are durations from it. It does no I/O and needs no runtime.
//!
//! # How a dial is decided
//!
//! 1. **Rules**, newest first: the first rule whose [`NumberMatcher`] claims the called
//!    number answers from its [`Script`].
//! 2. A called number that is not E.164 (`+`, a first digit 1 to 9, 7 to 15 digits) fails
//!    with `failure_reason: "invalid_number"`, as a network would.
//! 3. **Magic numbers** (unless [`Model::magic_numbers`] is off) answer as the table below.
//! 4. Otherwise the **model** draws the result.
//!
//! The model's draw is a pure function of the seed, `attempt_id`, `to` and
//! `attempt_index`: not of the order of dials, not of the thread, not of `from` or `at`. A
//! campaign replayed after a restart, or dialled concurrently, gets the same outcomes.
//! (Each dial seeds its own ChaCha8 generator from a SHA-256 digest of those inputs.)
//! Magic numbers depend on the number and `attempt_index` only. Rules with
//! [`Script::sequence`] depend on how many dials the rule has answered, which a fresh
//! simulator starts again from 0; [`Script::by_attempt`] depends on the request only.
//!
//! # The seed
//!
//! [`TelephonySim::new`] takes the seed; [`TelephonySim::from_entropy`] draws one from the
//! operating system and logs it. Either way [`TelephonySim::seed`] gives it back: print it
//! with the run's results, and pass it to `new` to replay the run exactly.
//!
//! # The default model
//!
//! [`Model::default`]; every parameter is a public field, checked by [`Model::validate`].
//!
//! | Outcome | Rate | Ring | Talk | `failure_reason` |
//! |---|---|---|---|---|
//! | `connected` | 20 % | 3 to 15 s | see below | none |
//! | `no_answer` | 40 % | the no-answer timeout, 30 s | 0 | `no_answer` |
//! | `busy` | 7 % | 1 to 4 s | 0 | `busy` |
//! | `failed` | 8 % | 1 to 4 s | 0 | one of `unallocated_number`, `call_rejected`, `network_unreachable`, `congestion` |
//! | `provider_error` | 0 % | 0 to 1 s | 0 | `provider_error` |
//! | `internal_error` | 0 % | 0 to 1 s | 0 | `internal_error` |
//! | `voicemail` | the rest, 25 % | 15 to 25 s | 10 to 40 s | `voicemail` |
//!
//! Connected talk time: 30 % of connected calls are short, uniform from 2 to 15 s (the
//! person hangs up at once); the rest are log-normal with a median of 90 s and sigma 0.6
//! (half of them between 60 and 135 s), capped at one hour. Ranges are uniform, and all
//! durations have millisecond resolution.
//!
//! Voicemail is an answering machine: a greeting and a beep, perhaps a message from the
//! agent. **The platform counts a voicemail as `no_answer` with `failure_reason:
//! "voicemail"`**: the person was not reached.
//!
//! # Magic numbers
//!
//! The North American Numbering Plan keeps 555-0100 to 555-0199 in every area code for
//! fiction. A called number `+1` + three digits + `55501` + two digits `YY` behaves by `YY`,
//! whatever the seed. "First dial" means `attempt_index` 0; later ones are the retries.
//! Codes 13 to 99 are unassigned and follow the model. [`magic_number`]`(YY)` writes one
//! (in area code 202); set [`Model::magic_numbers`] to false to switch them all off.
//!
//! | Number | Behaviour | Ring | Talk |
//! |---|---|---|---|
//! | `+1 NXX 555-0100` | connected, 90 s of talk | 5 s | 90 s |
//! | `+1 NXX 555-0101` | always busy | 2 s | 0 |
//! | `+1 NXX 555-0102` | always no answer | 30 s | 0 |
//! | `+1 NXX 555-0103` | always failed (call_rejected) | 2 s | 0 |
//! | `+1 NXX 555-0104` | always connected for 5 s (a short call) | 5 s | 5 s |
//! | `+1 NXX 555-0105` | always provider_error | 0 s | 0 |
//! | `+1 NXX 555-0106` | always internal_error | 0 s | 0 |
//! | `+1 NXX 555-0107` | always voicemail | 20 s | 25 s |
//! | `+1 NXX 555-0108` | connected, 30 s of talk | 5 s | 30 s |
//! | `+1 NXX 555-0109` | busy on the first dial, then connected 60 s | 2 s, then 5 s | 0, then 60 s |
//! | `+1 NXX 555-0110` | no answer on the first dial, then connected 60 s | 30 s, then 5 s | 0, then 60 s |
//! | `+1 NXX 555-0111` | a 5 s call on the first dial, then connected 60 s | 5 s | 5 s, then 60 s |
//! | `+1 NXX 555-0112` | provider_error on the first dial, then connected 60 s | 0 s, then 5 s | 0, then 60 s |
//!
//! # Scripted rules
//!
//! `sim.given(matcher).respond_with(script)` installs a rule; [`RuleHandle::expect`] sets
//! the exact number of dials it must answer, [`RuleHandle::named`] names it, and
//! [`TelephonySim::verify`] lists the rules whose expectation was not met.
//! [`TelephonySim::reset_rules`] removes them all. A [`Script`] is
//! [`Script::always`] one [`Response`], a [`Script::sequence`] (successive dials take
//! successive responses, the last repeats) or [`Script::by_attempt`] (by `attempt_index`).
//!
//! ```
//! use chrono::{DateTime, Utc};
//! use telephony_sim::{
//!     DecidedBy, DialRequest, NumberMatcher, Outcome, Response, Script, TelephonySim,
//!     magic_number,
//! };
//!
//! let sim = TelephonySim::new(42);
//! let at: DateTime<Utc> = "2026-03-02T09:00:00Z".parse().unwrap();
//! let dial = |attempt: u32, to: &str| {
//!     sim.dial(&DialRequest {
//!         attempt_id: format!("att-{attempt}"),
//!         from: "+14155550000".into(),
//!         to: to.into(),
//!         at,
//!         attempt_index: attempt,
//!     })
//! };
//!
//! // Busy twice, then a 45-second conversation; expected to be dialled three times.
//! sim.given(NumberMatcher::exact("+447700900123"))
//!     .respond_with(Script::sequence(vec![
//!         Response::busy(),
//!         Response::busy(),
//!         Response::connected(45),
//!     ]))
//!     .named("busy twice")
//!     .expect(3);
//!
//! assert_eq!(dial(0, "+447700900123").outcome, Outcome::Busy);
//! assert!(sim.verify().is_err(), "only one of three dials so far");
//! assert_eq!(dial(1, "+447700900123").outcome, Outcome::Busy);
//! let third = dial(2, "+447700900123");
//! assert_eq!((third.outcome, third.talk.num_seconds()), (Outcome::Connected, 45));
//! sim.verify().unwrap();
//!
//! // A magic number: always busy.
//! assert_eq!(dial(0, &magic_number(1)).outcome, Outcome::Busy);
//!
//! // The journal says what decided each dial.
//! let journal = sim.journal();
//! assert_eq!(journal.len(), 4);
//! assert!(matches!(journal[2].decided_by, DecidedBy::Rule { entry: 2, .. }));
//! assert_eq!(journal[3].decided_by, DecidedBy::Magic { code: 1 });
//! ```
//!
//! # Inbound calls
//!
//! An [`InboundGenerator`] yields [`InboundCall`]s (caller, dialled number, instant) as a
//! Poisson process at a mean rate per hour, seeded, the same for any cut of a span into
//! windows. [`TelephonySim::answer_inbound`] gives an answered inbound call's timings from
//! the model, keyed by the call and an interaction seed.
//!
//! # Modules
//!
//! The modules are internal: a user of the crate touches the items its root re-exports, by
//! module:
//!
//! - `call`: [`DialRequest`], [`Outcome`], [`DialResult`].
//! - `model`: [`Model`], its ranges and its validation errors.
//! - `magic`: the magic numbers, [`MAGIC_NUMBERS`], [`magic_code`], [`magic_number`].
//! - `script`: [`NumberMatcher`], [`Response`], [`Script`].
//! - `sim`: [`TelephonySim`], rules ([`Given`], [`RuleHandle`], [`VerifyError`]) and the
//!   journal ([`DialRecord`], [`DecidedBy`]), or a [`DialWatcher`] told of each dial as it
//!   is made.
//! - `inbound`: [`InboundCall`], [`InboundGenerator`].

#![warn(missing_docs)]
// An item no other crate can reach is `pub(crate)`, so the compiler reports what is unused.
#![warn(unreachable_pub)]

mod call;
mod draw;
mod inbound;
mod magic;
mod model;
mod script;
mod sim;

pub use call::{DialRequest, DialResult, MAX_SECS, Outcome, UnknownOutcome};
pub use inbound::{Arrivals, InboundCall, InboundError, InboundGenerator};
pub use magic::{MAGIC_NUMBERS, MagicNumber, magic_code, magic_number};
pub use model::{Model, ModelError, ModelProblem, SecondsRange};
pub use script::{NumberMatcher, Response, Script, ScriptError};
pub use sim::{
    DecidedBy, DialRecord, DialWatcher, Given, RuleHandle, TelephonySim, UnmetExpectation,
    VerifyError,
};
