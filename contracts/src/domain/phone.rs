//! Telephone numbers in E.164 form.
//!
//! Two entry points, for two kinds of input:
//!
//! - [`parse_e164`] is strict. Numbers in API requests (the agent's number, the user's number
//!   of an instant call, the numbers of a connection config) must already be E.164:
//!   `+14155550100`, nothing else.
//! - [`normalize`] is lenient, for the phone-number column of cohort CSV files, where people
//!   write `(415) 555-0100`, `0091 98765 43210` or a national number with the country given
//!   once in the transformation config (`country_code: "IN"`).
//!
//! # Rules (recorded in the interface document as *assumed*)
//!
//! An E.164 number is `+` followed by 7 to 15 digits, the first of which is not `0`. The
//! country code is not checked against the ITU list and the national number is not checked
//! against a numbering plan, beyond the national lengths below.
//!
//! [`normalize`] works in this order:
//!
//! 1. A `(0)` is dropped (the trunk prefix as written in `+44 (0)20 7946 0018`, never dialled
//!    from abroad). Spaces (any Unicode white space), dashes, dots and parentheses are
//!    dropped. Any other character (a letter, `/`, `#`, an extension such as `x12`) is an
//!    error. A `+` may appear only before the first digit.
//! 2. A number written with `+` is international: its digits are the E.164 digits. So is one
//!    starting with `00` (the international call prefix used in most of the world), which is
//!    dropped. Where its country code has a fixed national length (below), the digits after
//!    the code must have it: `+1 312 555 00001` (11 after the `1`) is an error.
//! 3. Any other number is national to the default region, given as an ISO 3166-1 alpha-2 code
//!    in any case (`IN`, `us`) or as a calling code (`91`, `+91`). Without a default region it
//!    is an error that asks for the country code.
//! 4. Where the national number length of the region's calling code is fixed and known (see
//!    below), the digits are taken as: the national number itself when they have exactly that
//!    length; the national number behind a trunk prefix (`0`, or `8` for +7) when they are one
//!    trunk prefix longer; the national number already preceded by the calling code when they
//!    start with it and are that much longer. Any other length is an error naming the expected
//!    length.
//! 5. Elsewhere one leading trunk `0` is dropped (except for +39 Italy and the Vatican and +378
//!    San Marino, where the leading `0` is part of the number) and the calling code is put in
//!    front. A national number there that already includes the calling code cannot be told
//!    apart: write it with `+` or `00`.
//! 6. The result must be a valid E.164 number (length 7 to 15).
//!
//! Fixed national lengths: +1 (the North American Numbering Plan: US, CA and the other
//! members) 10 digits, +7 (RU, KZ) 10, +27 (ZA) 9, +31 (NL) 9, +33 (FR) 9, +34 (ES) 9,
//! +52 (MX) 10, +61 (AU, CC, CX) 9, +65 (SG) 8, +91 (IN) 10, +351 (PT) 9, +852 (HK) 8.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The fewest digits of an E.164 number (after the `+`) this crate accepts.
pub(crate) const MIN_DIGITS: usize = 7;
/// The most digits of an E.164 number (after the `+`), fixed by ITU-T E.164.
pub(crate) const MAX_DIGITS: usize = 15;

/// Why a phone number was refused. Every message names the input as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PhoneError {
    /// The input is empty or only white space.
    #[error("the phone number is empty")]
    Empty,
    /// The input has separators but no digit.
    #[error("'{input}' contains no digits")]
    NoDigits {
        /// The number as given.
        input: String,
    },
    /// A character that cannot be part of a written phone number.
    #[error(
        "'{input}' contains '{found}': a phone number may hold only digits, a leading '+', \
         spaces, dashes, dots and parentheses"
    )]
    InvalidCharacter {
        /// The number as given.
        input: String,
        /// The first character refused.
        found: char,
    },
    /// A `+` after the first digit, or a second `+`.
    #[error("'{input}' has a '+' after the start: '+' may only introduce the country code")]
    MisplacedPlus {
        /// The number as given.
        input: String,
    },
    /// Strict parsing: not `+` followed by digits only.
    #[error(
        "'{input}' is not an E.164 number: write '+', the country code and the number, digits \
         only, for example '+14155550100'"
    )]
    NotE164 {
        /// The number as given.
        input: String,
    },
    /// The digits after `+` (or `00`) start with `0`; no country code does.
    #[error("'{input}' is not a valid international number: a country code never starts with 0")]
    LeadingZero {
        /// The number as given.
        input: String,
    },
    /// Fewer than [`MIN_DIGITS`] digits, country code included.
    #[error("'{input}' is too short for an E.164 number (7 to 15 digits)")]
    TooShort {
        /// The number as given.
        input: String,
    },
    /// More than [`MAX_DIGITS`] digits, country code included.
    #[error("'{input}' is too long for an E.164 number (7 to 15 digits)")]
    TooLong {
        /// The number as given.
        input: String,
    },
    /// A national number and no default region to say which country it belongs to.
    #[error(
        "'{input}' has no country code: write it with '+' or '00' and the country code, or give \
         a default region such as 'IN' or '91'"
    )]
    MissingCountryCode {
        /// The number as given.
        input: String,
    },
    /// A default region that is neither a known ISO 3166-1 alpha-2 code nor a calling code.
    #[error("unknown region '{region}': {}", region_hint(region))]
    UnknownRegion {
        /// The region as given.
        region: String,
    },
    /// A national number whose length does not fit the region's fixed national length.
    #[error(
        "'{input}' has {found} digits, but a national number in {region} has {expected} \
         (after any trunk prefix, before the country code)"
    )]
    NationalNumberLength {
        /// The number as given.
        input: String,
        /// The default region and its calling code, for example `IN (+91)` or `+91`.
        region: String,
        /// The national number length of the region.
        expected: usize,
        /// The digits found.
        found: usize,
    },
    /// A number written with `+` or `00` whose digits after a country code of fixed national
    /// length do not have that length.
    #[error(
        "'{input}' has {found} digits after the country code +{code}, but a national number \
         there has {expected}"
    )]
    CountryNumberLength {
        /// The number as given.
        input: String,
        /// The country calling code it starts with.
        code: u16,
        /// The national number length under that code.
        expected: usize,
        /// The digits found after the code.
        found: usize,
    },
}

fn region_hint(region: &str) -> &'static str {
    if region.trim().eq_ignore_ascii_case("UK") {
        "the ISO 3166-1 code of the United Kingdom is 'GB'"
    } else {
        "use an ISO 3166-1 alpha-2 code such as 'IN' or 'US', or a country calling code such as '91'"
    }
}

/// A telephone number in E.164 form: `+`, then 7 to 15 digits, the first not `0`.
///
/// Built only by [`parse_e164`] (also through [`FromStr`] and serde) and [`normalize`], so a
/// value of this type is always well formed. It serializes as the plain string.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct E164(String);

impl E164 {
    /// The number, `+` included.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The number as an owned string, `+` included.
    pub fn into_string(self) -> String {
        self.0
    }

    /// Builds the number from its digits (no `+`), checking the first digit and the length.
    /// `input` is what the caller gave, for the error message.
    fn from_digits(digits: &str, input: &str) -> Result<Self, PhoneError> {
        debug_assert!(digits.bytes().all(|b| b.is_ascii_digit()));
        if digits.starts_with('0') {
            return Err(PhoneError::LeadingZero {
                input: input.to_owned(),
            });
        }
        if digits.len() < MIN_DIGITS {
            return Err(PhoneError::TooShort {
                input: input.to_owned(),
            });
        }
        if digits.len() > MAX_DIGITS {
            return Err(PhoneError::TooLong {
                input: input.to_owned(),
            });
        }
        let mut e164 = String::with_capacity(1 + digits.len());
        e164.push('+');
        e164.push_str(digits);
        Ok(E164(e164))
    }
}

impl fmt::Display for E164 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for E164 {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl FromStr for E164 {
    type Err = PhoneError;

    /// Strict, as [`parse_e164`].
    fn from_str(s: &str) -> Result<Self, PhoneError> {
        parse_e164(s)
    }
}

impl Serialize for E164 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for E164 {
    /// Strict, as [`parse_e164`].
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        parse_e164(&s).map_err(serde::de::Error::custom)
    }
}

/// Parses a number that must already be in E.164 form: `+`, then 7 to 15 digits, the first
/// not `0`, and nothing else (no spaces, no punctuation).
pub fn parse_e164(s: &str) -> Result<E164, PhoneError> {
    if s.is_empty() {
        return Err(PhoneError::Empty);
    }
    match s.strip_prefix('+') {
        Some(digits) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            E164::from_digits(digits, s)
        }
        _ => Err(PhoneError::NotE164 {
            input: s.to_owned(),
        }),
    }
}

/// A number in E.164 form (`+` and 1 to 15 digits, the first not `0`) as its digits' value:
/// below 10^15 and never 0, so it fits 8 bytes and gives the number back exactly
/// ([`from_digits_value`]). `None` for any other string.
///
/// ```
/// use contracts::domain::phone::{digits_value, from_digits_value};
///
/// assert_eq!(digits_value("+14155550100"), Some(14_155_550_100));
/// assert_eq!(from_digits_value(14_155_550_100), "+14155550100");
/// assert_eq!(digits_value("+014155550100"), None);
/// ```
pub fn digits_value(s: &str) -> Option<u64> {
    let digits = s.strip_prefix('+')?;
    ((1..=15).contains(&digits.len())
        && !digits.starts_with('0')
        && digits.bytes().all(|b| b.is_ascii_digit()))
    .then(|| digits.bytes().fold(0, |n, b| n * 10 + u64::from(b - b'0')))
}

/// The number whose [`digits_value`] is `value`.
pub fn from_digits_value(value: u64) -> String {
    format!("+{value}")
}

/// Normalises a phone number as written in a cohort file to E.164, reading national numbers
/// as numbers of `default_region`: an ISO 3166-1 alpha-2 code (`IN`, `us`) or a calling code
/// (`91`, `+91`). The rules are in the [module documentation](self).
///
/// ```
/// use contracts::domain::phone::normalize;
///
/// assert_eq!(normalize("098765 43210", Some("IN")).unwrap().as_str(), "+919876543210");
/// assert_eq!(normalize("(415) 555-0100", Some("us")).unwrap().as_str(), "+14155550100");
/// assert_eq!(normalize("0044 20 7946 0018", None).unwrap().as_str(), "+442079460018");
/// ```
pub fn normalize(raw: &str, default_region: Option<&str>) -> Result<E164, PhoneError> {
    let mut digits = String::with_capacity(MAX_DIGITS + 1);
    let mut plus = false;
    let written = if raw.contains("(0)") {
        Cow::Owned(raw.replace("(0)", ""))
    } else {
        Cow::Borrowed(raw)
    };
    for ch in written.chars() {
        match ch {
            '0'..='9' => digits.push(ch),
            '+' if !plus && digits.is_empty() => plus = true,
            '+' => {
                return Err(PhoneError::MisplacedPlus {
                    input: raw.to_owned(),
                });
            }
            '-' | '.' | '(' | ')' => {}
            c if c.is_whitespace() => {}
            c => {
                return Err(PhoneError::InvalidCharacter {
                    input: raw.to_owned(),
                    found: c,
                });
            }
        }
    }
    if digits.is_empty() {
        return Err(if raw.trim().is_empty() {
            PhoneError::Empty
        } else {
            PhoneError::NoDigits {
                input: raw.to_owned(),
            }
        });
    }

    if plus {
        return international(&digits, raw);
    }
    if let Some(digits) = digits.strip_prefix("00") {
        return international(digits, raw);
    }

    let Some(region) = default_region else {
        return Err(PhoneError::MissingCountryCode {
            input: raw.to_owned(),
        });
    };
    let region = Region::resolve(region)?;
    let code = region.code.to_string();
    let rules = national_rules(region.code);

    let national = match rules.length {
        Some(length) => {
            let trunk_len = rules.trunk.map_or(0, str::len);
            if digits.len() == length {
                digits.as_str()
            } else if let Some(rest) = rules
                .trunk
                .and_then(|trunk| digits.strip_prefix(trunk))
                .filter(|_| digits.len() == trunk_len + length)
            {
                rest
            } else if let Some(rest) = digits
                .strip_prefix(code.as_str())
                .filter(|_| digits.len() == code.len() + length)
            {
                rest
            } else {
                return Err(PhoneError::NationalNumberLength {
                    input: raw.to_owned(),
                    region: region.label,
                    expected: length,
                    found: digits.len(),
                });
            }
        }
        None => match rules.trunk {
            Some(trunk) => digits.strip_prefix(trunk).unwrap_or(&digits),
            None => &digits,
        },
    };
    let mut full = String::with_capacity(code.len() + national.len());
    full.push_str(&code);
    full.push_str(national);
    E164::from_digits(&full, raw)
}

/// The digits of a number written with `+` or `00`: a valid E.164 number whose national
/// part has the length fixed for its country code, where one is (rule 4 of
/// [`normalize`] holds for international numbers too).
fn international(digits: &str, raw: &str) -> Result<E164, PhoneError> {
    let e164 = E164::from_digits(digits, raw)?;
    // Country codes are prefix-free: the one of 1 to 3 leading digits with a fixed length,
    // if any, is the number's.
    for len in 1..=3 {
        let Ok(code) = digits[..len].parse::<u16>() else {
            break;
        };
        if let Some(expected) = national_rules(code).length {
            let found = digits.len() - len;
            if found != expected {
                return Err(PhoneError::CountryNumberLength {
                    input: raw.to_owned(),
                    code,
                    expected,
                    found,
                });
            }
            break;
        }
    }
    Ok(e164)
}

/// The strict E.164 form [`parse_e164`] accepts, as a regular expression (ECMA-262 and
/// Python alike): `+`, a first digit that is not `0`, [`MIN_DIGITS`] to [`MAX_DIGITS`] digits.
pub fn e164_pattern() -> String {
    format!(r"^\+[1-9][0-9]{{{},{}}}$", MIN_DIGITS - 1, MAX_DIGITS - 1)
}

/// The default regions a cohort accepts, as a regular expression: a calling code of one to
/// three digits with an optional `+`, or one of the ISO 3166-1 alpha-2 codes
/// [`calling_code`] knows, in any letter case.
pub fn region_pattern() -> String {
    let codes: Vec<String> = CALLING_CODES
        .iter()
        .map(|(r, _)| {
            r.chars()
                .map(|c| format!("[{}{}]", c.to_ascii_uppercase(), c.to_ascii_lowercase()))
                .collect()
        })
        .collect();
    format!(r"^(\+?[0-9]{{1,3}}|{})$", codes.join("|"))
}

/// The ITU-T country calling code of a region given by its ISO 3166-1 alpha-2 code, in any
/// letter case: `calling_code("IN") == Some(91)`, `calling_code("ca") == Some(1)`.
///
/// The table covers all 249 officially assigned ISO 3166-1 codes, plus `XK` (Kosovo, +383),
/// `AC` (Ascension, +247) and `TA` (Tristan da Cunha, +290), which are in common use. Members
/// of the North American Numbering Plan map to 1 (the area code is part of the national
/// number). Territories without a code of their own map to the code in use there: `AQ` and
/// `HM` +672, `BV` and `SJ` +47, `GS` +500, `PN` +64, `TF` +262, `UM` +1, `VA` +39, `EH` +212.
pub(crate) fn calling_code(region: &str) -> Option<u16> {
    let &[a, b] = region.as_bytes() else {
        return None;
    };
    let key = [a.to_ascii_uppercase(), b.to_ascii_uppercase()];
    CALLING_CODES
        .binary_search_by(|(r, _)| r.as_bytes().cmp(&key[..]))
        .ok()
        .map(|i| CALLING_CODES[i].1)
}

/// A resolved default region.
struct Region {
    code: u16,
    /// How error messages name it: `IN (+91)`, or `+91` when given as a calling code.
    label: String,
}

impl Region {
    fn resolve(given: &str) -> Result<Region, PhoneError> {
        let unknown = || PhoneError::UnknownRegion {
            region: given.to_owned(),
        };
        let trimmed = given.trim();
        let numeric = trimmed.strip_prefix('+').unwrap_or(trimmed);
        if !numeric.is_empty() && numeric.bytes().all(|b| b.is_ascii_digit()) {
            // Calling codes have 1 to 3 digits and never start with 0.
            let code = numeric
                .parse::<u16>()
                .ok()
                .filter(|_| numeric.len() <= 3 && !numeric.starts_with('0'));
            if let Some(code) = code.filter(|&code| CALLING_CODES.iter().any(|&(_, c)| c == code)) {
                return Ok(Region {
                    code,
                    label: format!("+{code}"),
                });
            }
            return Err(unknown());
        }
        let code = calling_code(trimmed).ok_or_else(unknown)?;
        Ok(Region {
            code,
            label: format!("{} (+{code})", trimmed.to_ascii_uppercase()),
        })
    }
}

/// How national numbers are written under one calling code.
struct NationalRules {
    /// The trunk prefix dialled before a national number inside the country, if any.
    trunk: Option<&'static str>,
    /// The length of every national (significant) number, where it is fixed.
    length: Option<usize>,
}

fn national_rules(code: u16) -> NationalRules {
    let (trunk, length) = match code {
        // NANP: the trunk prefix is "1", the calling code itself, so "1 415 555 0100" is
        // read as already carrying the calling code.
        1 => (None, Some(10)),
        7 => (Some("8"), Some(10)),
        27 | 31 | 33 | 61 => (Some("0"), Some(9)),
        91 => (Some("0"), Some(10)),
        52 => (Some("0"), Some(10)),
        34 | 351 => (None, Some(9)),
        65 | 852 => (None, Some(8)),
        // Italy, the Vatican and San Marino keep the leading 0 in international form.
        39 | 378 => (None, None),
        _ => (Some("0"), None),
    };
    NationalRules { trunk, length }
}

/// ISO 3166-1 alpha-2 code to ITU-T calling code, sorted by region for binary search.
const CALLING_CODES: [(&str, u16); 252] = [
    ("AC", 247),
    ("AD", 376),
    ("AE", 971),
    ("AF", 93),
    ("AG", 1),
    ("AI", 1),
    ("AL", 355),
    ("AM", 374),
    ("AO", 244),
    ("AQ", 672),
    ("AR", 54),
    ("AS", 1),
    ("AT", 43),
    ("AU", 61),
    ("AW", 297),
    ("AX", 358),
    ("AZ", 994),
    ("BA", 387),
    ("BB", 1),
    ("BD", 880),
    ("BE", 32),
    ("BF", 226),
    ("BG", 359),
    ("BH", 973),
    ("BI", 257),
    ("BJ", 229),
    ("BL", 590),
    ("BM", 1),
    ("BN", 673),
    ("BO", 591),
    ("BQ", 599),
    ("BR", 55),
    ("BS", 1),
    ("BT", 975),
    ("BV", 47),
    ("BW", 267),
    ("BY", 375),
    ("BZ", 501),
    ("CA", 1),
    ("CC", 61),
    ("CD", 243),
    ("CF", 236),
    ("CG", 242),
    ("CH", 41),
    ("CI", 225),
    ("CK", 682),
    ("CL", 56),
    ("CM", 237),
    ("CN", 86),
    ("CO", 57),
    ("CR", 506),
    ("CU", 53),
    ("CV", 238),
    ("CW", 599),
    ("CX", 61),
    ("CY", 357),
    ("CZ", 420),
    ("DE", 49),
    ("DJ", 253),
    ("DK", 45),
    ("DM", 1),
    ("DO", 1),
    ("DZ", 213),
    ("EC", 593),
    ("EE", 372),
    ("EG", 20),
    ("EH", 212),
    ("ER", 291),
    ("ES", 34),
    ("ET", 251),
    ("FI", 358),
    ("FJ", 679),
    ("FK", 500),
    ("FM", 691),
    ("FO", 298),
    ("FR", 33),
    ("GA", 241),
    ("GB", 44),
    ("GD", 1),
    ("GE", 995),
    ("GF", 594),
    ("GG", 44),
    ("GH", 233),
    ("GI", 350),
    ("GL", 299),
    ("GM", 220),
    ("GN", 224),
    ("GP", 590),
    ("GQ", 240),
    ("GR", 30),
    ("GS", 500),
    ("GT", 502),
    ("GU", 1),
    ("GW", 245),
    ("GY", 592),
    ("HK", 852),
    ("HM", 672),
    ("HN", 504),
    ("HR", 385),
    ("HT", 509),
    ("HU", 36),
    ("ID", 62),
    ("IE", 353),
    ("IL", 972),
    ("IM", 44),
    ("IN", 91),
    ("IO", 246),
    ("IQ", 964),
    ("IR", 98),
    ("IS", 354),
    ("IT", 39),
    ("JE", 44),
    ("JM", 1),
    ("JO", 962),
    ("JP", 81),
    ("KE", 254),
    ("KG", 996),
    ("KH", 855),
    ("KI", 686),
    ("KM", 269),
    ("KN", 1),
    ("KP", 850),
    ("KR", 82),
    ("KW", 965),
    ("KY", 1),
    ("KZ", 7),
    ("LA", 856),
    ("LB", 961),
    ("LC", 1),
    ("LI", 423),
    ("LK", 94),
    ("LR", 231),
    ("LS", 266),
    ("LT", 370),
    ("LU", 352),
    ("LV", 371),
    ("LY", 218),
    ("MA", 212),
    ("MC", 377),
    ("MD", 373),
    ("ME", 382),
    ("MF", 590),
    ("MG", 261),
    ("MH", 692),
    ("MK", 389),
    ("ML", 223),
    ("MM", 95),
    ("MN", 976),
    ("MO", 853),
    ("MP", 1),
    ("MQ", 596),
    ("MR", 222),
    ("MS", 1),
    ("MT", 356),
    ("MU", 230),
    ("MV", 960),
    ("MW", 265),
    ("MX", 52),
    ("MY", 60),
    ("MZ", 258),
    ("NA", 264),
    ("NC", 687),
    ("NE", 227),
    ("NF", 672),
    ("NG", 234),
    ("NI", 505),
    ("NL", 31),
    ("NO", 47),
    ("NP", 977),
    ("NR", 674),
    ("NU", 683),
    ("NZ", 64),
    ("OM", 968),
    ("PA", 507),
    ("PE", 51),
    ("PF", 689),
    ("PG", 675),
    ("PH", 63),
    ("PK", 92),
    ("PL", 48),
    ("PM", 508),
    ("PN", 64),
    ("PR", 1),
    ("PS", 970),
    ("PT", 351),
    ("PW", 680),
    ("PY", 595),
    ("QA", 974),
    ("RE", 262),
    ("RO", 40),
    ("RS", 381),
    ("RU", 7),
    ("RW", 250),
    ("SA", 966),
    ("SB", 677),
    ("SC", 248),
    ("SD", 249),
    ("SE", 46),
    ("SG", 65),
    ("SH", 290),
    ("SI", 386),
    ("SJ", 47),
    ("SK", 421),
    ("SL", 232),
    ("SM", 378),
    ("SN", 221),
    ("SO", 252),
    ("SR", 597),
    ("SS", 211),
    ("ST", 239),
    ("SV", 503),
    ("SX", 1),
    ("SY", 963),
    ("SZ", 268),
    ("TA", 290),
    ("TC", 1),
    ("TD", 235),
    ("TF", 262),
    ("TG", 228),
    ("TH", 66),
    ("TJ", 992),
    ("TK", 690),
    ("TL", 670),
    ("TM", 993),
    ("TN", 216),
    ("TO", 676),
    ("TR", 90),
    ("TT", 1),
    ("TV", 688),
    ("TW", 886),
    ("TZ", 255),
    ("UA", 380),
    ("UG", 256),
    ("UM", 1),
    ("US", 1),
    ("UY", 598),
    ("UZ", 998),
    ("VA", 39),
    ("VC", 1),
    ("VE", 58),
    ("VG", 1),
    ("VI", 1),
    ("VN", 84),
    ("VU", 678),
    ("WF", 681),
    ("WS", 685),
    ("XK", 383),
    ("YE", 967),
    ("YT", 262),
    ("ZA", 27),
    ("ZM", 260),
    ("ZW", 263),
];

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn ok(raw: &str, region: Option<&str>) -> String {
        normalize(raw, region)
            .unwrap_or_else(|e| panic!("{raw:?} with {region:?}: {e}"))
            .into_string()
    }

    #[rstest]
    // India: national, with the trunk 0, already with the calling code, international.
    #[case("9876543210", Some("IN"), "+919876543210")]
    #[case("98765 43210", Some("in"), "+919876543210")]
    #[case("09876543210", Some("IN"), "+919876543210")]
    #[case("098765-43210", Some("IN"), "+919876543210")]
    #[case("919876543210", Some("IN"), "+919876543210")]
    #[case("91 98765 43210", Some("IN"), "+919876543210")]
    // Ten digits that happen to start with 91 are a national number, not 91 + eight digits.
    #[case("91987 65432", Some("IN"), "+919198765432")]
    #[case("+91 98765 43210", None, "+919876543210")]
    #[case("+91 98765 43210", Some("US"), "+919876543210")]
    #[case("0091 98765 43210", None, "+919876543210")]
    #[case("0091-98765-43210", Some("GB"), "+919876543210")]
    // A calling code as the region.
    #[case("9876543210", Some("91"), "+919876543210")]
    #[case("09876543210", Some("+91"), "+919876543210")]
    // North America: the trunk prefix is 1, the calling code.
    #[case("(415) 555-0100", Some("US"), "+14155550100")]
    #[case("415.555.0100", Some("us"), "+14155550100")]
    #[case("1-415-555-0100", Some("US"), "+14155550100")]
    #[case("1 (415) 555-0100", Some("CA"), "+14155550100")]
    #[case("+1 (415) 555-0100", None, "+14155550100")]
    #[case("4155550100", Some("1"), "+14155550100")]
    // United Kingdom: trunk 0, variable length.
    #[case("020 7946 0018", Some("GB"), "+442079460018")]
    #[case("(020) 7946-0018", Some("gb"), "+442079460018")]
    // "(0)": the trunk prefix, written for national callers; never dialled from abroad.
    #[case("+44 (0)20 7946 0018", None, "+442079460018")]
    #[case("+44(0)2079460018", Some("US"), "+442079460018")]
    #[case("(0)20 7946 0018", Some("GB"), "+442079460018")]
    // Russia: trunk 8, ten digits; a toll-free 8 800 number with and without the trunk.
    #[case("8 (495) 123-45-67", Some("RU"), "+74951234567")]
    #[case("7 495 123 45 67", Some("RU"), "+74951234567")]
    #[case("8 800 555 35 35", Some("RU"), "+78005553535")]
    #[case("800 555 35 35", Some("RU"), "+78005553535")]
    // Italy keeps the leading 0 of landlines.
    #[case("06 1234 5678", Some("IT"), "+390612345678")]
    // France and Australia: trunk 0, nine digits.
    #[case("01 23 45 67 89", Some("FR"), "+33123456789")]
    #[case("33 1 23 45 67 89", Some("FR"), "+33123456789")]
    #[case("0412 345 678", Some("AU"), "+61412345678")]
    // Germany: variable length, trunk 0.
    #[case("030 1234567", Some("DE"), "+49301234567")]
    // Separators of every kind, a non-breaking space, surrounding white space.
    #[case("  +91\u{a0}98765\t43210 ", None, "+919876543210")]
    #[case("(+91) 98765.43210", None, "+919876543210")]
    // Lengths at the limits: 7 and 15 digits (under a code of variable length).
    #[case("+4912345", None, "+4912345")]
    #[case("+491234567890123", None, "+491234567890123")]
    // The fixed lengths hold for international numbers too, and only under their code.
    #[case("+91 98765 43210", None, "+919876543210")]
    #[case("00351 912 345 678", None, "+351912345678")]
    #[case("+353 1 234 5678", None, "+35312345678")]
    fn normalize_accepts(#[case] raw: &str, #[case] region: Option<&str>, #[case] expected: &str) {
        assert_eq!(ok(raw, region), expected);
    }

    #[rstest]
    #[case(
        "9876543210",
        Some("XX"),
        PhoneError::UnknownRegion { region: "XX".into() },
        "unknown region 'XX': use an ISO 3166-1 alpha-2 code such as 'IN' or 'US', or a country \
         calling code such as '91'"
    )]
    #[case(
        "9876543210",
        Some("UK"),
        PhoneError::UnknownRegion { region: "UK".into() },
        "unknown region 'UK': the ISO 3166-1 code of the United Kingdom is 'GB'"
    )]
    #[case(
        "9876543210",
        Some("India"),
        PhoneError::UnknownRegion { region: "India".into() },
        "unknown region 'India': use an ISO 3166-1 alpha-2 code such as 'IN' or 'US', or a \
         country calling code such as '91'"
    )]
    #[case(
        "9876543210",
        Some("999"),
        PhoneError::UnknownRegion { region: "999".into() },
        "unknown region '999': use an ISO 3166-1 alpha-2 code such as 'IN' or 'US', or a country \
         calling code such as '91'"
    )]
    #[case(
        "9876543210",
        Some("091"),
        PhoneError::UnknownRegion { region: "091".into() },
        "unknown region '091': use an ISO 3166-1 alpha-2 code such as 'IN' or 'US', or a country \
         calling code such as '91'"
    )]
    #[case(
        "98765ABCDE",
        Some("IN"),
        PhoneError::InvalidCharacter { input: "98765ABCDE".into(), found: 'A' },
        "'98765ABCDE' contains 'A': a phone number may hold only digits, a leading '+', spaces, \
         dashes, dots and parentheses"
    )]
    #[case(
        "1-800-FLOWERS",
        Some("US"),
        PhoneError::InvalidCharacter { input: "1-800-FLOWERS".into(), found: 'F' },
        "'1-800-FLOWERS' contains 'F': a phone number may hold only digits, a leading '+', \
         spaces, dashes, dots and parentheses"
    )]
    #[case(
        "415 555 0100 x12",
        Some("US"),
        PhoneError::InvalidCharacter { input: "415 555 0100 x12".into(), found: 'x' },
        "'415 555 0100 x12' contains 'x': a phone number may hold only digits, a leading '+', \
         spaces, dashes, dots and parentheses"
    )]
    #[case(
        "+98765",
        None,
        PhoneError::TooShort { input: "+98765".into() },
        "'+98765' is too short for an E.164 number (7 to 15 digits)"
    )]
    #[case(
        "12",
        Some("GB"),
        PhoneError::TooShort { input: "12".into() },
        "'12' is too short for an E.164 number (7 to 15 digits)"
    )]
    #[case(
        "+1234567890123456",
        None,
        PhoneError::TooLong { input: "+1234567890123456".into() },
        "'+1234567890123456' is too long for an E.164 number (7 to 15 digits)"
    )]
    #[case(
        "+1 312 555 00001",
        None,
        PhoneError::CountryNumberLength { input: "+1 312 555 00001".into(), code: 1, expected: 10, found: 11 },
        "'+1 312 555 00001' has 11 digits after the country code +1, but a national number \
         there has 10"
    )]
    #[case(
        "0091 98765 432",
        Some("US"),
        PhoneError::CountryNumberLength { input: "0091 98765 432".into(), code: 91, expected: 10, found: 8 },
        "'0091 98765 432' has 8 digits after the country code +91, but a national number there \
         has 10"
    )]
    #[case(
        "+351 91234567",
        None,
        PhoneError::CountryNumberLength { input: "+351 91234567".into(), code: 351, expected: 9, found: 8 },
        "'+351 91234567' has 8 digits after the country code +351, but a national number there \
         has 9"
    )]
    #[case(
        "0044 1234 5678 9012 3456",
        None,
        PhoneError::TooLong { input: "0044 1234 5678 9012 3456".into() },
        "'0044 1234 5678 9012 3456' is too long for an E.164 number (7 to 15 digits)"
    )]
    #[case(
        "9876543210",
        None,
        PhoneError::MissingCountryCode { input: "9876543210".into() },
        "'9876543210' has no country code: write it with '+' or '00' and the country code, or \
         give a default region such as 'IN' or '91'"
    )]
    #[case(
        "98765",
        Some("IN"),
        PhoneError::NationalNumberLength {
            input: "98765".into(),
            region: "IN (+91)".into(),
            expected: 10,
            found: 5,
        },
        "'98765' has 5 digits, but a national number in IN (+91) has 10 (after any trunk \
         prefix, before the country code)"
    )]
    #[case(
        "91 98765 4321",
        Some("IN"),
        PhoneError::NationalNumberLength {
            input: "91 98765 4321".into(),
            region: "IN (+91)".into(),
            expected: 10,
            found: 11,
        },
        "'91 98765 4321' has 11 digits, but a national number in IN (+91) has 10 (after any \
         trunk prefix, before the country code)"
    )]
    #[case(
        "415 555 010",
        Some("+1"),
        PhoneError::NationalNumberLength {
            input: "415 555 010".into(),
            region: "+1".into(),
            expected: 10,
            found: 9,
        },
        "'415 555 010' has 9 digits, but a national number in +1 has 10 (after any trunk \
         prefix, before the country code)"
    )]
    #[case(
        "0 415 555 0100",
        Some("US"),
        PhoneError::NationalNumberLength {
            input: "0 415 555 0100".into(),
            region: "US (+1)".into(),
            expected: 10,
            found: 11,
        },
        "'0 415 555 0100' has 11 digits, but a national number in US (+1) has 10 (after any \
         trunk prefix, before the country code)"
    )]
    #[case(
        "+0 98765 43210",
        None,
        PhoneError::LeadingZero { input: "+0 98765 43210".into() },
        "'+0 98765 43210' is not a valid international number: a country code never starts \
         with 0"
    )]
    #[case(
        "000 98765 43210",
        Some("IN"),
        PhoneError::LeadingZero { input: "000 98765 43210".into() },
        "'000 98765 43210' is not a valid international number: a country code never starts \
         with 0"
    )]
    #[case(
        "91+9876543210",
        None,
        PhoneError::MisplacedPlus { input: "91+9876543210".into() },
        "'91+9876543210' has a '+' after the start: '+' may only introduce the country code"
    )]
    #[case(
        "++919876543210",
        None,
        PhoneError::MisplacedPlus { input: "++919876543210".into() },
        "'++919876543210' has a '+' after the start: '+' may only introduce the country code"
    )]
    #[case("", Some("IN"), PhoneError::Empty, "the phone number is empty")]
    #[case("   ", Some("IN"), PhoneError::Empty, "the phone number is empty")]
    #[case(
        "( ) -",
        Some("IN"),
        PhoneError::NoDigits { input: "( ) -".into() },
        "'( ) -' contains no digits"
    )]
    fn normalize_refuses_with_a_clear_message(
        #[case] raw: &str,
        #[case] region: Option<&str>,
        #[case] error: PhoneError,
        #[case] message: &str,
    ) {
        assert_eq!(normalize(raw, region), Err(error.clone()));
        assert_eq!(error.to_string(), message);
    }

    #[rstest]
    #[case("+919876543210")]
    #[case("+14155550100")]
    #[case("+442079460018")]
    #[case("+4912345")]
    #[case("+491234567890123")]
    fn parse_e164_accepts_canonical_numbers(#[case] s: &str) {
        let n = parse_e164(s).unwrap();
        assert_eq!(n.as_str(), s);
        assert_eq!(n.to_string(), s);
        assert_eq!(n.as_ref(), s);
        assert_eq!(s.parse::<E164>(), Ok(n.clone()));
        // Already canonical, so normalising changes nothing.
        assert_eq!(normalize(s, None), Ok(n));
    }

    #[rstest]
    #[case("", PhoneError::Empty)]
    #[case("919876543210", PhoneError::NotE164 { input: "919876543210".into() })]
    #[case("+91 98765 43210", PhoneError::NotE164 { input: "+91 98765 43210".into() })]
    #[case("+1-415-555-0100", PhoneError::NotE164 { input: "+1-415-555-0100".into() })]
    #[case(" +14155550100", PhoneError::NotE164 { input: " +14155550100".into() })]
    #[case("+14155550100 ", PhoneError::NotE164 { input: "+14155550100 ".into() })]
    #[case("+", PhoneError::NotE164 { input: "+".into() })]
    #[case("++14155550100", PhoneError::NotE164 { input: "++14155550100".into() })]
    #[case("+1415555010a", PhoneError::NotE164 { input: "+1415555010a".into() })]
    #[case("+\u{0661}4155550100", PhoneError::NotE164 { input: "+\u{0661}4155550100".into() })]
    #[case("0014155550100", PhoneError::NotE164 { input: "0014155550100".into() })]
    #[case("+04155550100", PhoneError::LeadingZero { input: "+04155550100".into() })]
    #[case("+123456", PhoneError::TooShort { input: "+123456".into() })]
    #[case("+1234567890123456", PhoneError::TooLong { input: "+1234567890123456".into() })]
    fn parse_e164_refuses_anything_not_canonical(#[case] s: &str, #[case] error: PhoneError) {
        assert_eq!(parse_e164(s), Err(error));
    }

    #[test]
    fn parse_e164_message_shows_the_expected_form() {
        assert_eq!(
            parse_e164("+91 98765 43210").unwrap_err().to_string(),
            "'+91 98765 43210' is not an E.164 number: write '+', the country code and the \
             number, digits only, for example '+14155550100'"
        );
    }

    #[test]
    fn e164_serde_is_the_plain_string_and_strict() {
        let n = parse_e164("+14155550100").unwrap();
        assert_eq!(serde_json::to_string(&n).unwrap(), r#""+14155550100""#);
        assert_eq!(
            serde_json::from_str::<E164>(r#""+14155550100""#).unwrap(),
            n
        );
        let err = serde_json::from_str::<E164>(r#""(415) 555-0100""#).unwrap_err();
        assert!(err.to_string().contains("is not an E.164 number"), "{err}");
    }

    #[rstest]
    #[case("IN", Some(91))]
    #[case("in", Some(91))]
    #[case("US", Some(1))]
    #[case("CA", Some(1))]
    #[case("Jm", Some(1))]
    #[case("PR", Some(1))]
    #[case("GB", Some(44))]
    #[case("RU", Some(7))]
    #[case("KZ", Some(7))]
    #[case("FR", Some(33))]
    #[case("DE", Some(49))]
    #[case("AE", Some(971))]
    #[case("SG", Some(65))]
    #[case("ZW", Some(263))]
    #[case("AD", Some(376))]
    #[case("XK", Some(383))]
    #[case("VA", Some(39))]
    #[case("UK", None)]
    #[case("ZZ", None)]
    #[case("I", None)]
    #[case("IND", None)]
    #[case("", None)]
    #[case("9 1", None)]
    #[case("İN", None)]
    fn calling_code_looks_up_iso_regions(#[case] region: &str, #[case] code: Option<u16>) {
        assert_eq!(calling_code(region), code);
    }

    #[test]
    fn calling_code_table_is_sorted_complete_and_valid() {
        let regions: Vec<&str> = CALLING_CODES.iter().map(|(r, _)| *r).collect();
        assert!(regions.windows(2).all(|w| w[0] < w[1]), "sorted and unique");
        // 249 ISO 3166-1 assignments plus AC, TA and XK.
        assert_eq!(regions.len(), 252);
        for &(region, code) in &CALLING_CODES {
            assert!(
                region.len() == 2 && region.bytes().all(|b| b.is_ascii_uppercase()),
                "{region}"
            );
            assert!((1..=999).contains(&code), "{region}: {code}");
            assert_eq!(calling_code(region), Some(code));
            assert_eq!(calling_code(&region.to_ascii_lowercase()), Some(code));
        }
        // Every NANP member maps to 1.
        for region in [
            "US", "CA", "AG", "AI", "AS", "BB", "BM", "BS", "DM", "DO", "GD", "GU", "JM", "KN",
            "KY", "LC", "MP", "MS", "PR", "SX", "TC", "TT", "VC", "VG", "VI", "UM",
        ] {
            assert_eq!(calling_code(region), Some(1), "{region}");
        }
    }
}
