//! The platform's failures on demand: fault rules ([`contracts::wire::FaultRule`]) set at
//! start from the configuration (`[[faults]]`) and at run time through `/sim/v1/faults`.
//!
//! Each request to the interface is offered to the rules in order. A rule added with a
//! workspace's key is that workspace's: it applies to the workspace's requests only (those
//! [`crate::auth::KeyTable::owner`] gives it), and only that key (or an operator's)
//! lists and deletes it; a rule of the configuration or of an operator's key applies to
//! every request. A rule that matches (operation or path pattern, method, workspace) and
//! fires (its window on the platform's
//! clock, its remaining `times`, its probability, drawn from the platform's seed) decides
//! the request's fate, and later rules are not tried. A `rate_limit` rule is a filter
//! instead: a request within its key's budget goes on to the next rules.
//!
//! - [`rate`]: the token buckets of `rate_limit` rules, one per API key.

pub(crate) mod rate;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use contracts::wire::{AppliedFault, FaultKind, FaultRule, FaultRuleState, WorkspaceId};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::auth::Scope;
use crate::store::WorkspaceRef;

/// One request, as the rules see it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FaultRequest<'a> {
    /// The `operationId`, when the request is an operation of the document.
    pub(crate) operation_id: Option<&'a str>,
    /// The path.
    pub(crate) path: &'a str,
    /// The method.
    pub(crate) method: &'a str,
    /// The workspace the path names.
    pub(crate) path_workspace: Option<&'a WorkspaceRef>,
    /// The workspace the request belongs to (its key's, else its path's).
    pub(crate) owner: Option<&'a WorkspaceRef>,
    /// The `X-API-Key`, for rate limits (only a digest of it is kept).
    pub(crate) api_key: Option<&'a str>,
    /// The platform's time.
    pub(crate) now: DateTime<Utc>,
}

/// What to do with a request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Decision {
    /// Handle it (after `delay`, when set); cut the answer's body when `truncate`.
    Proceed {
        /// Real time to wait first.
        delay: Option<Duration>,
        /// Send half the answer's body, then close.
        truncate: bool,
        /// The fault applied, if any.
        applied: Option<AppliedFault>,
    },
    /// Answer `status` without handling it.
    Answer {
        /// 429, 500, 502, 503 or 504.
        status: u16,
        /// Seconds for `Retry-After`, when sent.
        retry_after: Option<u64>,
        /// The fault applied.
        applied: AppliedFault,
    },
    /// Close the connection without an answer, without handling it.
    Drop {
        /// The fault applied.
        applied: AppliedFault,
    },
}

impl Decision {
    /// Handle the request as usual.
    pub(crate) const PROCEED: Decision = Decision::Proceed {
        delay: None,
        truncate: false,
        applied: None,
    };
}

#[derive(Debug)]
struct Slot {
    id: String,
    rule: FaultRule,
    /// The workspaces (key patterns) whose requests it applies to; `None`: every request.
    scope: Option<Vec<WorkspaceRef>>,
    path: Option<Vec<String>>,
    matched: u64,
    injected: u64,
    remaining: Option<u64>,
    buckets: rate::Buckets,
}

impl Slot {
    fn state(&self) -> FaultRuleState {
        FaultRuleState {
            fault_id: self.id.clone(),
            rule: self.rule.clone(),
            matched: self.matched,
            injected: self.injected,
            remaining: self.remaining,
            applies_to: self.scope.as_ref().map(|ps| {
                ps.iter()
                    .map(|p| WorkspaceId {
                        org_id: p.org_id.clone(),
                        workspace_id: p.workspace_id.clone(),
                    })
                    .collect()
            }),
        }
    }

    /// Whether `viewer` may see and delete the rule: an operator every rule, a workspace's
    /// key the rules made with a key no wider than its own.
    fn visible_to(&self, viewer: &Scope) -> bool {
        match (viewer, &self.scope) {
            (Scope::Operator, _) => true,
            (Scope::Workspaces(_), None) => false,
            (Scope::Workspaces(_), Some(ps)) => ps.iter().all(|p| viewer.sees(Some(p))),
        }
    }

    fn matches(&self, r: &FaultRequest<'_>) -> bool {
        let rule = &self.rule;
        let in_scope = match &self.scope {
            None => true,
            Some(ps) => r.owner.is_some_and(|o| ps.iter().any(|p| p.takes_in(o))),
        };
        in_scope
            && rule
                .operation_id
                .as_deref()
                .is_none_or(|id| r.operation_id == Some(id))
            && self.path.as_ref().is_none_or(|p| path_matches(p, r.path))
            && rule.method.as_deref().is_none_or(|m| {
                m.eq_ignore_ascii_case(r.method) || (m == "GET" && r.method == "HEAD")
            })
            && rule
                .org_id
                .as_deref()
                .is_none_or(|o| r.path_workspace.is_some_and(|p| p.org_id == o))
            && rule
                .workspace_id
                .as_deref()
                .is_none_or(|w| r.path_workspace.is_some_and(|p| p.workspace_id == w))
    }

    fn in_window(&self, now: DateTime<Utc>) -> bool {
        self.rule.from.is_none_or(|f| now >= f) && self.rule.until.is_none_or(|u| now < u)
    }
}

/// A path pattern's segments; `*` and `{name}` match any one segment.
fn pattern(path: &str) -> Vec<String> {
    path.trim_end_matches('/')
        .split('/')
        .map(str::to_string)
        .collect()
}

fn path_matches(pattern: &[String], path: &str) -> bool {
    let path = path
        .strip_suffix('/')
        .filter(|p| !p.is_empty())
        .unwrap_or(path);
    let mut parts = path.split('/');
    let fits = pattern.iter().all(|p| match parts.next() {
        Some(part) => p == "*" || (p.starts_with('{') && p.ends_with('}')) || p == part,
        None => false,
    });
    fits && parts.next().is_none()
}

#[derive(Debug)]
struct State {
    slots: Vec<Slot>,
    next_id: u64,
    rng: ChaCha8Rng,
}

/// The fault rules of one platform.
#[derive(Debug)]
pub struct Faults {
    state: Mutex<State>,
    any: AtomicBool,
    clock: rate::Monotonic,
}

impl Faults {
    /// No rules; probabilities drawn from `seed`.
    pub(crate) fn new(seed: u64) -> Faults {
        Faults {
            state: Mutex::new(State {
                slots: Vec::new(),
                next_id: 1,
                rng: ChaCha8Rng::seed_from_u64(seed ^ 0x6661_756c_7473),
            }),
            any: AtomicBool::new(false),
            clock: rate::Monotonic::start(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether any rule is set (when not, requests skip the rules altogether).
    pub fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// Adds a checked rule after the others, applying to the requests of the workspaces of
    /// `scope` (`None`: every request); answers it with its new id.
    pub(crate) fn add(&self, rule: FaultRule, scope: Option<Vec<WorkspaceRef>>) -> FaultRuleState {
        let mut s = self.lock();
        let id = format!("flt-{}", s.next_id);
        s.next_id += 1;
        let slot = Slot {
            id,
            path: rule.path.as_deref().map(pattern),
            remaining: rule.times,
            matched: 0,
            injected: 0,
            buckets: rate::Buckets::default(),
            rule,
            scope,
        };
        let state = slot.state();
        s.slots.push(slot);
        self.any.store(true, Ordering::Release);
        state
    }

    /// The rules `viewer` sees, in the order they are tried.
    pub(crate) fn list(&self, viewer: &Scope) -> Vec<FaultRuleState> {
        self.lock()
            .slots
            .iter()
            .filter(|s| s.visible_to(viewer))
            .map(Slot::state)
            .collect()
    }

    /// Removes one rule `viewer` sees; whether there was one.
    pub(crate) fn remove(&self, fault_id: &str, viewer: &Scope) -> bool {
        self.remove_where(|r| r.id == fault_id && r.visible_to(viewer)) > 0
    }

    /// Removes every rule `viewer` sees; answers how many.
    pub(crate) fn clear(&self, viewer: &Scope) -> usize {
        self.remove_where(|r| r.visible_to(viewer))
    }

    /// Removes the rules made with a key of exactly `ws` (the reset of one workspace);
    /// answers how many.
    pub(crate) fn clear_workspace(&self, ws: &WorkspaceRef) -> usize {
        self.remove_where(|r| r.scope.as_deref() == Some(std::slice::from_ref(ws)))
    }

    fn remove_where(&self, mut gone: impl FnMut(&Slot) -> bool) -> usize {
        let mut s = self.lock();
        let before = s.slots.len();
        s.slots.retain(|r| !gone(r));
        self.any.store(!s.slots.is_empty(), Ordering::Release);
        before - s.slots.len()
    }

    /// What to do with `r`.
    pub(crate) fn decide(&self, r: &FaultRequest<'_>) -> Decision {
        if !self.any() {
            return Decision::PROCEED;
        }
        let now_secs = self.clock.seconds();
        let mut guard = self.lock();
        let State { slots, rng, .. } = &mut *guard;
        for slot in slots.iter_mut() {
            if !slot.matches(r) {
                continue;
            }
            slot.matched += 1;
            if !slot.in_window(r.now) {
                continue;
            }
            if slot.rule.kind == FaultKind::RateLimit {
                let rps = slot.rule.requests_per_second.unwrap_or(1.0);
                let burst = slot
                    .rule
                    .burst
                    .unwrap_or_else(|| rps.ceil().max(1.0) as u32);
                match slot.buckets.take(r.api_key, rps, burst, now_secs) {
                    Ok(()) => continue,
                    Err(wait) => {
                        slot.injected += 1;
                        let retry_after = wait.ceil().max(1.0) as u64;
                        return Decision::Answer {
                            status: 429,
                            retry_after: Some(retry_after),
                            applied: AppliedFault {
                                fault_id: slot.id.clone(),
                                kind: FaultKind::RateLimit.as_str().into(),
                                effect: format!(
                                    "429: above {rps} requests per second (burst {burst}) for this key; retry after {retry_after} s"
                                ),
                            },
                        };
                    }
                }
            }
            if slot.remaining == Some(0) {
                continue;
            }
            if let Some(p) = slot.rule.probability
                && rng.r#gen::<f64>() >= p
            {
                continue;
            }
            if let Some(n) = slot.remaining.as_mut() {
                *n -= 1;
            }
            slot.injected += 1;
            return fire(slot, rng);
        }
        Decision::PROCEED
    }
}

fn fire(slot: &Slot, rng: &mut ChaCha8Rng) -> Decision {
    let rule = &slot.rule;
    let applied = |effect: String| AppliedFault {
        fault_id: slot.id.clone(),
        kind: rule.kind.as_str().into(),
        effect,
    };
    match rule.kind {
        FaultKind::Status => {
            let status = rule.status.unwrap_or(503);
            let retry_after =
                matches!(status, 429 | 503).then(|| rule.retry_after_seconds.unwrap_or(1));
            Decision::Answer {
                status,
                retry_after,
                applied: applied(status.to_string()),
            }
        }
        FaultKind::Delay => {
            let lo = rule.delay_ms.unwrap_or(0);
            let ms = match rule.delay_max_ms {
                Some(hi) if hi > lo => rng.gen_range(lo..=hi),
                _ => lo,
            };
            Decision::Proceed {
                delay: Some(Duration::from_millis(ms)),
                truncate: false,
                applied: Some(applied(format!("delayed {ms} ms"))),
            }
        }
        FaultKind::Drop => Decision::Drop {
            applied: applied("connection closed without an answer".into()),
        },
        FaultKind::Truncate => Decision::Proceed {
            delay: None,
            truncate: true,
            applied: Some(applied(
                "answer's body cut in half, connection closed".into(),
            )),
        },
        FaultKind::RateLimit => Decision::PROCEED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(op: &str, now: &str) -> FaultRequest<'static> {
        let ws: &'static WorkspaceRef = Box::leak(Box::new(WorkspaceRef::new("o", "w")));
        FaultRequest {
            operation_id: Some(Box::leak(op.to_string().into_boxed_str())),
            path: "/api/app-authoring/v1/orgs/o/workspaces/w/deployments",
            method: "GET",
            path_workspace: Some(ws),
            owner: Some(ws),
            api_key: Some("k"),
            now: now.parse().unwrap(),
        }
    }

    const T0: &str = "2026-03-02T12:00:00Z";

    #[test]
    fn times_counts_down_and_other_operations_are_untouched() {
        let f = Faults::new(1);
        let mut rule = FaultRule::new(FaultKind::Status);
        rule.status = Some(503);
        rule.times = Some(2);
        rule.operation_id = Some("list_deployments".into());
        f.add(rule, None);
        let r = request("list_deployments", T0);
        assert!(matches!(
            f.decide(&r),
            Decision::Answer {
                status: 503,
                retry_after: Some(1),
                ..
            }
        ));
        assert!(matches!(f.decide(&r), Decision::Answer { .. }));
        assert_eq!(f.decide(&r), Decision::PROCEED);
        assert_eq!(
            f.decide(&request("create_deployment", T0)),
            Decision::PROCEED
        );
        let s = &f.list(&Scope::Operator)[0];
        assert_eq!((s.matched, s.injected, s.remaining), (3, 2, Some(0)));
    }

    #[test]
    fn windows_follow_the_platforms_clock() {
        let f = Faults::new(1);
        let mut rule = FaultRule::new(FaultKind::Drop);
        rule.from = Some("2026-03-02T12:10:00Z".parse().unwrap());
        rule.until = Some("2026-03-02T12:20:00Z".parse().unwrap());
        f.add(rule, None);
        assert_eq!(
            f.decide(&request("x", "2026-03-02T12:09:59Z")),
            Decision::PROCEED
        );
        assert!(matches!(
            f.decide(&request("x", "2026-03-02T12:10:00Z")),
            Decision::Drop { .. }
        ));
        assert_eq!(
            f.decide(&request("x", "2026-03-02T12:20:00Z")),
            Decision::PROCEED
        );
    }

    #[test]
    fn probabilities_follow_the_seed() {
        let draw = |seed| {
            let f = Faults::new(seed);
            let mut rule = FaultRule::new(FaultKind::Truncate);
            rule.probability = Some(0.5);
            f.add(rule, None);
            (0..200)
                .map(|_| f.decide(&request("x", T0)) != Decision::PROCEED)
                .collect::<Vec<_>>()
        };
        let a = draw(7);
        assert_eq!(a, draw(7), "the same seed fires on the same requests");
        let fired = a.iter().filter(|x| **x).count();
        assert!((60..140).contains(&fired), "{fired} of 200 at p = 0.5");
    }

    #[test]
    fn paths_match_segment_by_segment() {
        let p = pattern("/api/app-authoring/v1/orgs/*/workspaces/{workspace_id}/deployments");
        assert!(path_matches(
            &p,
            "/api/app-authoring/v1/orgs/o/workspaces/w/deployments"
        ));
        assert!(path_matches(
            &p,
            "/api/app-authoring/v1/orgs/o/workspaces/w/deployments/"
        ));
        assert!(!path_matches(
            &p,
            "/api/app-authoring/v1/orgs/o/workspaces/w/deployments/d"
        ));
        assert!(!path_matches(
            &p,
            "/api/app-authoring/v1/orgs/o/workspaces/w"
        ));
    }

    #[test]
    fn a_workspaces_rule_applies_to_its_requests_and_only_its_key_sees_it() {
        let f = Faults::new(1);
        let w = WorkspaceRef::new("o", "w");
        let v = WorkspaceRef::new("o", "v");
        f.add(FaultRule::new(FaultKind::Drop), Some(vec![v.clone()]));
        let mine = request("x", T0);
        assert_eq!(f.decide(&mine), Decision::PROCEED, "w's request");
        let theirs = FaultRequest {
            owner: Some(&v),
            ..mine
        };
        assert!(matches!(f.decide(&theirs), Decision::Drop { .. }));
        let nobodys = FaultRequest {
            owner: None,
            ..mine
        };
        assert_eq!(f.decide(&nobodys), Decision::PROCEED);
        let as_w = Scope::Workspaces(vec![w.clone()]);
        let as_v = Scope::Workspaces(vec![v.clone()]);
        assert!(f.list(&as_w).is_empty());
        assert_eq!(f.list(&as_v).len(), 1);
        assert_eq!(f.list(&Scope::Operator).len(), 1);
        assert!(!f.remove("flt-1", &as_w), "w cannot delete v's rule");
        assert_eq!(f.clear(&as_w), 0);
        assert_eq!(f.clear_workspace(&w), 0);
        assert_eq!(f.clear_workspace(&v), 1);
        assert!(!f.any());
    }

    #[test]
    fn a_rate_limit_passes_requests_within_the_budget_to_later_rules() {
        let f = Faults::new(1);
        let mut limit = FaultRule::new(FaultKind::RateLimit);
        limit.requests_per_second = Some(0.001);
        limit.burst = Some(2);
        f.add(limit, None);
        let mut delay = FaultRule::new(FaultKind::Delay);
        delay.delay_ms = Some(5);
        f.add(delay, None);
        let r = request("x", T0);
        for _ in 0..2 {
            assert!(matches!(
                f.decide(&r),
                Decision::Proceed { delay: Some(_), .. }
            ));
        }
        match f.decide(&r) {
            Decision::Answer {
                status: 429,
                retry_after: Some(s),
                ..
            } => assert!(s >= 900, "{s}"),
            other => panic!("{other:?}"),
        }
        let other_key = FaultRequest {
            api_key: Some("k2"),
            ..r
        };
        assert!(
            matches!(
                f.decide(&other_key),
                Decision::Proceed { delay: Some(_), .. }
            ),
            "each key has its own budget"
        );
    }
}
