//! The admin API under `/_admin`, guarded by `Authorization: Bearer <admin token>`.
//!
//! Every route first checks the admin token (401 `UNAUTHORIZED` otherwise, also for paths
//! that do not exist, so the API does not show its shape to strangers). Bodies are JSON
//! (the content type is not checked, so `curl -d` works as is); errors are the same
//! `{"error": {"code", "message"}}` as the BYOK endpoints.
//!
//! | Method | Path | Body | Answer |
//! |---|---|---|---|
//! | GET | `/_admin/info` | | partner, paths, seed, clock, token epoch |
//! | GET | `/_admin/faults` | | `{"faults": [FaultInfo]}` |
//! | POST | `/_admin/faults` | [`FaultSpec`] | 201 [`crate::faults::FaultInfo`] |
//! | DELETE | `/_admin/faults` | | `{"removed": n}` |
//! | GET | `/_admin/faults/{id}` | | `FaultInfo`, or 404 `NOT_FOUND` |
//! | DELETE | `/_admin/faults/{id}` | | `{"removed": 1}`, or 404 `NOT_FOUND` |
//! | POST | `/_admin/tokens/expire` | | `{"epoch": n}` |
//! | GET | `/_admin/keys` | | `{"aliases": [AliasInfo]}` |
//! | GET | `/_admin/keys/{alias}` | | [`crate::keys::AliasInfo`] |
//! | POST | `/_admin/keys/{alias}/rotate` | | `AliasInfo` (new current version) |
//! | POST | `/_admin/keys/{alias}/disable`, `/enable`, `/revoke` | | `AliasInfo` |
//! | PUT | `/_admin/keys/{alias}/min-version` | `{"min_version": n}` | `AliasInfo` |
//! | POST | `/_admin/keys/{alias}/wrap` | `{"plaintext_key": base64}` or nothing | `{"key_alias", "key_version", "encrypted_key", "plaintext_key"}` |
//! | GET | `/_admin/audit?after=N&limit=M` | | `{"entries": [AuditEntry], "next_seq", "dropped"}` |
//! | DELETE | `/_admin/audit` | | `{"removed": n}` |
//! | POST | `/_admin/reset` | | `{"faults_removed", "audit_removed"}` |
//! | GET | `/_admin/mutants` | | `{"mutants": [MutantInfo]}` |
//! | PUT | `/_admin/mutants` | `{"on": [name]}` | the list; exactly these are on |
//! | DELETE | `/_admin/mutants` | | `{"removed": n}`; every mutant off |
//! | POST, DELETE | `/_admin/mutants/{name}` | | the mutant, switched on or off |
//! | GET | `/_admin/clock` | | `{"now", "simulated"}` |
//! | POST | `/_admin/clock/advance` | `{"secs": n}` | `{"now", "simulated"}`; 400 on a system clock |

use std::convert::Infallible;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use contracts::clock::{Clock, format_instant};
use contracts::error::ByokErrorCode;
use contracts::wire::byok::{auth_path, decrypt_key_path, rotate_key_path};
use futures_util::Stream;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use warp::http::StatusCode;
use warp::http::header::HeaderMap;
use warp::reply::Response;
use warp::{Buf, Filter, Rejection};
use zeroize::Zeroizing;

use super::{json_response, read_body};
use crate::config::AliasStatus;
use crate::error::KmsError;
use crate::faults::FaultSpec;
use crate::keys::{DATA_KEY_LEN, KeyError};
use crate::mutants::{Mutant, MutantInfo};
use crate::service::KeyService;

/// The simulated clock is not advanced past this instant (RFC 3339 ends at year 9999).
const MAX_SIM_TIME: &str = "9999-12-31T23:59:59Z";

/// Largest number of audit entries one `GET /_admin/audit` answers.
pub(crate) const MAX_AUDIT_PAGE: usize = 10_000;

/// The admin paths (`*` is one segment) and the methods each takes: the `Allow` of a 405.
const ROUTES: &[(&str, &str)] = &[
    ("/_admin/info", "GET, HEAD"),
    ("/_admin/faults", "GET, HEAD, POST, DELETE"),
    ("/_admin/faults/*", "GET, HEAD, DELETE"),
    ("/_admin/tokens/expire", "POST"),
    ("/_admin/keys", "GET, HEAD"),
    ("/_admin/keys/*", "GET, HEAD"),
    ("/_admin/keys/*/rotate", "POST"),
    ("/_admin/keys/*/disable", "POST"),
    ("/_admin/keys/*/enable", "POST"),
    ("/_admin/keys/*/revoke", "POST"),
    ("/_admin/keys/*/wrap", "POST"),
    ("/_admin/keys/*/min-version", "PUT"),
    ("/_admin/audit", "GET, HEAD, DELETE"),
    ("/_admin/reset", "POST"),
    ("/_admin/clock", "GET, HEAD"),
    ("/_admin/clock/advance", "POST"),
];

/// The methods an admin path takes, for `Allow`; `None` off the admin API.
pub(crate) fn allowed_methods(path: &str) -> Option<&'static str> {
    let path = path.strip_suffix('/').unwrap_or(path);
    let segments: Vec<&str> = path.split('/').collect();
    ROUTES.iter().find_map(|(template, allow)| {
        let t: Vec<&str> = template.split('/').collect();
        (t.len() == segments.len()
            && t.iter()
                .zip(&segments)
                .all(|(t, s)| (*t == "*" && !s.is_empty()) || t == s))
        .then_some(*allow)
    })
}

/// GET, and HEAD answered as GET without the body (RFC 9110).
fn get() -> impl Filter<Extract = (), Error = Rejection> + Copy {
    warp::get().or(warp::head()).unify()
}

fn with_svc(svc: KeyService) -> impl Filter<Extract = (KeyService,), Error = Infallible> + Clone {
    warp::any().map(move || svc.clone())
}

fn reject(e: impl Into<KmsError>) -> Rejection {
    warp::reject::custom(e.into())
}

fn ok(body: serde_json::Value) -> Result<Response, Rejection> {
    Ok(json_response(StatusCode::OK, &body))
}

fn ok_ser(body: &impl serde::Serialize) -> Result<Response, Rejection> {
    Ok(json_response(StatusCode::OK, body))
}

/// A JSON body of at most `max_body_bytes`: `None` when empty, 400 when not valid JSON of
/// the expected shape.
async fn json_body<T, S, B>(
    svc: &KeyService,
    headers: &HeaderMap,
    body: S,
) -> Result<Option<T>, Rejection>
where
    T: DeserializeOwned,
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    let bytes = read_body(headers, body, svc.config().max_body_bytes)
        .await
        .map_err(reject)?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| reject(KmsError::invalid(format!("invalid JSON body: {e}"))))
}

fn required<T>(v: Option<T>) -> Result<T, Rejection> {
    v.ok_or_else(|| reject(KmsError::invalid("a JSON body is required")))
}

/// Every admin route.
pub(crate) fn filter(
    svc: KeyService,
) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone + Send + Sync + 'static {
    let auth = warp::header::headers_cloned()
        .and(with_svc(svc.clone()))
        .and_then(|headers: HeaderMap, svc: KeyService| async move {
            svc.check_admin(super::authorization(&headers))
                .map_err(reject)
        })
        .untuple_one();

    let s = || with_svc(svc.clone());
    let body = || warp::header::headers_cloned().and(warp::body::stream());

    let info = warp::path!("info")
        .and(get())
        .and(s())
        .and_then(|svc: KeyService| async move {
            let p = svc.partner().to_string();
            ok(json!({
                "partner": p,
                "paths": {
                    "auth": auth_path(&p),
                    "decrypt_key": decrypt_key_path(&p),
                    "rotate_key": rotate_key_path(&p),
                },
                "seed": svc.seed(),
                "clock": {"now": format_instant(svc.now()), "simulated": svc.clock().is_simulated()},
                "token_epoch": svc.authenticator().epoch(),
                "aliases": svc.keys().list().into_iter().map(|a| a.key_alias).collect::<Vec<_>>(),
                "mutants": svc.mutants().active(),
            }))
        });

    let faults_list = warp::path!("faults")
        .and(get())
        .and(s())
        .and_then(|svc: KeyService| async move { ok(json!({"faults": svc.faults().list()})) });
    let faults_add = warp::path!("faults")
        .and(warp::post())
        .and(s())
        .and(body())
        .and_then(|svc: KeyService, headers: HeaderMap, b| async move {
            let spec: FaultSpec = required(json_body(&svc, &headers, b).await?)?;
            let info = svc.add_fault(spec).map_err(reject)?;
            Ok::<_, Rejection>(json_response(StatusCode::CREATED, &info))
        });
    let faults_clear = warp::path!("faults")
        .and(warp::delete())
        .and(s())
        .and_then(|svc: KeyService| async move { ok(json!({"removed": svc.faults().clear()})) });
    let fault_get = warp::path!("faults" / String).and(get()).and(s()).and_then(
        |id: String, svc: KeyService| async move {
            match svc.faults().get(&id) {
                Some(f) => ok_ser(&f),
                None => Err(reject(no_fault())),
            }
        },
    );
    let fault_delete = warp::path!("faults" / String)
        .and(warp::delete())
        .and(s())
        .and_then(|id: String, svc: KeyService| async move {
            if svc.faults().remove(&id) {
                ok(json!({"removed": 1}))
            } else {
                Err(reject(no_fault()))
            }
        });

    let expire = warp::path!("tokens" / "expire")
        .and(warp::post())
        .and(s())
        .and_then(|svc: KeyService| async move { ok(json!({"epoch": svc.expire_all_tokens()})) });

    let keys_list = warp::path!("keys")
        .and(get())
        .and(s())
        .and_then(|svc: KeyService| async move { ok(json!({"aliases": svc.keys().list()})) });
    let key_get = warp::path!("keys" / String).and(get()).and(s()).and_then(
        |alias: String, svc: KeyService| async move {
            ok_ser(&svc.keys().info(&alias).map_err(reject)?)
        },
    );
    let key_action = warp::path!("keys" / String / String)
        .and(warp::post())
        .and(s())
        .and(body())
        .and_then(
            |alias: String, action: String, svc: KeyService, headers: HeaderMap, b| async move {
                let keys = svc.keys();
                let info = match action.as_str() {
                    "rotate" => keys.rotate(&alias, svc.now()),
                    "disable" => keys.set_status(&alias, AliasStatus::Disabled),
                    "enable" => keys.set_status(&alias, AliasStatus::Enabled),
                    "revoke" => keys.set_status(&alias, AliasStatus::Revoked),
                    "wrap" => {
                        let req: Option<WrapBody> = json_body(&svc, &headers, b).await?;
                        return wrap(&svc, &alias, req);
                    }
                    _ => return Err(warp::reject::not_found()),
                };
                ok_ser(&info.map_err(reject)?)
            },
        );
    let key_min = warp::path!("keys" / String / "min-version")
        .and(warp::put())
        .and(s())
        .and(body())
        .and_then(
            |alias: String, svc: KeyService, headers: HeaderMap, b| async move {
                let req: MinVersionBody = required(json_body(&svc, &headers, b).await?)?;
                ok_ser(
                    &svc.keys()
                        .set_min_version(&alias, req.min_version)
                        .map_err(reject)?,
                )
            },
        );

    let audit_get = warp::path!("audit")
        .and(get())
        .and(warp::query::<AuditQuery>())
        .and(s())
        .and_then(|q: AuditQuery, svc: KeyService| async move {
            let limit = q.limit.unwrap_or(MAX_AUDIT_PAGE).min(MAX_AUDIT_PAGE);
            let log = svc.audit();
            ok(json!({
                "entries": log.since(q.after.unwrap_or(0), limit),
                "next_seq": log.next_seq(),
                "dropped": log.dropped(),
            }))
        });
    let audit_clear = warp::path!("audit")
        .and(warp::delete())
        .and(s())
        .and_then(|svc: KeyService| async move { ok(json!({"removed": svc.audit().clear()})) });

    let reset = warp::path!("reset")
        .and(warp::post())
        .and(s())
        .and_then(|svc: KeyService| async move { ok_ser(&svc.reset()) });

    let mutants_list = warp::path!("mutants")
        .and(warp::get())
        .and(s())
        .and_then(|svc: KeyService| async move { ok(json!({"mutants": svc.mutants().list()})) });
    let mutants_put = warp::path!("mutants")
        .and(warp::put())
        .and(s())
        .and(body())
        .and_then(|svc: KeyService, headers: HeaderMap, b| async move {
            let req: MutantsBody = required(json_body(&svc, &headers, b).await?)?;
            let on = req
                .on
                .iter()
                .map(|n| mutant_named(n))
                .collect::<Result<Vec<_>, _>>()?;
            svc.mutants().replace(&on);
            ok(json!({"mutants": svc.mutants().list()}))
        });
    let mutants_clear = warp::path!("mutants")
        .and(warp::delete())
        .and(s())
        .and_then(|svc: KeyService| async move { ok(json!({"removed": svc.mutants().clear()})) });
    let mutant_switch = warp::path!("mutants" / String)
        .and(warp::method())
        .and(s())
        .and_then(
            |name: String, method: warp::http::Method, svc: KeyService| async move {
                let m = mutant_named(&name)?;
                match method {
                    warp::http::Method::POST => svc.mutants().set(m, true),
                    warp::http::Method::DELETE => svc.mutants().set(m, false),
                    _ => {
                        return Err(warp::reject::custom(KmsError::new(
                            ByokErrorCode::MethodNotAllowed,
                            "POST switches a mutant on, DELETE switches it off",
                        )));
                    }
                }
                ok_ser(&MutantInfo {
                    name: m.name().into(),
                    rule: m.rule().into(),
                    on: svc.mutants().is_on(m),
                })
            },
        );

    let clock_get = warp::path!("clock")
        .and(get())
        .and(s())
        .and_then(|svc: KeyService| async move { ok(clock_json(&svc)) });
    let clock_advance = warp::path!("clock" / "advance")
        .and(warp::post())
        .and(s())
        .and(body())
        .and_then(|svc: KeyService, headers: HeaderMap, b| async move {
            let req: AdvanceBody = required(json_body(&svc, &headers, b).await?)?;
            let Some(clock) = svc.sim_clock() else {
                return Err(reject(KmsError::invalid(
                    "the service runs on the system clock; start it with --sim-clock",
                )));
            };
            let secs = i64::try_from(req.secs)
                .ok()
                .filter(|s| *s <= 10 * 366 * 86_400)
                .ok_or_else(|| reject(KmsError::invalid("secs must be at most ten years")))?;
            let limit = chrono::DateTime::parse_from_rfc3339(MAX_SIM_TIME)
                .expect("a valid instant")
                .with_timezone(&chrono::Utc);
            if clock.now() + chrono::Duration::seconds(secs) > limit {
                return Err(reject(KmsError::invalid(
                    "the simulated clock does not go past 9999-12-31",
                )));
            }
            clock
                .advance(chrono::Duration::seconds(secs))
                .map_err(|e| reject(KmsError::invalid(e.to_string())))?;
            ok(clock_json(&svc))
        });

    // Boxed by concern: one long chain of `or` makes the type (and the compile time) grow
    // with every route.
    let faults = faults_list
        .or(faults_add)
        .unify()
        .or(faults_clear)
        .unify()
        .or(fault_get)
        .unify()
        .or(fault_delete)
        .unify()
        .boxed();
    let keys = keys_list
        .or(key_get)
        .unify()
        .or(key_action)
        .unify()
        .or(key_min)
        .unify()
        .boxed();
    let state = info
        .or(expire)
        .unify()
        .or(audit_get)
        .unify()
        .or(audit_clear)
        .unify()
        .or(reset)
        .unify()
        .or(clock_get)
        .unify()
        .or(clock_advance)
        .unify()
        .boxed();
    let mutants = mutants_list
        .or(mutants_put)
        .unify()
        .or(mutants_clear)
        .unify()
        .or(mutant_switch)
        .unify()
        .boxed();
    warp::path("_admin").and(auth).and(
        state
            .or(faults)
            .unify()
            .or(keys)
            .unify()
            .or(mutants)
            .unify(),
    )
}

fn mutant_named(name: &str) -> Result<Mutant, Rejection> {
    Mutant::from_name(name).ok_or_else(|| {
        reject(KmsError::new(
            ByokErrorCode::NotFound,
            format!("no mutant named {name:?}; GET /_admin/mutants lists them"),
        ))
    })
}

fn no_fault() -> KmsError {
    KmsError::new(ByokErrorCode::NotFound, "no fault with this id")
}

fn clock_json(svc: &KeyService) -> serde_json::Value {
    json!({"now": format_instant(svc.now()), "simulated": svc.clock().is_simulated()})
}

fn wrap(svc: &KeyService, alias: &str, req: Option<WrapBody>) -> Result<Response, Rejection> {
    let data_key: Zeroizing<[u8; DATA_KEY_LEN]> = match req.and_then(|r| r.plaintext_key) {
        Some(b64) => {
            let bytes = Zeroizing::new(STANDARD.decode(b64.as_bytes()).map_err(|_| {
                reject(KmsError::invalid(
                    "plaintext_key must be base64 (standard, padded)",
                ))
            })?);
            let mut key = Zeroizing::new([0u8; DATA_KEY_LEN]);
            if bytes.len() != DATA_KEY_LEN {
                return Err(reject(KmsError::invalid("plaintext_key must be 32 bytes")));
            }
            key.copy_from_slice(&bytes);
            key
        }
        None => Zeroizing::new(svc.ids().bytes::<DATA_KEY_LEN>()),
    };
    let (encrypted_key, key_version) = svc
        .wrap_data_key(alias, &data_key)
        .map_err(|e: KeyError| reject(e))?;
    ok(json!({
        "key_alias": alias,
        "key_version": key_version,
        "encrypted_key": encrypted_key,
        "plaintext_key": STANDARD.encode(&data_key[..]),
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WrapBody {
    plaintext_key: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MinVersionBody {
    min_version: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MutantsBody {
    on: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AdvanceBody {
    secs: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuditQuery {
    after: Option<u64>,
    limit: Option<usize>,
}
