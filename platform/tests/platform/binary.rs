//! The `platform serve` binary: port 0, the banner, a clean stop on Ctrl-C that finishes
//! the request in flight, a restart over the same file that keeps what was answered, and a
//! connection cap that stays below the process's limit of open files.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration as StdDuration;

use serde_json::Value;

use super::helpers::*;

struct Running {
    child: Child,
    addr: String,
    banner: Vec<String>,
    rest: BufReader<std::process::ChildStdout>,
}

fn start(db: &std::path::Path) -> Running {
    start_with(db, Stdio::null(), |c| c)
}

/// Starts `platform serve` over `db` with `stderr` as its standard error and `edit` applied
/// to the command (more flags, environment).
fn start_with(
    db: &std::path::Path,
    stderr: Stdio,
    edit: impl FnOnce(&mut Command) -> &mut Command,
) -> Running {
    launch(
        Command::new(env!("CARGO_BIN_EXE_platform")),
        db,
        stderr,
        edit,
    )
}

/// Starts `command` (the platform binary, or a shell that executes it) with the arguments
/// of `platform serve` over `db`, and reads its banner.
fn launch(
    mut command: Command,
    db: &std::path::Path,
    stderr: Stdio,
    edit: impl FnOnce(&mut Command) -> &mut Command,
) -> Running {
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--seed", "3"])
        .arg("--database")
        .arg(db)
        .args(["--api-key", &format!("{ORG}/{WS}={KEY}:alice")])
        .stdout(Stdio::piped())
        .stderr(stderr);
    let mut child = edit(&mut command)
        .spawn()
        .expect("the platform binary starts");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut banner = Vec::new();
    loop {
        let mut line = String::new();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "serve exited early: {banner:?}"
        );
        let line = line.trim_end().to_string();
        let done = line.starts_with("OpenAPI document:");
        banner.push(line);
        if done {
            break;
        }
    }
    let addr = banner[0]
        .strip_prefix("platform listening on http://")
        .unwrap_or_else(|| panic!("first line: {:?}", banner[0]))
        .to_string();
    Running {
        child,
        addr,
        banner,
        rest: out,
    }
}

fn interrupt(r: &Running) {
    let pid = r.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
}

fn finish(mut r: Running) -> (std::process::ExitStatus, String) {
    let status = r.child.wait().unwrap();
    let mut rest = String::new();
    r.rest.read_to_string(&mut rest).unwrap();
    (status, rest)
}

/// Reads one HTTP/1.1 response (by `Content-Length`): status and body.
fn read_response(s: &mut TcpStream) -> (u16, Value) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "connection closed before an answer");
        buf.extend_from_slice(&chunk[..n]);
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_string();
        let len: usize = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .unwrap_or(0);
        while buf.len() < end + 4 + len {
            let n = s.read(&mut chunk).unwrap();
            assert!(n > 0, "connection closed inside the body");
            buf.extend_from_slice(&chunk[..n]);
        }
        let status = head[9..12].parse().unwrap();
        return (
            status,
            serde_json::from_slice(&buf[end + 4..end + 4 + len]).unwrap(),
        );
    }
}

/// Reads one response head (up to the blank line), for an interim `100 Continue`.
fn read_head(s: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        let n = s.read(&mut byte).unwrap();
        assert!(n > 0, "connection closed before a head");
        buf.push(byte[0]);
    }
    String::from_utf8_lossy(&buf).into_owned()
}

fn request(method: &str, addr: &str, path: &str, body: &str) -> String {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nX-API-Key: {KEY}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[test]
fn serve_on_port_0_finishes_the_request_in_flight_on_ctrl_c_and_keeps_it_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db");
    let first = start(&db);
    assert!(!first.addr.ends_with(":0"), "the real port: {}", first.addr);
    let banner = first.banner.join("\n");
    assert!(
        banner.contains(&format!("database: {}", db.display())),
        "{banner}"
    );
    assert!(banner.contains("API keys: 1 configured"), "{banner}");
    assert!(banner.contains("seed: 3"), "{banner}");
    assert!(banner.contains("clock: real"), "{banner}");

    // A create whose body is only half sent when Ctrl-C arrives. `Expect: 100-continue`
    // makes the platform say when the request has reached its handler (it asks for the
    // body), and the listener closing says when the signal was taken: no sleeping on either.
    let body = deployment_body("Front desk", "+14155550100").to_string();
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nX-API-Key: {KEY}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        deployments_path(),
        first.addr,
        body.len()
    );
    let (half, rest) = body.split_at(body.len() / 2);
    let mut s = TcpStream::connect(&first.addr).unwrap();
    s.set_read_timeout(Some(StdDuration::from_secs(30)))
        .unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let interim = read_head(&mut s);
    assert!(interim.starts_with("HTTP/1.1 100"), "{interim}");
    s.write_all(half.as_bytes()).unwrap();
    interrupt(&first);
    let watch = contracts::clock::Stopwatch::start();
    while TcpStream::connect(&first.addr).is_ok() {
        assert!(
            watch.elapsed() < StdDuration::from_secs(30),
            "still accepting after Ctrl-C"
        );
        std::thread::sleep(StdDuration::from_millis(10));
    }
    s.write_all(rest.as_bytes()).unwrap();
    let (status, created) = read_response(&mut s);
    assert_eq!(status, 200, "{created}");
    let id = created["deployment_id"].as_str().unwrap().to_string();
    drop(s);
    let (exit, rest) = finish(first);
    assert!(exit.success(), "a clean exit on Ctrl-C: {exit:?}");
    assert!(rest.contains("platform stopped"), "{rest}");

    // A new process over the same file answers with what the first one accepted.
    let second = start(&db);
    let mut s = TcpStream::connect(&second.addr).unwrap();
    s.set_read_timeout(Some(StdDuration::from_secs(20)))
        .unwrap();
    let path = format!("{}/{id}", deployments_path());
    s.write_all(request("GET", &second.addr, &path, "").as_bytes())
        .unwrap();
    let (status, got) = read_response(&mut s);
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["name"], "Front desk");
    drop(s);
    interrupt(&second);
    let (exit, _) = finish(second);
    assert!(exit.success());
}

#[test]
fn logs_written_to_a_file_carry_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("stderr.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let running = start_with(&dir.path().join("p.db"), Stdio::from(log), |c| {
        c.env("RUST_LOG", "debug")
    });
    let mut s = TcpStream::connect(&running.addr).unwrap();
    s.set_read_timeout(Some(StdDuration::from_secs(20)))
        .unwrap();
    s.write_all(request("GET", &running.addr, "/no/such/route", "").as_bytes())
        .unwrap();
    assert_eq!(read_response(&mut s).0, 404);
    drop(s);
    interrupt(&running);
    let (exit, _) = finish(running);
    assert!(exit.success());
    let text = std::fs::read_to_string(&log_path).unwrap();
    assert!(!text.trim().is_empty(), "something was logged at debug");
    assert!(
        !text.contains('\u{1b}'),
        "no ANSI escape codes in a log file: {text:?}"
    );
}

fn kill_hard(mut r: Running) {
    let pid = r.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-KILL", &pid])
            .status()
            .unwrap()
            .success()
    );
    let _ = r.child.wait();
}

/// Creates a deployment on `number` through a new connection; answers its id.
fn create_deployment_raw(addr: &str, number: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(StdDuration::from_secs(30)))
        .unwrap();
    let body = deployment_body("Front desk", number).to_string();
    s.write_all(request("POST", addr, &deployments_path(), &body).as_bytes())
        .unwrap();
    let (status, created) = read_response(&mut s);
    assert_eq!(status, 200, "{created}");
    created["deployment_id"].as_str().unwrap().to_string()
}

#[test]
fn after_a_sigkill_the_same_seed_carries_on_with_new_ids() {
    let dir = tempfile::tempdir().unwrap();
    // Never stopped: two creates.
    let straight = start(&dir.path().join("straight.db"));
    let expected = [
        create_deployment_raw(&straight.addr, "+14155550100"),
        create_deployment_raw(&straight.addr, "+14155550101"),
    ];
    interrupt(&straight);
    assert!(finish(straight).0.success());
    // Killed between the two (no clean stop), started again with the same seed.
    let db = dir.path().join("killed.db");
    let first = start(&db);
    let before = create_deployment_raw(&first.addr, "+14155550100");
    kill_hard(first);
    let second = start(&db);
    let after = create_deployment_raw(&second.addr, "+14155550101");
    interrupt(&second);
    assert!(finish(second).0.success());
    assert_eq!([before, after], expected);
}

#[test]
fn the_server_runs_with_two_malloc_arenas_unless_told_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let arenas = |r: &Running| -> Option<String> {
        let environ = std::fs::read(format!("/proc/{}/environ", r.child.id())).ok()?;
        environ
            .split(|b| *b == 0)
            .filter_map(|kv| std::str::from_utf8(kv).ok())
            .find_map(|kv| kv.strip_prefix("MALLOC_ARENA_MAX=").map(str::to_string))
    };
    let running = start_with(&dir.path().join("a.db"), Stdio::null(), |c| {
        c.env_remove("MALLOC_ARENA_MAX")
    });
    assert_eq!(arenas(&running).as_deref(), Some("2"));
    interrupt(&running);
    assert!(finish(running).0.success());
    // An operator's value wins.
    let running = start_with(&dir.path().join("b.db"), Stdio::null(), |c| {
        c.env("MALLOC_ARENA_MAX", "4")
    });
    assert_eq!(arenas(&running).as_deref(), Some("4"));
    interrupt(&running);
    assert!(finish(running).0.success());
}

#[test]
fn connections_never_take_every_file_the_process_may_open() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("stderr.log");
    let log = std::fs::File::create(&log_path).unwrap();
    // A process that may open 160 files: at most 96 connections (64 files kept for the rest),
    // below the default cap of 1024. Idle connections are kept for an hour, so that none
    // closes by itself while the test runs.
    let mut shell = Command::new("sh");
    shell.args([
        "-c",
        "ulimit -n 160 && exec \"$0\" \"$@\"",
        env!("CARGO_BIN_EXE_platform"),
    ]);
    let running = launch(shell, &dir.path().join("p.db"), Stdio::from(log), |c| {
        c.args(["--header-read-timeout-ms", "3600000"])
    });
    let get = request("GET", &running.addr, &campaigns_path(), "");
    let open = || {
        let mut s = TcpStream::connect(&running.addr).unwrap();
        s.set_read_timeout(Some(StdDuration::from_secs(30)))
            .unwrap();
        s.write_all(get.as_bytes()).unwrap();
        s
    };
    let mut held: Vec<TcpStream> = (0..96)
        .map(|_| {
            let mut s = open();
            assert_eq!(read_response(&mut s).0, 200);
            s
        })
        .collect();
    // The next connection waits in the listen queue...
    let mut waiting = open();
    waiting
        .set_read_timeout(Some(StdDuration::from_millis(300)))
        .unwrap();
    let early = waiting.read(&mut [0u8; 1]);
    assert!(
        early.as_ref().is_err_and(|e| matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        )),
        "served past the cap: {early:?}"
    );
    // ... until a connection closes.
    drop(held.pop());
    waiting
        .set_read_timeout(Some(StdDuration::from_secs(30)))
        .unwrap();
    assert_eq!(read_response(&mut waiting).0, 200);
    drop((held, waiting));
    interrupt(&running);
    assert!(finish(running).0.success());
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        log.contains("may open only 160 files") && log.contains("at most 96 connections"),
        "the lowered cap is logged: {log}"
    );
}
