//! Running a workspace binary as a child process: finding it, reading its standard output
//! line by line with a deadline, signalling it, waiting for its exit.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use contracts::clock::Stopwatch;

/// How long anything that normally takes milliseconds may take on a loaded machine.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// A workspace binary in the target directory these tests were built into. `cargo test
/// --workspace` builds every binary of the workspace before running tests.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    // target/<profile>/deps/<test> -> target/<profile>/<name>
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test runs from target/<profile>/deps");
    let path = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.exists(),
        "{} is missing: build it first (`cargo build --workspace --bins`, which `cargo test --workspace` does)",
        path.display()
    );
    path
}

/// A running child: its standard output arrives line by line on a channel; standard error
/// goes to a file, shown when something fails.
pub struct Running {
    pub child: Child,
    lines: Receiver<String>,
    pub stderr: PathBuf,
    /// Every line read so far.
    pub seen: Vec<String>,
}

impl Running {
    /// Starts `program` with `args`; standard error is written to `stderr`.
    pub fn start(program: &Path, args: &[&str], stderr: &Path) -> Running {
        Running::start_with(program, args, &[], stderr)
    }

    /// [`Running::start`] with these environment variables set.
    pub fn start_with(
        program: &Path,
        args: &[&str],
        envs: &[(&str, &str)],
        stderr: &Path,
    ) -> Running {
        let mut child = Command::new(program)
            .args(args)
            .envs(envs.iter().copied())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(stderr).expect("stderr file"))
            .spawn()
            .unwrap_or_else(|e| panic!("{} starts: {e}", program.display()));
        let out = BufReader::new(child.stdout.take().expect("piped"));
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in out.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Running {
            child,
            lines,
            stderr: stderr.to_path_buf(),
            seen: Vec::new(),
        }
    }

    /// Standard error so far, for failure messages.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// The next line of standard output, or `None` at its end; panics after [`DEADLINE`].
    pub fn next_line(&mut self) -> Option<String> {
        match self.lines.recv_timeout(DEADLINE) {
            Ok(line) => {
                self.seen.push(line.clone());
                Some(line)
            }
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => panic!(
                "no output for {DEADLINE:?}; so far: {:?}\nstderr:\n{}",
                self.seen,
                self.stderr()
            ),
        }
    }

    /// Lines up to and including the first one for which `last` holds.
    pub fn lines_until(&mut self, last: impl Fn(&str) -> bool) -> Vec<String> {
        let mut lines = Vec::new();
        loop {
            let Some(line) = self.next_line() else {
                panic!("output ended early: {lines:?}\nstderr:\n{}", self.stderr())
            };
            let done = last(&line);
            lines.push(line);
            if done {
                return lines;
            }
        }
    }

    /// The rest of standard output, until the child closes it.
    pub fn rest(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        while let Some(line) = self.next_line() {
            lines.push(line);
        }
        lines
    }

    /// Sends `signal` (`TERM`, `INT`) with `kill`.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{signal} failed");
    }

    /// Waits for the exit, at most [`DEADLINE`].
    pub fn wait(&mut self) -> ExitStatus {
        let clock = Stopwatch::start();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            if clock.elapsed() > DEADLINE {
                let _ = self.child.kill();
                panic!("no exit within {DEADLINE:?}\nstderr:\n{}", self.stderr());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Waits until `path` exists (it is written atomically), at most [`DEADLINE`], and reads it;
/// panics with standard error if `running` exits first.
pub fn wait_for_file(path: &Path, running: &mut Running) -> String {
    let clock = Stopwatch::start();
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            return text;
        }
        if let Some(status) = running.child.try_wait().expect("wait") {
            panic!(
                "exited with {status} before writing {}\nstderr:\n{}",
                path.display(),
                running.stderr()
            );
        }
        assert!(
            clock.elapsed() < DEADLINE,
            "{} not written within {DEADLINE:?}\nstderr:\n{}",
            path.display(),
            running.stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `command` with `bash -c`; answers its standard output, panicking when it fails.
pub fn bash(command: &str) -> String {
    let out = Command::new("bash")
        .arg("-c")
        .arg(command)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "`{command}` failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}
