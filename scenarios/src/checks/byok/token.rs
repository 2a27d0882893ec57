//! The `token` group: the access token from the first `/auth` keeps working until near its
//! expiry, is refused once expired (on `/decrypt-key`, and on `/rotate-key` with
//! `--use-rotate`), and then `/auth` answers a new token that works. They wait for the
//! token's lifetime, so they run only when it fits in `--expiry-wait-secs`; they run beside
//! every other check.

use std::time::Duration;

use super::context::{Case, Ctx, TargetKey, Token, Want, judge_cases, judge_status, skip_all};
use super::defs::*;
use super::probe::{Call, Endpoint, decrypt_body};
use super::settings::Credentials;
use crate::checks::Check;

/// How long after `exp` the expired token is sent: a JWT's `exp` has one-second resolution.
const AFTER_EXPIRY: Duration = Duration::from_millis(1500);

/// The group's checks for `token` (the first `/auth` token) on `target`.
pub(super) async fn checks(ctx: &Ctx, token: Option<Token>, target: &TargetKey) -> Vec<Check> {
    if !ctx.runs("token") {
        return Vec::new();
    }
    let group = [TOKEN_REUSE, TOKEN_EXPIRED, TOKEN_RENEWED];
    if let Credentials::ApiKey(_) = ctx.s.credentials {
        return skip_all(&group, "a static API key does not expire");
    }
    let Some(token) = token else {
        return skip_all(&group, "no access token (see auth.status)");
    };
    let Some(expires_in) = token.expires_in else {
        return skip_all(
            &group,
            "expires_in is not a positive integer (see auth.expires_in)",
        );
    };
    let needed = expires_in + 2;
    if needed > ctx.s.expiry_wait_secs {
        let reason = format!(
            "the token lives {expires_in} s: --expiry-wait-secs {needed} or more waits for \
             its expiry"
        );
        return skip_all(&group, &reason);
    }
    if let super::time::CheckTime::Wall = ctx.s.time {
        eprintln!(
            "check byok: the token checks wait about {needed} s for the access token's expiry"
        );
    }
    let call = || {
        Call::post(Endpoint::DecryptKey)
            .authorization(format!("Bearer {}", token.value))
            .json(&decrypt_body(&ctx.s.key_alias, &target.encrypted_key))
    };
    let lifetime = Duration::from_secs(expires_in);
    let margin = Duration::from_secs(Token::margin_secs(expires_in).min(expires_in));
    ctx.s.time.until(&token.obtained, lifetime - margin).await;
    let reuse = ctx.probe.send(TOKEN_REUSE.id, call()).await;
    ctx.s
        .time
        .until(&token.obtained, lifetime + AFTER_EXPIRY)
        .await;
    let rotate = ctx.s.use_rotate.then(|| {
        Call::post(Endpoint::RotateKey)
            .authorization(format!("Bearer {}", token.value))
            .json(&serde_json::json!({"data": {"key_alias": ctx.s.key_alias}}))
    });
    let (expired, expired_rotate) = tokio::join!(ctx.probe.send(TOKEN_EXPIRED.id, call()), async {
        match rotate {
            Some(c) => Some(ctx.probe.send(TOKEN_EXPIRED.id, c).await),
            None => None,
        }
    });
    let renewed = renewed(ctx, target).await;
    let r = "POST /decrypt-key";
    let mut reuse = judge_status(&TOKEN_REUSE, r, &reuse, Want::Status(200));
    reuse.evidence = reuse
        .evidence
        .with("token_age_s", (lifetime - margin).as_secs())
        .with("expires_in", expires_in);
    let mut cases = vec![Case::new("on /decrypt-key", expired, Want::Status(401))];
    if let Some(r) = expired_rotate {
        cases.push(Case::new("on /rotate-key", r, Want::Status(401)));
    }
    let mut expired = judge_cases(&TOKEN_EXPIRED, cases);
    expired.evidence = expired
        .evidence
        .with("token_age_s", (lifetime + AFTER_EXPIRY).as_secs_f64())
        .with("expires_in", expires_in);
    vec![reuse, expired, renewed]
}

/// `token.renewed`: `/auth` after the first token expired, and the token it answers used at
/// once on `/decrypt-key`.
async fn renewed(ctx: &Ctx, target: &TargetKey) -> Check {
    let Some(call) = ctx.auth_call() else {
        return Check::skip(&TOKEN_RENEWED, "a static API key does not expire");
    };
    let asked = ctx.s.time.mark();
    let auth = ctx.probe.send(TOKEN_RENEWED.id, call).await;
    let token = auth
        .as_ref()
        .ok()
        .and_then(|ex| super::context::token_of(ex, asked));
    let mut cases = vec![Case::new(
        "/auth once the token expired",
        auth,
        Want::Status(200),
    )];
    if let Some(t) = token {
        let used = ctx
            .probe
            .send(
                TOKEN_RENEWED.id,
                Call::post(Endpoint::DecryptKey)
                    .authorization(format!("Bearer {}", t.value))
                    .json(&decrypt_body(&ctx.s.key_alias, &target.encrypted_key)),
            )
            .await;
        cases.push(Case::new(
            "its token on /decrypt-key",
            used,
            Want::Status(200),
        ));
    }
    judge_cases(&TOKEN_RENEWED, cases)
}
