//! A bounded fuzz test of the scenario file reader: whatever the bytes, it answers a
//! scenario or a list of problems each with a line and a column, and never panics. Inputs
//! that once failed are kept in `tests/corpus/` and replayed first.

use std::path::Path;

use proptest::prelude::*;
use scenarios::scenario::load_str;

const SEED_FILE: &str = include_str!("../../examples/lifecycle.toml");

fn judge(text: &str) {
    match load_str(text, "fuzz.toml", Path::new("/nonexistent"), "fuzz") {
        Ok(_) => {}
        Err(e) => {
            assert!(
                !e.problems.is_empty(),
                "a refusal names at least one problem"
            );
            let lines = text.lines().count().max(1);
            for p in &e.problems {
                assert!(
                    p.line >= 1 && p.line <= lines + 1,
                    "line {} of {lines}: {text:?}",
                    p.line
                );
                assert!(p.col >= 1);
                assert!(
                    !p.message.trim().is_empty(),
                    "an empty message for {text:?}"
                );
            }
            let shown = e.to_string();
            assert!(shown.contains("fuzz.toml:"), "{shown}");
        }
    }
}

#[test]
fn the_corpus_of_inputs_that_once_failed_is_refused_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        let bytes = std::fs::read(&p).unwrap();
        judge(&String::from_utf8_lossy(&bytes));
        n += 1;
    }
    assert!(n > 0);
}

/// Fragments that make up plausible and implausible scenario lines.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("[[timeline]]\n".to_string()),
        Just("[[expect]]\n".to_string()),
        Just("[[campaigns]]\n".to_string()),
        Just("[key_service]\n".to_string()),
        Just("at = \"+1h\"\n".to_string()),
        Just("do = \"pause\"\n".to_string()),
        Just("check = \"users\"\n".to_string()),
        Just("campaign = \"spring\"\n".to_string()),
        Just("total = { at_least = 3, at_most = 1 }\n".to_string()),
        Just("start = \"+99999999999d\"\n".to_string()),
        Just("generate = { count = 0, numbers = \"#\" }\n".to_string()),
        "[a-z_]{1,12} = [0-9\"+\\-a-z{}\\[\\]., ]{0,20}\n",
        "\\PC{0,40}\n",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,300}") {
        judge(&text);
    }

    #[test]
    fn damaged_examples_never_panic(cut in 0usize..SEED_FILE.len(), insert in fragment()) {
        let mut cut = cut;
        while !SEED_FILE.is_char_boundary(cut) { cut -= 1; }
        let text = format!("{}{insert}{}", &SEED_FILE[..cut], &SEED_FILE[cut..]);
        judge(&text);
    }

    #[test]
    fn assembled_fragments_never_panic(parts in proptest::collection::vec(fragment(), 0..12)) {
        judge(&format!("start = \"2026-03-02T08:00:00Z\"\n{}", parts.concat()));
    }
}
