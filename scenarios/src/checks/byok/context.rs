//! What the checks share: the settings, the [`Probe`], the current access token (renewed
//! before it expires), and the verdict helpers every group uses.

use std::sync::Arc;

use serde_json::Value;

use super::probe::{Call, CallError, Endpoint, Exchange, Probe, data_object};
use super::settings::{Credentials, Settings};
use super::time::Mark;
use crate::checks::{Check, CheckDef, Evidence};

/// An access token from `/auth`.
#[derive(Clone, Debug)]
pub(super) struct Token {
    /// The token.
    pub(crate) value: String,
    /// Its lifetime when `expires_in` was a positive integer.
    pub(crate) expires_in: Option<u64>,
    /// When the `/auth` request was sent.
    pub(crate) obtained: Mark,
}

impl Token {
    /// Seconds before expiry when the token is no longer used: a tenth of its lifetime,
    /// at least 2 s (a JWT's `exp` has one-second resolution) and at most 30 s.
    pub(crate) fn margin_secs(expires_in: u64) -> u64 {
        (expires_in / 10).clamp(2, 30)
    }

    /// Whether to keep using it: until [`Token::margin_secs`] (at most half its lifetime)
    /// before it expires; a token without a usable `expires_in` is kept.
    fn fresh(&self) -> bool {
        match self.expires_in {
            Some(e) => {
                let margin = (Self::margin_secs(e) as f64).min(e as f64 / 2.0);
                self.obtained.elapsed().as_secs_f64() + margin < e as f64
            }
            None => true,
        }
    }
}

/// The data key the decrypt checks use.
#[derive(Clone, Debug)]
pub(crate) struct TargetKey {
    /// `byok:v1:...`.
    pub(crate) encrypted_key: String,
    /// Base64 of the key it holds.
    pub(crate) plaintext: String,
    /// Whether it came from `/rotate-key` (else from the settings).
    pub(crate) rotated: bool,
}

/// The shared state of one run.
pub(super) struct Ctx {
    /// The settings.
    pub(crate) s: Settings,
    /// The HTTP side.
    pub(crate) probe: Probe,
    token: tokio::sync::Mutex<Option<Token>>,
}

impl Ctx {
    /// A run of `s` through `probe`.
    pub(super) fn new(s: Settings, probe: Probe) -> Arc<Ctx> {
        Arc::new(Ctx {
            s,
            probe,
            token: tokio::sync::Mutex::new(None),
        })
    }

    /// Whether checks of `group` run.
    pub(super) fn runs(&self, group: &str) -> bool {
        self.s.filter.runs(group)
    }

    /// `Basic base64(id:secret)` for any id and secret (the probe learns both as
    /// credentials when it sends them).
    pub(super) fn basic(&self, id: &str, secret: &str) -> String {
        use base64::Engine as _;
        let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"));
        format!("Basic {encoded}")
    }

    /// `/auth` with the configured client credentials, or `None` with an API key.
    pub(crate) fn auth_call(&self) -> Option<Call> {
        match &self.s.credentials {
            Credentials::Client { id, secret } => Some(
                Call::post(Endpoint::Auth)
                    .authorization(self.basic(id, secret.expose()))
                    .form("grant_type=client_credentials"),
            ),
            Credentials::ApiKey(_) => None,
        }
    }

    /// Reads the token of an `/auth` answer and remembers it as the current one.
    pub(crate) async fn adopt_token(&self, ex: &Exchange, obtained: Mark) -> Option<Token> {
        let token = token_of(ex, obtained)?;
        *self.token.lock().await = Some(token.clone());
        Some(token)
    }

    /// `Bearer ...` for the calls that need one: the API key, or a token that is not near
    /// its expiry (a new one from `/auth` when it is). `None` when no token can be had.
    pub(super) async fn bearer(&self) -> Option<String> {
        if let Credentials::ApiKey(key) = &self.s.credentials {
            return Some(format!("Bearer {}", key.expose()));
        }
        let mut current = self.token.lock().await;
        if let Some(t) = current.as_ref().filter(|t| t.fresh()) {
            return Some(format!("Bearer {}", t.value));
        }
        let call = self.auth_call()?;
        let obtained = self.s.time.mark();
        let ex = self.probe.send("setup", call).await.ok()?;
        let token = token_of(&ex, obtained)?;
        let bearer = format!("Bearer {}", token.value);
        *current = Some(token);
        Some(bearer)
    }

    /// Decrypts `encrypted_key` under `alias` with a good bearer token.
    pub(super) async fn decrypt(
        &self,
        check: &'static str,
        alias: &str,
        encrypted_key: &str,
    ) -> Result<Arc<Exchange>, CallError> {
        let call = Call::post(Endpoint::DecryptKey)
            .maybe_authorization(self.bearer().await)
            .json(&super::probe::decrypt_body(alias, encrypted_key));
        self.probe.send(check, call).await
    }
}

pub(super) fn token_of(ex: &Exchange, obtained: Mark) -> Option<Token> {
    if ex.status != 200 {
        return None;
    }
    let body = ex.json()?;
    let data = data_object(&body)?;
    let value = data.get("access_token")?.as_str()?.to_string();
    if value.is_empty() {
        return None;
    }
    let expires_in = data
        .get("expires_in")
        .and_then(Value::as_u64)
        .filter(|e| *e > 0);
    Some(Token {
        value,
        expires_in,
        obtained,
    })
}

/// What status a refusal must have.
#[derive(Clone, Copy, Debug)]
pub(super) enum Want {
    /// Exactly one status.
    Status(u16),
    /// One of these.
    OneOf(&'static [u16]),
    /// Any 4xx: refused, never 200 and never 5xx.
    ClientError,
    /// Served or refused, never 5xx.
    NoServerError,
}

impl Want {
    fn holds(self, status: u16) -> bool {
        match self {
            Want::Status(s) => status == s,
            Want::OneOf(list) => list.contains(&status),
            Want::ClientError => (400..500).contains(&status),
            Want::NoServerError => (200..500).contains(&status),
        }
    }

    /// What the contract expects, for the report.
    pub(super) fn expected(self) -> String {
        match self {
            Want::Status(s) => format!("status {s}"),
            Want::OneOf(list) => {
                let l: Vec<String> = list.iter().map(u16::to_string).collect();
                format!("status {}", l.join(" or "))
            }
            Want::ClientError => "a 4xx status: refused, never 200 and never 5xx".into(),
            Want::NoServerError => "a 2xx or 4xx status: served or refused, never 5xx".into(),
        }
    }
}

/// Judges the status of one answer (the body is judged by the `errors` checks).
pub(crate) fn judge_status(
    def: &CheckDef,
    request: &str,
    result: &Result<Arc<Exchange>, CallError>,
    want: Want,
) -> Check {
    match result {
        Ok(ex) => Check::judge(def, want.holds(ex.status), ex.evidence(), want.expected()),
        Err(e) => Check::fail(def, e.evidence(request), want.expected()),
    }
}

/// One form of an attack (or of a request that must be served): its name, what it got, and
/// the status it must get.
pub(crate) struct Case {
    /// What this form changes (`the signature empty`).
    pub(crate) name: String,
    /// The answer.
    pub(crate) result: Result<Arc<Exchange>, CallError>,
    /// The status it must get.
    pub(crate) want: Want,
    /// A connection closed before the request was sent counts as a refusal (a body too large
    /// to take).
    closed_is_refusal: bool,
    /// What is wrong with an answer whose status is right (the case then fails).
    problem: Option<String>,
}

impl Case {
    /// A case named `name` that must get `want`.
    pub(crate) fn new(
        name: impl Into<String>,
        result: Result<Arc<Exchange>, CallError>,
        want: Want,
    ) -> Case {
        Case {
            name: name.into(),
            result,
            want,
            closed_is_refusal: false,
            problem: None,
        }
    }

    /// The case fails whatever its status, for `problem`.
    pub(crate) fn with_problem(mut self, problem: impl Into<String>) -> Case {
        self.problem = Some(problem.into());
        self
    }

    /// A case whose connection was closed while its body was still being sent: refused (a
    /// service that answers 413 and closes can reset the connection before the answer is
    /// read).
    pub(crate) fn closed_early(name: impl Into<String>, e: CallError) -> Case {
        Case {
            closed_is_refusal: true,
            ..Case::new(name, Err(e), Want::ClientError)
        }
    }

    fn holds(&self) -> bool {
        if self.problem.is_some() {
            return false;
        }
        match &self.result {
            Ok(ex) => self.want.holds(ex.status),
            Err(e) => self.closed_is_refusal && e.kind == super::probe::CallErrorKind::Protocol,
        }
    }
}

/// Marks the refusals (401) among `cases` whose guesses were of one length (`lengths[i]` is
/// case `i`'s) but whose bodies differ: such refusals tell how close a guess came (where it
/// first differs, how much of it matched), which reads a secret back one character at a
/// time. Ids and times in the bodies are set aside first.
pub(crate) fn refusals_alike(cases: &mut [Case], lengths: &[usize]) {
    let body = |c: &Case| -> Option<String> {
        let ex = c.result.as_ref().ok().filter(|ex| ex.status == 401)?;
        let text = String::from_utf8_lossy(&ex.body).into_owned();
        // Request ids, trace ids and times differ from call to call.
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        let message = v.pointer("/error/message").cloned().unwrap_or(v);
        Some(message.to_string())
    };
    let bodies: Vec<Option<String>> = cases.iter().map(body).collect();
    let mut differs = vec![false; cases.len()];
    for i in 0..cases.len() {
        for j in i + 1..cases.len() {
            if lengths[i] == lengths[j]
                && let (Some(a), Some(b)) = (&bodies[i], &bodies[j])
                && a != b
            {
                differs[i] = true;
                differs[j] = true;
            }
        }
    }
    for (c, d) in cases.iter_mut().zip(differs) {
        if d {
            c.problem = Some(
                "refused otherwise than another wrong guess of the same length: the refusal \
                 tells how close the guess came"
                    .into(),
            );
        }
    }
}

/// Judges several answers that must all have a status of `want`.
pub(crate) fn judge_statuses(
    def: &CheckDef,
    results: &[(&str, Result<Arc<Exchange>, CallError>)],
    want: Want,
) -> Check {
    let cases = results
        .iter()
        .map(|(name, r)| Case::new(*name, r.clone(), want))
        .collect();
    judge_cases(def, cases)
}

/// Judges every form of an attack: the check fails when any case does, and says which (the
/// evidence lists every case, the failing ones first).
pub(crate) fn judge_cases(def: &CheckDef, cases: Vec<Case>) -> Check {
    if cases.is_empty() {
        // Never a pass that judged nothing.
        return Check::skip(def, "no form of it applies to this service's settings");
    }
    let (passing, failing): (Vec<Case>, Vec<Case>) = cases.into_iter().partition(Case::holds);
    let failed: Vec<String> = failing.iter().map(|c| c.name.clone()).collect();
    let mut wants: Vec<String> = passing
        .iter()
        .chain(&failing)
        .map(|c| c.want.expected())
        .collect();
    wants.dedup();
    let listed: Vec<Value> = failing
        .iter()
        .chain(&passing)
        .map(|c| {
            let answer = match &c.result {
                Ok(ex) => ex.evidence(),
                Err(e) => e.evidence(&c.name),
            };
            let mut v = serde_json::json!({
                "case": c.name,
                "expected": c.want.expected(),
                "held": c.holds(),
                "answer": Value::Object(answer.0),
            });
            if let Some(p) = &c.problem {
                v["problem"] = Value::String(p.clone());
            }
            v
        })
        .collect();
    let n = listed.len();
    let mut evidence = Evidence::new();
    if !failed.is_empty() {
        evidence = evidence.cause(format!(
            "{} of {n} forms answered otherwise than they must: {}",
            failed.len(),
            failed.join("; ")
        ));
    }
    let expected = match wants.as_slice() {
        [one] => format!("{one} for every form ({n})"),
        _ => format!("each form's own status ({n} forms)"),
    };
    Check::judge(
        def,
        failed.is_empty(),
        evidence.with("failed", failed).with("cases", listed),
        expected,
    )
}

/// A skip of every check in `defs`, for one reason.
pub(crate) fn skip_all(defs: &[CheckDef], reason: &str) -> Vec<Check> {
    defs.iter().map(|d| Check::skip(d, reason)).collect()
}
