//! What `--version` says of a binary of the harness: the version, the git commit it was
//! built from, the target and whether it is linked statically, for bug reports.
//!
//! Each binary's package calls [`emit`] from its build script, which sets three variables
//! for the compiler; the binary reads them with [`long_version!`]:
//!
//! ```text
//! harness 0.1.0 (commit 4378880a1b2c, x86_64-unknown-linux-gnu, static)
//! ```
//!
//! The commit is `HARNESS_GIT_COMMIT` when set (a build from a source archive, where git
//! has no history), else `git rev-parse --short=12 HEAD` of the source tree, else `unknown`.
//! The build script runs again when `HEAD` or the branch it names moves, so a development
//! build never reports an older commit.

// An item no other crate can reach is `pub(crate)`, so the compiler reports what is unused.
#![warn(unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The variable that overrides the commit read from git.
pub(crate) const COMMIT_VAR: &str = "HARNESS_GIT_COMMIT";

/// The version line of the binary being compiled: `0.1.0 (commit 4378880a1b2c,
/// x86_64-unknown-linux-gnu, static)`. Its package's build script must call [`emit`].
#[macro_export]
macro_rules! long_version {
    () => {
        concat!(
            env!("CARGO_PKG_VERSION"),
            " (commit ",
            env!("HARNESS_GIT_COMMIT"),
            ", ",
            env!("HARNESS_BUILD_TARGET"),
            ", ",
            env!("HARNESS_LINKAGE"),
            ")"
        )
    };
}

/// Sets `HARNESS_GIT_COMMIT`, `HARNESS_BUILD_TARGET` and `HARNESS_LINKAGE` for the
/// package being built, and tells cargo when to run the build script again. Call it from
/// the build script (`fn main() { build_info::emit() }`).
pub fn emit() {
    println!("cargo::rerun-if-env-changed={COMMIT_VAR}");
    let commit = match std::env::var(COMMIT_VAR) {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => {
            let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
            match git_commit(&dir) {
                Some((commit, watch)) => {
                    for path in watch {
                        println!("cargo::rerun-if-changed={}", path.display());
                    }
                    commit
                }
                None => "unknown".to_string(),
            }
        }
    };
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".into());
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let linkage = if features.split(',').any(|f| f == "crt-static") {
        "static"
    } else {
        "dynamic"
    };
    println!("cargo::rustc-env=HARNESS_GIT_COMMIT={commit}");
    println!("cargo::rustc-env=HARNESS_BUILD_TARGET={target}");
    println!("cargo::rustc-env=HARNESS_LINKAGE={linkage}");
}

/// The short commit of the tree at `dir`, and the files whose change moves it (`HEAD`, the
/// branch it names, the packed refs); `None` outside a git tree or without git.
fn git_commit(dir: &Path) -> Option<(String, Vec<PathBuf>)> {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    let absolute = |p: String| {
        let p = PathBuf::from(p);
        if p.is_absolute() { p } else { dir.join(p) }
    };
    let git_dir = absolute(git(&["rev-parse", "--git-dir"])?);
    let common = git(&["rev-parse", "--git-common-dir"])
        .map(absolute)
        .unwrap_or_else(|| git_dir.clone());
    let mut watch = vec![git_dir.join("HEAD"), common.join("packed-refs")];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch.push(common.join(branch));
    }
    // A path that does not exist would make cargo run the script on every build.
    watch.retain(|p| p.exists());
    Some((commit, watch))
}
