//! The `harness` command's tests: one binary, a module per command.

mod byok;
