//! Before any check: the target answers with the keys given (both workspaces), and its
//! clock is read through the simulation API when it offers one (`GET /sim/v1/clock`, a
//! harmless read), so that a simulated clock is used for timestamps with or without
//! `--sim`. Anything wrong here is an error of the set-up (exit 2), not a failed check.

use anyhow::bail;
use reqwest::Method;

use super::context::Ctx;
use super::exchange::Body;
use super::target::{Key, Paths, Workspace, sim_clock};

/// The note printed when the target's clock is simulated and `--sim` was not given.
pub(crate) const SIMULATED_WITHOUT_SIM: &str = "note: the target runs a simulated clock (GET /sim/v1/clock); the checks take their timestamps from it. Add --sim to run the checks that need time (the sim group)";

/// Checks that the target answers with the keys given and, with `--sim`, offers a simulated
/// clock; anything else is an error of the set-up (exit 2), not a failed check. Answers
/// whether the target's clock is simulated (read without `--sim` too: harmless).
pub(super) async fn preflight(cx: &Ctx) -> anyhow::Result<bool> {
    let probe = |ws: &Workspace| {
        let paths = Paths::new(&ws.org, &ws.workspace);
        let key = ws.key.clone();
        async move {
            cx.http
                .call(
                    Method::GET,
                    &paths.deployments(),
                    &[("limit", "1".into())],
                    Key::Value(&key),
                    Body::Empty,
                )
                .await
        }
    };
    let mut workspaces = vec![("--api-key", &cx.main)];
    if let Some(o) = &cx.other {
        workspaces.push(("--other-api-key", &o.ws));
    }
    for (flag, ws) in workspaces {
        let x = probe(ws).await;
        if let Some(e) = &x.error {
            bail!(
                "cannot reach the target at {}: {e}; check --base-url and that the platform is running",
                cx.http.base()
            );
        }
        match x.status {
            200..=299 => {}
            401 | 403 => bail!(
                "the target refuses {flag} for org '{}' workspace '{}' ({}: {}); give a key that opens that workspace",
                ws.org,
                ws.workspace,
                x.status,
                x.text.trim()
            ),
            404 => bail!(
                "the target has no deployment list at {} (404); is --base-url the platform's base address, without /api/...?",
                x.request
            ),
            s => bail!(
                "the target answered {s} to {} with {flag}: {}; the checks cannot start",
                x.request,
                x.text.trim()
            ),
        }
    }
    let x = cx
        .http
        .call(
            Method::GET,
            &sim_clock(),
            &[],
            Key::Value(&cx.main.key),
            Body::Empty,
        )
        .await;
    let simulated = x.status == 200 && x.body()["simulated"].as_bool() == Some(true);
    if cx.settings.sim && !simulated {
        bail!(
            "--sim was given, but GET /sim/v1/clock answered {} {}; run without --sim, or start the mock with --clock simulated",
            x.outcome(),
            x.text.trim()
        );
    }
    Ok(simulated)
}
