//! The `platform serve` binary: port 0, the banner, a clean stop on Ctrl-C that finishes
//! the request in flight, and a restart over the same file that keeps what was answered.

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
    let mut command = Command::new(env!("CARGO_BIN_EXE_platform"));
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

    // A create whose body is only half sent when Ctrl-C arrives.
    let body = deployment_body("Front desk", "+14155550100").to_string();
    let req = request("POST", &first.addr, &deployments_path(), &body);
    let (head, tail) = req.split_at(req.len() - body.len() / 2);
    let mut s = TcpStream::connect(&first.addr).unwrap();
    s.set_read_timeout(Some(StdDuration::from_secs(20)))
        .unwrap();
    s.write_all(head.as_bytes()).unwrap();
    std::thread::sleep(StdDuration::from_millis(200));
    interrupt(&first);
    std::thread::sleep(StdDuration::from_millis(300));
    s.write_all(tail.as_bytes()).unwrap();
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
