//! The `token` group: the access token from the first `/auth` keeps working until near its
//! expiry and is refused once expired. Both wait for the token's lifetime, so they run only
//! when it fits in `--expiry-wait-secs`; they run beside every other check.

use std::time::Duration;

use super::context::{Ctx, TargetKey, Token, Want, judge_status, skip_all};
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
    let both = [TOKEN_REUSE, TOKEN_EXPIRED];
    if let Credentials::ApiKey(_) = ctx.s.credentials {
        return skip_all(&both, "a static API key does not expire");
    }
    let Some(token) = token else {
        return skip_all(&both, "no access token (see auth.status)");
    };
    let Some(expires_in) = token.expires_in else {
        return skip_all(
            &both,
            "expires_in is not a positive integer (see auth.expires_in)",
        );
    };
    let needed = expires_in + 2;
    if needed > ctx.s.expiry_wait_secs {
        let reason = format!(
            "the token lives {expires_in} s: --expiry-wait-secs {needed} or more waits for \
             its expiry"
        );
        return skip_all(&both, &reason);
    }
    if let super::time::CheckTime::Wall = ctx.s.time {
        eprintln!(
            "check byok: token.reuse and token.expired wait about {needed} s for the access \
             token's expiry"
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
    if let Ok(ex) = &reuse {
        ctx.note_plaintexts(ex);
    }
    ctx.s
        .time
        .until(&token.obtained, lifetime + AFTER_EXPIRY)
        .await;
    let expired = ctx.probe.send(TOKEN_EXPIRED.id, call()).await;
    if let Ok(ex) = &expired {
        ctx.note_plaintexts(ex);
    }
    let r = "POST /decrypt-key";
    let mut reuse = judge_status(&TOKEN_REUSE, r, &reuse, Want::Status(200));
    reuse.evidence = reuse
        .evidence
        .with("token_age_s", (lifetime - margin).as_secs())
        .with("expires_in", expires_in);
    let mut expired = judge_status(&TOKEN_EXPIRED, r, &expired, Want::Status(401));
    expired.evidence = expired
        .evidence
        .with("token_age_s", (lifetime + AFTER_EXPIRY).as_secs_f64())
        .with("expires_in", expires_in);
    vec![reuse, expired]
}
