//! The bearer refusals, every form of each, on every endpoint that needs a bearer token:
//! `/decrypt-key` and `/rotate-key` (which answers a plaintext key too, so it must refuse
//! exactly what `/decrypt-key` refuses). Each check is one attack; its cases are the forms a
//! verifier can get wrong, and a failure names the forms that were served.
//!
//! | Check (`decrypt.*`, `rotate.*`) | Forms, each answered 401 |
//! |---|---|
//! | `no_token` | no `Authorization`; `Bearer` with no token; an empty header; the token in the query, the body or a cookie instead, or under another scheme (none, `Token`, `JWT`, `Basic`) |
//! | `garbage_token` | random text; three dot-separated parts of random base64url |
//! | `tampered_token` | a JWT's signature changed, emptied, cut to half, made with another key or with the client secret; its claims or its header (a field added, another HMAC alg) changed under the same signature, or the claims under a value a refusal quoted (an opaque token: changed as text) |
//! | `alg_none` | `alg` none, None, NONE, nOnE; none keeping the signature; no `alg`; `alg` of another family |
//! | `basic_credentials` | the client credentials as HTTP Basic; the client secret and the Basic value as bearer tokens (with an API key: the key as Basic) |
//! | `wrong_api_key` | the static key with one character changed, its case changed, cut, without its first or last character, with one appended; wrong keys of one length refused alike |

use serde_json::Value;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

use super::context::{Case, Ctx, Want, judge_cases, refusals_alike};
use super::defs::*;
use super::jwt::{self, Forged};
use super::probe::{Call, Endpoint};
use super::settings::Credentials;
use crate::checks::{Check, CheckDef};

/// The checks of one endpoint's bearer refusals.
pub(super) struct Defs {
    no_token: CheckDef,
    garbage_token: CheckDef,
    tampered_token: CheckDef,
    alg_none: CheckDef,
    basic_credentials: CheckDef,
    wrong_api_key: CheckDef,
}

impl Defs {
    /// Every check, in report order.
    pub(super) fn all(&self) -> [CheckDef; 6] {
        [
            self.no_token,
            self.garbage_token,
            self.tampered_token,
            self.alg_none,
            self.basic_credentials,
            self.wrong_api_key,
        ]
    }
}

/// `/decrypt-key`'s.
pub(super) const DECRYPT: Defs = Defs {
    no_token: DECRYPT_NO_TOKEN,
    garbage_token: DECRYPT_GARBAGE_TOKEN,
    tampered_token: DECRYPT_TAMPERED_TOKEN,
    alg_none: DECRYPT_ALG_NONE,
    basic_credentials: DECRYPT_BASIC_CREDENTIALS,
    wrong_api_key: DECRYPT_WRONG_API_KEY,
};

/// `/rotate-key`'s.
pub(super) const ROTATE: Defs = Defs {
    no_token: ROTATE_NO_TOKEN,
    garbage_token: ROTATE_GARBAGE_TOKEN,
    tampered_token: ROTATE_TAMPERED_TOKEN,
    alg_none: ROTATE_ALG_NONE,
    basic_credentials: ROTATE_BASIC_CREDENTIALS,
    wrong_api_key: ROTATE_WRONG_API_KEY,
};

/// Random letters and digits, `n` of them.
fn random_text(n: usize) -> String {
    jwt::garbage(contracts::ids::IdGen::from_entropy().bytes::<24>())
        .chars()
        .cycle()
        .take(n)
        .collect()
}

/// The forms of every attack, for the bearer the run uses now.
struct Forms {
    no_token: Vec<(&'static str, Option<String>)>,
    garbage: Vec<Forged>,
    tampered: Option<Vec<Forged>>,
    alg: Vec<Forged>,
    basic: Vec<Forged>,
    api_key: Option<Vec<Forged>>,
}

fn forms(ctx: &Ctx, bearer: &str) -> Forms {
    let ids = contracts::ids::IdGen::from_entropy();
    let parsed = jwt::parse(bearer).ok();
    let (subject, basic, api_key) = match &ctx.s.credentials {
        Credentials::Client { id, secret } => {
            let encoded = STANDARD.encode(format!("{id}:{}", secret.expose()));
            (
                id.clone(),
                vec![
                    (
                        "HTTP Basic with the client credentials",
                        format!("Basic {encoded}"),
                    ),
                    (
                        "the client secret as a bearer token",
                        format!("Bearer {}", secret.expose()),
                    ),
                    (
                        "the Basic credentials as a bearer token",
                        format!("Bearer {encoded}"),
                    ),
                ],
                None,
            )
        }
        Credentials::ApiKey(key) => {
            let k = key.expose();
            (
                "byok-check".to_string(),
                vec![
                    (
                        "the API key as HTTP Basic user name",
                        format!("Basic {}", STANDARD.encode(format!("{k}:"))),
                    ),
                    (
                        "the API key as HTTP Basic password",
                        format!("Basic {}", STANDARD.encode(format!(":{k}"))),
                    ),
                ],
                Some(
                    jwt::opaque_forms(k)
                        .into_iter()
                        .map(|(n, v)| (n, format!("Bearer {v}")))
                        .collect(),
                ),
            )
        }
    };
    let tampered = match (&ctx.s.credentials, &parsed) {
        (Credentials::ApiKey(_), _) => None,
        (Credentials::Client { secret, .. }, Some(j)) => {
            let mut forms = jwt::signature_forms(j, bearer, ids.bytes::<32>());
            // Who holds the client secret must not be able to mint tokens with it.
            forms.push((
                "signed with the client secret (HS256), exp a day later",
                jwt::signed_with(j, secret.expose().as_bytes(), 86_400),
            ));
            Some(forms)
        }
        (_, None) => Some(jwt::opaque_forms(bearer)),
    };
    let b64 = |n: usize| URL_SAFE_NO_PAD.encode(&ids.bytes::<48>()[..n]);
    Forms {
        no_token: vec![
            ("no Authorization header", None),
            (
                "Authorization: Bearer, with no token",
                Some("Bearer".into()),
            ),
            ("an empty Authorization header", Some(String::new())),
        ],
        garbage: vec![
            ("random text", random_text(32)),
            (
                "three parts of random base64url",
                format!("{}.{}.{}", b64(24), b64(40), b64(32)),
            ),
        ],
        tampered,
        alg: jwt::alg_forms(
            parsed.as_ref(),
            bearer,
            &subject,
            ctx.s.time.now().timestamp(),
        ),
        basic,
        api_key,
    }
}

/// Refusals must not teach how to forge: every base64url run of 20 characters or more the
/// refusals of tampered tokens carry is tried as the signature of claims changed (a later
/// `exp`); each must be refused too. A service that quotes the signature it expected for
/// the claims it was sent fails here. Only refusals are read: a service that accepted a
/// tampered token answered a key, which is no signature and must not be sent anywhere.
async fn quoted_signatures(
    ctx: &Ctx,
    defs: &Defs,
    endpoint: Endpoint,
    body: &Value,
    jwt: &jwt::Jwt,
    token: &str,
    refused: &[Case],
) -> Vec<Case> {
    let mut quoted: Vec<String> = Vec::new();
    for c in refused {
        let Ok(ex) = &c.result else { continue };
        if ex.status < 400 {
            continue;
        }
        let text = String::from_utf8_lossy(&ex.body);
        for run in text.split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '-' || ch == '_')) {
            if run.len() >= 20 && !token.contains(run) && !quoted.iter().any(|q| q == run) {
                quoted.push(run.to_string());
            }
        }
    }
    // A run that holds a secret the run knows is no quotation to try (and must not be sent
    // anywhere); the others are the service's own words, and so are the tokens made of them:
    // their runs found again in an answer are no leak.
    let known = ctx.probe.redactor();
    quoted.retain(|run| !known.finds(run));
    quoted.truncate(8);
    for run in &quoted {
        ctx.probe.secrets().add_public(run);
    }
    let forged = jwt::with_later_exp(jwt, token);
    futures_util::future::join_all(quoted.into_iter().map(|sig| {
        let call = Call::post(endpoint)
            .authorization(format!("Bearer {forged}{sig}"))
            .json(body);
        async move {
            Case::new(
                "claims changed, signed with a value a refusal quoted",
                ctx.probe.send(defs.tampered_token.id, call).await,
                Want::Status(401),
            )
        }
    }))
    .await
}

/// Sends every form of every attack to `endpoint` with `body`, and judges each attack:
/// every form 401.
pub(super) async fn checks(ctx: &Ctx, defs: &Defs, endpoint: Endpoint, body: &Value) -> Vec<Check> {
    let Some(bearer) = ctx.bearer().await else {
        let reason = "no access token to start from (see auth.status)";
        return defs.all().iter().map(|d| Check::skip(d, reason)).collect();
    };
    let token = bearer
        .strip_prefix("Bearer ")
        .unwrap_or(&bearer)
        .to_string();
    let f = forms(ctx, &token);
    let send = |def: &'static str, name: String, authorization: Option<String>| async move {
        let call = Call::post(endpoint)
            .maybe_authorization(authorization)
            .json(body);
        Case::new(name, ctx.probe.send(def, call).await, Want::Status(401))
    };
    let send_all = |def: &CheckDef, forms: Vec<(String, Option<String>)>| {
        let id = def.id;
        futures_util::future::join_all(
            forms
                .into_iter()
                .map(move |(name, auth)| send(id, name, auth)),
        )
    };
    let bearer_of = |v: Vec<Forged>| -> Vec<(String, Option<String>)> {
        v.into_iter()
            .map(|(n, t)| (n.to_string(), Some(format!("Bearer {t}"))))
            .collect()
    };
    let as_is = |v: Vec<Forged>| -> Vec<(String, Option<String>)> {
        v.into_iter()
            .map(|(n, a)| (n.to_string(), Some(a)))
            .collect()
    };
    let no_token = f
        .no_token
        .into_iter()
        .map(|(n, a)| (n.to_string(), a))
        .collect();
    // The token where no bearer token belongs: the query, the body, a cookie; or under
    // another scheme than Bearer.
    let other_schemes = [
        ("the token without a scheme", token.clone()),
        ("the token under the scheme Token", format!("Token {token}")),
        ("the token under the scheme JWT", format!("JWT {token}")),
        ("the token under the scheme Basic", format!("Basic {token}")),
    ]
    .map(|(n, a)| (n.to_string(), Some(a)));
    let elsewhere = async {
        let mut in_body = body.clone();
        if let Some(m) = in_body.as_object_mut() {
            m.insert("access_token".into(), Value::String(token.clone()));
        }
        let p = &ctx.probe;
        let (query, in_body, cookie) = tokio::join!(
            p.send(
                defs.no_token.id,
                Call::post(endpoint)
                    .query(format!("access_token={token}"))
                    .json(body)
            ),
            p.send(defs.no_token.id, Call::post(endpoint).json(&in_body)),
            p.send(
                defs.no_token.id,
                Call::post(endpoint)
                    .header("cookie", format!("access_token={token}"))
                    .json(body)
            ),
        );
        [
            Case::new(
                "no Authorization, the token in the query (access_token)",
                query,
                Want::Status(401),
            ),
            Case::new(
                "no Authorization, the token in the body (access_token)",
                in_body,
                Want::Status(401),
            ),
            Case::new(
                "no Authorization, the token in a cookie (access_token)",
                cookie,
                Want::Status(401),
            ),
        ]
    };
    let mut no_token: Vec<(String, Option<String>)> = no_token;
    no_token.extend(other_schemes);
    let key_lengths: Vec<usize> = f
        .api_key
        .iter()
        .flatten()
        .map(|(_, v)| v.chars().count())
        .collect();
    let (mut none, garbage, mut tampered, alg, basic, mut api_key, elsewhere) = tokio::join!(
        send_all(&defs.no_token, no_token),
        send_all(&defs.garbage_token, bearer_of(f.garbage)),
        send_all(
            &defs.tampered_token,
            f.tampered.clone().map(bearer_of).unwrap_or_default()
        ),
        send_all(&defs.alg_none, bearer_of(f.alg)),
        send_all(&defs.basic_credentials, as_is(f.basic)),
        send_all(
            &defs.wrong_api_key,
            f.api_key.clone().map(as_is).unwrap_or_default()
        ),
        elsewhere,
    );
    none.extend(elsewhere);
    refusals_alike(&mut api_key, &key_lengths);
    if let (Some(_), Some(j)) = (&f.tampered, jwt::parse(&token).ok()) {
        tampered.extend(quoted_signatures(ctx, defs, endpoint, body, &j, &token, &tampered).await);
    }
    vec![
        judge_cases(&defs.no_token, none),
        judge_cases(&defs.garbage_token, garbage),
        match f.tampered {
            Some(_) => judge_cases(&defs.tampered_token, tampered),
            None => Check::skip(
                &defs.tampered_token,
                "a static API key has no signature: see the wrong_api_key check",
            ),
        },
        judge_cases(&defs.alg_none, alg),
        judge_cases(&defs.basic_credentials, basic),
        match f.api_key {
            Some(_) => judge_cases(&defs.wrong_api_key, api_key),
            None => Check::skip(
                &defs.wrong_api_key,
                "client credentials: there is no static API key to alter (auth.wrong_secret \
                 alters the client secret)",
            ),
        },
    ]
}
