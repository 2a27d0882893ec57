//! Access tokens as the validator sees them: a JWT read without verifying it (the validator
//! has no key), and the bad tokens it sends, each attack in all its forms: the signature
//! changed, emptied, cut short or made with another key, and the claims changed under the
//! same signature ([`signature_forms`]); `alg` none in every case, missing, or of another
//! family ([`alg_forms`]); a token that is no JWT changed as text ([`opaque_forms`]);
//! garbage.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// A named forged token: what was changed, and the token.
pub(crate) type Forged = (&'static str, String);

/// A JWT's decoded header and claims.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Jwt {
    /// The JOSE header.
    pub(crate) header: Value,
    /// The claims.
    pub(crate) claims: Value,
}

impl Jwt {
    /// `alg`, when it is a string.
    pub(super) fn alg(&self) -> Option<&str> {
        self.header.get("alg").and_then(Value::as_str)
    }

    /// An integer claim (`exp`, `iat`).
    pub(crate) fn int_claim(&self, name: &str) -> Option<i64> {
        let v = self.claims.get(name)?;
        v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))
    }
}

fn decode_part(part: &str, what: &str) -> Result<Value, String> {
    let bytes = URL_SAFE_NO_PAD
        .decode(part.trim_end_matches('='))
        .map_err(|_| format!("the {what} is not base64url"))?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|_| format!("the {what} is not JSON"))?;
    if v.is_object() {
        Ok(v)
    } else {
        Err(format!("the {what} is not a JSON object"))
    }
}

/// Reads a compact JWT (`header.claims.signature`) without verifying it.
pub(super) fn parse(token: &str) -> Result<Jwt, String> {
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() != 3 {
        return Err(format!("{} dot-separated parts, a JWT has 3", parts.len()));
    }
    Ok(Jwt {
        header: decode_part(parts[0], "header")?,
        claims: decode_part(parts[1], "claims part")?,
    })
}

/// The three parts of a compact JWT, when `token` has three.
fn parts(token: &str) -> Option<(&str, &str, &str)> {
    let mut it = token.split('.');
    let (h, c, s) = (it.next()?, it.next()?, it.next()?);
    it.next().is_none().then_some((h, c, s))
}

fn encode(v: &Value) -> String {
    URL_SAFE_NO_PAD.encode(v.to_string())
}

/// `token` (a JWT) with its signature attacked every way a verifier can get wrong: one
/// character changed, emptied, cut to half, made with a key the service does not have (HS256
/// under a random key), the claims changed (a later `exp`, another `sub`) under the same
/// signature, which a service that trusts a signature it verified once accepts, and the
/// header changed under it (a field added, another HMAC alg), which a service whose
/// signature covers the claims alone accepts.
pub(crate) fn signature_forms(jwt: &Jwt, token: &str, random_key: [u8; 32]) -> Vec<Forged> {
    let Some((h, c, sig)) = parts(token) else {
        return Vec::new();
    };
    let half: String = sig.chars().take(sig.chars().count() / 2).collect();
    let mut other_header = jwt.header.clone();
    other_header["alg"] = json!("HS256");
    let signing_input = format!("{}.{c}", encode(&other_header));
    let mut mac = Hmac::<Sha256>::new_from_slice(&random_key).expect("any key length");
    mac.update(signing_input.as_bytes());
    let other_key = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    let mut later = jwt.claims.clone();
    let exp = jwt.int_claim("exp").unwrap_or(0);
    later["exp"] = json!(exp + 3600);
    // The header changed under the same signature: a service whose signature covers the
    // claims only (or that reads the header apart from what it verified) serves these.
    let mut more_header = jwt.header.clone();
    if let Some(m) = more_header.as_object_mut() {
        m.insert("kid".into(), json!("byok-check"));
    }
    let mut other_alg = jwt.header.clone();
    other_alg["alg"] = json!(match jwt.alg() {
        Some(a) if a.eq_ignore_ascii_case("HS512") => "HS384",
        _ => "HS512",
    });
    let mut other_sub = jwt.claims.clone();
    other_sub["sub"] = json!(format!(
        "{}-x",
        jwt.claims
            .get("sub")
            .and_then(Value::as_str)
            .unwrap_or("sub")
    ));
    vec![
        ("one character of the signature changed", tamper(token)),
        ("the signature empty", format!("{h}.{c}.")),
        ("the signature cut to half", format!("{h}.{c}.{half}")),
        (
            "signed with another key (HS256)",
            format!("{signing_input}.{other_key}"),
        ),
        (
            "exp an hour later under the same signature",
            format!("{h}.{}.{sig}", encode(&later)),
        ),
        (
            "another sub under the same signature",
            format!("{h}.{}.{sig}", encode(&other_sub)),
        ),
        (
            "a header field added under the same signature",
            format!("{}.{c}.{sig}", encode(&more_header)),
        ),
        (
            "another HMAC alg in the header under the same signature",
            format!("{}.{c}.{sig}", encode(&other_alg)),
        ),
    ]
}

/// `jwt`'s claims with `exp` `secs` later, signed HS256 with `key`.
pub(crate) fn signed_with(jwt: &Jwt, key: &[u8], secs: i64) -> String {
    let mut claims = jwt.claims.clone();
    claims["exp"] = json!(jwt.int_claim("exp").unwrap_or(0) + secs);
    let header = json!({"alg": "HS256", "typ": "JWT"});
    let input = format!("{}.{}", encode(&header), encode(&claims));
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("any key length");
    mac.update(input.as_bytes());
    format!(
        "{input}.{}",
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    )
}

/// `token`'s header and `jwt`'s claims with `exp` an hour later, and the dot before a
/// signature: `header.claims.`.
pub(crate) fn with_later_exp(jwt: &Jwt, token: &str) -> String {
    let mut claims = jwt.claims.clone();
    claims["exp"] = json!(jwt.int_claim("exp").unwrap_or(0) + 3600);
    let header = parts(token).map(|(h, _, _)| h).unwrap_or("");
    format!("{header}.{}.", encode(&claims))
}

/// Unsigned or mislabelled tokens with `jwt`'s claims (or plausible ones when there is no
/// JWT to copy): `alg` none in four spellings with an empty signature, none keeping the
/// signature, no `alg` at all, and `alg` of another family (RS256 for an HMAC token, HS256
/// otherwise) keeping the signature.
pub(crate) fn alg_forms(
    jwt: Option<&Jwt>,
    token: &str,
    subject: &str,
    now_unix: i64,
) -> Vec<Forged> {
    let claims = match jwt {
        Some(j) => j.claims.clone(),
        None => json!({"sub": subject, "iat": now_unix, "exp": now_unix + 600}),
    };
    let header = jwt
        .map(|j| j.header.clone())
        .unwrap_or_else(|| json!({"typ": "JWT"}));
    let sig = parts(token).map(|(_, _, s)| s).unwrap_or("");
    let with_alg = |alg: Option<&str>, sig: &str| {
        let mut h = header.clone();
        match alg {
            Some(a) => h["alg"] = json!(a),
            None => {
                if let Some(m) = h.as_object_mut() {
                    m.remove("alg");
                }
            }
        }
        format!("{}.{}.{sig}", encode(&h), encode(&claims))
    };
    let other = match jwt.and_then(Jwt::alg) {
        Some(a) if a.to_ascii_uppercase().starts_with("HS") => "RS256",
        _ => "HS256",
    };
    let mut out = vec![
        ("alg \"none\"", with_alg(Some("none"), "")),
        ("alg \"None\"", with_alg(Some("None"), "")),
        ("alg \"NONE\"", with_alg(Some("NONE"), "")),
        ("alg \"nOnE\"", with_alg(Some("nOnE"), "")),
        ("no alg, no signature", with_alg(None, "")),
    ];
    if !sig.is_empty() {
        out.push((
            "alg \"none\" keeping the signature",
            with_alg(Some("none"), sig),
        ));
        out.push(("no alg, keeping the signature", with_alg(None, sig)));
        out.push((
            "alg of another family, keeping the signature",
            with_alg(Some(other), sig),
        ));
    }
    out
}

/// A bearer value that is no JWT (an opaque token, a static key) changed as text: one
/// character changed, its case changed, cut to half, without its last character, with a
/// character appended, and empty.
pub(crate) fn opaque_forms(value: &str) -> Vec<Forged> {
    let n = value.chars().count();
    let swapped: String = value
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect();
    let mut out = vec![
        ("one character changed", tamper_at(value, n / 2)),
        ("cut to half", value.chars().take(n / 2).collect()),
        (
            "without its last character",
            value.chars().take(n.saturating_sub(1)).collect(),
        ),
        (
            "without its first character",
            value.chars().skip(1).collect(),
        ),
        ("with a character appended", format!("{value}x")),
    ];
    if swapped != value {
        out.push(("its case changed", swapped));
    }
    out.retain(|(_, v)| !v.is_empty() && v != value);
    out
}

/// `token` with one character changed: the first of a JWT's signature (which changes
/// the signature, never only padding bits), else the middle one.
pub(super) fn tamper(token: &str) -> String {
    let at = match token.rfind('.') {
        Some(dot) if dot + 1 < token.len() => token[..dot + 1].chars().count(),
        _ => token.chars().count() / 2,
    };
    tamper_at(token, at)
}

/// `text` with its character at `at` (a character index, at most the last) changed.
pub(crate) fn tamper_at(text: &str, at: usize) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    let at = at.min(chars.len().saturating_sub(1));
    if let Some(c) = chars.get_mut(at) {
        *c = if *c == 'A' { 'B' } else { 'A' };
    }
    chars.into_iter().collect()
}

/// A bearer token that is nothing: no dots, not a configured key.
///
/// Random letters and digits only: a forged token is a secret of the run, hidden from the
/// report in every run of 6 of its characters, so it shares no fixed text with anything
/// the report shows.
pub(crate) fn garbage(random: [u8; 24]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    random
        .iter()
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token() -> String {
        format!(
            "{}.{}.{}",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"HS256","typ":"JWT"}"#),
            URL_SAFE_NO_PAD.encode(r#"{"sub":"platform","iat":100,"exp":3700}"#),
            URL_SAFE_NO_PAD.encode([9u8; 32])
        )
    }

    #[test]
    fn reads_a_jwt_and_refuses_the_rest() {
        let j = parse(&token()).unwrap();
        assert_eq!(j.alg(), Some("HS256"));
        assert_eq!(
            (j.int_claim("iat"), j.int_claim("exp")),
            (Some(100), Some(3700))
        );
        assert!(parse("opaque").unwrap_err().contains("1 dot-separated"));
        assert!(parse("a.b.c").unwrap_err().contains("not"));
    }

    #[test]
    fn bad_tokens() {
        let t = token();
        let jwt = parse(&t).unwrap();
        let algs = alg_forms(Some(&jwt), &t, "x", 0);
        assert_eq!(algs.len(), 8, "{algs:?}");
        for (name, forged) in &algs {
            let j = parse(forged).unwrap();
            assert_eq!(
                j.int_claim("exp"),
                Some(3700),
                "{name}: the claims are kept"
            );
            assert_ne!(j.alg(), Some("HS256"), "{name}");
        }
        assert_eq!(parse(&algs[0].1).unwrap().alg(), Some("none"));
        assert!(algs[0].1.ends_with('.'));
        assert_eq!(parse(&algs[4].1).unwrap().alg(), None);
        assert_eq!(parse(&algs[7].1).unwrap().alg(), Some("RS256"));
        let sigs = signature_forms(&jwt, &t, [3; 32]);
        let sig = |s: &str| s.rsplit('.').next().unwrap().to_string();
        for (name, forged) in &sigs {
            assert_ne!(forged, &t, "{name}");
            parse(forged).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        assert_eq!(sig(&sigs[1].1), "");
        assert_eq!(sig(&sigs[2].1).len(), sig(&t).len() / 2);
        assert_eq!(
            sig(&sigs[4].1),
            sig(&t),
            "claims changed under the same signature"
        );
        assert_eq!(parse(&sigs[4].1).unwrap().int_claim("exp"), Some(7300));
        let opaque = opaque_forms("sk_Live_1234");
        assert!(opaque.iter().any(|(_, v)| v == "SK_lIVE_1234"));
        assert!(
            opaque
                .iter()
                .all(|(_, v)| v != "sk_Live_1234" && !v.is_empty())
        );
        let tampered = tamper(&t);
        assert_eq!(tampered.len(), t.len());
        assert_ne!(tampered, t);
        let sig = |s: &str| s.rsplit('.').next().unwrap().to_string();
        assert_ne!(sig(&tampered), sig(&t), "the signature changed");
        assert_eq!(tamper("sk_1234").len(), 7);
        assert_ne!(tamper("sk_1234"), "sk_1234");
        let g = garbage([7; 24]);
        assert!(!g.contains('.') && g.len() == 24);
        assert_ne!(garbage([1; 24]), g);
    }
}
