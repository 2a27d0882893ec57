//! Magic numbers: numbers in the NANP fictional range whose behaviour is fixed.
//!
//! A number of the form `+1` + three digits + `55501` + two digits `YY` (the range
//! 555-0100 to 555-0199 that the North American Numbering Plan keeps for fiction, in any
//! area code) behaves as [`MAGIC_NUMBERS`] says for the assigned codes `YY`; other codes
//! follow the model. The table in the crate documentation is the same table.

use crate::script::Response;

/// One assigned magic code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MagicNumber {
    /// The last two digits, `YY`.
    pub code: u8,
    /// What dials to such a number answer.
    pub(crate) behaviour: &'static str,
}

/// The assigned codes, in order.
pub const MAGIC_NUMBERS: [MagicNumber; 13] = [
    MagicNumber {
        code: 0,
        behaviour: "connected, 90 s of talk",
    },
    MagicNumber {
        code: 1,
        behaviour: "always busy",
    },
    MagicNumber {
        code: 2,
        behaviour: "always no answer",
    },
    MagicNumber {
        code: 3,
        behaviour: "always failed (call_rejected)",
    },
    MagicNumber {
        code: 4,
        behaviour: "always connected for 5 s (a short call)",
    },
    MagicNumber {
        code: 5,
        behaviour: "always provider_error",
    },
    MagicNumber {
        code: 6,
        behaviour: "always internal_error",
    },
    MagicNumber {
        code: 7,
        behaviour: "always voicemail",
    },
    MagicNumber {
        code: 8,
        behaviour: "connected, 30 s of talk",
    },
    MagicNumber {
        code: 9,
        behaviour: "busy on the first dial, then connected 60 s",
    },
    MagicNumber {
        code: 10,
        behaviour: "no answer on the first dial, then connected 60 s",
    },
    MagicNumber {
        code: 11,
        behaviour: "a 5 s call on the first dial, then connected 60 s",
    },
    MagicNumber {
        code: 12,
        behaviour: "provider_error on the first dial, then connected 60 s",
    },
];

/// The code `YY` of a number in the fictional range `+1 NXX 555-01YY`, assigned or not.
pub fn magic_code(number: &str) -> Option<u8> {
    let b = number.as_bytes();
    let ok = b.len() == 12
        && b.starts_with(b"+1")
        && b[2..5].iter().all(u8::is_ascii_digit)
        && &b[5..10] == b"55501"
        && b[10..12].iter().all(u8::is_ascii_digit);
    ok.then(|| (b[10] - b'0') * 10 + (b[11] - b'0'))
}

/// The magic number with code `code` in area code 202: `+1202555 01YY`, for example
/// `magic_number(1)` is `"+12025550101"`.
///
/// # Panics
/// When `code` is above 99.
pub fn magic_number(code: u8) -> String {
    assert!(code <= 99, "magic codes are two digits, got {code}");
    format!("+120255501{code:02}")
}

/// The fixed answer of an assigned code to a dial with `attempt_index`, or `None` for an
/// unassigned code.
pub(crate) fn response(code: u8, attempt_index: u32) -> Option<Response> {
    let first = attempt_index == 0;
    let then_connected = |first_response: Response| {
        if first {
            first_response
        } else {
            Response::connected(60)
        }
    };
    Some(match code {
        0 => Response::connected(90),
        1 => Response::busy(),
        2 => Response::no_answer(),
        3 => Response::failed("call_rejected"),
        4 => Response::connected(5),
        5 => Response::provider_error(),
        6 => Response::internal_error(),
        7 => Response::voicemail(),
        8 => Response::connected(30),
        9 => then_connected(Response::busy()),
        10 => then_connected(Response::no_answer()),
        11 => then_connected(Response::connected(5)),
        12 => then_connected(Response::provider_error()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_only_the_fictional_range() {
        assert_eq!(magic_code("+12025550101"), Some(1));
        assert_eq!(magic_code("+19995550199"), Some(99));
        assert_eq!(magic_code("+12025550100"), Some(0));
        assert_eq!(
            magic_code("+12025550201"),
            None,
            "555-02xx is not fictional"
        );
        assert_eq!(magic_code("+12025551212"), None);
        assert_eq!(magic_code("+442025550101"), None);
        assert_eq!(magic_code("+1202555010"), None);
        assert_eq!(magic_code("+120255501011"), None);
        assert_eq!(magic_code("+1a025550101"), None);
        assert_eq!(magic_code("+120255501x1"), None);
        assert_eq!(magic_code("12025550101"), None);
        assert_eq!(magic_number(7), "+12025550107");
        assert_eq!(magic_code(&magic_number(42)), Some(42));
    }

    #[test]
    fn table_and_responses_agree() {
        for (i, m) in MAGIC_NUMBERS.iter().enumerate() {
            assert_eq!(usize::from(m.code), i, "codes are listed in order");
            assert!(response(m.code, 0).is_some(), "{m:?} has a response");
        }
        assert!(response(MAGIC_NUMBERS.len() as u8, 0).is_none());
        assert!(response(99, 0).is_none());
    }

    /// The crate documentation carries the table by hand; keep it in step with the code.
    #[test]
    fn crate_docs_list_every_code() {
        let docs = include_str!("lib.rs");
        let rows: Vec<&str> = docs
            .lines()
            .filter(|l| l.starts_with("//! | `+1 NXX 555-01"))
            .collect();
        assert_eq!(rows.len(), MAGIC_NUMBERS.len(), "{rows:#?}");
        for (row, m) in rows.iter().zip(MAGIC_NUMBERS) {
            assert!(
                row.starts_with(&format!("//! | `+1 NXX 555-01{:02}`", m.code)),
                "{row}"
            );
            assert!(
                row.contains(m.behaviour),
                "{row} should say {:?}",
                m.behaviour
            );
        }
    }
}
