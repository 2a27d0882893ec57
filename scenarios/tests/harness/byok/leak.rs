//! No secret reaches any output of `harness check byok`, in whole or in part: a test-only
//! wrapper in front of customer-kms-sim echoes every secret it sees (the client secret or
//! static key, the tokens issued and forged, the plaintext keys) in its answers, in messages
//! of many lengths (so a secret straddles every place a message could be cut), in JSON and
//! in plain text, in another field and in a header, as itself and base64- or URL-encoded.
//! Every output (standard output and error, the JSON and JUnit files) is then searched for
//! every run of 6 characters of every secret.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use bytes::Bytes;
use scenarios::checks::redact::{MIN_SECRET_RUN, forms};
use warp::Filter;
use warp::http::{HeaderMap, Method, Response};

use super::cli::{everything, harness, standard_flags};
use super::*;

/// What the wrapper saw, to echo back.
#[derive(Default)]
struct Seen {
    secrets: Mutex<Vec<String>>,
    calls: AtomicUsize,
}

impl Seen {
    fn note(&self, s: &str) {
        let mut v = self.secrets.lock().unwrap();
        if !s.is_empty() && !v.iter().any(|x| x == s) {
            v.push(s.to_string());
        }
    }

    fn all(&self) -> Vec<String> {
        self.secrets.lock().unwrap().clone()
    }

    /// The secrets in a request: the bearer token, or the Basic credentials (encoded, and
    /// the secret decoded from them; the client id is no secret). A Basic value that is not
    /// base64 of `id:secret` (`auth.malformed_basic`) holds none.
    fn note_request(&self, headers: &HeaderMap) {
        let Some(auth) = headers.get("authorization").and_then(|v| v.to_str().ok()) else {
            return;
        };
        match auth.split_once(' ') {
            Some(("Bearer", token)) => self.note(token),
            Some(("Basic", b64)) => {
                if let Ok(pair) = STANDARD.decode(b64)
                    && let Ok(pair) = String::from_utf8(pair)
                    && let Some((_, secret)) = pair.split_once(':')
                {
                    self.note(b64);
                    self.note(secret);
                }
            }
            _ => {}
        }
    }

    /// The secrets in a successful answer: tokens and plaintext keys.
    fn note_answer(&self, body: &[u8]) {
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) else {
            return;
        };
        for field in ["access_token", "plaintext_key", "plaintext_dek"] {
            if let Some(s) = v
                .pointer(&format!("/data/{field}"))
                .and_then(|s| s.as_str())
            {
                self.note(s);
            }
        }
    }
}

/// The `n`th echo: one of the secrets seen, as itself, base64 or URL-encoded, after a
/// padding whose length moves the secret across every cut a report could make.
fn echo(seen: &[String], n: usize) -> String {
    let Some(secret) = seen.get(n % seen.len().max(1)) else {
        return String::new();
    };
    let shown = match n % 3 {
        0 => secret.clone(),
        1 => URL_SAFE_NO_PAD.encode(secret),
        _ => secret
            .replace(' ', "%20")
            .replace(':', "%3A")
            .replace('+', "%2B"),
    };
    format!("{} {shown} trailing words", "m".repeat((n * 37) % 420))
}

async fn answer(
    seen: Arc<Seen>,
    inner: SocketAddr,
    method: Method,
    path: String,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Vec<u8>> {
    seen.note_request(&headers);
    let client = reqwest::Client::new();
    let mut r = client.request(method, format!("http://{inner}{path}"));
    for (name, value) in &headers {
        if name != "host" && name != "content-length" {
            r = r.header(name, value);
        }
    }
    let resp = r.body(body).send().await.expect("the key service answers");
    let status = resp.status();
    let resp_headers = resp.headers().clone();
    let body = resp.bytes().await.expect("a body").to_vec();
    if status.is_success() {
        seen.note_answer(&body);
    }
    let n = seen.calls.fetch_add(1, Ordering::SeqCst);
    let echo = echo(&seen.all(), n);
    let mut out = Response::builder().status(status.as_u16());
    for (name, value) in &resp_headers {
        if !matches!(name.as_str(), "content-length" | "transfer-encoding") {
            out = out.header(name, value);
        }
    }
    // Every answer carries the echo in a header; errors also in their body, in turns.
    out = out.header("x-debug-echo", echo.clone());
    let body = if status.is_success() {
        body
    } else {
        let code = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.pointer("/error/code").cloned())
            .unwrap_or_default();
        match n % 3 {
            0 => serde_json::to_vec(&serde_json::json!({"error": {"code": code, "message": echo}}))
                .unwrap(),
            1 => serde_json::to_vec(&serde_json::json!({
                "error": {"code": code, "message": "refused"},
                "debug": {"request": echo},
            }))
            .unwrap(),
            _ => {
                out = out.header("content-type", "text/plain; charset=utf-8");
                echo.into_bytes()
            }
        }
    };
    out.body(body).unwrap()
}

/// The wrapper on a free port, in front of `inner`.
async fn spawn_echo(inner: SocketAddr) -> (SocketAddr, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let s = seen.clone();
    let route = warp::method()
        .and(warp::path::full())
        .and(warp::header::headers_cloned())
        .and(warp::body::bytes())
        .then(
            move |method: Method, path: warp::path::FullPath, headers: HeaderMap, body: Bytes| {
                answer(
                    s.clone(),
                    inner,
                    method,
                    path.as_str().to_string(),
                    headers,
                    body,
                )
            },
        );
    tokio::spawn(warp::serve(route).incoming(listener).run());
    (addr, seen)
}

/// Every run of [`MIN_SECRET_RUN`] characters of `secret` and its encoded forms, and of its
/// bytes (and, for a base64 key, the key's bytes) in hex; for the secrets made during the run
/// (random text), only the runs with a letter and a digit, so that fixed words of the report
/// cannot match by chance.
fn runs(secret: &str, random: bool) -> Vec<String> {
    let mut texts: Vec<String> = forms(secret)
        .into_iter()
        .map(|f| f.trim_end_matches('=').to_string())
        .collect();
    let hex_run = |bytes: &[u8]| -> Vec<String> {
        let h = hex::encode(bytes);
        (0..h.len().saturating_sub(2 * MIN_SECRET_RUN - 1))
            .step_by(2)
            .map(|i| h[i..i + 2 * MIN_SECRET_RUN].to_string())
            .collect()
    };
    let mut out = hex_run(secret.as_bytes());
    if let Ok(key) = STANDARD.decode(secret)
        && key.len() >= 16
    {
        out.extend(hex_run(&key));
    }
    for form in texts.drain(..) {
        let chars: Vec<char> = form.chars().collect();
        for w in chars.windows(MIN_SECRET_RUN) {
            let mixed =
                w.iter().any(char::is_ascii_alphabetic) && w.iter().any(char::is_ascii_digit);
            if !random || mixed {
                out.push(w.iter().collect());
            }
        }
    }
    out
}

/// Asserts that no run of any of the secrets (`fixed`: the settings' own, `seen`: made during
/// the run) stands in `all` (every output of a run).
pub(super) fn assert_no_secret(all: &str, fixed: &[&str], seen: &[String]) {
    let leaks = secret_runs_in(all, fixed, seen);
    assert!(
        leaks.is_empty(),
        "parts of secrets in the outputs: {leaks:?}"
    );
}

/// The runs of the secrets (`fixed`, `seen`) that stand in `all`.
pub(super) fn secret_runs_in(all: &str, fixed: &[&str], seen: &[String]) -> Vec<String> {
    let mut secrets: Vec<(String, bool)> = fixed
        .iter()
        .map(|s| (s.to_string(), false))
        .chain(seen.iter().map(|s| (s.clone(), true)))
        .collect();
    secrets.sort();
    secrets.dedup();
    // Every run of every secret, looked up at each place of the outputs (a run of hex, twice
    // as long, in either case): the outputs are large, the runs few.
    let wanted: HashSet<String> = secrets
        .iter()
        .flat_map(|(s, random)| runs(s, *random))
        .collect();
    let lower = all.to_ascii_lowercase();
    let mut leaks: Vec<String> = Vec::new();
    for (text, chars) in [(all, MIN_SECRET_RUN), (lower.as_str(), 2 * MIN_SECRET_RUN)] {
        let starts: Vec<usize> = text
            .char_indices()
            .map(|(i, _)| i)
            .chain([text.len()])
            .collect();
        for w in starts.windows(chars + 1) {
            let run = &text[w[0]..w[chars]];
            if wanted.contains(run) {
                leaks.push(run.to_string());
            }
        }
    }
    leaks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_part_of_any_secret_reaches_any_output_however_the_service_echoes_it() {
    let kms = spawn_kms(config()).await;
    let (echo_addr, seen) = spawn_echo(kms.addr).await;
    let dir = tempfile::tempdir().unwrap();
    let mut flags = standard_flags(&kms, dir.path());
    let url = flags.iter().position(|f| f == "--base-url").unwrap() + 1;
    flags[url] = format!("http://{echo_addr}");
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let plaintext = plaintext();
    let out = harness(
        &flags,
        &[
            ("BYOK_CLIENT_SECRET", SECRET),
            ("BYOK_EXPECTED_PLAINTEXT", plaintext.as_str()),
        ],
    )
    .await;
    let all = everything(&out, dir.path());
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains("FAIL  errors.no_secret"),
        "the echoes were seen"
    );
    let seen = seen.all();
    assert!(
        seen.len() >= 8,
        "tokens, forged tokens, keys: {}",
        seen.len()
    );
    assert_no_secret(&all, &[SECRET, &plaintext], &seen);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_part_of_a_static_key_reaches_any_output() {
    let kms = spawn_kms(config()).await;
    let (echo_addr, seen) = spawn_echo(kms.addr).await;
    let dir = tempfile::tempdir().unwrap();
    let out_json = dir.path().join("out/byok.json").display().to_string();
    let out_xml = dir.path().join("out/byok.xml").display().to_string();
    let url = format!("http://{echo_addr}");
    let out = harness(
        &[
            "--base-url",
            &url,
            "--partner",
            PARTNER,
            "--key-alias",
            ALIAS,
            "--use-rotate",
            "--calls",
            "20",
            "--latency-budget-ms",
            "1000",
            "--json",
            &out_json,
            "--junit",
            &out_xml,
        ],
        &[("BYOK_API_KEY", API_KEY)],
    )
    .await;
    let all = everything(&out, dir.path());
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert_no_secret(&all, &[API_KEY], &seen.all());
}
