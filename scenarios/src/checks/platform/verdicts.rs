//! [`Verdicts`]: the verdicts of one group, one per check of its table, and what each check
//! saw vary.
//!
//! A check proves something only when what it judges could have come out otherwise: a sort
//! check over items whose keys are all equal passes whatever the order. So every check
//! records, for each aspect it judges, the values it saw ([`Verdicts::varied`]): the sort
//! keys, the statuses before and after a change, the answers on both sides of a boundary,
//! the verdicts of a schema on the body and on the body less a field. They are reported
//! under `evidence.varied`; a check that would pass while one of its aspects saw fewer than
//! two distinct values is reported as skipped instead ("could not judge"), never as passed.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::checks::{Check, CheckDef, Evidence, Outcome};

/// The evidence key of what a check saw vary.
pub(crate) const VARIED: &str = "varied";

/// The verdicts of one group, one per check of its table, in table order.
#[derive(Debug)]
pub(crate) struct Verdicts {
    defs: &'static [CheckDef],
    checks: Vec<Option<Check>>,
    varied: Vec<BTreeMap<String, Vec<Value>>>,
}

impl Verdicts {
    /// No verdict yet for any of `defs`.
    pub(crate) fn new(defs: &'static [CheckDef]) -> Verdicts {
        Verdicts {
            defs,
            checks: vec![None; defs.len()],
            varied: vec![BTreeMap::new(); defs.len()],
        }
    }

    fn index(&self, id: &str) -> usize {
        self.defs
            .iter()
            .position(|d| d.id == id)
            .unwrap_or_else(|| panic!("check {id} is not in its group's table"))
    }

    /// Records a verdict (the first one of a check stands).
    pub(crate) fn add(&mut self, c: Check) {
        let i = self.index(&c.id);
        if self.checks[i].is_none() {
            self.checks[i] = Some(c);
        }
    }

    /// Whether `def` has a verdict.
    pub(crate) fn has(&mut self, def: &CheckDef) -> bool {
        let i = self.index(def.id);
        self.checks[i].is_some()
    }

    /// Pass when `ok`, else fail with `expected`.
    pub(crate) fn judge(
        &mut self,
        def: &CheckDef,
        ok: bool,
        e: Evidence,
        expected: impl Into<String>,
    ) {
        self.add(Check::judge(def, ok, e, expected));
    }

    /// Records the values of `aspect` that `def` judged (distinct ones kept, in the order
    /// first seen). Fewer than two distinct values turn a pass into a skip.
    pub(crate) fn varied<V: Into<Value>>(
        &mut self,
        def: &CheckDef,
        aspect: &str,
        values: impl IntoIterator<Item = V>,
    ) {
        let i = self.index(def.id);
        let seen = self.varied[i].entry(aspect.to_string()).or_default();
        for v in values {
            let v = v.into();
            if !seen.contains(&v) {
                seen.push(v);
            }
        }
    }

    /// Every check of the group not judged yet fails: what it needed could not be set up.
    /// `what` says what was attempted; the evidence shows the answer.
    pub(crate) fn blocked(&mut self, what: &str, e: Evidence) {
        let defs: Vec<&CheckDef> = self.defs.iter().collect();
        self.blocked_only(&defs, what, e);
    }

    /// Each of `defs` not judged yet fails: what it needed could not be set up.
    pub(crate) fn blocked_only(&mut self, defs: &[&CheckDef], what: &str, e: Evidence) {
        for d in defs {
            if !self.has(d) {
                self.add(Check::fail(
                    d,
                    e.clone(),
                    format!("{what} succeeds (the check needs it)"),
                ));
            }
        }
    }

    /// Every check of the group not judged yet is skipped for `reason`.
    pub(crate) fn skip_rest(&mut self, reason: &str) {
        for (i, d) in self.defs.iter().enumerate() {
            if self.checks[i].is_none() {
                self.checks[i] = Some(Check::skip(d, reason));
            }
        }
    }

    /// The verdicts in table order, each with what it saw vary. A check the group never
    /// judged is a fault of the harness, reported as a skip that says so.
    pub(crate) fn into_checks(mut self) -> Vec<Check> {
        self.skip_rest("not reached: the harness did not judge this check (please report it)");
        let varied = std::mem::take(&mut self.varied);
        self.checks
            .into_iter()
            .flatten()
            .zip(varied)
            .map(|(c, aspects)| with_varied(c, aspects))
            .collect()
    }
}

/// `c` with `aspects` in its evidence; a pass whose aspects did not vary becomes a skip.
fn with_varied(mut c: Check, aspects: BTreeMap<String, Vec<Value>>) -> Check {
    if aspects.is_empty() || c.result == Outcome::Skip {
        return c;
    }
    let flat: Vec<String> = aspects
        .iter()
        .filter(|(_, seen)| seen.len() < 2)
        .map(|(aspect, seen)| format!("{aspect} was only {}", Value::Array(seen.clone())))
        .collect();
    let map: serde_json::Map<String, Value> = aspects
        .into_iter()
        .map(|(k, v)| (k, Value::Array(v)))
        .collect();
    c.evidence.0.insert(VARIED.to_string(), Value::Object(map));
    if c.result == Outcome::Pass && !flat.is_empty() {
        c.result = Outcome::Skip;
        c.skip_reason = Some(format!(
            "could not judge: what the check looks at did not vary ({}), so it could not have failed",
            flat.join("; ")
        ));
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const A: CheckDef = CheckDef::error("g.a", "a");
    const B: CheckDef = CheckDef::error("g.b", "b");
    const C: CheckDef = CheckDef::error("g.c", "c");
    const DEFS: &[CheckDef] = &[A, B, C];

    #[test]
    fn a_pass_that_saw_nothing_vary_is_a_skip() {
        let mut v = Verdicts::new(DEFS);
        v.judge(&A, true, Evidence::new(), "x");
        v.varied(&A, "created_at", ["t1", "t2", "t1"]);
        v.judge(&B, true, Evidence::new(), "x");
        v.varied(&B, "created_at", ["t1", "t1"]);
        v.varied(&B, "status", [200, 404]);
        v.judge(&C, false, Evidence::new(), "x");
        v.varied(&C, "created_at", ["t1"]);
        let checks = v.into_checks();
        assert_eq!(checks[0].result, Outcome::Pass);
        assert_eq!(
            checks[0].evidence.0[VARIED],
            json!({"created_at": ["t1", "t2"]})
        );
        assert_eq!(checks[1].result, Outcome::Skip);
        let why = checks[1].skip_reason.as_deref().unwrap();
        assert!(why.contains("created_at was only [\"t1\"]"), "{why}");
        assert!(!why.contains("status"), "{why}");
        assert_eq!(checks[2].result, Outcome::Fail, "a failure stands");
    }
}
