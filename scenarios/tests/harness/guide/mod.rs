//! The README and the guide (`docs/guide/`) say what the executables do: their shell blocks
//! run as written (`blocks`), and each command's flags are the ones its `--help` lists
//! (`flags`).
//!
//! A shell block's info string says what it is: ```` ```sh runnable ```` is run by
//! `blocks` against a fresh stack; ```` ```sh illustration ```` is not (it needs Docker, a
//! service of the reader's own, a release build or minutes). Words after `runnable`:
//!
//! - `server=PORT,...`: the block runs until stopped (a server in the foreground): it is
//!   started in the background, and the next block runs once every port listens.
//! - `wait=PORT,...`: after each line of the block that ends in `&`, wait for the ports.
//! - `fresh`: run as in a new terminal: the servers the page started are stopped first, and
//!   the variables its blocks set are gone.
//! - `status=N`: the block's exit status is N, not 0.
//! - `http-errors`: its curl commands may be answered 4xx or 5xx (others must not be).
//! - `docker`: run by `.ci/docker.sh` (with the image it built), not here.

mod blocks;
mod flags;

use std::path::{Path, PathBuf};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The documents whose blocks are checked: the README and every Markdown file of `docs/`.
pub fn documents() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md")];
    let mut stack = vec![root().join("docs")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    out[1..].sort();
    out
}

/// A fenced block of a Markdown document.
#[derive(Debug, Clone)]
pub struct Block {
    /// `README.md:94`: the document, relative to the repository, and the fence's line.
    pub at: String,
    pub lang: String,
    pub attrs: Vec<String>,
    pub text: String,
}

impl Block {
    pub fn has(&self, word: &str) -> bool {
        self.attrs.iter().any(|a| a == word)
    }

    /// The value of `name=VALUE`.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find_map(|a| a.strip_prefix(name)?.strip_prefix('='))
    }

    pub fn is_shell(&self) -> bool {
        matches!(
            self.lang.as_str(),
            "sh" | "bash" | "shell" | "console" | "zsh"
        )
    }
}

/// The fenced blocks of `path`, in order.
pub fn blocks(path: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path
        .strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string();
    parse(&name, &text)
}

/// The fenced blocks of the Markdown `text` of the document `name`.
pub fn parse(name: &str, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(usize, String)> = None;
    let mut body = String::new();
    for (i, line) in text.lines().enumerate() {
        match &open {
            None => {
                if let Some(info) = line.strip_prefix("```") {
                    open = Some((i + 1, info.trim().to_string()));
                    body.clear();
                }
            }
            Some((start, info)) => {
                if line.trim_end() == "```" {
                    let mut words = info.split_whitespace().map(str::to_string);
                    out.push(Block {
                        at: format!("{name}:{start}"),
                        lang: words.next().unwrap_or_default(),
                        attrs: words.collect(),
                        text: std::mem::take(&mut body),
                    });
                    open = None;
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    assert!(open.is_none(), "{name}: a block is not closed");
    out
}
