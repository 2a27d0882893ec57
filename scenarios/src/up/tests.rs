//! `harness up` flags and files resolved into [`StackOptions`].

use clap::Parser;

use super::*;

#[derive(Parser, Debug)]
struct Cli {
    #[command(flatten)]
    up: UpArgs,
}

fn options(args: &[&str]) -> anyhow::Result<StackOptions> {
    let cli = Cli::try_parse_from(std::iter::once("up").chain(args.iter().copied()))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    cli.up.options()
}

fn error(args: &[&str]) -> String {
    format!("{:#}", options(args).unwrap_err())
}

fn t(s: &str) -> chrono::DateTime<chrono::Utc> {
    parse_instant(s).unwrap()
}

fn file(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn without_flags_the_stack_runs_on_8080_on_the_real_clock_over_a_temporary_database() {
    let o = options(&[]).unwrap();
    assert_eq!(o.clock, StackClock::Real);
    assert_eq!(o.seed, None);
    assert_eq!(o.database, StackDatabase::Temporary);
    assert_eq!(o.ports, Ports::Base(8080));
    assert_eq!(o.workspace, WorkspaceRef::new("org-1", "ws-1"));
    assert_eq!(o.engine, EngineMode::Background);
    assert!(o.kms.is_none());
}

#[test]
fn flags_set_ports_clock_seed_database_and_workspace() {
    let o = options(&[
        "--port-base",
        "0",
        "--clock",
        "simulated",
        "--sim-start",
        "2026-03-02T08:00:00Z",
        "--seed",
        "42",
        "--database",
        "dev.db",
        "--workspace",
        "acme/prod",
    ])
    .unwrap();
    assert_eq!(o.ports, Ports::Any);
    assert_eq!(o.clock, StackClock::Simulated(t("2026-03-02T08:00:00Z")));
    assert_eq!(o.seed, Some(42));
    assert_eq!(o.database, StackDatabase::File("dev.db".into()));
    assert_eq!(o.workspace, WorkspaceRef::new("acme", "prod"));
    assert_eq!(
        options(&["--port-base", "9000"]).unwrap().ports,
        Ports::Base(9000)
    );
    assert_eq!(
        options(&["--database", ":memory:"]).unwrap().database,
        StackDatabase::Memory
    );
    assert_eq!(
        options(&["--clock", "sim", "--sim-start", "2026-03-02T09:00:00+01:00"])
            .unwrap()
            .clock,
        StackClock::Simulated(t("2026-03-02T08:00:00Z"))
    );
    assert!(matches!(
        options(&["--clock", "simulated"]).unwrap().clock,
        StackClock::Simulated(_)
    ));
}

#[test]
fn contradictory_or_malformed_flags_say_what_to_do() {
    let e = error(&["--sim-start", "2026-03-02T08:00:00Z"]);
    assert!(e.contains("needs --clock simulated"), "{e}");
    let e = error(&["--clock", "real", "--sim-start", "2026-03-02T08:00:00Z"]);
    assert!(e.contains("drop it, or use --clock simulated"), "{e}");
    let e = error(&["--clock", "simulated", "--sim-start", "monday"]);
    assert!(
        e.contains("--sim-start 'monday' is not an RFC 3339 instant"),
        "{e}"
    );
    let e = error(&["--clock", "fast"]);
    assert!(e.contains("use real or simulated"), "{e}");
    let e = error(&["--workspace", "ws-1"]);
    assert!(e.contains("expected ORG/WORKSPACE"), "{e}");
    let e = error(&["--port-base", "70000"]);
    assert!(e.contains("70000"), "{e}");
}

#[test]
fn one_stack_file_configures_both_servers_and_flags_win_over_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(
        &dir,
        "stack.toml",
        r#"
org_id = "acme"
workspace_id = "prod"

[byok]
client_id = "svc"
key_alias = "tenant-b"
data_key_cache_secs = 60

[platform]
seed = 9
clock = "simulated"
sim_start = "2026-03-02T08:00:00Z"
database = "from-file.db"
strict = true

[kms]
partner = "bank"
[[kms.clients]]
id = "svc"
secrets = ["s-1"]
[[kms.aliases]]
name = "tenant-b"
"#,
    );
    let o = options(&["--config", &path]).unwrap();
    assert_eq!(o.workspace, WorkspaceRef::new("acme", "prod"));
    assert_eq!(o.byok.client_id.as_deref(), Some("svc"));
    assert_eq!(o.byok.key_alias.as_deref(), Some("tenant-b"));
    assert_eq!(o.byok.data_key_cache_secs, 60);
    assert_eq!(o.byok.request_timeout_ms, 5000, "unset keys keep defaults");
    assert_eq!(o.clock, StackClock::Simulated(t("2026-03-02T08:00:00Z")));
    assert_eq!(o.database, StackDatabase::File("from-file.db".into()));
    assert!(o.platform.strict);
    assert_eq!(o.platform.seed, Some(9));
    assert_eq!(o.kms.as_ref().unwrap().partner, "bank");

    let o = options(&[
        "--config",
        &path,
        "--database",
        ":memory:",
        "--clock",
        "real",
        "--workspace",
        "o/w",
    ])
    .unwrap();
    assert_eq!(o.database, StackDatabase::Memory);
    assert_eq!(o.clock, StackClock::Real);
    assert_eq!(o.workspace, WorkspaceRef::new("o", "w"));
    let o = options(&["--config", &path, "--sim-start", "2026-04-01T00:00:00Z"]).unwrap();
    assert_eq!(
        o.clock,
        StackClock::Simulated(t("2026-04-01T00:00:00Z")),
        "the file asks for a simulated clock, the flag moves its start"
    );
}

#[test]
fn the_servers_own_files_are_read_as_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let platform = file(
        &dir,
        "platform.toml",
        "seed = 5\n[[api_keys]]\norg_id = \"org-1\"\nworkspace_id = \"ws-1\"\nkey = \"sk-test-1\"\n",
    );
    let kms = file(&dir, "kms.toml", customer_kms_sim::config::EXAMPLE_TOML);
    let o = options(&["--platform-config", &platform, "--kms-config", &kms]).unwrap();
    assert_eq!(o.platform.seed, Some(5));
    assert_eq!(o.platform.api_keys[0].key, "sk-test-1");
    assert_eq!(
        o.database,
        StackDatabase::Temporary,
        "the file sets no database"
    );
    assert_eq!(o.kms.unwrap().partner, "acme");
}

#[test]
fn file_errors_name_the_file_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let listen = file(&dir, "listen.toml", "listen = \"127.0.0.1:9999\"\n");
    let e = error(&["--platform-config", &listen]);
    assert!(
        e.contains("listen.toml sets `listen`") && e.contains("--port-base"),
        "{e}"
    );

    let typo = file(&dir, "typo.toml", "[platfrom]\nseed = 1\n");
    let e = error(&["--config", &typo]);
    assert!(e.contains("typo.toml") && e.contains("platfrom"), "{e}");

    let both = file(&dir, "both.toml", "[platform]\nseed = 1\n");
    let e = error(&["--config", &both, "--platform-config", &listen]);
    assert!(e.contains("keep one"), "{e}");

    let bad_kms = file(&dir, "kms.toml", "partner = \"a/b\"\n");
    let e = error(&["--kms-config", &bad_kms]);
    assert!(e.contains("kms.toml") && e.contains("partner"), "{e}");

    let e = error(&["--config", "/nonexistent/stack.toml"]);
    assert!(e.contains("reading /nonexistent/stack.toml"), "{e}");

    let clock = file(
        &dir,
        "clock.toml",
        "[platform]\nclock = \"simulated\"\nsim_start = \"soon\"\n",
    );
    let e = error(&["--config", &clock]);
    assert!(e.contains("sim_start") && e.contains("RFC 3339"), "{e}");
}

/// The stack file example of the README, as a user would paste it.
fn readme_stack_file() -> String {
    let readme = include_str!("../../../docs/guide/harness-up.md");
    let start = readme
        .find("```toml\n# harness up --config stack.toml\n")
        .expect("the README shows a stack file");
    let body = &readme[start + "```toml\n".len()..];
    body[..body.find("```").expect("the block ends")].to_string()
}

#[tokio::test]
async fn the_readme_s_stack_file_starts_a_stack() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(&dir, "stack.toml", &readme_stack_file());
    let mut o = options(&["--config", &path, "--port-base", "0"]).unwrap();
    o.engine = EngineMode::Manual;
    let stack = Stack::start(o).await.unwrap();
    let i = stack.info();
    assert_eq!(i.platform.seed, 42);
    assert_eq!(i.platform.webhook_secret, "whsec_test");
    assert_eq!(
        (
            i.key_service.partner.as_str(),
            i.key_service.client_id.as_str(),
            i.key_service.client_secret.as_str(),
            i.key_service.key_alias.as_str(),
            i.key_service.admin_token.as_str()
        ),
        (
            "acme",
            "platform",
            "platform-secret-1",
            "tenant-a",
            "admin-test-token"
        )
    );
    assert!(
        stack.app().faults.any(),
        "the stack file's fault rule is in force"
    );
    stack.stop().await.unwrap();
}
