//! How long a full `harness check byok` takes against customer-kms-sim on loopback.
//!
//! ```sh
//! cargo bench -p scenarios --bench check_byok            # release build
//! cargo bench --workspace --bench check_byok --profile dev   # the debug build users run first
//! ```
//!
//! Each run starts a fresh key service (in this process, another tokio runtime) and runs
//! every check that does not wait for a token's expiry: client credentials, a given key,
//! `--use-rotate`, `--other-key-alias`, the default load phase (200 calls, 8 at a time).
//! Prints wall time and CPU time (service and validator together) per run: median, min and
//! max over `BYOK_BENCH_RUNS` runs (default 7), and the load phase's own wall time beside
//! a reference: the same number of decrypts sent one at a time by a bare reqwest loop.
//! Knobs: `BYOK_BENCH_RUNS`, `BYOK_BENCH_CALLS` (200).

use base64::Engine as _;
use contracts::clock::{Stopwatch, SystemClock};
use customer_kms_sim::{KeyService, KmsConfig};
use scenarios::checks::byok::{ByokArgs, Settings, validate};

mod support;
use support::{cpu_time, env_or, summary};

fn main() {
    let runs: usize = env_or("BYOK_BENCH_RUNS", 7);
    let calls: usize = env_or("BYOK_BENCH_CALLS", 200);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());

    // The key service on its own runtime, as a separate process would be.
    let service_rt = tokio::runtime::Runtime::new().expect("runtime");
    let rt = tokio::runtime::Runtime::new().expect("runtime");

    let mut wall = Vec::new();
    let mut cpu = Vec::new();
    let mut load_wall = Vec::new();
    let mut reference = Vec::new();
    for _ in 0..runs {
        let config = KmsConfig::new("acme")
            .with_seed(3)
            .with_client("platform", &["client-secret-0123456789"])
            .with_alias("tenant-a", 1)
            .with_alias("tenant-b", 1);
        let svc = KeyService::new(config, SystemClock::shared()).expect("config");
        let listener = service_rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = service_rt.spawn(customer_kms_sim::serve(listener, svc.clone(), async {
            let _ = stopped.await;
        }));
        let key = [0x42u8; 32];
        let (encrypted, _) = svc.wrap_data_key("tenant-a", &key).expect("wrap");
        let args = ByokArgs {
            base_url: Some(format!("http://{addr}")),
            partner: Some("acme".into()),
            client_id: Some("platform".into()),
            client_secret: Some("client-secret-0123456789".into()),
            key_alias: Some("tenant-a".into()),
            other_key_alias: Some("tenant-b".into()),
            encrypted_key: Some(encrypted.clone()),
            expected_plaintext: Some(base64::engine::general_purpose::STANDARD.encode(key)),
            use_rotate: true,
            calls: Some(calls),
            ..ByokArgs::default()
        };
        let settings = Settings::resolve(&args).expect("settings");
        let cpu_before = cpu_time();
        let watch = Stopwatch::start();
        let report = rt.block_on(validate(settings)).expect("the check runs");
        let elapsed = watch.elapsed();
        let cpu_used = cpu_before.zip(cpu_time()).map(|(a, b)| b.saturating_sub(a));
        // The latency budget may fail on a loaded machine; nothing else may.
        let failed: Vec<String> = report
            .checks
            .iter()
            .filter(|c| c.result == scenarios::checks::Outcome::Fail && c.group != "load")
            .map(|c| {
                format!(
                    "{}: {}",
                    c.id,
                    serde_json::to_string(&c.evidence).unwrap_or_default()
                )
            })
            .collect();
        assert!(failed.is_empty(), "the simulator failed {failed:#?}");
        wall.push(elapsed.as_secs_f64());
        if let Some(c) = cpu_used {
            cpu.push(c.as_secs_f64());
        }
        if let Some(w) = report
            .checks
            .iter()
            .find(|c| c.id == "load.p50")
            .and_then(|c| c.evidence.0.get("wall_ms"))
            .and_then(|v| v.as_f64())
        {
            load_wall.push(w / 1000.0);
        }

        // Reference: the same decrypts, one at a time, from a bare client with a token.
        let r = rt.block_on(async {
            let client = reqwest::Client::new();
            let base = format!("http://{addr}/acme/byok/v1");
            let token = svc.issue_token("platform").expect("token");
            let body =
                serde_json::json!({"data": {"key_alias": "tenant-a", "encrypted_key": encrypted}});
            let watch = Stopwatch::start();
            for _ in 0..calls {
                let resp = client
                    .post(format!("{base}/decrypt-key"))
                    .header("x-request-id", "00000000-0000-4000-8000-000000000001")
                    .header(
                        "x-request-timestamp",
                        contracts::clock::format_instant(contracts::clock::Clock::now(
                            &SystemClock,
                        )),
                    )
                    .bearer_auth(&token)
                    .json(&body)
                    .send()
                    .await
                    .expect("decrypt");
                assert_eq!(resp.status(), 200);
                let _ = resp.bytes().await;
            }
            watch.elapsed().as_secs_f64()
        });
        reference.push(r);
        let _ = stop.send(());
        let _ = service_rt.block_on(server);
    }
    println!(
        "check byok: {runs} full runs against customer-kms-sim on loopback, {calls} load calls, \
         {cores} cores (the machine is shared: figures vary by 2x with its load)"
    );
    summary("wall s, whole run", wall);
    summary("cpu s, whole run", cpu);
    summary("wall s, load phase", load_wall);
    summary("wall s, reference loop", reference);
}
