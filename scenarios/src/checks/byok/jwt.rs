//! Access tokens as the validator sees them: a JWT read without verifying it (the validator
//! has no key), and the bad tokens it sends: one character changed, `alg: none`, garbage.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

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

/// An unsigned token (`alg: none`, empty signature) with `jwt`'s claims, or plausible
/// claims when there is no JWT to copy (`sub`, `iat`, `exp` ten minutes on).
pub(super) fn alg_none(jwt: Option<&Jwt>, subject: &str, now_unix: i64) -> String {
    let claims = match jwt {
        Some(j) => j.claims.clone(),
        None => json!({"sub": subject, "iat": now_unix, "exp": now_unix + 600}),
    };
    let header = json!({"alg": "none", "typ": "JWT"});
    format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
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
        let none = alg_none(Some(&parse(&t).unwrap()), "x", 0);
        assert!(none.ends_with('.'));
        let j = parse(&none).unwrap();
        assert_eq!(j.alg(), Some("none"));
        assert_eq!(j.int_claim("exp"), Some(3700), "the claims are kept");
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
