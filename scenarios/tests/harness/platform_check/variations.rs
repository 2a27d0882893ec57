//! No false failures: a platform that conforms, but answers in a form of its own where the
//! contract leaves room, passes the suite (exit 0), oracle included. Each variation is applied
//! to the mock through the test proxy: ids of another form, JSON keys in another order and
//! whitespace, extra headers, the media type's case and a charset, instants in another offset
//! with more digits, error messages worded otherwise, an order where none is fixed, and the
//! fields and shapes that are only this project's assumptions left out or shaped otherwise
//! (those may warn, never fail).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use scenarios::checks::{CheckReport, Outcome, Severity};
use serde_json::{Map, Value, json};

use super::support::{Mutation, Resp, run, sim_clock, spawn};

/// Runs the suite (with `--sim` when `sim`) against the mock behind `m`; asserts that no
/// error check fails, and answers the report.
async fn passes(m: Mutation, sim: bool) -> CheckReport {
    let mock = spawn(Some(sim_clock()), Some(m)).await;
    let report = run(&mock.url, sim, true).await;
    mock.stop().await;
    let failed: Vec<String> = report
        .checks
        .iter()
        .filter(|c| c.result == Outcome::Fail && c.severity == Severity::Error)
        .map(|c| serde_json::to_string(c).unwrap())
        .collect();
    assert!(
        failed.is_empty(),
        "a conforming variation failed: {failed:#?}"
    );
    assert!(report.holds());
    report
}

/// Every JSON answer changed by `f`.
fn answers(f: impl Fn(&mut Value) + Send + Sync + 'static) -> Mutation {
    Mutation {
        response: Some(Box::new(move |_req, resp: &mut Resp| {
            if let Some(mut v) = resp.json() {
                f(&mut v);
                let ct = resp.content_type.clone();
                resp.set_json(&v);
                resp.content_type = ct;
            }
        })),
        ..Mutation::default()
    }
}

/// `f` applied to every object inside `v`, deepest first.
fn each_object(v: &mut Value, f: &dyn Fn(&mut Map<String, Value>)) {
    match v {
        Value::Object(m) => {
            for child in m.values_mut() {
                each_object(child, f);
            }
            f(m);
        }
        Value::Array(items) => items.iter_mut().for_each(|i| each_object(i, f)),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_in_another_order_whitespace_and_the_media_type_spelt_otherwise_pass() {
    let m = Mutation {
        response: Some(Box::new(|_req, resp: &mut Resp| {
            if let Some(v) = resp.json() {
                // Keys reversed, pretty-printed.
                fn reversed(v: &Value) -> Value {
                    match v {
                        Value::Object(m) => {
                            let mut out = Map::new();
                            for (k, v) in m.iter().rev() {
                                out.insert(k.clone(), reversed(v));
                            }
                            Value::Object(out)
                        }
                        Value::Array(a) => Value::Array(a.iter().map(reversed).collect()),
                        v => v.clone(),
                    }
                }
                resp.body = serde_json::to_vec_pretty(&reversed(&v)).unwrap();
                resp.content_type = Some("Application/JSON; Charset=UTF-8".into());
            }
        })),
        ..Mutation::default()
    };
    passes(m, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instants_in_another_offset_with_more_digits_pass() {
    passes(
        answers(|v| {
            each_object(v, &|m| {
                for val in m.values_mut() {
                    if let Some(s) = val.as_str()
                        && s.len() >= 20
                        && let Ok(t) = chrono::DateTime::parse_from_rfc3339(s)
                    {
                        let east = chrono::FixedOffset::east_opt(2 * 3600 + 30 * 60).unwrap();
                        *val = json!(
                            t.with_timezone(&east)
                                .format("%Y-%m-%dT%H:%M:%S%.6f%:z")
                                .to_string()
                        );
                    }
                }
            })
        }),
        false,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_messages_worded_otherwise_and_refusal_items_in_another_order_pass() {
    passes(
        answers(|v| {
            if let Some(d) = v.get_mut("detail").and_then(Value::as_array_mut) {
                d.reverse();
            }
            each_object(v, &|m| {
                for k in ["msg", "message"] {
                    if m.get(k).is_some_and(Value::is_string) {
                        m.insert(k.into(), json!("worded our own way"));
                    }
                }
            })
        }),
        false,
    )
    .await;
}

/// The ids of the target in another form: every id the platform makes (a campaign's, a
/// cohort's, a deployment's, an attempt's, an interaction's) is given out as `ID-<n>`, in
/// answers, page links and webhook events alike, and mapped back wherever a request carries
/// it (path, query, JSON body). Ids the client chose (`app_id`, a user's identifier) are
/// its own values and come back as sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_of_another_form_pass() {
    /// The fields that hold an id the platform made.
    const MADE: &[&str] = &[
        "campaign_id",
        "cohort_id",
        "deployment_id",
        "attempt_id",
        "interaction_id",
    ];
    #[derive(Default)]
    struct Ids {
        out: HashMap<String, String>,
        back: HashMap<String, String>,
    }
    impl Ids {
        fn renamed(&mut self, id: &str) -> String {
            let n = self.out.len();
            let new = self
                .out
                .entry(id.to_string())
                .or_insert_with(|| format!("ID-{n:05}"))
                .clone();
            self.back.insert(new.clone(), id.to_string());
            new
        }
    }
    /// Every made id in `v` given out in its other form; links rewritten.
    fn out(v: &mut Value, key: Option<&str>, ids: &mut Ids) {
        match v {
            Value::String(s) if key.is_some_and(|k| MADE.contains(&k)) => *s = ids.renamed(s),
            Value::String(s) if s.starts_with("http") || s.starts_with('/') => {
                for (old, new) in &ids.out {
                    *s = s.replace(old.as_str(), new);
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|i| out(i, key, ids)),
            Value::Object(m) => {
                for (k, v) in m.iter_mut() {
                    out(v, Some(k), ids);
                }
            }
            _ => {}
        }
    }
    /// Every id of the other form in a request's `v` mapped back.
    fn back(v: &mut Value, ids: &Ids) {
        match v {
            Value::String(s) => {
                if let Some(old) = ids.back.get(s.as_str()) {
                    *s = old.clone();
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|i| back(i, ids)),
            Value::Object(m) => m.values_mut().for_each(|v| back(v, ids)),
            _ => {}
        }
    }
    let ids = Arc::new(Mutex::new(Ids::default()));
    let (to_mock, from_mock, in_events) = (ids.clone(), ids.clone(), ids);
    let m = Mutation {
        request: Some(Box::new(move |req| {
            let ids = to_mock.lock().unwrap();
            let path: Vec<String> = req
                .path
                .split('/')
                .map(|s| ids.back.get(s).cloned().unwrap_or_else(|| s.to_string()))
                .collect();
            req.path = path.join("/");
            let pairs: Vec<(String, String)> = url::form_urlencoded::parse(req.query.as_bytes())
                .map(|(k, v)| {
                    let v = ids.back.get(v.as_ref()).cloned().unwrap_or(v.into_owned());
                    (k.into_owned(), v)
                })
                .collect();
            req.query = url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(pairs)
                .finish();
            if let Some(mut v) = req.json() {
                back(&mut v, &ids);
                req.body = serde_json::to_vec(&v).unwrap();
            }
            None
        })),
        response: Some(Box::new(move |_req, resp: &mut Resp| {
            let Some(mut v) = resp.json() else { return };
            out(&mut v, None, &mut from_mock.lock().unwrap());
            let ct = resp.content_type.clone();
            resp.set_json(&v);
            resp.content_type = ct;
        })),
        event: Some(Box::new(move |e: &mut Value| {
            out(e, None, &mut in_events.lock().unwrap());
        })),
        ..Mutation::default()
    };
    passes(m, true).await;
}

/// The project's own fields left out and its assumed shapes answered otherwise: warnings at
/// most, never a failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_projects_assumptions_answered_otherwise_only_warn() {
    let report = passes(
        answers(|v| {
            if let Some(m) = v.as_object_mut() {
                m.remove("statistics");
                // A cohort upload answered with what the spec shows, nothing more.
                if m.get("status").and_then(Value::as_str) == Some("processing")
                    && m.contains_key("cohort_id")
                {
                    m.retain(|k, _| k == "cohort_id" || k == "status");
                }
            }
            each_object(v, &|m| {
                m.remove("statistics");
            });
        }),
        false,
    )
    .await;
    let warned: Vec<&str> = report
        .checks
        .iter()
        .filter(|c| c.result == Outcome::Fail)
        .map(|c| c.id.as_str())
        .collect();
    assert!(warned.contains(&"oracle.assumptions"), "{warned:?}");
}

/// Extra answer headers are not compared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extra_headers_pass() {
    let m = Mutation {
        extra_headers: vec![("x-request-cost", "3"), ("server", "their-own/1.0")],
        ..Mutation::default()
    };
    passes(m, false).await;
}

/// The whole suite on a simulated clock, with events, in another offset and with other
/// wording: the time checks and the events pass too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_time_checks_pass_in_another_offset_with_other_wording() {
    let m = Mutation {
        event: Some(Box::new(|e: &mut Value| {
            if let Some(m) = e.as_object_mut()
                && let Some(r) = m.get_mut("failure_reason")
                && r.is_string()
            {
                *r = json!("their own words");
            }
        })),
        ..answers(|v| {
            each_object(v, &|m| {
                for val in m.values_mut() {
                    if let Some(s) = val.as_str()
                        && s.len() >= 20
                        && let Ok(t) = chrono::DateTime::parse_from_rfc3339(s)
                    {
                        let west = chrono::FixedOffset::west_opt(5 * 3600).unwrap();
                        *val = json!(t.with_timezone(&west).to_rfc3339());
                    }
                }
            })
        })
    };
    passes(m, true).await;
}
