//! Webhook signing and delivery.
//!
//! Every event is a JSON POST with two headers: the Unix-seconds timestamp
//! (`x-webhook-timestamp` by default) and the hex HMAC-SHA256 of `{timestamp}.{raw body}`
//! under the platform instance's webhook secret (one for every workspace) (`x-webhook-signature`). A receiver recomputes the
//! HMAC over the exact bytes it received and compares in constant time ([`verify`]).
//!
//! A try that fails (no connection, a timeout, an answer other than 2xx) is tried again after
//! an exponential backoff ([`backoff`]) on the injected clock, up to a bound of tries; the
//! engine schedules the tries and records each one.

use std::time::Duration as StdDuration;

use chrono::Duration;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::config::PlatformConfig;

/// `hex(HMAC-SHA256(secret, "{timestamp}.{body}"))`.
pub(crate) fn signature(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

/// Whether `sig` (hex) is the signature of `body` at `timestamp` under `secret`, compared
/// in constant time. What a receiver does.
pub fn verify(secret: &[u8], timestamp: i64, body: &[u8], sig: &str) -> bool {
    let Ok(given) = hex::decode(sig) else {
        return false;
    };
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac.verify_slice(&given).is_ok()
}

/// The wait before try `tries + 1` after `tries` failed tries: `initial * 2^(tries - 1)`,
/// at most `max`.
pub(crate) fn backoff(tries: u32, initial: Duration, max: Duration) -> Duration {
    let exp = tries.saturating_sub(1).min(30);
    let wait = initial.checked_mul(1i32 << exp).unwrap_or(max);
    wait.min(max)
}

/// How webhooks are signed and sent.
#[derive(Debug, Clone)]
pub struct WebhookSettings {
    /// The signing secret.
    pub(crate) secret: Vec<u8>,
    /// Header carrying the signature.
    pub(crate) signature_header: String,
    /// Header carrying the timestamp.
    pub(crate) timestamp_header: String,
    /// Tries before a delivery is given up.
    pub(crate) max_tries: u32,
    /// Wait after the first failed try; doubled after each further one.
    pub(crate) initial_backoff: Duration,
    /// The longest wait between tries.
    pub(crate) max_backoff: Duration,
    /// How long one try may take (wall time).
    pub(crate) timeout: StdDuration,
}

impl WebhookSettings {
    /// The settings of `config`, signing with `secret`.
    pub(crate) fn new(config: &PlatformConfig, secret: Vec<u8>) -> Self {
        WebhookSettings {
            secret,
            signature_header: config.webhook_signature_header.clone(),
            timestamp_header: config.webhook_timestamp_header.clone(),
            max_tries: config.webhook_max_tries.max(1),
            initial_backoff: Duration::milliseconds(config.webhook_initial_backoff_ms as i64),
            max_backoff: Duration::milliseconds(config.webhook_max_backoff_ms as i64),
            timeout: StdDuration::from_millis(config.webhook_timeout_ms),
        }
    }
}

/// The result of one try.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TryResult {
    /// A 2xx answer.
    Delivered {
        /// Its status.
        status: u16,
    },
    /// Anything else.
    Failed {
        /// The status, when there was an answer.
        status: Option<u16>,
        /// What went wrong.
        error: String,
    },
}

/// Sends webhook tries.
#[derive(Debug, Clone)]
pub struct WebhookClient {
    http: reqwest::Client,
    settings: WebhookSettings,
}

impl WebhookClient {
    /// A client with these settings.
    pub(crate) fn new(settings: WebhookSettings) -> Self {
        let http = reqwest::Client::builder()
            .timeout(settings.timeout)
            .user_agent(concat!("voice-platform-mock/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("an HTTP client builds");
        WebhookClient { http, settings }
    }

    /// The settings.
    pub(crate) fn settings(&self) -> &WebhookSettings {
        &self.settings
    }

    /// POSTs `body` to `url`, signed for `timestamp` (Unix seconds of the injected clock).
    pub(crate) async fn send(&self, url: &str, body: Vec<u8>, timestamp: i64) -> TryResult {
        let sig = signature(&self.settings.secret, timestamp, &body);
        let result = self
            .http
            .post(url)
            .header("content-type", "application/json")
            .header(&self.settings.timestamp_header, timestamp.to_string())
            .header(&self.settings.signature_header, sig)
            .body(body)
            .send()
            .await;
        match result {
            Ok(r) if r.status().is_success() => TryResult::Delivered {
                status: r.status().as_u16(),
            },
            Ok(r) => TryResult::Failed {
                status: Some(r.status().as_u16()),
                error: format!("answered HTTP {}", r.status().as_u16()),
            },
            Err(e) => TryResult::Failed {
                status: None,
                error: if e.is_timeout() {
                    format!("no answer within {} ms", self.settings.timeout.as_millis())
                } else if e.is_connect() {
                    "could not connect".to_string()
                } else {
                    format!("request failed: {e}")
                },
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_cover_the_timestamp_and_the_exact_body() {
        let s = signature(b"whsec", 1_772_452_800, b"{\"a\":1}");
        assert_eq!(s.len(), 64);
        assert!(verify(b"whsec", 1_772_452_800, b"{\"a\":1}", &s));
        assert!(!verify(b"whsec", 1_772_452_801, b"{\"a\":1}", &s));
        assert!(!verify(b"whsec", 1_772_452_800, b"{\"a\": 1}", &s));
        assert!(!verify(b"other", 1_772_452_800, b"{\"a\":1}", &s));
        assert!(!verify(b"whsec", 1_772_452_800, b"{\"a\":1}", "zz"));
        // A known answer, from Python's hmac: HMAC-SHA256("key", "1.body").
        assert_eq!(
            signature(b"key", 1, b"body"),
            "91b5374b153842ad05b2c4eab9349b8321b14703165bd3fb8b034dfb8be98ae5"
        );
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let i = Duration::seconds(1);
        let m = Duration::minutes(1);
        let waits: Vec<i64> = (1..=8).map(|t| backoff(t, i, m).num_seconds()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60]);
    }
}
