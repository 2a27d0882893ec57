//! Secrets out of reports, and the one rule by which a secret is found: a [`Redactor`] knows
//! every secret a run handled (client secrets, API keys, tokens issued or forged, plaintext
//! keys) and replaces them with `[redacted]` in a [`CheckReport`] before anything is
//! rendered, so no renderer (table, JSON, JUnit) can print one; [`Redactor::finds`] answers
//! by the same rule whether a text holds one (how `harness check byok` judges an answer that
//! echoes a secret), so what is hidden and what is flagged are the same pieces.
//!
//! The rule: a secret is found, in whole and in part, wherever **any run of
//! [`MIN_SECRET_RUN`] characters** of one of its text forms appears: itself; base64 (standard
//! and URL-safe alphabets, padded or not); URL-encoded (percent-encoding in upper and lower
//! case, form encoding), also of its base64 forms; JSON-escaped (`\/`, `\"`, `\\`, `\uXXXX`),
//! also of its base64 forms; and, when the secret is itself base64 text of bytes (a data key),
//! the base64 of those bytes in the other alphabet. Besides, any run of 4 **bytes** of the
//! secret (its UTF-8, and the bytes it encodes when it is base64) is found written in
//! hexadecimal, in either case (8 hex digits: a key check value shows a key's first 4
//! bytes so). A secret (or a form) shorter than
//! [`MIN_SECRET_RUN`] characters is hidden only where it stands whole (no letter or digit on
//! either side), so that a one-letter key does not hide that letter in every word; it is not
//! searched for.
//!
//! Evidence strings are cut to [`MAX_EVIDENCE_CHARS`] only after redaction, so a secret that
//! straddles the cut cannot survive in part. The report's own words (target, expectations,
//! fixes, skip reasons) hold no text from a service; there a secret is replaced wherever one
//! of its forms appears whole, so that a readable secret (`platform-secret-1`) does not also
//! hide the words it shares with them (`platform`, `secret`).

use rustc_hash::FxHashSet as HashSet;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use serde_json::Value;

use super::checks::CheckReport;

/// What a secret is replaced with.
pub(crate) const REDACTED: &str = "[redacted]";
/// The shortest run of a secret's characters (or, written in hex, of its bytes) that is
/// found and replaced wherever it appears; a secret shorter than this is replaced where it
/// stands whole.
pub const MIN_SECRET_RUN: usize = 6;
/// The longest evidence string a report keeps whole; longer ones are cut, after redaction.
pub const MAX_EVIDENCE_CHARS: usize = 300;
/// The shortest run of a secret's bytes found written in hex: 4 bytes, 8 hex digits (a key
/// check value shows a key's first 4 bytes).
const HEX_BYTES: usize = 4;
/// Hex digits of [`HEX_BYTES`] bytes.
const HEX_RUN: usize = 2 * HEX_BYTES;
/// The fewest bytes a base64 secret must decode to for its bytes to count (a data key is
/// 32): shorter base64-looking text (a word of letters) is taken as text only.
const MIN_DECODED_BYTES: usize = 16;

/// A run of [`MIN_SECRET_RUN`] characters, packed into one integer (21 bits a character):
/// cheaper to hash than the characters one by one, which matters in unoptimised builds.
type Window = u128;
type ByteWindow = [u8; HEX_BYTES];

/// The secrets to keep out of a report.
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    /// Every run of [`MIN_SECRET_RUN`] characters of every text form of every secret.
    windows: HashSet<Window>,
    /// Every run of [`HEX_BYTES`] bytes of every secret (found as hex).
    byte_windows: HashSet<ByteWindow>,
    /// Forms shorter than [`MIN_SECRET_RUN`], and the words of [`Redactor::with_words`],
    /// longest first: hidden where they stand whole.
    words: Vec<Vec<char>>,
    /// Every form of every secret, longest first.
    whole: Vec<String>,
    /// Runs of public text ([`Redactor::with_public`]): hidden as parts of a secret, never
    /// taken as one found.
    public: HashSet<Window>,
    /// Byte runs of public text.
    public_bytes: HashSet<ByteWindow>,
}

/// The text forms a secret can appear as (see the module doc): itself, base64, URL- and
/// JSON-encoded, and for base64 text of bytes the other alphabet's encoding of the bytes.
/// Base64 is taken at each of its three alignments: a secret inside a longer encoded text
/// (a token's claims, a Basic value) starts at any byte, and each start spells it otherwise.
pub fn forms(secret: &str) -> Vec<String> {
    let mut encoded = vec![secret.to_string()];
    let decoded = decoded(secret);
    for bytes in std::iter::once(secret.as_bytes()).chain(decoded.as_deref()) {
        for engine in [&STANDARD, &URL_SAFE] {
            encoded.push(engine.encode(bytes));
            encoded.extend((1..3).filter_map(|shift| aligned(engine, bytes, shift)));
        }
    }
    let mut out = Vec::new();
    for e in &encoded {
        out.push(e.clone());
        if !e
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
        {
            out.push(percent_encode(e, false, true));
            out.push(percent_encode(e, false, false));
            out.push(percent_encode(e, true, true));
        }
        if e.chars()
            .any(|c| matches!(c, '"' | '\\' | '/') || !c.is_ascii() || c.is_control())
        {
            out.push(json_escaped(e, false));
            out.push(json_escaped(e, true));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The base64 characters that spell `bytes` alone when they stand `shift` bytes after a
/// multiple of three in a longer text: the characters that mix in a neighbour's bits are
/// left out at both ends.
fn aligned(engine: &base64::engine::GeneralPurpose, bytes: &[u8], shift: usize) -> Option<String> {
    let mut padded = vec![0u8; shift];
    padded.extend_from_slice(bytes);
    let text = engine.encode(&padded);
    let text = text.trim_end_matches('=');
    // A shift of 1 byte is 8 bits: the first 2 characters hold some; of 2, the first 3.
    let skip = (shift * 8).div_ceil(6);
    let end = if padded.len().is_multiple_of(3) {
        text.len()
    } else {
        text.len() - 1
    };
    (end > skip).then(|| text[skip..end].to_string())
}

/// The bytes a secret stands for besides its UTF-8: those it encodes when it is base64 (either
/// alphabet, padded or not) of at least [`MIN_DECODED_BYTES`] bytes that are not text (a data
/// key, a random token). Base64 of text (a Basic value, `id:secret`) is taken as text: its
/// parts are secrets of their own, and its id must not make every mention of the id a find.
fn decoded(secret: &str) -> Option<Vec<u8>> {
    let trimmed = secret.trim_end_matches('=');
    [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD]
        .into_iter()
        .find_map(|e| e.decode(trimmed).ok())
        .filter(|b| b.len() >= MIN_DECODED_BYTES)
        .filter(|b| std::str::from_utf8(b).map_or(true, |t| t.chars().any(|c| c.is_control())))
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

/// `s` as it stands inside a JSON string written by an encoder that escapes `/` and
/// everything outside printable ASCII (`ascii`), or only what JSON requires.
fn json_escaped(s: &str, ascii: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '/' if ascii => out.push_str("\\/"),
            c if (c as u32) < 0x20 || (ascii && !c.is_ascii()) => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// The [`Window`] of a run of [`MIN_SECRET_RUN`] characters.
fn window(run: &[char]) -> Window {
    debug_assert_eq!(run.len(), MIN_SECRET_RUN);
    run.iter()
        .fold(0, |acc, c| (acc << 21) | u128::from(u32::from(*c)))
}

/// Whether a run is too plain to be evidence of a leak, though it is hidden: six digits
/// (`123456` of a secret `...0123456789` stands in any number an answer carries, a duration
/// or a timestamp) or fewer than three distinct characters (`xxxxxx`).
fn weak(w: &[char]) -> bool {
    if w.iter().all(char::is_ascii_digit) {
        return true;
    }
    let mut distinct: Vec<char> = Vec::with_capacity(MIN_SECRET_RUN);
    for c in w {
        if !distinct.contains(c) {
            distinct.push(*c);
        }
    }
    distinct.len() < 3
}

/// Whether `c` can be part of a word (a letter, a digit, `-` or `_`): a short secret stands
/// whole where neither neighbour is one.
fn wordish(c: char) -> bool {
    c.is_alphanumeric() || c == '-' || c == '_'
}

impl Redactor {
    /// A redactor of `secrets` (empty strings are ignored).
    pub fn new<I, S>(secrets: I) -> Redactor
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Redactor::default().with_secrets(secrets)
    }

    /// Adds `secrets` (empty strings are ignored).
    pub fn with_secrets<I, S>(mut self, secrets: I) -> Redactor
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        for secret in secrets.into_iter().map(Into::into) {
            self.add(&secret);
        }
        let longest_first = |a: &Vec<char>, b: &Vec<char>| b.len().cmp(&a.len()).then(a.cmp(b));
        self.words.sort_by(longest_first);
        self.words.dedup();
        self.whole
            .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        self.whole.dedup();
        self
    }

    /// Adds `words`, hidden only where they stand whole and never searched for: values that
    /// may be secrets or may be ordinary words (the `scope` of a token answer).
    pub fn with_words<I, S>(mut self, words: I) -> Redactor
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        for w in words.into_iter().map(Into::into) {
            if !w.is_empty() {
                self.words.push(w.chars().collect());
            }
        }
        self.words
            .sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        self.words.dedup();
        self
    }

    /// Adds text the run sent in the clear or that the protocol itself spells (a client id,
    /// a key alias, a path, an error code): a run of a secret that is also a run of one of
    /// these (a secret `platform-secret-1` beside the client id `platform`) is no evidence
    /// of a leak, so [`Redactor::finds`] does not count it. It is still hidden.
    pub fn with_public<I, S>(mut self, public: I) -> Redactor
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        for p in public.into_iter().map(Into::into) {
            for form in forms(&p) {
                let chars: Vec<char> = form.chars().collect();
                for w in chars.windows(MIN_SECRET_RUN) {
                    self.public.insert(window(w));
                }
            }
            for w in p.as_bytes().windows(HEX_BYTES) {
                self.public_bytes
                    .insert(w.try_into().expect("windows of HEX_BYTES"));
            }
        }
        self
    }

    /// [`Redactor::with_public`] for text that may stand inside a longer encoded text (a
    /// client id in a token's claims): its base64 at each alignment is taken with each byte
    /// that commonly stands beside it (`"`, `:`, `/`, a space, ...), whose bits mix into the
    /// characters at its edges.
    pub fn with_public_embedded<I, S>(mut self, public: I) -> Redactor
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        const BESIDE: &[u8] = b"\":/ ,.-_=&?'{}[]@";
        for p in public.into_iter().map(Into::into) {
            self = self.with_public([p.clone()]);
            // A byte beside the text changes only the encoded characters at that edge: for a
            // text of 8 bytes or more no run spans both edges, so each edge's neighbours are
            // taken with nothing at the other (the alignments cover what the other would
            // shift); a shorter text takes every pair.
            let beside = BESIDE.iter().map(|b| Some(*b)).chain([None]);
            let pairs: Vec<(Option<u8>, Option<u8>)> = if p.len() >= 8 {
                beside
                    .clone()
                    .map(|b| (b, None))
                    .chain(beside.map(|a| (None, a)))
                    .collect()
            } else {
                beside
                    .clone()
                    .flat_map(|b| beside.clone().map(move |a| (b, a)))
                    .collect()
            };
            for (before, after) in pairs {
                let mut text: Vec<u8> = before.into_iter().collect();
                text.extend_from_slice(p.as_bytes());
                text.extend(after);
                for engine in [&STANDARD, &URL_SAFE] {
                    for shift in 0..3 {
                        let mut padded = vec![0u8; shift];
                        padded.extend_from_slice(&text);
                        let encoded: Vec<char> = engine.encode(&padded).chars().collect();
                        let skip = (shift * 8).div_ceil(6);
                        for w in encoded
                            .get(skip..)
                            .unwrap_or_default()
                            .windows(MIN_SECRET_RUN)
                        {
                            self.public.insert(window(w));
                        }
                    }
                }
            }
        }
        self
    }

    fn add(&mut self, secret: &str) {
        if secret.is_empty() {
            return;
        }
        for form in forms(secret) {
            let chars: Vec<char> = form.chars().collect();
            if chars.len() < MIN_SECRET_RUN {
                self.words.push(chars);
            } else {
                for w in chars.windows(MIN_SECRET_RUN) {
                    self.windows.insert(window(w));
                }
            }
            self.whole.push(form);
        }
        let decoded = decoded(secret);
        for bytes in std::iter::once(secret.as_bytes()).chain(decoded.as_deref()) {
            for w in bytes.windows(HEX_BYTES) {
                self.byte_windows
                    .insert(w.try_into().expect("windows of HEX_BYTES"));
            }
        }
    }

    /// `text` with every secret replaced where one of its forms appears whole (for the
    /// report's own words; see the module doc); a form shorter than [`MIN_SECRET_RUN`] only
    /// where it stands whole.
    pub(crate) fn whole(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.whole {
            if s.chars().count() < MIN_SECRET_RUN || !out.contains(s.as_str()) {
                continue;
            }
            out = out.replace(s.as_str(), REDACTED);
        }
        if self.words.is_empty() {
            return out;
        }
        let chars: Vec<char> = out.chars().collect();
        let mut hidden = vec![false; chars.len()];
        if !self.mark_short(&chars, &mut hidden) {
            return out;
        }
        collapse(&chars, &hidden)
    }

    /// Whether there is no secret to hide.
    pub fn is_empty(&self) -> bool {
        self.whole.is_empty() && self.words.is_empty()
    }

    /// Whether `text` holds a run of [`MIN_SECRET_RUN`] characters of a secret in one of its
    /// forms, or of 4 of its bytes in hex: the rule by which secrets are hidden, as a finding.
    /// Forms shorter than the run are not looked for (they would match ordinary words), nor
    /// runs too plain to tell a leak from chance (six digits, fewer than three distinct
    /// characters), which are still hidden.
    pub fn finds(&self, text: &str) -> bool {
        if self.windows.is_empty() && self.byte_windows.is_empty() {
            return false;
        }
        let chars: Vec<char> = text.chars().collect();
        let found = |w: &[char]| {
            let k = window(w);
            self.windows.contains(&k) && !self.public.contains(&k) && !weak(w)
        };
        if chars.windows(MIN_SECRET_RUN).any(found) {
            return true;
        }
        hex_runs(&chars)
            .any(|(_, w)| self.byte_windows.contains(&w) && !self.public_bytes.contains(&w))
    }

    /// Marks every run of a secret in `chars`; whether there was one.
    fn mark_runs(&self, chars: &[char], hidden: &mut [bool]) -> bool {
        let mut any = false;
        if !self.windows.is_empty() {
            for (i, w) in chars.windows(MIN_SECRET_RUN).enumerate() {
                if self.windows.contains(&window(w)) {
                    hidden[i..i + MIN_SECRET_RUN].fill(true);
                    any = true;
                }
            }
        }
        if !self.byte_windows.is_empty() {
            for (start, w) in hex_runs(chars) {
                if self.byte_windows.contains(&w) {
                    hidden[start..start + HEX_RUN].fill(true);
                    any = true;
                }
            }
        }
        any
    }

    /// Marks every short form where it stands whole; whether there was one.
    fn mark_short(&self, chars: &[char], hidden: &mut [bool]) -> bool {
        let mut any = false;
        for s in &self.words {
            for (i, w) in chars.windows(s.len()).enumerate() {
                let before = i.checked_sub(1).map(|j| chars[j]);
                let after = chars.get(i + s.len()).copied();
                if w == s.as_slice() && !before.is_some_and(wordish) && !after.is_some_and(wordish)
                {
                    hidden[i..i + s.len()].fill(true);
                    any = true;
                }
            }
        }
        any
    }

    /// `text` with every secret replaced, in whole and in part; each stretch of hidden
    /// characters becomes one [`REDACTED`].
    pub(crate) fn text(&self, text: &str) -> String {
        if self.is_empty() {
            return text.to_string();
        }
        let chars: Vec<char> = text.chars().collect();
        let mut hidden = vec![false; chars.len()];
        let runs = self.mark_runs(&chars, &mut hidden);
        let short = self.mark_short(&chars, &mut hidden);
        if !runs && !short {
            return text.to_string();
        }
        collapse(&chars, &hidden)
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

/// Every run of [`HEX_RUN`] hex digits in `chars`, with where it starts and the bytes it
/// spells (either case).
fn hex_runs(chars: &[char]) -> impl Iterator<Item = (usize, ByteWindow)> + '_ {
    let mut run = 0;
    (0..chars.len()).filter_map(move |i| {
        run = if chars[i].is_ascii_hexdigit() {
            run + 1
        } else {
            0
        };
        if run < HEX_RUN {
            return None;
        }
        let start = i + 1 - HEX_RUN;
        let mut w = [0u8; HEX_BYTES];
        for (k, b) in w.iter_mut().enumerate() {
            let hi = chars[start + 2 * k].to_digit(16).unwrap_or(0);
            let lo = chars[start + 2 * k + 1].to_digit(16).unwrap_or(0);
            *b = (hi * 16 + lo) as u8;
        }
        Some((start, w))
    })
}

/// `chars` with each stretch of hidden ones replaced by one [`REDACTED`].
fn collapse(chars: &[char], hidden: &[bool]) -> String {
    let mut out = String::with_capacity(chars.len());
    for (i, c) in chars.iter().enumerate() {
        match (hidden[i], i > 0 && hidden[i - 1]) {
            (false, _) => out.push(*c),
            (true, false) => out.push_str(REDACTED),
            (true, true) => {}
        }
    }
    out
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

    #[test]
    fn public_runs_are_no_evidence_whichever_is_added_first() {
        let text = "invalid client credentials";
        let secret = ["client-secret-0123456789"];
        assert!(Redactor::new(secret).finds(text));
        assert!(!Redactor::new(secret).with_public(["client_id"]).finds(text));
        assert!(
            !Redactor::default()
                .with_public(["client_id"])
                .with_secrets(secret)
                .finds(text)
        );
    }

    #[test]
    fn plain_runs_are_hidden_but_no_evidence() {
        let r = Redactor::new(["client-secret-0123456789", "xxxxxxxx-Key"]);
        // Six digits of the secret in a duration, a run of one letter: not a finding.
        assert!(!r.finds("X-Request-Duration: 0.1234567"));
        assert!(!r.finds("debug: xxxxxxxxxxxx"));
        // A run with letters in it is one.
        assert!(r.finds("oops: secret-0123"));
        // Both are still hidden where they stand.
        assert!(!r.text("took 0.1234567 ms").contains("123456"));
    }
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
    fn short_secrets_are_replaced_only_where_they_stand_whole() {
        let r = Redactor::new(["abc"]);
        assert_eq!(r.text("xabcx ab abc"), "xabcx ab [redacted]");
        assert_eq!(r.text("\"abc\", (abc)"), "\"[redacted]\", ([redacted])");
        // A one-letter key does not hide that letter in every word of the report.
        let k = Redactor::new(["k"]);
        assert_eq!(
            k.whole("harness-check with key k"),
            "harness-check with key [redacted]"
        );
        assert_eq!(k.text("X-API-Key: k"), "X-API-Key: [redacted]");
        // Short secrets are hidden, never searched for.
        assert!(!r.finds("abc"));
    }

    #[test]
    fn a_data_key_is_found_in_hex_and_in_the_other_alphabet() {
        let bytes: Vec<u8> = (0u8..32).map(|i| i.wrapping_mul(37) ^ 0xa5).collect();
        let key = STANDARD.encode(&bytes);
        let r = Redactor::new([key.as_str()]);
        let hex = hex::encode(&bytes);
        assert!(r.finds(&format!("key={hex}")));
        assert_eq!(r.text(&format!("key={}!", &hex[10..22])), "key=[redacted]!");
        assert_eq!(r.text(&format!("key {}!", &hex[10..18])), "key [redacted]!");
        assert!(r.finds(&hex[20..32].to_uppercase()), "either case");
        assert!(
            !r.finds(&hex[20..27]),
            "7 hex digits are 3 bytes and a half"
        );
        assert!(r.finds(&hex[..8]), "a key check value: the first 4 bytes");
        assert!(r.finds(&URL_SAFE_NO_PAD.encode(&bytes)[7..13]));
        // The secret's own text in hex too.
        let secret = Redactor::new(["platform-secret-1"]);
        assert!(secret.finds(&hex::encode("m-secret")));
        assert!(!secret.finds("a trace id 4b1c2d3e-0f1a-4b2c-9d8e-7f6a5b4c3d2e"));
    }

    #[test]
    fn a_secret_inside_a_longer_base64_text_is_found_at_any_alignment() {
        let secret = "Zq7vN2pXw4Lk9sRtQ8mC";
        let r = Redactor::new([secret]);
        for prefix in ["", "a", "ab", "abc", "{\"client_secret\":\""] {
            let claims = URL_SAFE_NO_PAD.encode(format!("{prefix}{secret}\"}}"));
            assert!(
                r.finds(&format!("eyJhbGciOiJIUzI1NiJ9.{claims}.sig")),
                "{prefix:?}"
            );
        }
    }

    #[test]
    fn runs_shared_with_public_text_are_hidden_but_not_found() {
        let r = Redactor::new(["platform-secret-1"]).with_public_embedded(["platform"]);
        assert!(!r.finds("unknown client platform"));
        assert!(!r.finds(&STANDARD.encode("{\"sub\":\"platform\"}")));
        assert!(
            r.finds("bad secret: platform-secret-1"),
            "the rest of it still counts"
        );
        assert!(r.finds("m-secret"));
        assert_eq!(r.text("client platform"), "client [redacted]");
    }

    #[test]
    fn json_escaped_forms_are_found_in_text() {
        let secret = r#"ab/cd+ef/gh"ij"#;
        let r = Redactor::new([secret]);
        for shown in [r#"ab\/cd+ef\/gh\"ij"#, r#"cd+ef\/g"#] {
            assert!(r.finds(shown), "{shown}");
            assert!(r.text(shown).contains(REDACTED), "{shown}");
        }
        let unicode = Redactor::new(["clé-secrète-1"]);
        assert!(unicode.finds(r#"cl\u00e9-secr\u00e8te"#));
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
