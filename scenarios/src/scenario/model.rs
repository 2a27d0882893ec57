//! The scenario file, top to bottom: [`Scenario`] and the sections that set up the stack
//! ([`KeyServiceSection`], [`TelephonySection`]). What is created through the API is in
//! [`super::setup`], what happens over time in [`super::timeline`], what is judged in
//! [`super::expect`]. `scenarios/README.md` documents every field.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::expect::Expectation;
use super::kms::KmsFaultDef;
use super::located::Located;
use super::setup::{CampaignDef, CohortDef, DeploymentDef};
use super::time::{At, Span};
use super::timeline::Step;

/// A scenario: the stack it runs on, what it creates, what happens when, and what must hold.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Its name in reports (default: the file name without `.toml`).
    #[serde(default)]
    pub(crate) name: Option<String>,
    /// What it shows, one or two sentences (shown in the HTML report).
    #[serde(default)]
    pub(crate) description: Option<String>,
    /// Seed of ids, call outcomes and key-service draws; `harness run --seed` overrides it.
    #[serde(default = "default_seed")]
    pub(crate) seed: u64,
    /// Where the simulated clock starts (RFC 3339). Relative times (`"+1h"`) count from here.
    pub(crate) start: Located<At>,
    /// Where the run stops (default: one hour after the latest campaign end, timeline step or
    /// expectation time).
    #[serde(default)]
    pub(crate) until: Option<Located<At>>,
    /// The customer's key service, and BYOK for the scenario's workspace.
    #[serde(default)]
    pub(crate) key_service: KeyServiceSection,
    /// Simulated telephony: the model and per-number rules.
    #[serde(default)]
    pub(crate) telephony: TelephonySection,
    /// Campaigns created at the start through the API.
    #[serde(default)]
    pub(crate) campaigns: Vec<Located<CampaignDef>>,
    /// Cohorts: uploaded at the start (`upload_at`), or by an `upload_cohort` step.
    #[serde(default)]
    pub(crate) cohorts: Vec<Located<CohortDef>>,
    /// Deployments created at the start through the API.
    #[serde(default)]
    pub(crate) deployments: Vec<Located<DeploymentDef>>,
    /// What happens when, in time order (steps at the same time in file order).
    #[serde(default)]
    pub(crate) timeline: Vec<Located<Step>>,
    /// What must hold; each becomes one check in the report.
    #[serde(default)]
    pub(crate) expect: Vec<Located<Expectation>>,
}

impl Scenario {
    /// The cohorts an `upload_cohort` step of the timeline uploads (the others are uploaded
    /// at the start, or at their `upload_at`).
    pub(crate) fn cohorts_uploaded_by_steps(&self) -> BTreeSet<&str> {
        self.timeline
            .iter()
            .filter_map(|st| match &st.action {
                super::timeline::Action::UploadCohort { cohort } => Some(cohort.as_str()),
                _ => None,
            })
            .collect()
    }
}

fn default_seed() -> u64 {
    1
}

/// The simulated key service (customer-kms-sim) and how the platform uses it: the scenario's
/// workspace always uses BYOK, with client credentials.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct KeyServiceSection {
    /// The `{partner}` path segment (default `acme`).
    #[serde(default = "default_partner")]
    pub(crate) partner: String,
    /// Clients that may call `/auth` (default: one, `platform` / `platform-secret-1`). The
    /// platform uses the first.
    #[serde(default)]
    pub(crate) clients: Vec<Located<KmsClient>>,
    /// Master-key aliases (default: one, `tenant-a`). The platform's data key is wrapped
    /// under the first.
    #[serde(default)]
    pub(crate) aliases: Vec<KmsAlias>,
    /// Lifetime of the tokens `/auth` issues (`expires_in`, default 1h).
    #[serde(default)]
    pub(crate) token_lifetime: Option<Located<Span>>,
    /// How long the platform keeps a decrypted data key (default 5m).
    #[serde(default)]
    pub(crate) data_key_cache: Option<Located<Span>>,
    /// The platform's timeout for one key-service call (wall clock, default 5s).
    #[serde(default)]
    pub(crate) request_timeout: Option<Located<Span>>,
    /// Faults, each from a time until a time (or for its `next` calls).
    #[serde(default)]
    pub(crate) faults: Vec<Located<KmsFaultDef>>,
}

impl Default for KeyServiceSection {
    fn default() -> Self {
        KeyServiceSection {
            partner: default_partner(),
            clients: vec![],
            aliases: vec![],
            token_lifetime: None,
            data_key_cache: None,
            request_timeout: None,
            faults: vec![],
        }
    }
}

fn default_partner() -> String {
    "acme".into()
}

/// A client of the key service.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct KmsClient {
    /// Client id.
    pub(crate) id: String,
    /// One or two secrets (both accepted).
    pub(crate) secrets: Vec<String>,
}

/// A master-key alias of the key service.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct KmsAlias {
    /// The `key_alias`.
    pub(crate) name: String,
    /// Versions at the start (derived from the seed; default 1).
    #[serde(default = "one")]
    pub(crate) versions: u32,
}

fn one() -> u32 {
    1
}

/// The telephony simulator: its seed, model and per-number rules.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TelephonySection {
    /// Seed of the call outcomes (default: the scenario's seed).
    #[serde(default)]
    pub(crate) seed: Option<u64>,
    /// The statistical model: any field of telephony-sim's model (`connected_rate`,
    /// `no_answer_rate`, `busy_rate`, `failed_rate`, `short_call_share`, `magic_numbers`,
    /// ...); missing fields keep their defaults.
    #[serde(default)]
    #[schemars(with = "Option<BTreeMap<String, serde_json::Value>>")]
    pub(crate) model: Option<Located<telephony_sim::Model>>,
    /// Scripted numbers, checked before magic numbers and the model; newest rule first.
    #[serde(default)]
    pub(crate) rules: Vec<Located<NumberRule>>,
}

/// A scripted rule: what dials to some numbers answer.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NumberRule {
    /// Its name in reports (default: the matcher).
    #[serde(default)]
    pub(crate) name: Option<String>,
    /// Exactly this number (E.164, as dialled).
    #[serde(default)]
    pub(crate) number: Option<String>,
    /// Numbers starting with this.
    #[serde(default)]
    pub(crate) prefix: Option<String>,
    /// Numbers ending with this.
    #[serde(default)]
    pub(crate) suffix: Option<String>,
    /// `sequence` (default: successive dials take successive answers, the last repeats) or
    /// `by_attempt` (a user's first dial the first answer, each retry the next).
    #[serde(default)]
    pub(crate) script: ScriptKind,
    /// The answers, at least one.
    pub(crate) answers: Vec<Answer>,
    /// The rule must answer exactly this many dials (checked as an expectation).
    #[serde(default)]
    pub(crate) expect_dials: Option<u64>,
}

/// How a rule's answers are picked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ScriptKind {
    /// By how many dials the rule answered.
    #[default]
    Sequence,
    /// By the dial's attempt index (0 for a first dial).
    ByAttempt,
}

/// One scripted answer.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Answer {
    /// `connected`, `busy`, `no_answer`, `voicemail`, `failed`, `provider_error`,
    /// `internal_error`.
    pub(crate) outcome: AnswerOutcome,
    /// Talk time of a `connected` or `voicemail` answer (default 60s and 25s).
    #[serde(default)]
    pub(crate) talk: Option<Span>,
    /// Ring time (default as the telephony simulator's scripted answers: 5s connected, 2s
    /// busy or failed, 30s no answer, 20s voicemail, 0s errors).
    #[serde(default)]
    pub(crate) ring: Option<Span>,
    /// `failed`: the failure reason (default `call_rejected`).
    #[serde(default)]
    pub(crate) reason: Option<String>,
}

/// The outcomes a scripted answer can give.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AnswerOutcome {
    /// A person answers.
    Connected,
    /// Busy.
    Busy,
    /// Nobody answers.
    NoAnswer,
    /// An answering machine.
    Voicemail,
    /// The network fails the call.
    Failed,
    /// The provider fails.
    ProviderError,
    /// The telephony layer fails.
    InternalError,
}
