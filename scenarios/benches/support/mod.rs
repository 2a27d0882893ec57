//! What the benches of `harness` share: knobs from the environment, this process's CPU
//! time and a one-line summary.

use std::time::Duration;

/// CPU time (user + system, all threads) of this process, from `/proc/self/stat`.
pub fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

/// `median, min, max` of `v` on one line.
pub fn summary(label: &str, mut v: Vec<f64>) {
    v.sort_by(f64::total_cmp);
    let median = v[v.len() / 2];
    println!(
        "  {label:<28} median {median:>8.3}  min {:>8.3}  max {:>8.3}",
        v[0],
        v[v.len() - 1]
    );
}

/// The environment variable `name` parsed, or `default`.
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
