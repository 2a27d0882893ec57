//! Each mutant breaks exactly one rule of the contract (the mock behind a proxy); the whole
//! suite, with `--sim` and another workspace, must fail exactly the checks of that rule and
//! skip none. Every check of the suite has a mutant that fails it ([`every_check_has_a_mutant`]):
//! a check no mutant can fail would prove nothing.

mod auth;
mod cohorts;
mod endpoints;
mod errors;
mod limits;
mod pagination;
mod sim;
mod states;
mod zones;

use std::collections::BTreeSet;

use contracts::clock::SimClock;
use reqwest::Method;
use scenarios::checks::Outcome;
use scenarios::checks::platform::GROUPS;
use serde_json::{Value, json};

use super::support::{Mutation, Req, Resp, Seen, options, sim_clock, spawn};

/// Declares mutants: each becomes a test that runs the suite against the mock behind it and
/// asserts that exactly the listed checks fail, and an entry of the file's `ALL`.
macro_rules! mutants {
    ($(
        $(#[doc = $doc:literal])*
        fn $name:ident() fails [$($id:literal),+ $(,)?] $body:block
    )*) => {
        $(
            $(#[doc = $doc])*
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let setup: super::Setup = $body.into();
                super::assert_fails_exactly(setup, &[$($id),+]).await;
            }
        )*
        /// Each mutant of this file, with the checks it must fail.
        pub const ALL: &[(&str, &[&str])] = &[$((stringify!($name), &[$($id),+])),*];
    };
}
pub(crate) use mutants;

/// A mutant and the clock its mock runs on.
pub struct Setup {
    pub clock: SimClock,
    pub mutation: Mutation,
}

impl From<Mutation> for Setup {
    fn from(mutation: Mutation) -> Setup {
        Setup {
            clock: sim_clock(),
            mutation,
        }
    }
}

/// Runs the suite against the mock behind the mutant, and asserts that exactly `expected`
/// fail and nothing is skipped.
/// The table names the suite's own checks that name each mutant's rule: the oracle, the net
/// beneath them, is proven by the blind rounds and the variations, and does not run here.
async fn assert_fails_exactly(setup: Setup, expected: &[&str]) {
    let mock = spawn(Some(setup.clock), Some(setup.mutation)).await;
    let opts = options(&mock.url, true, true).without_oracle();
    let report = scenarios::checks::platform::check(&opts, &mut |_| {}, std::future::pending())
        .await
        .expect("the checks run");
    mock.stop().await;
    let own = |c: &&scenarios::checks::Check| !c.id.starts_with("oracle.");
    let failed: BTreeSet<&str> = report
        .checks
        .iter()
        .filter(own)
        .filter(|c| c.result == Outcome::Fail)
        .map(|c| c.id.as_str())
        .collect();
    let want: BTreeSet<&str> = expected.iter().copied().collect();
    let details: Vec<String> = report
        .checks
        .iter()
        .filter(own)
        .filter(|c| c.result == Outcome::Fail && !want.contains(c.id.as_str()))
        .map(|c| {
            format!(
                "{}: expected {:?}, observed {}",
                c.id,
                c.expected,
                serde_json::to_string(&c.evidence).unwrap()
            )
        })
        .collect();
    assert_eq!(failed, want, "unexpected failures: {details:#?}");
    let skipped: Vec<String> = report
        .checks
        .iter()
        .filter(own)
        .filter(|c| c.result == Outcome::Skip)
        .map(|c| format!("{}: {:?}", c.id, c.skip_reason))
        .collect();
    assert!(skipped.is_empty(), "skipped: {skipped:#?}");
    // Each failure shows the request that showed it and what a conforming platform answers.
    for c in report.checks.iter().filter(|c| c.result == Outcome::Fail) {
        let text = serde_json::to_string(&c.evidence).unwrap();
        assert!(
            text.contains("\"request\"") && c.expected.as_deref().is_some_and(|e| !e.is_empty()),
            "{}: no request or no expectation in {text}",
            c.id
        );
    }
}

/// Every check of the suite is failed by a mutant of its own.
#[test]
fn every_check_has_a_mutant() {
    let all: Vec<(&str, &[&str])> = [
        endpoints::ALL,
        limits::ALL,
        errors::ALL,
        states::ALL,
        pagination::ALL,
        cohorts::ALL,
        auth::ALL,
        sim::ALL,
        zones::ALL,
    ]
    .concat();
    // The oracle's checks are proven by the blind rounds and the variations instead: they
    // compare with the reference, whatever a mutant breaks.
    let ids: BTreeSet<&str> = GROUPS
        .iter()
        .filter(|g| g.name != "oracle")
        .flat_map(|g| g.checks)
        .map(|d| d.id)
        .collect();
    let proven: BTreeSet<&str> = all.iter().flat_map(|(_, c)| c.iter().copied()).collect();
    let unknown: Vec<&&str> = proven.difference(&ids).collect();
    assert!(
        unknown.is_empty(),
        "mutants name unknown checks: {unknown:?}"
    );
    let unproven: Vec<&&str> = ids.difference(&proven).collect();
    assert!(unproven.is_empty(), "checks no mutant fails: {unproven:?}");
}

/// A mutant that changes answers.
fn respond(f: impl Fn(&Req, &mut Resp) + Send + Sync + 'static) -> Mutation {
    Mutation {
        response: Some(Box::new(f)),
        ..Mutation::default()
    }
}

/// A mutant that changes requests, or answers them itself.
fn intercept(f: impl Fn(&mut Req) -> Option<Resp> + Send + Sync + 'static) -> Mutation {
    Mutation {
        request: Some(Box::new(f)),
        ..Mutation::default()
    }
}

/// A mutant that changes the webhook events the platform sends.
fn events(f: impl Fn(&mut Value) + Send + Sync + 'static) -> Mutation {
    Mutation {
        event: Some(Box::new(f)),
        ..Mutation::default()
    }
}

/// Changes the JSON body of a 200 answer to a request that `matches`.
fn answer_edit(
    matches: impl Fn(&Req) -> bool + Send + Sync + 'static,
    f: impl Fn(&mut Value) + Send + Sync + 'static,
) -> Mutation {
    respond(move |req, resp| {
        if resp.status == 200
            && matches(req)
            && let Some(mut v) = resp.json()
        {
            f(&mut v);
            resp.set_json(&v);
        }
    })
}

/// Changes the JSON body of a request that `matches` before the platform sees it.
fn request_edit(
    matches: impl Fn(&Req) -> bool + Send + Sync + 'static,
    f: impl Fn(&mut Value) + Send + Sync + 'static,
) -> Mutation {
    intercept(move |req| {
        if matches(req) {
            req.edit_json(&f);
        }
        None
    })
}

/// An answer in the platform's error shape.
fn refuse(status: u16, code: &str) -> Resp {
    Resp::json_answer(
        status,
        &json!({"error": {"message": format!("refused by a mutant ({code})"), "type": "conflict", "code": code}}),
    )
}

/// Removes `field` from an object.
fn drop_field(v: &mut Value, field: &str) {
    if let Some(m) = v.as_object_mut() {
        m.remove(field);
    }
}

/// Removes `field` from every item of a page.
fn drop_item_field(v: &mut Value, field: &str) {
    for item in v["items"].as_array_mut().into_iter().flatten() {
        drop_field(item, field);
    }
}

/// Whether `req` is `method` on `pattern` under the parent `parent` (`campaigns` or
/// `deployments` in place of the pattern's first `*`).
fn under(req: &Req, method: Method, parent: &str, pattern: &[&str]) -> bool {
    let mut p = vec![parent];
    p.extend_from_slice(pattern);
    req.is(method, &p)
}

/// The id of `/{kind}/{id}...`.
fn id(req: &Req) -> String {
    req.rest().get(1).map(|s| s.to_string()).unwrap_or_default()
}

/// A mutant that knows each resource's last status: `hook` sees each request with it.
pub(super) fn with_seen(
    hook: impl Fn(&mut Req, Option<String>) -> Option<Resp> + Send + Sync + 'static,
) -> Mutation {
    let seen = Seen::default();
    let note = seen.clone();
    Mutation {
        request: Some(Box::new(move |req| {
            let status = seen.status(&id(req));
            hook(req, status)
        })),
        response: Some(Box::new(move |_req, resp| note.note(resp))),
        ..Mutation::default()
    }
}
