//! Media types of requests and answers: the one reading of a `Content-Type` header value
//! that the routes, the request journal and the BYOK client share.

/// The essence of a `Content-Type` value (`type/subtype`, parameters dropped), lowercased.
pub(crate) fn essence(content_type: &str) -> String {
    essence_str(content_type).to_ascii_lowercase()
}

fn essence_str(content_type: &str) -> &str {
    content_type.split(';').next().unwrap_or("").trim()
}

/// Whether a `Content-Type` value is JSON: `application/json` or a `+json` type, in any
/// letter case, parameters ignored. Allocates nothing (the journal asks it of every request).
pub(crate) fn is_json(content_type: &str) -> bool {
    let essence = essence_str(content_type);
    let ends_with = |suffix: &str| {
        essence.len() >= suffix.len()
            && essence.as_bytes()[essence.len() - suffix.len()..]
                .eq_ignore_ascii_case(suffix.as_bytes())
    };
    essence.eq_ignore_ascii_case("application/json") || ends_with("+json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_essence_drops_parameters_and_case() {
        assert_eq!(
            essence(" Multipart/Form-Data ; boundary=x"),
            "multipart/form-data"
        );
        assert_eq!(essence(""), "");
    }

    #[test]
    fn json_types_are_recognised_whatever_their_case_and_parameters() {
        assert!(is_json("application/json"));
        assert!(is_json("Application/JSON; charset=utf-8"));
        assert!(is_json("application/problem+json"));
        assert!(!is_json("text/json-ish"));
        assert!(!is_json("text/plain"));
        assert!(!is_json(""));
    }
}
