//! Cohort ingest benchmark: a 1,000,000-row CSV uploaded over HTTP to a platform running in
//! this process on a temporary database, until the cohort is `completed`, against its floor
//! measured in the same run on the same file: reading the CSV (the `csv` crate), sealing each
//! row with the workspace's AES-GCM key and inserting it into SQLite (the platform's settings,
//! a table shaped as `cohort_users`), 8,192 rows a transaction, with one prepared statement.
//!
//! ```sh
//! cargo bench -p platform --bench cohort_ingest            # 1,000,000 rows, 3 rounds
//! COHORT_INGEST_ROWS=200000 BENCH_RUNS=1 cargo bench -p platform --bench cohort_ingest
//! ```
//!
//! The CSV (phone number in four written forms, a customer id, two variables) is generated
//! into a temporary file and streamed from disk as the multipart body; neither side holds it
//! in memory. Printed and reported ([`bench::Figures`], `BENCH_JSON=FILE`): wall time from
//! the start of the upload to `completed` (and when the upload was answered), CPU time,
//! the process's peak resident memory over the upload (client and server together), the
//! floor's, and the ratio. Targets: within 1.5 times the floor, under 100 MB. Every round
//! must count the same rows (asserted).

#[path = "support/bench.rs"]
mod bench;

use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use bench::{Figures, Phase, Round, Took, env};
use futures_util::StreamExt;
use platform::App;
use platform::config::{ApiKeyConfig, PlatformConfig};
use platform::store::WorkspaceRef;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

const KEY: &str = "bench-key";
const TARGET_RATIO: f64 = 1.5;
const TARGET_MB: f64 = 100.0;
/// Rows a transaction of the floor: the platform's batch ([`platform::ingest::BATCH_ROWS`]).
const FLOOR_BATCH: usize = platform::ingest::BATCH_ROWS;

fn write_csv(path: &Path, rows: u64) -> Result<u64> {
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    writeln!(w, "phone,customer_id,first_name,plan")?;
    const NAMES: [&str; 8] = ["Ann", "Bo", "Cy", "Dee", "Eve", "Fay", "Gus", "Hal"];
    const PLANS: [&str; 3] = ["gold", "silver", "bronze"];
    for i in 0..rows {
        let (a, b) = (i / 10_000 % 1000, i % 10_000);
        match i % 4 {
            0 => write!(w, "+1415{a:03}{b:04}")?,
            1 => write!(w, "(415) {a:03}-{b:04}")?,
            2 => write!(w, "415-{a:03}-{b:04}")?,
            _ => write!(w, "+1 415 {a:03} {b:04}")?,
        }
        writeln!(
            w,
            ",cust-{i:08},{},{}",
            NAMES[(i % 8) as usize],
            PLANS[(i % 3) as usize]
        )?;
    }
    w.flush()?;
    Ok(std::fs::metadata(path)?.len())
}

async fn file_body(path: std::path::PathBuf) -> Result<reqwest::Body> {
    let file = tokio::fs::File::open(&path).await?;
    let stream = futures_util::stream::unfold(file, |mut f| async move {
        let mut buf = vec![0u8; 256 * 1024];
        match f.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok::<_, std::io::Error>(buf), f))
            }
            Err(e) => Some((Err(e), f)),
        }
    });
    Ok(reqwest::Body::wrap_stream(stream.boxed()))
}

/// A platform on a fresh database in `dir`.
fn platform_app(dir: &Path) -> Result<App> {
    let config = PlatformConfig {
        database: dir.join("bench.db").display().to_string(),
        api_keys: vec![
            ApiKeyConfig::parse(&format!("org/ws={KEY}:bench")).map_err(anyhow::Error::msg)?,
        ],
        seed: Some(1),
        ..Default::default()
    };
    Ok(App::builder(config).build()?)
}

/// One upload measured: what it took from the start of the upload to `completed`, when the
/// upload was answered, and the cohort's `result`.
struct Upload {
    took: Took,
    answered_s: f64,
    result: Value,
}

/// Uploads the CSV at `csv` to a deployment of a fresh platform and waits for `completed`.
async fn upload(csv: &Path, size: u64) -> Result<Upload> {
    let dir = tempfile::tempdir()?;
    let app = platform_app(dir.path())?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let platform =
        platform::server::Platform::from_config(app.clone()).map_err(anyhow::Error::msg)?;
    let server = tokio::spawn(platform::server::serve(platform, listener, async {
        let _ = stopped.await;
    }));
    let client = reqwest::Client::new();
    let base = format!("http://{addr}/api");
    let dep: Value = client
        .post(format!(
            "{base}/app-authoring/v1/orgs/org/workspaces/ws/deployments"
        ))
        .header("x-api-key", KEY)
        .json(&json!({"name": "Bench", "app_id": "app", "app_version": 1,
            "connection_configs": [{"connection_id": "c", "phone_numbers": ["+14155550000"]}]}))
        .send()
        .await?
        .json()
        .await?;
    let dep = dep["deployment_id"]
        .as_str()
        .context("deployment id")?
        .to_string();
    let cohorts = format!("{base}/scheduling/v1/orgs/org/workspaces/ws/deployments/{dep}/cohorts");
    let transformation = json!({
        "phone_number": {"column_name": "phone", "country_code": "US"},
        "user_identifier": {"column_name": "customer_id", "required": true},
        "app_variables": {
            "first_name": {"column_name": "first_name"},
            "plan": {"column_name": "plan", "required": true}
        }
    });
    let form = Form::new()
        .text("name", "Bench")
        .part(
            "cohort_transformation_file",
            Part::bytes(serde_json::to_vec(&transformation)?).file_name("t.json"),
        )
        .part(
            "cohort_file",
            Part::stream_with_length(file_body(csv.to_path_buf()).await?, size)
                .file_name("users.csv")
                .mime_str("text/csv")?,
        );

    let phase = Phase::start();
    let watch = contracts::clock::Stopwatch::start();
    let resp = client
        .post(format!("{cohorts}/upload"))
        .header("x-api-key", KEY)
        .multipart(form)
        .send()
        .await?;
    let status = resp.status();
    let answer: Value = resp.json().await?;
    if !status.is_success() {
        bail!("upload answered {status}: {answer}");
    }
    let answered_s = watch.elapsed().as_secs_f64();
    let id = answer["cohort_id"]
        .as_str()
        .context("cohort id")?
        .to_string();
    let done = loop {
        let v: Value = client
            .get(format!("{cohorts}/{id}"))
            .header("x-api-key", KEY)
            .send()
            .await?
            .json()
            .await?;
        if v["status"] != "processing" {
            break v;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let took = phase.end();
    let _ = stop.send(());
    server.await?;
    if done["status"] != "completed" {
        bail!(
            "cohort ended {}: {}",
            done["status"],
            done["failure_reason"]
        );
    }
    Ok(Upload {
        took,
        answered_s,
        result: done["result"].clone(),
    })
}

/// The floor: the CSV read with the `csv` crate, each row sealed with the workspace's data
/// key (as the platform seals a user) and inserted with its row number into a table shaped
/// as `cohort_users` in a fresh database with the platform's settings, [`FLOOR_BATCH`] rows
/// a transaction. Answers what it took and the rows written.
async fn floor(csv: &Path) -> Result<(Took, u64)> {
    let dir = tempfile::tempdir()?;
    let app = platform_app(dir.path())?;
    let keys = app
        .keys
        .workspace(&WorkspaceRef::new("org", "ws"), None)
        .await?;
    let store = app.store.clone();
    store.transaction_blocking(|c| {
        c.execute_batch(
            "CREATE TABLE floor_users (cohort_id TEXT NOT NULL, row_no INTEGER NOT NULL,
                 data BLOB NOT NULL, PRIMARY KEY (cohort_id, row_no)) WITHOUT ROWID",
        )?;
        Ok(())
    })?;
    let csv = csv.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let phase = Phase::start();
        let mut reader = csv::ReaderBuilder::new()
            .buffer_capacity(256 * 1024)
            .from_path(&csv)?;
        let mut record = csv::ByteRecord::new();
        let mut batch: Vec<Vec<u8>> = Vec::with_capacity(FLOOR_BATCH);
        let mut rows = 0u64;
        let mut more = true;
        while more {
            more = reader.read_byte_record(&mut record)?;
            if more {
                rows += 1;
                let context = format!("cohort_users/coh-floor/{rows}");
                batch.push(keys.seal(&context, record.as_slice()));
            }
            if batch.len() == FLOOR_BATCH || (!more && !batch.is_empty()) {
                let first = rows + 1 - batch.len() as u64;
                store.transaction_blocking(|c| {
                    let mut st = c.prepare_cached(
                        "INSERT INTO floor_users (cohort_id, row_no, data) VALUES ('coh-floor', ?1, ?2)",
                    )?;
                    for (k, data) in batch.iter().enumerate() {
                        st.execute(rusqlite::params![(first + k as u64) as i64, data])?;
                    }
                    Ok(())
                })?;
                batch.clear();
            }
        }
        Ok::<_, anyhow::Error>((phase.end(), rows))
    })
    .await?
}

fn main() -> Result<()> {
    platform::process::limit_malloc_arenas();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run())
}

async fn run() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let rows = env("COHORT_INGEST_ROWS", 1_000_000);
    let runs = env("BENCH_RUNS", 3).max(1);
    let dir = tempfile::tempdir()?;
    let csv = dir.path().join("users.csv");
    let size = write_csv(&csv, rows)?;
    println!(
        "cohort ingest: {rows} rows, {:.1} MB CSV, {runs} rounds of the upload and its floor",
        size as f64 / 1e6
    );
    let mut figures = Figures::new(
        "cohort_ingest",
        "read the CSV, seal each row, insert 8,192 rows a transaction",
        &format!("wall ratio <= {TARGET_RATIO}, peak < {TARGET_MB} MB"),
    );
    let mut result: Option<Value> = None;
    let mut answered = vec![];
    for i in 1..=runs {
        let up = upload(&csv, size).await?;
        let (reference, floor_rows) = floor(&csv).await?;
        assert_eq!(floor_rows, rows, "the floor reads every row");
        println!(
            "round {i}: upload to completed {:.3} s (answered after {:.3} s), CPU {:.3} s, peak {:.1} MiB; floor {:.3} s, CPU {:.3} s; {}",
            up.took.wall_s,
            up.answered_s,
            up.took.cpu_s,
            up.took.peak_mb,
            reference.wall_s,
            reference.cpu_s,
            up.result
        );
        match &result {
            None => result = Some(up.result.clone()),
            Some(r) => assert_eq!(*r, up.result, "every round counts the same rows"),
        }
        answered.push(up.answered_s);
        figures.rounds.push(Round {
            subject: up.took,
            reference,
        });
    }
    let result = result.expect("one round at least");
    assert_eq!(
        result["total_records"].as_u64(),
        Some(rows),
        "every row is counted"
    );
    let wall = figures.wall().median;
    figures
        .with("rows", rows)
        .with("csv_bytes", size)
        .with("result", result)
        .with("rows_per_second", (rows as f64 / wall).round())
        .with("upload_answered_s", bench::Spread::of(answered).median);
    figures.met = Some(figures.ratio().median <= TARGET_RATIO && figures.peak().median < TARGET_MB);
    figures.emit();
    Ok(())
}
