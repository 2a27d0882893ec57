//! How a check run reads the time and lets it pass: the wall clock against a real service,
//! or a simulated clock that the service under test reads too, moved forward instead of
//! waited on. With the simulated clock the token checks (`token.reuse`, `token.expired`)
//! take no real time and cannot race a loaded machine: the harness's own tests run the
//! simulated key service that way.

use std::time::Duration;

use chrono::{DateTime, Utc};
use contracts::clock::{Clock, SimClock, Stopwatch, SystemClock};

/// The time of a check run.
#[derive(Clone, Default)]
pub enum CheckTime {
    /// The wall clock: waits are real (the command line's only choice).
    #[default]
    Wall,
    /// A simulated clock the service reads too: a wait moves it forward.
    Simulated(SimClock),
}

impl std::fmt::Debug for CheckTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckTime::Wall => f.write_str("Wall"),
            CheckTime::Simulated(c) => write!(f, "Simulated({})", c.now()),
        }
    }
}

impl CheckTime {
    /// The current time (request timestamps, the claims of a made-up token).
    pub(crate) fn now(&self) -> DateTime<Utc> {
        match self {
            CheckTime::Wall => SystemClock.now(),
            CheckTime::Simulated(c) => c.now(),
        }
    }

    /// A point to count an age from (when a token was asked for).
    pub(crate) fn mark(&self) -> Mark {
        match self {
            CheckTime::Wall => Mark::Wall(Stopwatch::start()),
            CheckTime::Simulated(c) => Mark::Simulated(c.clone(), c.now()),
        }
    }

    /// Lets `d` pass: sleeps, or moves the simulated clock.
    pub(crate) async fn pass(&self, d: Duration) {
        match self {
            CheckTime::Wall => tokio::time::sleep(d).await,
            CheckTime::Simulated(c) => {
                let step = chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX);
                // Moving forward by a bounded step is never refused.
                let _ = c.advance(step);
            }
        }
    }

    /// Lets time pass until `mark` is `age` old (at once when it is already).
    pub(crate) async fn until(&self, mark: &Mark, age: Duration) {
        if let Some(left) = age.checked_sub(mark.elapsed()) {
            self.pass(left).await;
        }
    }
}

/// A point in time an age is counted from.
#[derive(Clone)]
pub enum Mark {
    /// On the wall clock.
    Wall(Stopwatch),
    /// On a simulated clock: the clock and the instant.
    Simulated(SimClock, DateTime<Utc>),
}

impl std::fmt::Debug for Mark {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mark({:?} ago)", self.elapsed())
    }
}

impl Mark {
    /// The time since the mark.
    pub(crate) fn elapsed(&self) -> Duration {
        match self {
            Mark::Wall(w) => w.elapsed(),
            Mark::Simulated(c, at) => (c.now() - *at).to_std().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_simulated_wait_moves_the_clock_and_takes_no_time() {
        let start = "2026-03-02T08:00:00Z".parse().unwrap();
        let clock = SimClock::new(start);
        let time = CheckTime::Simulated(clock.clone());
        let mark = time.mark();
        let wall = Stopwatch::start();
        time.until(&mark, Duration::from_secs(3600)).await;
        assert!(wall.elapsed() < Duration::from_secs(30));
        assert_eq!(mark.elapsed(), Duration::from_secs(3600));
        assert_eq!(clock.now(), start + chrono::Duration::hours(1));
        // Already old enough: no move.
        time.until(&mark, Duration::from_secs(10)).await;
        assert_eq!(time.now(), start + chrono::Duration::hours(1));
    }
}
