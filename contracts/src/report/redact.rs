//! Secrets out of reports: a [`Redactor`] knows every secret a run handled (client secrets,
//! API keys, tokens, plaintext keys) and replaces each in a [`CheckReport`]'s evidence,
//! expectations and skip reasons with `[redacted]` before anything is rendered, so no
//! renderer (table, JSON, JUnit) can print one.

use serde_json::Value;

use super::checks::CheckReport;

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// The secrets to keep out of a report.
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    /// Longest first, so a secret that contains another is replaced whole.
    secrets: Vec<String>,
}

impl Redactor {
    /// A redactor of `secrets` (empty strings are ignored).
    pub fn new<I, S>(secrets: I) -> Redactor
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .map(Into::into)
            .filter(|s| !s.is_empty())
            .collect();
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Redactor { secrets }
    }

    /// `text` with every secret replaced.
    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), REDACTED);
            }
        }
        out
    }

    /// `value` with every secret replaced in every string, object keys included.
    pub fn value(&self, value: &mut Value) {
        match value {
            Value::String(s) if self.secrets.iter().any(|x| s.contains(x.as_str())) => {
                *s = self.text(s);
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.value(v)),
            Value::Object(map) => {
                let entries = std::mem::take(map);
                for (k, mut v) in entries {
                    self.value(&mut v);
                    map.insert(self.text(&k), v);
                }
            }
            _ => {}
        }
    }
}

impl CheckReport {
    /// Replaces every secret `redactor` knows in the report's text: target, evidence,
    /// expectations and skip reasons.
    pub fn redact(&mut self, redactor: &Redactor) {
        self.target = redactor.text(&self.target);
        for c in &mut self.checks {
            let mut evidence = Value::Object(std::mem::take(&mut c.evidence.0));
            redactor.value(&mut evidence);
            if let Value::Object(map) = evidence {
                c.evidence.0 = map;
            }
            c.expected = c.expected.as_deref().map(|e| redactor.text(e));
            c.skip_reason = c.skip_reason.as_deref().map(|r| redactor.text(r));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::checks::{Check, CheckDef, Evidence};
    use serde_json::json;

    #[test]
    fn every_string_of_a_report_loses_its_secrets() {
        const D: CheckDef = CheckDef::error("auth.status", "200");
        let mut report = CheckReport::new(
            "check byok",
            "http://x/acme",
            vec![
                Check::fail(
                    &D,
                    Evidence::new().body(
                        json!({"error": {"message": "bad secret hunter2"}, "hunter2": ["tok-abc"]}),
                    ),
                    "not to see tok-abc",
                ),
                Check::skip(&D, "hunter2 was wrong"),
            ],
        );
        report.redact(&Redactor::new(["hunter2", "tok-abc", "", "hunter"]));
        let text = serde_json::to_string(&report).unwrap();
        assert!(
            !text.contains("hunter") && !text.contains("tok-abc"),
            "{text}"
        );
        assert!(text.contains("bad secret [redacted]"), "{text}");
        assert_eq!(
            report.checks[0].expected.as_deref(),
            Some("not to see [redacted]")
        );
    }
}
