//! `GET /ui`: the live page, a read-only view of the running platform for a developer whose
//! client runs against it (the stack, the request journal, campaigns, deployments, data keys
//! and the key service's audit, webhook deliveries). Plain HTML, CSS and JavaScript modules
//! under `platform/ui/`, embedded in the binary ([`ASSETS`]): no build step, no network, no
//! CDN. No key is needed for the page itself, which holds no data: it asks for an API key,
//! keeps it in the tab's session storage and reads the same JSON routes any client uses
//! (and those of [`super::live`]).
//!
//! The page's own reads carry [`OBSERVER_HEADER`]: they go straight to the routes, past the
//! fault rules and the request journal ([`crate::connection::service`]), so that watching a
//! client never uses up its fault rules nor counts as its requests.

use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::{HeaderValue, StatusCode, header};
use warp::reply::Response;

use crate::error::json_response;

/// The request header the page sends with its reads; any value (the page sends `ui`).
pub const OBSERVER_HEADER: &str = "x-harness-observer";

/// [`OBSERVER_HEADER`] as a header name (looked up in every request).
static OBSERVER: warp::http::HeaderName = warp::http::HeaderName::from_static(OBSERVER_HEADER);

/// Whether `req` is one of the page's own: it carries [`OBSERVER_HEADER`] and reads
/// (`GET`, `HEAD`) or goes outside the interface (the page's clock buttons). A write to the
/// interface is the client's, header or not: it cannot hide from the journal.
pub(crate) fn observes<B>(req: &warp::http::Request<B>) -> bool {
    use warp::http::Method;
    req.headers().contains_key(&OBSERVER)
        && (matches!(*req.method(), Method::GET | Method::HEAD)
            || !req
                .uri()
                .path()
                .starts_with(contracts::openapi::INTERFACE_PREFIX))
}

/// Where the page is served.
pub const PAGE_PATH: &str = "/ui";

/// One file of the page: its path under `/ui/`, its media type, its bytes.
pub struct Asset {
    /// The path under `/ui/` (`app.js`, `views/stack.js`); the page itself is `index.html`.
    pub path: &'static str,
    /// Its `Content-Type`.
    pub(crate) content_type: &'static str,
    /// Its content.
    pub body: &'static str,
}

macro_rules! asset {
    ($path:literal, $type:expr) => {
        Asset {
            path: $path,
            content_type: $type,
            body: include_str!(concat!("../../ui/", $path)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the page (a test checks that the list and `platform/ui/` agree).
pub const ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("app.js", JS),
    asset!("api.js", JS),
    asset!("dom.js", JS),
    asset!("schema.js", JS),
    asset!("views/stack.js", JS),
    asset!("views/requests.js", JS),
    asset!("views/campaigns.js", JS),
    asset!("views/deployments.js", JS),
    asset!("views/keys.js", JS),
    asset!("views/webhooks.js", JS),
];

/// What the page may load and where it may connect: only this origin; no inline script, no
/// framing, no referrer (the key is in the fragment of the first address, which browsers
/// never send, and the page moves it to session storage at once).
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// `GET /ui` and `GET /ui/{path}`.
pub(crate) fn routes() -> BoxedFilter<(Response,)> {
    let page = warp::path!("ui")
        .and(super::get())
        .map(|| serve("index.html"));
    let file = warp::path("ui")
        .and(warp::path::tail())
        .and(super::get())
        .map(|tail: warp::path::Tail| serve(tail.as_str()));
    page.or(file).unify().boxed()
}

fn serve(path: &str) -> Response {
    let path = if path.is_empty() { "index.html" } else { path };
    let Some(asset) = ASSETS.iter().find(|a| a.path == path) else {
        return json_response(
            StatusCode::NOT_FOUND,
            &contracts::error::PlatformErrorBody::new(
                "not_found_error",
                "route_not_found",
                format!("the live page has no file '{path}'; open {PAGE_PATH}"),
            ),
        );
    };
    let mut r = Response::new(asset.body.into());
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // The files change only with the binary; a new binary's must be read at once.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files_under(dir: &std::path::Path, prefix: &str, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = format!("{prefix}{}", e.file_name().to_string_lossy());
            if e.file_type().unwrap().is_dir() {
                files_under(&e.path(), &format!("{name}/"), out);
            } else {
                out.push(name);
            }
        }
    }

    #[test]
    fn every_file_of_the_page_is_served_and_the_page_stays_small() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ui");
        let mut on_disk = Vec::new();
        files_under(&dir, "", &mut on_disk);
        on_disk.sort();
        let mut served: Vec<String> = ASSETS.iter().map(|a| a.path.to_string()).collect();
        served.sort();
        assert_eq!(served, on_disk, "ASSETS and platform/ui/ differ");
        let total: usize = ASSETS.iter().map(|a| a.body.len()).sum();
        assert!(total < 150 * 1024, "the page is {total} bytes, over 150 KB");
    }
}
