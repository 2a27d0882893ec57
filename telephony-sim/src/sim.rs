//! The simulator: [`TelephonySim`], its scripted rules and its journal.

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use rand::RngCore;
use serde::{Deserialize, Serialize};

use crate::call::secs_to_duration;
use crate::call::{DialRequest, DialResult, Outcome};
use crate::draw::Key;
use crate::inbound::InboundCall;
use crate::magic;
use crate::model::{Model, ModelError};
use crate::script::{NumberMatcher, Response, Script};

/// Domain tags of the keyed draws; changing one changes every simulated outcome.
const DIAL_DOMAIN: &str = "telephony-sim/dial/v1";
const INBOUND_DOMAIN: &str = "telephony-sim/inbound-answer/v1";

/// A simulated telephone network.
///
/// Cheap to share behind an [`Arc`]: every method takes `&self`, rules and journal live
/// behind locks. See the crate documentation for the model, the magic numbers and the
/// rules.
pub struct TelephonySim {
    seed: u64,
    model: Model,
    rules: RwLock<Vec<Arc<Rule>>>,
    next_rule_id: AtomicU64,
    journal: Mutex<Journal>,
}

/// What decided the result of a dial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DecidedBy {
    /// A scripted rule.
    Rule {
        /// The rule's id (1 for the first rule given to this simulator, and so on).
        id: u64,
        /// Its name, if it was given one.
        name: Option<String>,
        /// The position in its script of the response used (0 for `Script::always`).
        entry: usize,
    },
    /// The called number is not E.164 (`+`, a first digit 1 to 9, 7 to 15 digits in all):
    /// the network rejects it as failed with `invalid_number`.
    InvalidNumber,
    /// A magic number.
    Magic {
        /// Its code `YY`.
        code: u8,
    },
    /// The seeded model.
    Model,
}

/// One dial as the journal keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DialRecord {
    /// The request as received.
    pub request: DialRequest,
    /// The result answered.
    pub result: DialResult,
    /// What decided it.
    pub decided_by: DecidedBy,
}

struct Journal {
    records: VecDeque<DialRecord>,
    limit: Option<usize>,
    dropped: u64,
    watcher: Option<Arc<dyn DialWatcher>>,
}

/// Told of every dial as it is made ([`TelephonySim::watch_dials`]): a reader that follows
/// a long campaign takes each dial in at once, instead of holding it in the journal until
/// it reads the journal, and without a copy of the request.
pub trait DialWatcher: Send + Sync {
    /// One dial: the request, the result answered and what decided it. Called on the
    /// dialling thread, in the order the journal keeps dials (under the journal's lock, so
    /// it must not dial nor read the journal).
    fn dialled(&self, request: &DialRequest, result: &DialResult, decided_by: &DecidedBy);
}

struct Rule {
    id: u64,
    matcher: NumberMatcher,
    script: Script,
    state: Mutex<RuleState>,
}

#[derive(Default)]
struct RuleState {
    name: Option<String>,
    expected: Option<u64>,
    hits: u64,
}

impl Rule {
    fn state(&self) -> MutexGuard<'_, RuleState> {
        lock(&self.state)
    }

    fn describe(&self, state: &RuleState) -> String {
        let name = state
            .name
            .as_ref()
            .map(|n| format!(" {n:?}"))
            .unwrap_or_default();
        format!(
            "rule #{}{name} ({}: {})",
            self.id, self.matcher, self.script
        )
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The first half of `sim.given(matcher).respond_with(script)`.
#[must_use = "a rule is installed only by respond_with"]
pub struct Given<'a> {
    sim: &'a TelephonySim,
    matcher: NumberMatcher,
}

impl Given<'_> {
    /// Installs the rule: from now on, dials to the matched numbers answer from `script`
    /// (a [`Script`], or a single [`Response`] that is always given), unless a newer rule
    /// also claims them. Returns a handle to name the rule, set its expectation and read
    /// its count.
    pub fn respond_with(self, script: impl Into<Script>) -> RuleHandle {
        let rule = Arc::new(Rule {
            id: self.sim.next_rule_id.fetch_add(1, Ordering::Relaxed),
            matcher: self.matcher,
            script: script.into(),
            state: Mutex::new(RuleState::default()),
        });
        self.sim
            .rules
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(Arc::clone(&rule));
        RuleHandle { rule }
    }
}

/// A handle on an installed rule.
///
/// Setting a name or an expectation acts on the installed rule at once, so the builder
/// calls may come after `respond_with`. Dropping the handle leaves the rule in place.
#[derive(Clone)]
pub struct RuleHandle {
    rule: Arc<Rule>,
}

impl RuleHandle {
    /// Expects exactly `n` dials to be answered by this rule; [`TelephonySim::verify`]
    /// reports it otherwise. A dial claimed by a newer rule does not count here.
    pub fn expect(self, n: u64) -> Self {
        self.rule.state().expected = Some(n);
        self
    }

    /// Names the rule, for the journal and for verification messages.
    pub fn named(self, name: impl Into<String>) -> Self {
        self.rule.state().name = Some(name.into());
        self
    }

    /// The rule's id: 1 for the simulator's first rule, then 2, and so on.
    pub fn id(&self) -> u64 {
        self.rule.id
    }

    /// How many dials this rule has answered.
    pub fn hits(&self) -> u64 {
        self.rule.state().hits
    }
}

impl fmt::Debug for RuleHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.rule.describe(&self.rule.state()))
    }
}

/// A rule whose expectation was not met.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnmetExpectation {
    /// The rule's id.
    pub id: u64,
    /// Its name, if any.
    pub name: Option<String>,
    /// The rule described: id, name, matcher and script.
    pub(crate) rule: String,
    /// The number of dials expected.
    pub expected: u64,
    /// The number answered.
    pub actual: u64,
}

/// The rules whose expectations were not met, as [`TelephonySim::verify`] reports them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct VerifyError {
    /// Each unmet expectation, oldest rule first.
    pub unmet: Vec<UnmetExpectation>,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} telephony rule expectation(s) not met:",
            self.unmet.len()
        )?;
        for u in &self.unmet {
            write!(
                f,
                "\n- {}: expected {} dial(s), got {}",
                u.rule, u.expected, u.actual
            )?;
        }
        Ok(())
    }
}

impl TelephonySim {
    /// A simulator with the default model and the given seed.
    pub fn new(seed: u64) -> Self {
        TelephonySim::build(seed, Model::default())
    }

    /// A simulator with `model`, refused if the model is not valid ([`Model::validate`]).
    pub fn with_model(seed: u64, model: Model) -> Result<Self, ModelError> {
        model.validate()?;
        Ok(TelephonySim::build(seed, model))
    }

    /// A simulator with the default model and a seed drawn from the operating system.
    ///
    /// Read the seed back with [`TelephonySim::seed`] and print it: passing it to
    /// [`TelephonySim::new`] reproduces the run. The seed is also logged at `info` level
    /// through `tracing`.
    pub fn from_entropy() -> Self {
        TelephonySim::new(TelephonySim::random_seed())
    }

    /// A seed drawn from the operating system (and logged), for
    /// [`TelephonySim::with_model`] when the seed should not be pinned.
    pub(crate) fn random_seed() -> u64 {
        let seed = rand::rngs::OsRng.next_u64();
        tracing::info!(seed, "telephony-sim seeded from entropy; pin it to replay");
        seed
    }

    fn build(seed: u64, model: Model) -> Self {
        TelephonySim {
            seed,
            model,
            rules: RwLock::new(Vec::new()),
            next_rule_id: AtomicU64::new(1),
            journal: Mutex::new(Journal {
                records: VecDeque::new(),
                limit: None,
                dropped: 0,
                watcher: None,
            }),
        }
    }

    /// The seed of every random choice of this simulator.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Places a simulated call.
    ///
    /// The result comes from the newest rule that claims `req.to`; failing that, a number
    /// that is not E.164 fails with `invalid_number`; failing that, an assigned magic
    /// number (when [`Model::magic_numbers`] is on) answers; otherwise the model draws it.
    /// The model's draw depends on the seed, `attempt_id`, `to` and `attempt_index` only,
    /// never on the order of dials. Every dial is journaled.
    pub fn dial(&self, req: &DialRequest) -> DialResult {
        let (result, decided_by) = self.decide(req);
        let mut journal = lock(&self.journal);
        if let Some(w) = &journal.watcher {
            w.dialled(req, &result, &decided_by);
        }
        if journal.limit != Some(0) {
            if journal.limit.is_some_and(|l| journal.records.len() >= l) {
                journal.records.pop_front();
                journal.dropped += 1;
            }
            journal.records.push_back(DialRecord {
                request: req.clone(),
                result: result.clone(),
                decided_by,
            });
        } else {
            journal.dropped += 1;
        }
        result
    }

    fn decide(&self, req: &DialRequest) -> (DialResult, DecidedBy) {
        if let Some(decided) = self.decide_by_rules(req) {
            return decided;
        }
        if !is_e164(&req.to) {
            let result = Response::failed("invalid_number").ring(0).into();
            return (result, DecidedBy::InvalidNumber);
        }
        if self.model.magic_numbers
            && let Some(code) = magic::magic_code(&req.to)
            && let Some(response) = magic::response(code, req.attempt_index)
        {
            return (response.into(), DecidedBy::Magic { code });
        }
        let mut draw = Key::new(DIAL_DOMAIN, self.seed)
            .str(&req.attempt_id)
            .str(&req.to)
            .int(i64::from(req.attempt_index))
            .draw();
        (self.model.sample_dial(&mut draw), DecidedBy::Model)
    }

    fn decide_by_rules(&self, req: &DialRequest) -> Option<(DialResult, DecidedBy)> {
        let rules = self.rules.read().unwrap_or_else(|p| p.into_inner());
        let rule = rules.iter().rev().find(|r| r.matcher.matches(&req.to))?;
        let mut state = rule.state();
        let (entry, response) = rule.script.pick(state.hits, req.attempt_index);
        state.hits += 1;
        Some((
            response.result().clone(),
            DecidedBy::Rule {
                id: rule.id,
                name: state.name.clone(),
                entry,
            },
        ))
    }

    /// Starts a rule for the numbers `matcher` claims; finish it with
    /// [`Given::respond_with`]. Rules are checked newest first, before magic numbers and
    /// the model.
    pub fn given(&self, matcher: NumberMatcher) -> Given<'_> {
        Given { sim: self, matcher }
    }

    /// Checks every rule's expectation; the error lists each rule that answered a
    /// different number of dials than expected.
    pub fn verify(&self) -> Result<(), VerifyError> {
        let rules = self.rules.read().unwrap_or_else(|p| p.into_inner());
        let unmet: Vec<_> = rules
            .iter()
            .filter_map(|rule| {
                let state = rule.state();
                let expected = state.expected?;
                (state.hits != expected).then(|| UnmetExpectation {
                    id: rule.id,
                    name: state.name.clone(),
                    rule: rule.describe(&state),
                    expected,
                    actual: state.hits,
                })
            })
            .collect();
        if unmet.is_empty() {
            Ok(())
        } else {
            Err(VerifyError { unmet })
        }
    }

    /// Removes every rule (their handles still read their counts). Rule ids keep counting.
    pub fn reset_rules(&self) {
        self.rules
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// The number of installed rules.
    pub fn rule_count(&self) -> usize {
        self.rules.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Every journaled dial, oldest first.
    pub fn journal(&self) -> Vec<DialRecord> {
        lock(&self.journal).records.iter().cloned().collect()
    }

    /// The journaled dials to exactly `number`, oldest first.
    pub fn dials_to(&self, number: &str) -> Vec<DialRecord> {
        lock(&self.journal)
            .records
            .iter()
            .filter(|r| r.request.to == number)
            .cloned()
            .collect()
    }

    /// Takes every journaled dial out, oldest first, and leaves the journal empty (its count
    /// of dropped records reset), in one step: a reader that consumes the journal as a
    /// campaign goes gets each dial once, without copying the records.
    pub fn take_journal(&self) -> Vec<DialRecord> {
        let mut journal = lock(&self.journal);
        journal.dropped = 0;
        std::mem::take(&mut journal.records).into()
    }

    /// Empties the journal (and resets its count of dropped records).
    pub fn clear_journal(&self) {
        let mut journal = lock(&self.journal);
        journal.records.clear();
        journal.dropped = 0;
    }

    /// Bounds the journal to the latest `limit` dials (`Some(0)` keeps none, `None`, the
    /// default, keeps all). A long simulated campaign of hundreds of thousands of dials
    /// should set one to bound its memory. Shrinking drops the oldest records.
    pub fn set_journal_limit(&self, limit: Option<usize>) {
        let mut journal = lock(&self.journal);
        journal.limit = limit;
        if let Some(limit) = limit {
            while journal.records.len() > limit {
                journal.records.pop_front();
                journal.dropped += 1;
            }
        }
    }

    /// Tells `watcher` of every dial from now on, as it is made (`None`: no one), beside
    /// the journal; with a journal limit of `Some(0)` the watcher is the dials' only reader.
    pub fn watch_dials(&self, watcher: Option<Arc<dyn DialWatcher>>) {
        lock(&self.journal).watcher = watcher;
    }

    /// How many dials the journal has not kept because of its limit.
    pub fn journal_dropped(&self) -> u64 {
        lock(&self.journal).dropped
    }

    /// The talk time of an answered inbound call: a connected result whose ring is the
    /// time until the platform answers ([`Model::inbound_ring_secs`]) and whose talk is
    /// drawn like a connected outbound call's. It depends on the seed, the call (caller,
    /// dialled number, instant) and `interaction_seed` (say the interaction id) only.
    /// Inbound calls are not journaled.
    pub fn answer_inbound(&self, call: &InboundCall, interaction_seed: &str) -> DialResult {
        let mut draw = Key::new(INBOUND_DOMAIN, self.seed)
            .str(&call.caller)
            .str(&call.dialled)
            .int(call.at.timestamp_micros())
            .str(interaction_seed)
            .draw();
        let ring = self.model.inbound_ring_secs.sample(&mut draw);
        let talk = self.model.sample_connected_talk(&mut draw);
        DialResult {
            outcome: Outcome::Connected,
            ring: secs_to_duration(ring),
            talk: secs_to_duration(talk),
            failure_reason: None,
        }
    }
}

impl fmt::Debug for TelephonySim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let journal = lock(&self.journal);
        f.debug_struct("TelephonySim")
            .field("seed", &self.seed)
            .field("model", &self.model)
            .field("rules", &self.rule_count())
            .field("journaled", &journal.records.len())
            .finish()
    }
}

/// `+`, a first digit 1 to 9, and 7 to 15 digits in all.
fn is_e164(number: &str) -> bool {
    let Some(digits) = number.strip_prefix('+') else {
        return false;
    };
    (7..=15).contains(&digits.len())
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !digits.starts_with('0')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e164_shapes() {
        assert!(is_e164("+12025550123"));
        assert!(is_e164("+6834002"));
        assert!(is_e164("+123456789012345"));
        assert!(!is_e164("+1234567890123456"), "16 digits");
        assert!(!is_e164("+123456"), "6 digits");
        assert!(!is_e164("12025550123"));
        assert!(!is_e164("+02025550123"));
        assert!(!is_e164("+1 202 555 0123"));
        assert!(!is_e164(""));
    }

    #[test]
    fn sim_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<TelephonySim>();
        check::<RuleHandle>();
    }
}
