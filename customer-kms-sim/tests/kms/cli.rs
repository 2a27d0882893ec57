//! The command line: `serve` prints where it listens and stops cleanly on SIGINT; `wrap`
//! output decrypts on a `serve` with the same configuration; `unwrap` reads it back.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Output, Stdio};

use contracts::clock::{Clock, SystemClock, format_instant};
use contracts::wire::byok::{HEADER_REQUEST_ID, HEADER_REQUEST_TIMESTAMP};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{b64, request_uuid, unb64};

const BIN: &str = env!("CARGO_BIN_EXE_customer-kms-sim");

const CONFIG: &str = r#"
partner = "cli-test"
seed = 11
admin_token = "cli-admin"

[[clients]]
id = "platform"
secrets = ["cli-secret"]

[[api_keys]]
name = "cli-key"
key = "sk_cli_test"

[[aliases]]
name = "alpha"
versions = 2

[[aliases]]
name = "beta"
keys = ["ERERERERERERERERERERERERERERERERERERERERERE="]
"#;

fn config_file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
    f
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("run customer-kms-sim")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

struct Server {
    child: Child,
    addr: String,
    banner: Vec<String>,
    rest: BufReader<std::process::ChildStdout>,
}

impl Drop for Server {
    fn drop(&mut self) {
        // Only if a test failed before stopping it: this child, by its own handle.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(config: &std::path::Path, extra: &[&str]) -> Server {
    serve_with(config, extra, Stdio::null(), &[])
}

/// Starts `serve` with `stderr` as its standard error and `env` set.
fn serve_with(
    config: &std::path::Path,
    extra: &[&str],
    stderr: Stdio,
    env: &[(&str, &str)],
) -> Server {
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(config)
        .args(extra)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("start serve");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut banner = Vec::new();
    loop {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            panic!("serve exited early; printed {banner:?}");
        }
        let line = line.trim_end().to_string();
        let done = line.starts_with("aliases:");
        banner.push(line);
        if done {
            break;
        }
    }
    let addr = banner[0]
        .strip_prefix("customer-kms-sim listening on http://")
        .unwrap_or_else(|| panic!("first line: {:?}", banner[0]))
        .to_string();
    Server {
        child,
        addr,
        banner,
        rest: out,
    }
}

fn stop(mut server: Server) -> (std::process::ExitStatus, String) {
    let pid = server.child.id().to_string();
    let kill = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(kill.success());
    let status = server.child.wait().unwrap();
    let mut rest = String::new();
    server.rest.read_to_string(&mut rest).unwrap();
    (status, rest)
}

async fn decrypt(addr: &str, partner: &str, alias: &str, text: &str) -> (StatusCode, Value) {
    let resp = reqwest::Client::new()
        .post(format!("http://{addr}/{partner}/byok/v1/decrypt-key"))
        .header(HEADER_REQUEST_ID, request_uuid(1))
        .header(HEADER_REQUEST_TIMESTAMP, format_instant(SystemClock.now()))
        .bearer_auth("sk_cli_test")
        .json(&json!({"data": {"key_alias": alias, "encrypted_key": text}}))
        .send()
        .await
        .unwrap();
    (resp.status(), resp.json().await.unwrap())
}

#[tokio::test]
async fn serve_prints_its_address_and_wrap_output_decrypts_on_it() {
    let cfg = config_file(CONFIG);
    let server = serve(cfg.path(), &[]);
    assert!(
        !server.addr.ends_with(":0"),
        "the real port: {}",
        server.addr
    );
    let banner = server.banner.join("\n");
    assert!(
        banner.contains("partner path: /cli-test/byok/v1"),
        "{banner}"
    );
    assert!(banner.contains("seed: 11"), "{banner}");
    assert!(
        !banner.contains("admin token (generated)"),
        "configured, not generated"
    );

    // wrap with a generated key, under alias's current version (2, derived from the seed).
    let out = run(&[
        "wrap",
        "--config",
        cfg.path().to_str().unwrap(),
        "--alias",
        "alpha",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let w: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(w["key_version"], 2);
    let text = w["encrypted_key"].as_str().unwrap();
    let generated = w["plaintext_key"].as_str().unwrap();
    let (status, body) = decrypt(&server.addr, "cli-test", "alpha", text).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["plaintext_key"], generated);

    // wrap a given key under a configured master key, labelled output.
    let key = b64(&[0x5a; 32]);
    let out = run(&[
        "wrap",
        "-c",
        cfg.path().to_str().unwrap(),
        "-a",
        "beta",
        "--key",
        &key,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text_out = stdout(&out);
    assert!(text_out.contains("key_alias:     beta"), "{text_out}");
    assert!(
        !text_out.contains("plaintext_key"),
        "a given key is not printed back"
    );
    let text = text_out
        .lines()
        .find_map(|l| l.strip_prefix("encrypted_key: "))
        .unwrap();
    let (status, body) = decrypt(&server.addr, "cli-test", "beta", text).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        unb64(body["data"]["plaintext_key"].as_str().unwrap()),
        [0x5a; 32]
    );

    // unwrap reads it back, also from standard input.
    let out = run(&[
        "unwrap",
        "-c",
        cfg.path().to_str().unwrap(),
        "-a",
        "beta",
        "-e",
        text,
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let u: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        u,
        json!({"key_alias": "beta", "key_version": 1, "plaintext_key": key})
    );
    let mut child = Command::new(BIN)
        .args([
            "unwrap",
            "-c",
            cfg.path().to_str().unwrap(),
            "-a",
            "beta",
            "-e",
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(
        &mut child.stdin.take().unwrap(),
        format!("{text}\n").as_bytes(),
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        stdout(&out).contains(&format!("plaintext_key: {key}")),
        "{}",
        stdout(&out)
    );

    let (status, rest) = stop(server);
    assert!(status.success(), "clean exit on SIGINT: {status:?}");
    assert!(rest.contains("customer-kms-sim stopped"), "{rest}");
}

#[tokio::test]
async fn serve_flags_override_the_file_and_generate_an_admin_token() {
    let cfg = config_file(&CONFIG.replace("admin_token = \"cli-admin\"\n", ""));
    let server = serve(
        cfg.path(),
        &[
            "--partner",
            "other",
            "--seed",
            "12",
            "--sim-clock",
            "2026-03-01T00:00:00Z",
        ],
    );
    let banner = server.banner.join("\n");
    assert!(banner.contains("partner path: /other/byok/v1"), "{banner}");
    assert!(banner.contains("seed: 12"), "{banner}");
    assert!(
        banner.contains("clock: simulated, 2026-03-01T00:00:00.000Z"),
        "{banner}"
    );
    let token = banner
        .lines()
        .find_map(|l| l.strip_prefix("admin token (generated): "))
        .expect("a generated admin token is printed");
    let info: Value = reqwest::Client::new()
        .get(format!("http://{}/_admin/info", server.addr))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(info["partner"], "other");
    assert_eq!(info["clock"]["simulated"], true);
    let (status, _) = stop(server);
    assert!(status.success());
}

#[test]
fn serve_switches_mutants_on_and_says_so() {
    let cfg = config_file(CONFIG);
    let server = serve(
        cfg.path(),
        &["--mutant", "any_method", "--mutant", "no_trace_echo"],
    );
    let (status, rest) = stop(server);
    assert!(status.success());
    assert!(
        rest.starts_with(
            "mutants on: no_trace_echo, any_method (this service breaks the contract on purpose)\n"
        ),
        "the line after the aliases: {rest}"
    );
    let out = run(&["serve", "--mutant", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no mutant named \"nope\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn wrap_and_unwrap_refuse_bad_input_with_clear_errors() {
    let cfg = config_file(CONFIG);
    let path = cfg.path().to_str().unwrap();
    let cases: [(&[&str], &str); 6] = [
        (&["wrap", "-c", path, "-a", "gamma"], "no alias \"gamma\""),
        (
            &["wrap", "-c", path, "-a", "alpha", "--key", "%%%"],
            "--key must be base64",
        ),
        (
            &["wrap", "-c", path, "-a", "alpha", "--key", "AAAA"],
            "--key must be 32 bytes",
        ),
        (
            &["wrap", "-c", path, "-a", "alpha", "--key-version", "7"],
            "has versions 1 to 2, not 7",
        ),
        (
            &["unwrap", "-c", path, "-a", "alpha", "-e", "byok:v2:AAAA"],
            "unsupported envelope version",
        ),
        (
            &["wrap", "-c", "/nonexistent/kms.toml", "-a", "alpha"],
            "cannot read /nonexistent/kms.toml",
        ),
    ];
    for (args, message) in cases {
        let out = run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).is_empty());
    }

    // Derived keys need the seed that `serve` used.
    let unseeded = config_file(&CONFIG.replace("seed = 11\n", ""));
    let out = run(&[
        "wrap",
        "-c",
        unseeded.path().to_str().unwrap(),
        "-a",
        "alpha",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("pass --seed"), "{}", stderr(&out));
    // Configured keys do not.
    let out = run(&[
        "wrap",
        "-c",
        unseeded.path().to_str().unwrap(),
        "-a",
        "beta",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));

    let bad = config_file("partner = \"a/b\"\n[[aliases]]\nname = \"x\"\n");
    let out = run(&["wrap", "-c", bad.path().to_str().unwrap(), "-a", "x"]);
    assert!(
        stderr(&out).contains("invalid configuration: partner"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn help_and_example_config() {
    let out = run(&["--help"]);
    assert!(out.status.success());
    let help = stdout(&out);
    for word in ["serve", "wrap", "unwrap", "example-config"] {
        assert!(help.contains(word), "{help}");
    }
    let out = run(&["serve", "--help"]);
    let help = stdout(&out);
    assert!(help.contains("--sim-clock"));
    for m in customer_kms_sim::Mutant::ALL {
        let row = format!("{}  {}", m.name(), m.rule());
        assert!(
            help.lines()
                .any(|l| l.trim_start().starts_with(m.name()) && l.ends_with(m.rule())),
            "serve --help lacks {row}: {help}"
        );
    }
    let out = run(&["example-config"]);
    assert_eq!(stdout(&out), customer_kms_sim::config::EXAMPLE_TOML);
    let out = run(&["wrap"]);
    assert_eq!(out.status.code(), Some(2), "usage error");
}

#[test]
fn without_a_config_file_the_example_is_used() {
    let out = run(&["wrap", "--alias", "tenant-a", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let w: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let out = run(&[
        "unwrap",
        "--alias",
        "tenant-a",
        "-e",
        w["encrypted_key"].as_str().unwrap(),
        "--json",
    ]);
    let u: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(u["plaintext_key"], w["plaintext_key"]);
}

#[test]
fn logs_written_to_a_file_carry_no_colour_codes() {
    let cfg = config_file(CONFIG);
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("stderr.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let server = serve_with(cfg.path(), &[], Stdio::from(log), &[("RUST_LOG", "debug")]);
    let (status, _) = stop(server);
    assert!(status.success());
    let text = std::fs::read_to_string(&log_path).unwrap();
    assert!(!text.trim().is_empty(), "something was logged at debug");
    assert!(
        !text.contains('\u{1b}'),
        "no ANSI escape codes in a log file: {text:?}"
    );
}
