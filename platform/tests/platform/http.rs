//! The HTTP layer as clients see it on raw connections: keep-alive after early answers,
//! slow clients timed out, the connection cap, and refusals of malformed requests in the
//! error shape (never an empty body).

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::*;

/// Longest wait for something that normally takes milliseconds.
const DEADLINE: Duration = Duration::from_secs(30);

/// One parsed response.
#[derive(Debug)]
struct Resp {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    }

    /// Whether the answer says the connection closes after it.
    fn closes(&self) -> bool {
        self.header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): {}\n{}",
                self.head,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// Asserts the platform's error shape with this status and code.
    fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(self.status, status, "{}", self.head);
        assert!(
            self.header("content-type")
                .is_some_and(|t| t.starts_with("application/json")),
            "{}",
            self.head
        );
        let v = self.json();
        assert_eq!(v["error"]["code"], code, "{v}");
        assert!(v["error"]["type"].is_string(), "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{v}"
        );
    }
}

/// A raw HTTP/1.1 client connection.
struct Raw {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Raw {
    async fn connect(app: &TestApp) -> Raw {
        Raw {
            s: TcpStream::connect(app.addr).await.unwrap(),
            buf: Vec::new(),
        }
    }

    /// Connects and sends `bytes` at once, on the calling thread (no scheduling of the test's
    /// tasks between the two), so that a short header timeout measures the server only.
    fn connect_sending(app: &TestApp, bytes: &[u8]) -> Raw {
        use std::io::Write;
        let mut s = std::net::TcpStream::connect(app.addr).unwrap();
        s.write_all(bytes).unwrap();
        s.set_nonblocking(true).unwrap();
        Raw {
            s: TcpStream::from_std(s).unwrap(),
            buf: Vec::new(),
        }
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).await.unwrap();
    }

    /// Reads more bytes; false at the end of the stream (or a reset).
    async fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 16 * 1024];
        let n = tokio::time::timeout(DEADLINE, self.s.read(&mut chunk))
            .await
            .expect("the server answers or closes within the deadline")
            .unwrap_or(0);
        self.buf.extend_from_slice(&chunk[..n]);
        n > 0
    }

    /// The next response (by `Content-Length`), or `None` when the connection ends first.
    async fn response(&mut self) -> Option<Resp> {
        let end = loop {
            if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break end;
            }
            if !self.fill().await {
                return None;
            }
        };
        let head = String::from_utf8_lossy(&self.buf[..end]).to_string();
        let len: usize = head
            .lines()
            .skip(1)
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim()
                    .eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .unwrap_or(0);
        while self.buf.len() < end + 4 + len {
            assert!(
                self.fill().await,
                "the connection ended inside a body: {head}"
            );
        }
        let body = self.buf[end + 4..end + 4 + len].to_vec();
        self.buf.drain(..end + 4 + len);
        Some(Resp {
            status: head[9..12].parse().unwrap(),
            head,
            body,
        })
    }

    /// Whether the server closes the connection without sending anything more.
    async fn ends_silently(&mut self) -> bool {
        !self.fill().await && self.buf.is_empty()
    }
}

fn request(method: &str, path: &str, key: Option<&str>, body: &str) -> (Vec<u8>, Vec<u8>) {
    let key = key.map_or(String::new(), |k| format!("X-API-Key: {k}\r\n"));
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: test\r\n{key}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    (head.into_bytes(), body.as_bytes().to_vec())
}

fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: test\r\nX-API-Key: {KEY}\r\n\r\n").into_bytes()
}

#[tokio::test]
async fn an_answer_given_before_the_body_arrives_says_the_connection_closes() {
    let app = spawn_app().await;
    let body = campaign_body().to_string();
    let (head, body) = request("POST", &campaigns_path(), None, &body);
    let mut raw = Raw::connect(&app).await;
    // Only the head: the platform refuses without the body.
    raw.send(&head).await;
    let r = raw.response().await.expect("an answer");
    r.assert_error(401, "missing_api_key");
    if r.closes() {
        assert!(raw.ends_silently().await, "closed as announced");
    } else {
        // Not announced: the connection must then carry the next request.
        raw.send(&body).await;
        raw.send(&get(&campaigns_path())).await;
        let next = raw
            .response()
            .await
            .expect("the connection was closed after an answer that did not say Connection: close");
        assert_eq!(next.status, 200, "{}", next.head);
    }
}

#[tokio::test]
async fn a_large_unread_body_gets_connection_close_and_the_answer_arrives_whole() {
    let app = spawn_app().await;
    let big = format!("{{\"pad\": \"{}\"}}", "x".repeat(200 * 1024));
    let (head, body) = request("POST", &campaigns_path(), Some("wrong-key"), &big);
    let mut raw = Raw::connect(&app).await;
    raw.send(&head).await;
    raw.send(&body).await;
    let r = raw.response().await.expect("an answer");
    r.assert_error(401, "invalid_api_key");
    assert!(r.closes(), "{}", r.head);
}

#[tokio::test]
async fn refusals_on_a_keep_alive_connection_never_break_the_next_request() {
    let app = spawn_with(|mut c| {
        c.max_body_bytes = 2048;
        c
    })
    .await;
    let small = campaign_body().to_string();
    let too_large = format!("{{\"pad\": \"{}\"}}", "x".repeat(4096));
    let refusals: Vec<(&str, String, Option<&str>, &str, u16)> = vec![
        ("POST", campaigns_path(), None, small.as_str(), 401),
        ("POST", campaigns_path(), Some("nope"), small.as_str(), 401),
        (
            "POST",
            "/no/such/route".into(),
            Some(KEY),
            small.as_str(),
            404,
        ),
        (
            "POST",
            deployments_path(),
            Some(KEY),
            too_large.as_str(),
            413,
        ),
        ("PUT", campaigns_path(), Some(KEY), small.as_str(), 405),
    ];
    let mut raw = Raw::connect(&app).await;
    let (mut kept, mut closed) = (0, 0);
    for round in 0..60 {
        let (method, path, key, body, status) = &refusals[round % refusals.len()];
        // Head and body in two writes, as many clients send them.
        let (head, body) = request(method, path, *key, body);
        raw.send(&head).await;
        raw.send(&body).await;
        let r = raw
            .response()
            .await
            .unwrap_or_else(|| panic!("round {round}: the connection broke before the answer"));
        assert_eq!(r.status, *status, "round {round}: {}", r.head);
        assert!(!r.body.is_empty(), "round {round}: an empty body");
        let announced = r.closes();
        raw.send(&get(&campaigns_path())).await;
        match raw.response().await {
            Some(next) => {
                assert!(
                    !announced,
                    "round {round}: answered after Connection: close"
                );
                assert_eq!(next.status, 200, "round {round}: {}", next.head);
                kept += 1;
            }
            None => {
                assert!(
                    announced,
                    "round {round}: closed after an answer ({}) that did not announce it",
                    r.status
                );
                closed += 1;
                raw = Raw::connect(&app).await;
            }
        }
    }
    // Small bodies are drained: the connection normally carries on.
    assert!(kept > 0, "kept {kept}, closed {closed}");
}

#[tokio::test]
async fn a_head_that_stalls_is_answered_408_and_an_idle_connection_closes() {
    let app = spawn_with(|mut c| {
        c.header_read_timeout_ms = 1000;
        c
    })
    .await;
    let mut raw = Raw::connect_sending(&app, b"GET /openapi.json HTTP/1.1\r\nHost: test\r\n");
    let r = raw.response().await.expect("a 408 before the close");
    r.assert_error(408, "request_timeout");
    assert!(r.closes());
    assert!(raw.ends_silently().await);
    // A connection that sends nothing is closed without a word.
    let mut idle = Raw::connect(&app).await;
    assert!(idle.ends_silently().await);
    // So is a keep-alive connection idle after a request.
    let mut used = Raw::connect_sending(&app, &get(&campaigns_path()));
    assert_eq!(used.response().await.unwrap().status, 200);
    assert!(used.ends_silently().await);
}

#[tokio::test]
async fn a_body_that_stalls_is_answered_408() {
    let app = spawn_with(|mut c| {
        c.body_read_timeout_ms = 300;
        c
    })
    .await;
    let mut raw = Raw::connect(&app).await;
    let (head, _) = request("POST", &campaigns_path(), Some(KEY), &"x".repeat(100));
    raw.send(&head).await;
    raw.send(b"{\"name\": ").await;
    let r = raw.response().await.expect("a 408");
    r.assert_error(408, "request_timeout");
    assert!(r.closes());
    assert!(raw.ends_silently().await);
    let (_, list) = app.get(&campaigns_path()).await;
    assert_eq!(list["total"], 0, "nothing stored");
}

/// A client that sends a byte now and then, never pausing for the read timeout, is cut off
/// by the least average rate: 408 long before its body could end.
#[tokio::test]
async fn a_body_that_trickles_is_answered_408() {
    let app = spawn_with(|mut c| {
        c.body_read_timeout_ms = 3_000;
        c.body_min_bytes_per_sec = 100;
        c
    })
    .await;
    let stream = TcpStream::connect(app.addr).await.unwrap();
    let (mut rd, mut wr) = stream.into_split();
    let (head, _) = request("POST", &campaigns_path(), Some(KEY), &"x".repeat(10_000));
    wr.write_all(&head).await.unwrap();
    // A byte every 50 ms: 20 bytes per second, never a pause of 3 s; the whole 10,000 bytes
    // would take 500 s. The deadline (3 s plus 10 ms per byte) passes after about 4 s.
    let trickle = tokio::spawn(async move {
        for _ in 0..2_000 {
            if wr.write_all(b" ").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), rd.read_to_end(&mut answer))
        .await
        .expect("an answer and a close within a minute")
        .ok();
    trickle.abort();
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(
        text.to_ascii_lowercase().contains("connection: close"),
        "{text}"
    );
    let body = &text[text.find("\r\n\r\n").unwrap() + 4..];
    let v: Value = serde_json::from_str(body).unwrap();
    assert_eq!(v["error"]["code"], "request_timeout", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("too slowly") && m.contains("100 bytes")),
        "{v}"
    );
    let (_, list) = app.get(&campaigns_path()).await;
    assert_eq!(list["total"], 0, "nothing stored");
}

/// A chunked body whose framing is broken is the client's HTTP, not its JSON: 400 in the
/// error shape, and the connection closes.
#[tokio::test]
async fn a_broken_chunked_body_is_answered_400() {
    let app = spawn_app().await;
    let mut raw = Raw::connect(&app).await;
    raw.send(
        format!(
            "POST {} HTTP/1.1\r\nHost: test\r\nX-API-Key: {KEY}\r\nContent-Type: \
             application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{{}}\r\n",
            campaigns_path()
        )
        .as_bytes(),
    )
    .await;
    let r = raw.response().await.expect("a 400");
    r.assert_error(400, "bad_request");
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("chunked")),
        "{}",
        r.json()
    );
    assert!(r.closes());
    assert!(raw.ends_silently().await);
}

#[tokio::test]
async fn connections_past_the_cap_wait_for_a_free_slot() {
    let app = spawn_with(|mut c| {
        c.max_connections = 2;
        c
    })
    .await;
    // Two connections, each proven accepted by a request, held open.
    let mut first = Raw::connect(&app).await;
    first.send(&get(&campaigns_path())).await;
    assert_eq!(first.response().await.unwrap().status, 200);
    let mut second = Raw::connect(&app).await;
    second.send(&get(&campaigns_path())).await;
    assert_eq!(second.response().await.unwrap().status, 200);
    // The third waits in the listen queue...
    let mut third = Raw::connect(&app).await;
    third.send(&get(&campaigns_path())).await;
    let early = tokio::time::timeout(Duration::from_millis(300), third.response()).await;
    assert!(early.is_err(), "served past the cap: {early:?}");
    // ... until a slot frees.
    drop(first);
    let r = third.response().await.expect("served once a slot is free");
    assert_eq!(r.status, 200);
    drop(second);
}

/// Sends `bytes` on a new connection; answers the response, if any, before the close.
async fn exchange(app: &TestApp, bytes: &[u8]) -> Option<Resp> {
    let mut raw = Raw::connect(app).await;
    // The server may close before it has read everything (a head too large).
    let _ = raw.s.write_all(bytes).await;
    raw.response().await
}

#[tokio::test]
async fn requests_the_http_layer_refuses_are_answered_in_the_error_shape() {
    let app = spawn_app().await;
    let cases: Vec<(&str, Vec<u8>, u16, &str)> =
        vec![
        ("no request line", b"GARBAGE\r\n\r\n".to_vec(), 400, "bad_request"),
        (
            "a header without a colon",
            b"GET /openapi.json HTTP/1.1\r\nHost: test\r\nNot a header\r\n\r\n".to_vec(),
            400,
            "bad_request",
        ),
        (
            "a space in the target",
            b"GET /a b HTTP/1.1\r\nHost: test\r\n\r\n".to_vec(),
            400,
            "bad_request",
        ),
        (
            "two different lengths",
            b"POST /x HTTP/1.1\r\nHost: test\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"
                .to_vec(),
            400,
            "bad_request",
        ),
        (
            "a 100 KB target",
            format!("GET /{} HTTP/1.1\r\nHost: test\r\n\r\n", "a".repeat(100_000)).into_bytes(),
            414,
            "uri_too_long",
        ),
        (
            "a 9 KB target",
            format!(
                "GET {}?search={} HTTP/1.1\r\nHost: test\r\nX-API-Key: {KEY}\r\n\r\n",
                campaigns_path(),
                "a".repeat(9 * 1024)
            )
            .into_bytes(),
            414,
            "uri_too_long",
        ),
        (
            "101 header fields",
            format!(
                "GET /openapi.json HTTP/1.1\r\nHost: test\r\n{}\r\n",
                (0..100).map(|i| format!("X-F{i}: v\r\n")).collect::<String>()
            )
            .into_bytes(),
            431,
            "request_header_fields_too_large",
        ),
        (
            "a 70 KB header field",
            format!(
                "GET /openapi.json HTTP/1.1\r\nHost: test\r\nX-Big: {}\r\n\r\n",
                "v".repeat(70 * 1024)
            )
            .into_bytes(),
            431,
            "request_header_fields_too_large",
        ),
    ];
    for (what, bytes, status, code) in cases {
        let r = exchange(&app, &bytes)
            .await
            .unwrap_or_else(|| panic!("{what}: no answer"));
        r.assert_error(status, code);
        assert!(r.closes(), "{what}: {}", r.head);
    }
    // The platform still serves.
    let (s, _) = app.get(&campaigns_path()).await;
    assert_eq!(s, 200);
    // Exactly as many header fields as allowed is no refusal.
    let most = format!(
        "GET /openapi.json HTTP/1.1\r\nHost: test\r\n{}\r\n",
        (0..contracts::validate::limits::HTTP_MAX_HEADERS - 1)
            .map(|i| format!("X-F{i}: v\r\n"))
            .collect::<String>()
    );
    let r = exchange(&app, most.as_bytes()).await.expect("an answer");
    assert_eq!(r.status, 200, "{}", r.head);
}
