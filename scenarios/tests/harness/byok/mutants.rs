//! Every check is proven by a mutant: with one switch of customer-kms-sim on, the validator
//! fails exactly the checks that name the broken rule (and the unmodified simulator fails
//! none, see `baseline`). The README's table is this one.

use std::collections::BTreeSet;

use customer_kms_sim::Mutant;
use futures_util::StreamExt;
use scenarios::checks::byok::ByokArgs;

use super::*;

/// How a mutant's run differs from the standard one.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Setup {
    /// [`Kms::args`].
    Standard,
    /// A token that lives 4 s, and the validator waits for its expiry.
    ShortToken,
    /// A token that lives 20 s, and the validator waits for its expiry (the checks that
    /// use the token are done long before its half-life).
    HalfLifeToken,
    /// A 300 ms latency budget and a short load phase (the mutant takes 600 ms a call).
    Slow,
}

/// Mutant, the checks it must fail (and no other), how it runs.
const EXPECTED: &[(Mutant, &[&str], Setup)] = &[
    (
        Mutant::AuthStatus201,
        &["auth.content_type", "auth.status"],
        Setup::Standard,
    ),
    (
        Mutant::ExpiresInString,
        &["auth.shape", "auth.expires_in"],
        Setup::Standard,
    ),
    (
        Mutant::WrongTokenType,
        &["auth.token_type"],
        Setup::Standard,
    ),
    (Mutant::ZeroExpiresIn, &["auth.expires_in"], Setup::Standard),
    (Mutant::ShortTokenExp, &["auth.jwt_exp"], Setup::Standard),
    (Mutant::OpaqueToken, &["auth.jwt"], Setup::Standard),
    (
        Mutant::AlgNoneHeader,
        &["auth.jwt_alg", "decrypt.alg_none", "rotate.alg_none"],
        Setup::Standard,
    ),
    (
        Mutant::AcceptWrongSecret,
        &["auth.wrong_secret"],
        Setup::Standard,
    ),
    (
        Mutant::AcceptUnknownClient,
        &["auth.unknown_client"],
        Setup::Standard,
    ),
    (
        Mutant::SecretPrefixAccepted,
        &["auth.wrong_secret"],
        Setup::Standard,
    ),
    (
        Mutant::NoCredentials500,
        &["auth.no_authorization"],
        Setup::Standard,
    ),
    (
        Mutant::MalformedBasic500,
        &["auth.bearer_credentials", "auth.malformed_basic"],
        Setup::Standard,
    ),
    (
        Mutant::AnyGrantType,
        &["auth.wrong_grant_type"],
        Setup::Standard,
    ),
    (
        Mutant::JsonAuthBody,
        &["auth.content_type"],
        Setup::Standard,
    ),
    (
        Mutant::NoTokenAccepted,
        &["decrypt.no_token", "rotate.no_token"],
        Setup::Standard,
    ),
    (
        Mutant::GarbageToken500,
        &[
            "decrypt.basic_credentials",
            "decrypt.garbage_token",
            "rotate.basic_credentials",
            "rotate.garbage_token",
        ],
        Setup::Standard,
    ),
    (
        Mutant::UncheckedSignature,
        &[
            "decrypt.alg_none",
            "decrypt.tampered_token",
            "rotate.alg_none",
            "rotate.tampered_token",
        ],
        Setup::Standard,
    ),
    (
        Mutant::AlgNoneAccepted,
        &["decrypt.alg_none", "rotate.alg_none"],
        Setup::Standard,
    ),
    (
        Mutant::BasicOnDecrypt,
        &["decrypt.basic_credentials", "rotate.basic_credentials"],
        Setup::Standard,
    ),
    (
        Mutant::ExpiredTokenAccepted,
        &["token.expired"],
        Setup::ShortToken,
    ),
    (
        Mutant::TokenDiesEarly,
        &["token.reuse"],
        Setup::HalfLifeToken,
    ),
    (
        Mutant::NoAliasBinding,
        &["decrypt.other_alias"],
        Setup::Standard,
    ),
    (
        Mutant::UnknownAlias500,
        &["decrypt.unknown_alias"],
        Setup::Standard,
    ),
    (
        Mutant::MissingPrefixAccepted,
        &["decrypt.missing_prefix"],
        Setup::Standard,
    ),
    (
        Mutant::WrongPrefix500,
        &["decrypt.wrong_prefix"],
        Setup::Standard,
    ),
    (
        Mutant::AnyEnvelopeVersion,
        &["decrypt.v2_prefix"],
        Setup::Standard,
    ),
    (
        Mutant::LenientBase64,
        &["decrypt.bad_base64", "decrypt.wrong_prefix"],
        Setup::Standard,
    ),
    (
        Mutant::FirstByteIgnored,
        &["decrypt.flipped_any_byte", "decrypt.flipped_first"],
        Setup::Standard,
    ),
    (
        Mutant::LastByteIgnored,
        &["decrypt.flipped_any_byte", "decrypt.flipped_last"],
        Setup::Standard,
    ),
    (
        Mutant::NonceIgnored,
        &["decrypt.flipped_any_byte", "decrypt.flipped_nonce"],
        Setup::Standard,
    ),
    (
        Mutant::TagStartIgnored,
        &["decrypt.flipped_any_byte", "decrypt.flipped_tag"],
        Setup::Standard,
    ),
    (
        Mutant::TruncatedTagAccepted,
        &["decrypt.truncated_key"],
        Setup::Standard,
    ),
    (
        Mutant::DecryptionFailure500,
        &[
            "decrypt.extended_key",
            "decrypt.flipped_any_byte",
            "decrypt.flipped_byte",
            "decrypt.flipped_first",
            "decrypt.flipped_last",
            "decrypt.flipped_nonce",
            "decrypt.flipped_tag",
            "decrypt.other_alias",
            "decrypt.truncated_key",
        ],
        Setup::Standard,
    ),
    (
        Mutant::MissingFields500,
        &["decrypt.malformed_body", "decrypt.missing_fields"],
        Setup::Standard,
    ),
    (
        Mutant::MissingAliasKeyNotFound,
        &["decrypt.missing_fields_code"],
        Setup::Standard,
    ),
    (
        Mutant::AnyContentType,
        &["decrypt.content_type"],
        Setup::Standard,
    ),
    (
        Mutant::NoBodyLimit,
        &["decrypt.oversized", "rotate.body"],
        Setup::Standard,
    ),
    (
        Mutant::DecryptStatus201,
        &[
            "auth.repeat",
            "decrypt.content_type",
            "decrypt.repeatable",
            "decrypt.status",
            "headers.no_trace_id",
            "load.errors",
            "rotate.old_keys",
            "rotate.roundtrip",
        ],
        Setup::Standard,
    ),
    (
        Mutant::PlaintextFieldRenamed,
        &[
            "auth.repeat",
            "decrypt.shape",
            "load.errors",
            "rotate.old_keys",
            "rotate.roundtrip",
        ],
        Setup::Standard,
    ),
    (
        Mutant::ShortPlaintext,
        &[
            "auth.repeat",
            "decrypt.plaintext",
            "rotate.old_keys",
            "rotate.roundtrip",
        ],
        Setup::Standard,
    ),
    (
        Mutant::UnstablePlaintext,
        &[
            "auth.repeat",
            "decrypt.repeatable",
            "load.errors",
            "rotate.old_keys",
        ],
        Setup::Standard,
    ),
    (
        Mutant::RotateStatus201,
        &["rotate.alias", "rotate.body", "rotate.status"],
        Setup::Standard,
    ),
    (
        Mutant::RotateWithoutAlias,
        &["rotate.alias", "rotate.shape"],
        Setup::Standard,
    ),
    (
        Mutant::RotateShortPlaintext,
        &["rotate.plaintext", "rotate.roundtrip", "rotate.old_keys"],
        Setup::Standard,
    ),
    (
        Mutant::RotateForgetsOldKeys,
        &["rotate.old_keys"],
        Setup::Standard,
    ),
    (
        Mutant::RotateSameKey,
        &["rotate.fresh", "rotate.unique_nonce"],
        Setup::Standard,
    ),
    (Mutant::RotateWrongAlias, &["rotate.alias"], Setup::Standard),
    (
        Mutant::NoTraceEcho,
        &["headers.trace_echo"],
        Setup::Standard,
    ),
    (
        Mutant::TraceIdRequired,
        &["headers.no_trace_id"],
        Setup::Standard,
    ),
    (
        Mutant::SkewIgnored,
        &["headers.skewed_timestamp"],
        Setup::Standard,
    ),
    (
        Mutant::FutureTimestampAccepted,
        &["headers.skewed_timestamp"],
        Setup::Standard,
    ),
    (
        Mutant::NoRequestDuration,
        &["headers.request_duration"],
        Setup::Standard,
    ),
    (
        Mutant::AnyMethod,
        &["methods.auth", "methods.decrypt", "methods.rotate"],
        Setup::Standard,
    ),
    (Mutant::SlowDecrypt, &["load.p50", "load.p99"], Setup::Slow),
    (Mutant::SmallPool, &["load.errors"], Setup::Standard),
    (
        Mutant::SecretInError,
        &["auth.wrong_secret", "errors.message", "errors.no_secret"],
        Setup::Standard,
    ),
    (Mutant::ErrorNotJson, &["errors.json"], Setup::Standard),
    (Mutant::FlatErrorBody, &["errors.shape"], Setup::Standard),
    (Mutant::GenericErrorCode, &["errors.code"], Setup::Standard),
    (
        Mutant::VerboseErrorMessage,
        &["errors.message"],
        Setup::Standard,
    ),
    (
        Mutant::YearLongToken,
        &["auth.expires_in_bound"],
        Setup::Standard,
    ),
    (
        Mutant::FirstTokenForever,
        &["token.renewed"],
        Setup::ShortToken,
    ),
    (
        Mutant::NonceFromKey,
        &["rotate.key_hidden"],
        Setup::Standard,
    ),
    (
        Mutant::RequestIdOptional,
        &["headers.request_id_required"],
        Setup::Standard,
    ),
    (
        Mutant::NoWwwAuthenticate,
        &["errors.www_authenticate"],
        Setup::Standard,
    ),
    (
        Mutant::CacheableAnswers,
        &["errors.no_store"],
        Setup::Standard,
    ),
];

/// Runs the validator against one mutant; answers its report.
async fn report_with(mutant: Mutant, setup: Setup) -> CheckReport {
    let config = match setup {
        Setup::ShortToken => config().with_expires_in(4),
        Setup::HalfLifeToken => config().with_expires_in(20),
        _ => config(),
    }
    .with_mutant(mutant);
    // The token setups wait for a token's expiry: on a simulated clock, moved by the
    // validator, so that no real time passes and a loaded machine cannot race them.
    let clock = sim_clock();
    let (kms, time) = match setup {
        Setup::ShortToken | Setup::HalfLifeToken => (
            spawn_kms_on(config, clock.shared()).await,
            CheckTime::Simulated(clock),
        ),
        _ => (spawn_kms(config).await, CheckTime::Wall),
    };
    let args = match setup {
        Setup::Standard => kms.args(),
        Setup::ShortToken => ByokArgs {
            expiry_wait_secs: Some(10),
            ..kms.args()
        },
        Setup::HalfLifeToken => ByokArgs {
            expiry_wait_secs: Some(25),
            ..kms.args()
        },
        Setup::Slow => ByokArgs {
            latency_budget_ms: Some(300),
            calls: Some(16),
            ..kms.args()
        },
    };
    check_at(&args, time).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mutant_fails_exactly_the_checks_that_name_its_rule() {
    let runs = futures_util::stream::iter(EXPECTED.iter().copied())
        .map(|(m, expected, setup)| async move {
            let report = report_with(m, setup).await;
            let got = failing(&report);
            let want: BTreeSet<String> = expected.iter().map(|s| s.to_string()).collect();
            // What an unexpected failure saw, so that a failure of this test says why.
            let unexpected: Vec<String> = report
                .checks
                .iter()
                .filter(|c| got.contains(&c.id) && !want.contains(&c.id))
                .map(|c| {
                    format!(
                        "  {}: {}",
                        c.id,
                        serde_json::to_string(&c.evidence).unwrap_or_default()
                    )
                })
                .collect();
            (m, want, (got, unexpected))
        })
        .buffer_unordered(4)
        .collect::<Vec<_>>()
        .await;
    let wrong: Vec<String> = runs
        .iter()
        .filter(|(_, want, (got, _))| want != got)
        .map(|(m, want, (got, unexpected))| {
            format!(
                "{m}: expected {want:?} to fail, {got:?} failed\n{}",
                unexpected.join("\n")
            )
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_mutant_is_in_the_table_once() {
    let listed: Vec<Mutant> = EXPECTED.iter().map(|(m, _, _)| *m).collect();
    assert_eq!(listed, Mutant::ALL, "the table follows Mutant::ALL");
    assert!(Mutant::ALL.len() >= 15);
}

#[test]
fn the_readme_table_is_this_table() {
    let readme = include_str!("../../../../docs/guide/check-byok.md");
    for (m, checks, _) in EXPECTED {
        let cells: Vec<String> = checks.iter().map(|c| format!("`{c}`")).collect();
        let row = format!("| `{m}` | {} |", cells.join(", "));
        assert!(
            readme.lines().any(|l| l.starts_with(&row)),
            "README.md lacks the row {row}"
        );
    }
}

/// The checks no mutant of customer-kms-sim breaks, which defects of the blind rounds do
/// (`blind.rs` asserts that each fails for at least one of them).
pub(super) const PROVEN_BY_BLIND_ROUNDS: &[&str] = &[
    "decrypt.wrong_api_key",
    "rotate.unknown_alias",
    "rotate.wrong_api_key",
    "headers.malformed",
];

#[test]
fn every_check_is_caught_by_a_mutant() {
    // The TLS checks cannot be broken by the simulator, which serves plain http; they are
    // proven against a TLS front in `tls.rs` (a chain that does not verify, plain http to an
    // https-only service) and in a unit test of `tls.https` (plain http to another machine).
    // The setup checks judge the run's own settings, not the service: `baseline.rs` proves
    // them with a wrong secret, a refused API key, a mistyped and a disabled alias.
    const PROVEN_ELSEWHERE: &[&str] = &[
        "tls.https",
        "tls.chain",
        "setup.credentials",
        "setup.key_alias",
    ];
    let caught: BTreeSet<&str> = EXPECTED
        .iter()
        .flat_map(|(_, c, _)| c.iter().copied())
        .collect();
    let missed: Vec<&str> = scenarios::checks::byok::defs::ALL
        .iter()
        .map(|d| d.id)
        .filter(|id| {
            !caught.contains(id)
                && !PROVEN_ELSEWHERE.contains(id)
                && !PROVEN_BY_BLIND_ROUNDS.contains(id)
        })
        .collect();
    assert!(missed.is_empty(), "no mutant catches {missed:?}");
    for id in PROVEN_ELSEWHERE.iter().chain(PROVEN_BY_BLIND_ROUNDS) {
        assert!(!caught.contains(id), "{id} is caught by a mutant after all");
    }
}
