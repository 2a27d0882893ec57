//! Every secret a run handles, known by its value and by its role, in one place: what the
//! report hides ([`Secrets::redactor`]) and what `errors.no_secret` looks for in answers
//! ([`Detector::leaks`]) follow one rule, [`Redactor`]'s.
//!
//! A secret is learnt:
//! - from the settings: the client secret or static API key, the expected plaintext key;
//! - from every request sent: whatever its `Authorization` carries (Basic credentials, the
//!   secret decoded from them, a bearer token issued or forged);
//! - from every answer, by role, whatever its shape: every value of an `/auth` answer (the
//!   fields that name a token, a secret or a key, and every value that looks drawn, as
//!   secrets; the other values, which may be ordinary words, hidden where they stand whole);
//!   every field whose name says plaintext, and every value of a `/decrypt-key` or
//!   `/rotate-key` success that is a 32-byte key in base64 or hex, as plaintext keys; and a
//!   success of those endpoints that is not JSON, whole.

use std::sync::Mutex;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use reqwest::header::HeaderMap;
use serde_json::Value;

use super::plaintext::DATA_KEY_LEN;
use crate::checks::redact::Redactor;
use customer_kms_sim::Endpoint;

/// What kind of secret a string is: where it may appear in an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SecretKind {
    /// Client secrets, API keys, Basic credentials: in no answer at all.
    Credential,
    /// Access tokens: in the body of an `/auth` success only.
    Token,
    /// Plaintext data keys: in the body of a `/decrypt-key` or `/rotate-key` success only.
    Plaintext,
    /// A value of an `/auth` answer that names no token and may be an ordinary word
    /// (`scope: "decrypt"`): hidden where it stands whole, not looked for.
    Incidental,
    /// A wrong credential the checks made of the given one (a space before it, its case
    /// swapped): hidden like a secret, for it tells the secret, but not looked for in answers,
    /// for the runs its changes made (" clien") are no secret's.
    Variant,
}

impl SecretKind {
    /// A name for reports.
    pub(super) fn label(self) -> &'static str {
        match self {
            SecretKind::Credential => "a credential",
            SecretKind::Token => "an access token",
            SecretKind::Plaintext => "a plaintext key",
            SecretKind::Incidental => "a value of an /auth answer",
            SecretKind::Variant => "a wrong credential made of the given one",
        }
    }

    /// Whether a secret of this kind may stand in the body of a success of `endpoint`.
    fn allowed_in_success_body(self, endpoint: Endpoint) -> bool {
        match self {
            SecretKind::Credential | SecretKind::Incidental | SecretKind::Variant => false,
            SecretKind::Token => endpoint == Endpoint::Auth,
            SecretKind::Plaintext => endpoint != Endpoint::Auth,
        }
    }
}

/// Authorization schemes: a value that is one of these alone holds no secret.
const KNOWN_SCHEMES: [&str; 4] = ["Basic", "Bearer", "Digest", "Token"];
/// The largest answer body taken whole as a secret (a success of an unexpected shape).
const MAX_WHOLE_BODY: usize = 4096;
/// A value this long without whitespace is taken as drawn (a token), whatever its field.
const DRAWN_LEN: usize = 16;

/// The words the protocol itself spells (paths, fields, schemes, media types, error codes,
/// and the words its errors name: `secret`, `credentials`): text a service may answer, in
/// which no run of a secret counts as a leak (a readable secret such as
/// `platform-secret-1` shares `secret` with the message `bad client_secret`).
fn protocol_words() -> Vec<String> {
    let mut words: Vec<String> = [
        "/byok/v1/auth",
        "/byok/v1/decrypt-key",
        "/byok/v1/rotate-key",
        "access_token",
        "token_type",
        "expires_in",
        "plaintext_key",
        "plaintext_dek",
        "encrypted_key",
        "encrypted_dek",
        "key_alias",
        "grant_type=client_credentials",
        "client_id",
        "client_secret",
        "secret",
        "credentials",
        "Authorization",
        "Bearer",
        "Basic",
        "application/json",
        "application/x-www-form-urlencoded",
        "multipart/form-data",
        "x-request-id",
        "x-request-timestamp",
        "x-trace-id",
        "X-Request-Duration",
        "UNSUPPORTED_MEDIA_TYPE",
        contracts::envelope::PREFIX,
    ]
    .map(String::from)
    .to_vec();
    words.extend(
        contracts::error::ByokErrorCode::ALL
            .iter()
            .map(|c| c.as_str().to_string()),
    );
    words
}

/// The secrets of one run, and the public text beside them.
#[derive(Debug, Default)]
pub(crate) struct Secrets {
    list: Mutex<Vec<(String, SecretKind)>>,
    /// What the run sends in the clear (client id, aliases, partner, host; every client id
    /// of a Basic value sent), which may stand inside encoded text (a token's claims): see
    /// [`Redactor::with_public_embedded`].
    public: Mutex<Vec<String>>,
    /// The credentials the settings give (the client secret or static key).
    given: Vec<String>,
    /// Their runs: what tells a variant of one (a wrong secret the checks made of it) from
    /// another credential.
    given_runs: Redactor,
}

/// The secrets of each kind, ready to look for in answers.
pub(crate) struct Detector {
    by_kind: Vec<(SecretKind, Redactor)>,
    /// The credentials given (client secret, static key), for their masked forms.
    credentials: Vec<String>,
}

/// The request headers the check fills with values of its own making, never a secret.
const TRACING_HEADERS: [&str; 3] = ["x-request-id", "x-trace-id", "x-request-timestamp"];

/// How many characters at each end of a credential a masked form shows, at least, to be
/// found (`Rq3-w...9cNe`).
const MASK_CHARS: usize = 4;

impl Secrets {
    /// The secrets of a run whose public settings are `public` (to them the protocol's own
    /// words are added).
    pub(crate) fn new(public: impl IntoIterator<Item = String>) -> Secrets {
        let all: Vec<String> = public.into_iter().filter(|p| !p.is_empty()).collect();
        Secrets {
            list: Mutex::default(),
            public: Mutex::new(all),
            given: Vec::new(),
            given_runs: Redactor::default(),
        }
    }

    /// Remembers the credential the settings give: a secret, looked for masked too.
    pub(crate) fn given(&mut self, credential: &str) {
        self.add(credential, SecretKind::Credential);
        self.given.push(credential.to_string());
        self.given_runs = Redactor::new(self.given.clone());
    }

    /// Remembers `text` as public: runs of a secret it shares are no evidence of a leak.
    pub(super) fn add_public(&self, text: &str) {
        let mut p = self.public.lock().unwrap_or_else(|p| p.into_inner());
        if !text.is_empty() && !p.iter().any(|t| t == text) {
            p.push(text.to_string());
        }
    }

    /// The secrets learnt so far, by kind, ready for [`Detector::leaks`].
    pub(crate) fn detector(&self) -> Detector {
        let all = self.all();
        let public = self
            .public
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        // The public text's runs are the same for every kind: made once.
        let public_only = Redactor::default()
            .with_public(protocol_words())
            .with_public_embedded(public.iter().cloned());
        let by_kind = [
            SecretKind::Credential,
            SecretKind::Token,
            SecretKind::Plaintext,
        ]
        .into_iter()
        .map(|kind| {
            let r = public_only.clone().with_secrets(
                all.iter()
                    .filter(|(_, k)| *k == kind)
                    .map(|(s, _)| s.clone()),
            );
            (kind, r)
        })
        .filter(|(_, r)| !r.is_empty())
        .collect();
        let credentials = self.given.clone();
        Detector {
            by_kind,
            credentials,
        }
    }

    /// Remembers `value` as a secret of `kind` (the first kind given to a value stays).
    pub(crate) fn add(&self, value: impl Into<String>, kind: SecretKind) {
        let value = value.into();
        if value.trim().is_empty() {
            return;
        }
        let mut s = self.list.lock().unwrap_or_else(|p| p.into_inner());
        if !s.iter().any(|(v, _)| *v == value) {
            s.push((value, kind));
        }
    }

    /// Every secret so far.
    pub(crate) fn all(&self) -> Vec<(String, SecretKind)> {
        self.list.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// A redactor of every secret so far.
    pub(crate) fn redactor(&self) -> Redactor {
        let all = self.all();
        let (words, secrets): (Vec<_>, Vec<_>) = all
            .into_iter()
            .partition(|(_, k)| *k == SecretKind::Incidental);
        Redactor::new(secrets.into_iter().map(|(s, _)| s))
            .with_words(words.into_iter().map(|(s, _)| s))
    }

    /// Learns the secrets a request's `Authorization` value carries: a Basic value that is
    /// base64 of `id:secret` and its secret (its id as public text), a bearer
    /// token, or a value without a scheme whole. A scheme alone, or a Basic value that holds
    /// no `id:secret` (the malformed ones the checks send), carries none.
    pub(crate) fn learn_request(&self, authorization: Option<&str>) {
        let Some(value) = authorization.map(str::trim) else {
            return;
        };
        let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
        let rest = rest.trim();
        if scheme.eq_ignore_ascii_case("basic") {
            if let Some(pair) = STANDARD_NO_PAD
                .decode(rest.trim_end_matches('='))
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                && let Some((id, secret)) = pair.split_once(':')
                && !(id.is_empty() && secret.is_empty())
            {
                // The value (a service may echo it encoded again) and the secret; the client
                // id in it is public, so its runs are not taken as a leak, unless it is a
                // secret itself (a static key sent as a user name). A wrong secret the checks
                // made of the given one (a space before it, a character more) is hidden, not
                // looked for: the runs its changes made (" clien") are in no secret.
                let swapped: String = secret
                    .chars()
                    .map(|c| {
                        if c.is_uppercase() {
                            c.to_ascii_lowercase()
                        } else {
                            c.to_ascii_uppercase()
                        }
                    })
                    .collect();
                let variant = !self.given.iter().any(|g| g == secret)
                    && (self.given_runs.finds(secret) || self.given_runs.finds(&swapped));
                let kind = if variant {
                    SecretKind::Variant
                } else {
                    SecretKind::Credential
                };
                self.add(rest, kind);
                self.add(secret, kind);
                if !self.all().iter().any(|(v, _)| v == id) {
                    self.add_public(id);
                }
            }
        } else if scheme.eq_ignore_ascii_case("bearer") {
            self.add(rest, SecretKind::Token);
        } else if rest.is_empty() && !KNOWN_SCHEMES.iter().any(|s| s.eq_ignore_ascii_case(scheme)) {
            self.add(value, SecretKind::Credential);
        } else {
            self.add(rest, SecretKind::Credential);
        }
    }

    /// Learns the secrets of an answer of `endpoint` by their role (see the module doc).
    pub(crate) fn learn_answer(&self, endpoint: Endpoint, status: u16, body: &[u8]) {
        let success = (200..300).contains(&status);
        let json: Option<Value> = serde_json::from_slice(body).ok();
        match (&json, endpoint) {
            (Some(v), Endpoint::Auth) => self.learn_auth_value(None, v, true),
            (None, Endpoint::Auth) if success => {
                let text = String::from_utf8_lossy(body);
                let pairs: Vec<(String, String)> =
                    serde_urlencoded::from_str(&text).unwrap_or_default();
                if pairs.iter().any(|(k, _)| !k.is_empty()) && text.contains('=') {
                    for (k, v) in pairs {
                        self.learn_auth_value(Some(&k), &Value::String(v), true);
                    }
                } else if body.len() <= MAX_WHOLE_BODY {
                    self.add(text.trim(), SecretKind::Token);
                }
            }
            (Some(v), _) => self.learn_key_value(None, v, success),
            (None, _) if success && body.len() <= MAX_WHOLE_BODY => {
                self.add(String::from_utf8_lossy(body).trim(), SecretKind::Plaintext);
            }
            _ => {}
        }
    }

    /// Every value of an `/auth` answer; `top`: the `error` object of an error body is
    /// skipped (its code and message are the service's words).
    fn learn_auth_value(&self, field: Option<&str>, v: &Value, top: bool) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    if top && k == "error" && v.is_object() {
                        continue;
                    }
                    self.learn_auth_value(Some(k), v, false);
                }
            }
            Value::Array(items) => items
                .iter()
                .for_each(|v| self.learn_auth_value(field, v, false)),
            Value::String(s) if s.eq_ignore_ascii_case("bearer") => {}
            Value::String(s) => {
                let secret_field = field.is_some_and(names_a_secret);
                let drawn = s.chars().count() >= DRAWN_LEN && !s.contains(char::is_whitespace);
                let kind = if secret_field || drawn {
                    SecretKind::Token
                } else {
                    SecretKind::Incidental
                };
                self.add(s.clone(), kind);
            }
            Value::Number(n) if field.is_some_and(names_a_secret) => {
                self.add(n.to_string(), SecretKind::Token);
            }
            _ => {}
        }
    }

    /// The plaintext keys of a `/decrypt-key` or `/rotate-key` answer: fields that say
    /// plaintext, and in a success every value that is a data key in base64 or hex.
    fn learn_key_value(&self, field: Option<&str>, v: &Value, success: bool) {
        match v {
            Value::Object(map) => map
                .iter()
                .for_each(|(k, v)| self.learn_key_value(Some(k), v, success)),
            Value::Array(items) => items
                .iter()
                .for_each(|v| self.learn_key_value(field, v, success)),
            Value::String(s) => {
                let named = field.is_some_and(|f| f.to_ascii_lowercase().contains("plaintext"));
                if named || (success && looks_like_a_data_key(s)) {
                    self.add(s.clone(), SecretKind::Plaintext);
                }
            }
            _ => {}
        }
    }
}

impl Detector {
    /// Where an answer holds a secret it must not: `the body holds ...`, `header NAME
    /// holds ...`. A header that gives back, whole, the value a tracing header of the
    /// request carried (`sent`: an `x-request-id` echoed) shows only what the check sent
    /// in the clear: a run of a secret it shares by chance is no leak.
    pub(crate) fn leaks(
        &self,
        endpoint: Endpoint,
        status: u16,
        headers: &HeaderMap,
        body: &[u8],
        sent: &[(&str, String)],
    ) -> Vec<String> {
        let echoed = |value: &str| {
            sent.iter()
                .any(|(name, v)| TRACING_HEADERS.contains(name) && v == value)
        };
        let success = (200..300).contains(&status);
        let mut found = Vec::new();
        let body_texts = texts_of(body);
        // A credential shown masked: its first and its last characters in one answer.
        let whole_text = body_texts.first().map(String::as_str).unwrap_or("");
        let header_text: String = headers
            .iter()
            .map(|(_, v)| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect::<Vec<_>>()
            .join("\n");
        for c in &self.credentials {
            let chars: Vec<char> = c.chars().collect();
            if chars.len() < 2 * MASK_CHARS + 4 {
                continue;
            }
            let head: String = chars[..MASK_CHARS].iter().collect();
            let tail: String = chars[chars.len() - MASK_CHARS..].iter().collect();
            for (place, text) in [("the body", whole_text), ("a header", header_text.as_str())] {
                if text.contains(&head) && text.contains(&tail) {
                    found.push(format!(
                        "{place} holds a credential masked (its first and last characters)"
                    ));
                }
            }
        }
        for (kind, r) in &self.by_kind {
            let allowed = success && kind.allowed_in_success_body(endpoint);
            if !allowed && body_texts.iter().any(|t| r.finds(t)) {
                found.push(format!("the body holds {}", kind.label()));
            }
            for (name, value) in headers {
                let value = String::from_utf8_lossy(value.as_bytes());
                if echoed(&value) {
                    continue;
                }
                if r.finds(&value) || r.finds(name.as_str()) {
                    found.push(format!("header {name} holds {}", kind.label()));
                }
            }
        }
        found.sort();
        found.dedup();
        found
    }
}

/// The texts a body is searched in: the bytes as text, and when it is JSON every key and
/// string value decoded (so that an escaped secret is found as itself).
fn texts_of(body: &[u8]) -> Vec<String> {
    let mut out = vec![String::from_utf8_lossy(body).into_owned()];
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            Value::Object(map) => map.iter().for_each(|(k, v)| {
                out.push(k.clone());
                walk(v, out)
            }),
            _ => {}
        }
    }
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        walk(&v, &mut out);
    }
    out
}

/// Whether a field's name says it holds a secret (`access_token`, `jwt`, `client_secret`,
/// `api_key`, `password`).
fn names_a_secret(field: &str) -> bool {
    let f = field.to_ascii_lowercase();
    ["token", "jwt", "secret", "key", "password", "credential"]
        .iter()
        .any(|w| f.contains(w))
}

/// Whether a text is a 32-byte data key: base64 (either alphabet, padded or not) or hex.
fn looks_like_a_data_key(s: &str) -> bool {
    let t = s.trim_end_matches('=');
    let b64 = [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD]
        .into_iter()
        .any(|e| e.decode(t).is_ok_and(|b| b.len() == DATA_KEY_LEN));
    b64 || (s.len() == 2 * DATA_KEY_LEN && s.chars().all(|c| c.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kinds(s: &Secrets) -> Vec<(String, SecretKind)> {
        let mut v = s.all();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    #[test]
    fn an_auth_answer_of_any_shape_gives_up_its_token() {
        for body in [
            json!({"access_token": "opaque1", "token_type": "bearer", "expires_in": 3600}),
            json!({"data": {"token": "opaque1", "token_type": "Bearer"}}),
            json!({"result": {"value": "opaque1"}}),
        ] {
            let s = Secrets::default();
            s.learn_answer(Endpoint::Auth, 200, body.to_string().as_bytes());
            let r = s.redactor();
            assert_eq!(
                r.text_shortened(&body.to_string(), 1000)
                    .matches("opaque1")
                    .count(),
                0,
                "{body}"
            );
        }
        let s = Secrets::default();
        s.learn_answer(
            Endpoint::Auth,
            200,
            br#"{"data": {"access_token": "eyJ.x.y", "scope": "decrypt", "token_type": "Bearer"}}"#,
        );
        assert_eq!(
            kinds(&s),
            [
                ("decrypt".to_string(), SecretKind::Incidental),
                ("eyJ.x.y".to_string(), SecretKind::Token)
            ]
        );
        // A word of the answer is hidden where it stands whole, not inside a path.
        let r = s.redactor();
        assert_eq!(
            r.text_shortened("POST /acme/byok/v1/decrypt-key: decrypt", 100),
            "POST /acme/byok/v1/decrypt-key: [redacted]"
        );
    }

    #[test]
    fn a_form_or_text_auth_answer_is_taken_too() {
        let s = Secrets::default();
        s.learn_answer(
            Endpoint::Auth,
            200,
            b"access_token=tok9876543210abc&token_type=bearer",
        );
        assert!(s.all().iter().any(|(v, _)| v == "tok9876543210abc"));
        let s = Secrets::default();
        s.learn_answer(Endpoint::Auth, 200, b"tok-xyz\n");
        assert_eq!(kinds(&s), [("tok-xyz".to_string(), SecretKind::Token)]);
        // An error answer's own words are not secrets.
        let s = Secrets::default();
        s.learn_answer(
            Endpoint::Auth,
            401,
            br#"{"error": {"code": "UNAUTHORIZED", "message": "bad credentials"}}"#,
        );
        assert!(s.all().is_empty());
    }

    #[test]
    fn plaintext_keys_are_known_by_name_and_by_form() {
        let key = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
        let s = Secrets::default();
        s.learn_answer(
            Endpoint::DecryptKey,
            200,
            json!({"key": key, "note": "ok"}).to_string().as_bytes(),
        );
        s.learn_answer(
            Endpoint::RotateKey,
            400,
            json!({"error": {"plaintext_dek": "leaked-text"}})
                .to_string()
                .as_bytes(),
        );
        s.learn_answer(Endpoint::DecryptKey, 200, hex::encode([9u8; 32]).as_bytes());
        let all = kinds(&s);
        assert!(all.contains(&(key.clone(), SecretKind::Plaintext)));
        assert!(all.contains(&("leaked-text".to_string(), SecretKind::Plaintext)));
        assert!(all.contains(&(hex::encode([9u8; 32]), SecretKind::Plaintext)));
        assert_eq!(all.len(), 3, "{all:?}");
    }

    #[test]
    fn every_authorization_sent_is_a_secret() {
        let s = Secrets::default();
        let basic = base64::engine::general_purpose::STANDARD.encode("platform:s3cret-value");
        s.learn_request(Some(&format!("Basic {basic}")));
        s.learn_request(Some("Bearer tok.en.sig"));
        s.learn_request(Some("Token raw-value"));
        s.learn_request(Some("rawtoken123"));
        let all = kinds(&s);
        assert!(all.contains(&(basic.clone(), SecretKind::Credential)));
        assert!(all.contains(&("s3cret-value".to_string(), SecretKind::Credential)));
        assert!(all.contains(&("tok.en.sig".to_string(), SecretKind::Token)));
        assert!(all.contains(&("raw-value".to_string(), SecretKind::Credential)));
        assert!(all.contains(&("rawtoken123".to_string(), SecretKind::Credential)));
        assert_eq!(all.len(), 5);
        // The client id in it is public: its runs are no leak; the key as a user name is
        // no client id.
        let claims = URL_SAFE_NO_PAD.encode(r#"{"sub":"platform"}"#);
        let h = HeaderMap::new();
        assert!(
            s.detector()
                .leaks(Endpoint::Auth, 200, &h, claims.as_bytes(), &[])
                .is_empty()
        );
        s.add("sk_Gq2Rw9ZtK4mXv8PjH3", SecretKind::Credential);
        let as_user = STANDARD_NO_PAD.encode("sk_Gq2Rw9ZtK4mXv8PjH3:");
        s.learn_request(Some(&format!("Basic {as_user}")));
        let echoed = URL_SAFE_NO_PAD.encode(&as_user);
        assert!(
            !s.detector()
                .leaks(Endpoint::Auth, 401, &h, echoed.as_bytes(), &[])
                .is_empty()
        );
        // What the malformed-credential checks send holds no secret.
        let none = Secrets::default();
        for v in [
            "Bearer",
            "Basic",
            "",
            "Basic !!not-base64!!",
            "Basic cGxhdGZvcm0=",
        ] {
            none.learn_request(Some(v));
        }
        assert!(none.all().is_empty(), "{:?}", none.all());
    }

    #[test]
    fn wrong_secrets_made_of_the_given_one_are_no_secrets_of_their_own() {
        let mut s = Secrets::new(["platform".to_string()]);
        s.given("client-secret-0123456789");
        for wrong in [
            " client-secret-0123456789",
            "client-secret-0123456789x",
            "CLIENT-SECRET-0123456789",
        ] {
            let basic = STANDARD_NO_PAD.encode(format!("platform:{wrong}"));
            s.learn_request(Some(&format!("Basic {basic}")));
        }
        let h = HeaderMap::new();
        let d = s.detector();
        // The service's own words beside runs the wrong secrets made (" clien").
        let body = br#"{"error":{"code":"UNAUTHORIZED","message":"invalid client credentials"}}"#;
        assert!(d.leaks(Endpoint::Auth, 401, &h, body, &[]).is_empty());
        // The given secret echoed is still found.
        let echoed = br#"{"error":{"message":"bad secret client-secret-0123456789"}}"#;
        assert!(!d.leaks(Endpoint::Auth, 401, &h, echoed, &[]).is_empty());
    }

    #[test]
    fn leaks_are_found_in_every_form_where_they_do_not_belong() {
        let s = Secrets::default();
        s.add("Zq7vN2pXw4Lk9sRtQ8mC", SecretKind::Credential);
        let key = [0x5au8, 0x11, 0x93, 0x27, 0xc4, 0x08, 0x7e, 0xb1].repeat(4);
        let key_b64 = base64::engine::general_purpose::STANDARD.encode(&key);
        s.add(key_b64.clone(), SecretKind::Plaintext);
        s.add(
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwIn0.c2lnbmF0dXJlLXBhcnQ",
            SecretKind::Token,
        );
        let none = HeaderMap::new();
        let d = s.detector();
        let leaks =
            |endpoint, status, body: &str| d.leaks(endpoint, status, &none, body.as_bytes(), &[]);
        // A prefix of the secret, a token's signature, a key in hex.
        assert!(
            !leaks(
                Endpoint::Auth,
                401,
                r#"{"error": {"message": "bad secret Zq7vN2"}}"#
            )
            .is_empty()
        );
        assert!(
            !leaks(
                Endpoint::DecryptKey,
                401,
                "signature c2lnbmF0dXJlLXBhcnQ invalid"
            )
            .is_empty()
        );
        assert!(
            !leaks(
                Endpoint::DecryptKey,
                422,
                &format!("key {}", hex::encode(&key[3..12]))
            )
            .is_empty()
        );
        // A token in the /auth success is where it belongs; a key in a decrypt success too.
        assert!(leaks(Endpoint::Auth, 200, r#"{"data": {"access_token": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwIn0.c2lnbmF0dXJlLXBhcnQ"}}"#).is_empty());
        assert!(
            leaks(
                Endpoint::DecryptKey,
                200,
                &format!(r#"{{"data": {{"plaintext_key": "{key_b64}"}}}}"#)
            )
            .is_empty()
        );
        // But not a key in an /auth answer, nor a token in a decrypt success.
        assert!(!leaks(Endpoint::Auth, 200, &format!("{{\"k\": \"{key_b64}\"}}")).is_empty());
        assert!(!leaks(Endpoint::DecryptKey, 200, "{\"t\": \"c2lnbmF0dXJl\"}").is_empty());
        // A JSON-escaped key in a JSON error body.
        let escaped = key_b64.replace('/', "\\/");
        assert!(
            !leaks(
                Endpoint::DecryptKey,
                400,
                &format!("{{\"m\": \"{escaped}\"}}")
            )
            .is_empty()
        );
        // An answer header.
        let mut h = HeaderMap::new();
        h.insert("x-debug", "Zq7vN2pXw4".parse().unwrap());
        assert_eq!(
            d.leaks(Endpoint::DecryptKey, 200, &h, b"{}", &[]),
            ["header x-debug holds a credential"]
        );
        // An x-request-id given back as sent is the check's own text, even when it shares
        // a run with a secret by chance; given back in another header, or changed, it is not.
        let id = "0b1c2d3e-Zq7vN2pXw4";
        let sent = [("x-request-id", id.to_string())];
        let mut h = HeaderMap::new();
        h.insert("x-request-id", id.parse().unwrap());
        assert!(
            d.leaks(Endpoint::DecryptKey, 400, &h, b"{}", &sent)
                .is_empty()
        );
        h.insert("x-request-id", format!("{id}-1").parse().unwrap());
        assert!(
            !d.leaks(Endpoint::DecryptKey, 400, &h, b"{}", &sent)
                .is_empty()
        );
        let sent = [("authorization", id.to_string())];
        h.insert("x-request-id", id.parse().unwrap());
        assert!(
            !d.leaks(Endpoint::DecryptKey, 400, &h, b"{}", &sent)
                .is_empty()
        );
        assert!(
            leaks(
                Endpoint::DecryptKey,
                401,
                r#"{"error": {"code": "UNAUTHORIZED", "message": "bad token"}}"#
            )
            .is_empty()
        );
    }

    #[test]
    fn a_readable_secret_is_not_found_in_the_public_text_it_shares() {
        let s = Secrets::new(["platform".to_string(), "tenant-a".to_string()]);
        s.add("platform-secret-1", SecretKind::Credential);
        s.add("decrypt-key-master", SecretKind::Credential);
        let d = s.detector();
        let none = HeaderMap::new();
        let claims = URL_SAFE_NO_PAD.encode(r#"{"sub":"platform","exp":1}"#);
        for body in [
            "unknown client platform".to_string(),
            format!(r#"{{"data": {{"access_token": "eyJ.{claims}.x"}}}}"#),
            "POST /acme/byok/v1/decrypt-key: 401".to_string(),
        ] {
            assert!(
                d.leaks(Endpoint::Auth, 401, &none, body.as_bytes(), &[])
                    .is_empty(),
                "{body}"
            );
        }
        assert!(
            !d.leaks(Endpoint::Auth, 401, &none, b"bad secret-1", &[])
                .is_empty()
        );
    }
}
