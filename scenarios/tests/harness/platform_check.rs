//! `harness check platform` against the mock.
