//! What the blind rounds of both checks share: how their programs are started.

use std::path::Path;
use std::process::Command;

/// `cmd` with the blind rounds' Python start-up file on its PYTHONPATH
/// (`scenarios/tests/blind/python/sitecustomize.py`: Nagle's algorithm off in http.server, whose
/// answers otherwise each wait 40 ms on loopback). Programs in other languages ignore it.
pub fn without_nagle(cmd: &mut Command) -> &mut Command {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/blind/python");
    cmd.env("PYTHONPATH", dir)
}
