//! Secrets out of reports: a [`Redactor`] knows every secret a run handled (client secrets,
//! API keys, tokens issued or forged, plaintext keys) and replaces them with `[redacted]`
//! in a [`CheckReport`]'s evidence, expectations, fixes and skip reasons before anything is
//! rendered, so no renderer (table, JSON, JUnit) can print one.
//!
//! In the evidence (what a service answered, what was sent to it) a secret is hidden in
//! whole and in part: every run of [`MIN_SECRET_RUN`] or more of its characters, also of its
//! base64 (standard and URL-safe) and URL-encoded forms, is replaced. Evidence strings are
//! cut to [`MAX_EVIDENCE_CHARS`] only afterwards, so a secret that straddles the cut cannot
//! survive in part. The report's own words (target, expectations, fixes, skip reasons) hold
//! no text from a service; there a secret is replaced wherever one of its forms appears
//! whole, so that a readable secret (`platform-secret-1`) does not also hide the words it
//! shares with them (`platform`, `secret`).

use std::collections::HashSet;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use serde_json::Value;

use super::checks::CheckReport;

/// What a secret is replaced with.
pub(crate) const REDACTED: &str = "[redacted]";
/// The shortest run of a secret's characters that is replaced wherever it appears; a
/// secret shorter than this is replaced where it appears whole.
pub const MIN_SECRET_RUN: usize = 6;
/// The longest evidence string a report keeps whole; longer ones are cut, after redaction.
pub const MAX_EVIDENCE_CHARS: usize = 300;

type Window = [char; MIN_SECRET_RUN];

/// The secrets to keep out of a report.
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    /// Every run of [`MIN_SECRET_RUN`] characters of every form of every secret.
    windows: HashSet<Window>,
    /// Forms shorter than [`MIN_SECRET_RUN`], longest first.
    short: Vec<Vec<char>>,
    /// Every form of every secret, longest first.
    whole: Vec<String>,
}

/// The texts a secret can appear as: itself, base64 (standard and URL-safe alphabets; the
/// unpadded forms are prefixes of these) and URL-encoded (percent-encoding in upper and
/// lower case, form encoding).
pub fn forms(secret: &str) -> Vec<String> {
    let mut out = vec![
        secret.to_string(),
        STANDARD.encode(secret),
        URL_SAFE.encode(secret),
        percent_encode(secret, false, true),
        percent_encode(secret, false, false),
        percent_encode(secret, true, true),
    ];
    out.sort();
    out.dedup();
    out
}

/// Percent-encoding of every byte but the unreserved ones (RFC 3986); `form`: a space is
/// `+` (`application/x-www-form-urlencoded`).
fn percent_encode(s: &str, form: bool, upper: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            b' ' if form => out.push('+'),
            _ if upper => out.push_str(&format!("%{b:02X}")),
            _ => out.push_str(&format!("%{b:02x}")),
        }
    }
    out
}

impl Redactor {
    /// A redactor of `secrets` (empty strings are ignored).
    pub fn new<I, S>(secrets: I) -> Redactor
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut r = Redactor::default();
        for secret in secrets.into_iter().map(Into::into) {
            if secret.is_empty() {
                continue;
            }
            for form in forms(&secret) {
                r.whole.push(form.clone());
                let chars: Vec<char> = form.chars().collect();
                if chars.len() < MIN_SECRET_RUN {
                    r.short.push(chars);
                    continue;
                }
                for w in chars.windows(MIN_SECRET_RUN) {
                    r.windows
                        .insert(w.try_into().expect("windows of MIN_SECRET_RUN"));
                }
            }
        }
        let longest_first = |a: &Vec<char>, b: &Vec<char>| b.len().cmp(&a.len()).then(a.cmp(b));
        r.short.sort_by(longest_first);
        r.short.dedup();
        r.whole
            .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        r.whole.dedup();
        r
    }

    /// `text` with every secret replaced where one of its forms appears whole (for the
    /// report's own words; see the module doc).
    pub(crate) fn whole(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.whole {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), REDACTED);
            }
        }
        out
    }

    /// Whether there is no secret to hide.
    pub(crate) fn is_empty(&self) -> bool {
        self.whole.is_empty()
    }

    /// `text` with every secret replaced, in whole and in part; each stretch of hidden
    /// characters becomes one [`REDACTED`].
    pub(crate) fn text(&self, text: &str) -> String {
        if self.is_empty() {
            return text.to_string();
        }
        let chars: Vec<char> = text.chars().collect();
        let mut hidden = vec![false; chars.len()];
        let mut any = false;
        for (i, w) in chars.windows(MIN_SECRET_RUN).enumerate() {
            let w: &Window = w.try_into().expect("windows of MIN_SECRET_RUN");
            if self.windows.contains(w) {
                hidden[i..i + MIN_SECRET_RUN].fill(true);
                any = true;
            }
        }
        for s in &self.short {
            for (i, w) in chars.windows(s.len()).enumerate() {
                if w == s.as_slice() {
                    hidden[i..i + s.len()].fill(true);
                    any = true;
                }
            }
        }
        if !any {
            return text.to_string();
        }
        let mut out = String::with_capacity(text.len());
        for (i, c) in chars.iter().enumerate() {
            match (hidden[i], i > 0 && hidden[i - 1]) {
                (false, _) => out.push(*c),
                (true, false) => out.push_str(REDACTED),
                (true, true) => {}
            }
        }
        out
    }

    /// `text` with every secret replaced, then cut to `max_chars` (for a message built from
    /// what a service answered).
    pub fn text_shortened(&self, text: &str, max_chars: usize) -> String {
        shorten(&self.text(text), max_chars)
    }

    /// `value` with every secret replaced in every string, object keys included.
    pub(crate) fn value(&self, value: &mut Value) {
        match value {
            Value::String(s) => *s = self.text(s),
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

/// At most `max_chars` characters of `text`; a longer text ends in `... (N characters)`.
/// Only for text that secrets were already removed from (see [`Redactor::text_shortened`]).
pub(crate) fn shorten(text: &str, max_chars: usize) -> String {
    let n = text.chars().count();
    if n <= max_chars {
        return text.to_string();
    }
    let kept: String = text.chars().take(max_chars).collect();
    format!("{kept}... ({n} characters)")
}

fn shorten_strings(value: &mut Value, max_chars: usize) {
    match value {
        Value::String(s) if s.chars().count() > max_chars => *s = shorten(s, max_chars),
        Value::Array(items) => items.iter_mut().for_each(|v| shorten_strings(v, max_chars)),
        Value::Object(map) => map.values_mut().for_each(|v| shorten_strings(v, max_chars)),
        _ => {}
    }
}

impl CheckReport {
    /// Replaces every secret `redactor` knows in the report: in the evidence in whole and in
    /// part, and only then cuts every evidence string to [`MAX_EVIDENCE_CHARS`] (the one
    /// order in which no part of a secret survives a cut); in the target, expectations, fixes
    /// and skip reasons wherever it appears whole.
    pub fn redact(&mut self, redactor: &Redactor) {
        self.target = redactor.whole(&self.target);
        for c in &mut self.checks {
            let mut evidence = Value::Object(std::mem::take(&mut c.evidence.0));
            redactor.value(&mut evidence);
            shorten_strings(&mut evidence, MAX_EVIDENCE_CHARS);
            if let Value::Object(map) = evidence {
                c.evidence.0 = map;
            }
            for text in [&mut c.expected, &mut c.skip_reason, &mut c.how_to_fix] {
                if let Some(t) = text.as_mut() {
                    *t = redactor.whole(t);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::checks::{Check, CheckDef, Evidence};
    use serde_json::json;

    const SECRET: &str = "Zq7vN2pXw4Lk9sRt";

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
                )
                .with_fix("stop echoing hunter2"),
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
        assert_eq!(
            report.checks[0].how_to_fix.as_deref(),
            Some("stop echoing [redacted]")
        );
    }

    #[test]
    fn any_six_characters_of_a_secret_are_hidden_and_shorter_runs_kept() {
        let r = Redactor::new([SECRET]);
        // The first 16 characters of a longer secret, the middle, the end.
        assert_eq!(r.text(&format!("x{}y", &SECRET[..6])), "x[redacted]y");
        assert_eq!(r.text(&format!("a {} b", &SECRET[5..12])), "a [redacted] b");
        assert_eq!(r.text(&SECRET[SECRET.len() - 6..]), REDACTED);
        // Five characters are kept: they are not enough to tell anything.
        assert_eq!(r.text(&SECRET[..5]), &SECRET[..5]);
        // Two pieces with text between stay two.
        let two = format!("{}-and-{}", &SECRET[..8], &SECRET[8..]);
        assert_eq!(r.text(&two), "[redacted]-and-[redacted]");
        assert_eq!(r.text("nothing here"), "nothing here");
    }

    #[test]
    fn base64_and_url_encoded_forms_are_hidden_too() {
        let secret = "p@ss w0rd/+=long!";
        let r = Redactor::new([secret]);
        for form in [
            STANDARD.encode(secret),
            URL_SAFE.encode(secret),
            base64::engine::general_purpose::STANDARD_NO_PAD.encode(secret),
            "p%40ss%20w0rd%2F%2B%3Dlong%21".to_string(),
            "p%40ss+w0rd%2f%2b%3dlong%21".to_string(),
        ] {
            let out = r.text(&format!("echo: {form} end"));
            assert_eq!(out, "echo: [redacted] end", "{form}");
        }
        // Part of the base64 form.
        let b64 = STANDARD.encode(secret);
        assert_eq!(r.text(&b64[3..12]), REDACTED);
    }

    #[test]
    fn the_reports_own_words_keep_what_a_readable_secret_shares_with_them() {
        const D: CheckDef = CheckDef::error("setup.credentials", "accepted");
        let secret = "platform-secret-1";
        let mut report = CheckReport::new(
            "s",
            "http://x/acme",
            vec![
                Check::fail(
                    &D,
                    Evidence::new().body(json!({"message": "client platform: bad secret"})),
                    "the client secret given accepted",
                )
                .with_fix(format!(
                    "check the client id 'platform' and the secret {secret}"
                )),
            ],
        );
        report.redact(&Redactor::new([secret]));
        let c = &report.checks[0];
        assert_eq!(
            c.how_to_fix.as_deref(),
            Some("check the client id 'platform' and the secret [redacted]")
        );
        assert_eq!(
            c.expected.as_deref(),
            Some("the client secret given accepted")
        );
        // The evidence, from the service, loses every run of 6.
        assert_eq!(
            c.evidence.0["body"]["message"],
            "client [redacted]: bad [redacted]"
        );
    }

    #[test]
    fn short_secrets_are_replaced_where_they_appear_whole() {
        let r = Redactor::new(["abc"]);
        assert_eq!(r.text("xabcx ab"), "x[redacted]x ab");
    }

    #[test]
    fn a_secret_across_the_cut_does_not_survive_in_part() {
        const D: CheckDef = CheckDef::error("errors.message", "short");
        let r = Redactor::new([SECRET]);
        // The secret straddles the cut at every offset around it.
        for pad in MAX_EVIDENCE_CHARS - SECRET.len()..MAX_EVIDENCE_CHARS + 2 {
            let message = format!("{}{SECRET}{}", "m".repeat(pad), "z".repeat(50));
            let mut report = CheckReport::new(
                "s",
                "t",
                vec![Check::fail(
                    &D,
                    Evidence::new().body(json!({"error": {"message": message}})),
                    "x",
                )],
            );
            report.redact(&r);
            let shown = report.checks[0].evidence.0["body"]["error"]["message"]
                .as_str()
                .unwrap()
                .to_string();
            assert!(shown.contains("characters)"), "{shown}");
            for w in SECRET.as_bytes().windows(4) {
                let w = std::str::from_utf8(w).unwrap();
                assert!(!shown.contains(w), "{pad}: {w} of the secret in {shown}");
            }
        }
    }

    #[test]
    fn shorten_counts_characters() {
        assert_eq!(shorten("abcdef", 6), "abcdef");
        assert_eq!(shorten("abcdefg", 3), "abc... (7 characters)");
        assert_eq!(shorten("ééé", 2), "éé... (3 characters)");
    }
}
