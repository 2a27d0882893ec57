//! What the benchmarks share: options from the environment, what they read about their own
//! process from Linux's `/proc` (resident memory now and at its peak, CPU time; `NaN` where
//! `/proc` is not there), and one way to report a measurement against its floor.
//!
//! Every benchmark measures a floor in the same process and run, on the same data (a
//! reference loop written for the purpose, or a static server), alternately with the code it
//! measures, and reports both with their ratio ([`Figures`]): wall and CPU time, peak
//! resident memory, each as the median of the rounds and their range. With `BENCH_JSON=FILE`
//! each report is also appended to FILE as one JSON object per line ([`Figures::emit`]).

#![allow(dead_code)]

use contracts::clock::{Clock, Stopwatch, SystemClock};
use serde_json::{Map, Value, json};

/// A numeric option from the environment, or `default`.
pub fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A numeric option from the environment that may have decimals (`0.5`), or `default`.
pub fn env_f64(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A field of `/proc/self/status` in kB, as MB.
fn status_mb(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Peak resident memory of this process in MiB (`VmHWM`) since it started or since the
/// last [`reset_peak`].
pub fn peak_rss_mb() -> f64 {
    status_mb("VmHWM:")
}

/// Resident memory of this process now, in MiB (`VmRSS`).
pub fn rss_mb() -> f64 {
    status_mb("VmRSS:")
}

/// Resets this process's peak resident memory to what it holds now (Linux 4.0 and later:
/// `5` into `/proc/self/clear_refs`), so that the peak of the next phase is its own.
/// Answers whether the kernel took it.
pub fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// CPU seconds this process used (user and system, every thread), from /proc (clock ticks
/// of 10 ms).
pub fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            let utime: f64 = f.get(11)?.parse().ok()?;
            let stime: f64 = f.get(12)?.parse().ok()?;
            Some((utime + stime) / 100.0)
        })
        .unwrap_or(f64::NAN)
}

/// The load average over the last minute (other work on the machine), from /proc.
pub fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// One phase measured: wall and CPU time from [`Phase::start`], and the peak resident
/// memory over the phase (the peak is reset when it starts).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Took {
    /// Wall seconds.
    pub wall_s: f64,
    /// CPU seconds of the whole process (every thread).
    pub cpu_s: f64,
    /// Peak resident memory of the process during the phase, MiB.
    pub peak_mb: f64,
}

/// A phase being measured.
pub struct Phase {
    watch: Stopwatch,
    cpu: f64,
}

impl Phase {
    /// Starts measuring: the process's peak memory is reset to what it holds now.
    pub fn start() -> Phase {
        reset_peak();
        Phase {
            watch: Stopwatch::start(),
            cpu: cpu_seconds(),
        }
    }

    /// What the phase took.
    pub fn end(self) -> Took {
        Took {
            wall_s: self.watch.elapsed().as_secs_f64(),
            cpu_s: cpu_seconds() - self.cpu,
            peak_mb: peak_rss_mb(),
        }
    }
}

/// The median, lowest and highest of some figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The median (of an even count, the higher middle one).
    pub median: f64,
    /// The lowest.
    pub min: f64,
    /// The highest.
    pub max: f64,
}

impl Spread {
    /// The spread of `v` (`NaN` when empty).
    pub fn of(v: impl IntoIterator<Item = f64>) -> Spread {
        let mut v: Vec<f64> = v.into_iter().collect();
        if v.is_empty() {
            return Spread {
                median: f64::NAN,
                min: f64::NAN,
                max: f64::NAN,
            };
        }
        v.sort_by(f64::total_cmp);
        Spread {
            median: v[v.len() / 2],
            min: v[0],
            max: v[v.len() - 1],
        }
    }

    /// `median (min to max)` with `digits` decimals.
    pub fn show(&self, digits: usize) -> String {
        format!(
            "{:.digits$} ({:.digits$} to {:.digits$})",
            self.median, self.min, self.max
        )
    }
}

/// One round: the code measured and its floor, taken one after the other in the same run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Round {
    /// The code measured.
    pub subject: Took,
    /// The floor.
    pub reference: Took,
}

impl Round {
    /// Subject wall time over the floor's.
    pub fn ratio(&self) -> f64 {
        self.subject.wall_s / self.reference.wall_s
    }

    /// Subject CPU time over the floor's.
    pub fn cpu_ratio(&self) -> f64 {
        self.subject.cpu_s / self.reference.cpu_s
    }
}

/// A benchmark's report: its rounds against the floor, the target, and any figures of its
/// own.
#[derive(Debug, Clone)]
pub struct Figures {
    /// The benchmark's name (`cohort_ingest`).
    pub name: String,
    /// What the floor is, in a few words.
    pub reference: String,
    /// The rounds.
    pub rounds: Vec<Round>,
    /// The target, in words (`ratio <= 1.5, peak < 100 MB`).
    pub target: String,
    /// Whether the target was met (by the medians).
    pub met: Option<bool>,
    /// Further figures (counts, rates, sizes), also written to the JSON.
    pub extra: Map<String, Value>,
}

impl Figures {
    /// A report of `name` against `reference`. It names the glibc arenas the process ran
    /// with (`malloc_arena_max`): benchmarks that host the platform in their own process
    /// call [`platform::process::limit_malloc_arenas`] first in `main`, as the `platform`
    /// and `harness` executables do, so that they measure the memory the executables use.
    pub fn new(name: &str, reference: &str, target: &str) -> Figures {
        let arenas = std::env::var(platform::process::MALLOC_ARENA_MAX)
            .unwrap_or_else(|_| "glibc's default".into());
        let mut extra = Map::new();
        extra.insert("malloc_arena_max".into(), arenas.into());
        Figures {
            name: name.into(),
            reference: reference.into(),
            rounds: vec![],
            target: target.into(),
            met: None,
            extra,
        }
    }

    /// Adds a figure of the benchmark's own.
    pub fn with(&mut self, key: &str, value: impl Into<Value>) -> &mut Self {
        self.extra.insert(key.into(), value.into());
        self
    }

    fn spread(&self, f: impl Fn(&Round) -> f64) -> Spread {
        Spread::of(self.rounds.iter().map(f))
    }

    /// Median wall time of the subject.
    pub fn wall(&self) -> Spread {
        self.spread(|r| r.subject.wall_s)
    }

    /// Median ratio of wall times.
    pub fn ratio(&self) -> Spread {
        self.spread(Round::ratio)
    }

    /// Peak memory of the subject.
    pub fn peak(&self) -> Spread {
        self.spread(|r| r.subject.peak_mb)
    }

    /// Prints the summary and, with `BENCH_JSON=FILE`, appends it to FILE as one JSON line.
    pub fn emit(&self) {
        let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
        let n = self.rounds.len();
        println!(
            "\n== {}: {n} round{} on {cores} cores, load average {:.1} now",
            self.name,
            if n == 1 { "" } else { "s" },
            load_average()
        );
        println!(
            "  measured:  wall {} s, CPU {} s, peak {} MiB",
            self.wall().show(3),
            self.spread(|r| r.subject.cpu_s).show(3),
            self.peak().show(1)
        );
        println!(
            "  floor ({}): wall {} s, CPU {} s, peak {} MiB",
            self.reference,
            self.spread(|r| r.reference.wall_s).show(3),
            self.spread(|r| r.reference.cpu_s).show(3),
            self.spread(|r| r.reference.peak_mb).show(1)
        );
        println!(
            "  ratio to the floor: wall {}, CPU {}",
            self.ratio().show(2),
            self.spread(Round::cpu_ratio).show(2)
        );
        for (k, v) in &self.extra {
            println!("  {k}: {v}");
        }
        let verdict = match self.met {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "not judged",
        };
        println!("  target: {} -> {verdict}", self.target);
        let Some(path) = std::env::var_os("BENCH_JSON") else {
            return;
        };
        let line = self.to_json().to_string();
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()));
        match written {
            Ok(()) => println!("  appended to {}", path.to_string_lossy()),
            Err(e) => eprintln!("BENCH_JSON {}: {e}", path.to_string_lossy()),
        }
    }

    /// The report as JSON: the medians under the names the issue gives (`wall_s`, `cpu_s`,
    /// `peak_mb`, `reference_wall_s`, `ratio`), their ranges, every round, the machine.
    pub fn to_json(&self) -> Value {
        let s = |sp: Spread| json!({"median": sp.median, "min": sp.min, "max": sp.max});
        let mut v = json!({
            "name": self.name,
            "wall_s": self.wall().median,
            "cpu_s": self.spread(|r| r.subject.cpu_s).median,
            "peak_mb": self.peak().median,
            "reference": self.reference,
            "reference_wall_s": self.spread(|r| r.reference.wall_s).median,
            "reference_cpu_s": self.spread(|r| r.reference.cpu_s).median,
            "reference_peak_mb": self.spread(|r| r.reference.peak_mb).median,
            "ratio": self.ratio().median,
            "cpu_ratio": self.spread(Round::cpu_ratio).median,
            "ranges": {
                "wall_s": s(self.wall()),
                "cpu_s": s(self.spread(|r| r.subject.cpu_s)),
                "peak_mb": s(self.peak()),
                "reference_wall_s": s(self.spread(|r| r.reference.wall_s)),
                "ratio": s(self.ratio()),
                "cpu_ratio": s(self.spread(Round::cpu_ratio)),
            },
            "rounds": self.rounds.iter().map(|r| json!({
                "wall_s": r.subject.wall_s, "cpu_s": r.subject.cpu_s, "peak_mb": r.subject.peak_mb,
                "reference_wall_s": r.reference.wall_s, "reference_cpu_s": r.reference.cpu_s,
                "reference_peak_mb": r.reference.peak_mb, "ratio": r.ratio(),
            })).collect::<Vec<_>>(),
            "target": self.target,
            "met": self.met,
            "machine": {
                "cores": std::thread::available_parallelism().map_or(0, |n| n.get()),
                "load_average": load_average(),
            },
            "at": contracts::clock::format_instant(SystemClock.now()),
        });
        if let Value::Object(m) = &mut v {
            for (k, x) in &self.extra {
                m.insert(k.clone(), x.clone());
            }
        }
        v
    }
}
