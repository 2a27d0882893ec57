//! The reference as oracle (differential checking, as Twitter's Diffy does it): every
//! request the suite sends to the target also goes to two reference platforms (this
//! project's own, in process, with two seeds: [`mod@reference`]), with the ids each created
//! mapped ([`crate::differ::IdMap`]), and the target's answer is compared with theirs by
//! [`crate::differ`]. A part on which the two references disagree (an id, anything drawn)
//! is free; every other difference of status, media type or body value is a failed check
//! `oracle.<operation>` naming the path, both values and the rule, or, on a point only this
//! project assumed, the warning `oracle.assumptions`. Requests of the simulation API
//! (`/sim/v1`) go to the references too (their clocks move with the target's), unjudged.
//!
//! A read answered differently while the references were still catching up (a cohort still
//! processing) is asked of them again for a short while before it counts.

mod defs;
mod reference;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use contracts::operations::{Catalogue, Resolved};
use reqwest::Method;
use serde_json::{Value, json};
use url::Url;

use self::reference::Reference;
use super::exchange::{Body, Exchange};
use super::target::{Http, Key, Workspace};
use super::verdicts::Verdicts;
use crate::checks::{Check, Evidence};
use crate::differ::{self, Answer, IdMap, Tolerance, rules::Source};

pub(crate) use defs::{ASSUMPTIONS, CHECKS, NO_ORACLE, def_for};

/// Differences shown per check, at most.
const MAX_SHOWN: usize = 10;
/// How long a read that differs is asked of the references again (they may still be
/// processing what the target finished).
const SETTLE: Duration = Duration::from_secs(3);
/// The seeds of the two references (any two different ones).
const SEEDS: [u64; 2] = [0x5eed_0001, 0x5eed_0002];

/// What one operation's answers showed.
#[derive(Debug, Default)]
struct Tally {
    answers: usize,
    compared: usize,
    free: usize,
    errors: Vec<Value>,
    assumed: Vec<Value>,
    /// The groups whose traffic showed an error, and an assumption's difference: a run of
    /// those groups (`--only`) with the oracle shows it again.
    error_groups: BTreeSet<&'static str>,
    assumed_groups: BTreeSet<&'static str>,
}

impl Tally {
    /// Files a difference seen in the traffic of `group`.
    fn file(&mut self, shown: Value, source: Source, group: Option<&'static str>) {
        let (list, groups) = match source {
            Source::Spec | Source::Ref => (&mut self.errors, &mut self.error_groups),
            Source::Assumed => (&mut self.assumed, &mut self.assumed_groups),
            Source::Free => return,
        };
        list.push(shown);
        groups.extend(group);
    }
}

#[derive(Debug, Default)]
struct State {
    ids: IdMap,
    ops: BTreeMap<String, Tally>,
    /// The target's webhook events, as its receiver got them.
    events: Vec<Value>,
    /// The group whose requests are being mirrored.
    group: Option<&'static str>,
    /// The group that gave the target's events.
    events_group: Option<&'static str>,
}

/// The oracle of one run.
#[derive(Debug)]
pub(crate) struct Oracle {
    refs: [Reference; 2],
    target_base: Url,
    tol: Tolerance,
    state: Mutex<State>,
}

impl super::target::Mirror for Oracle {
    fn mirror<'a>(
        &'a self,
        method: &'a Method,
        url: &'a Url,
        key: Key<'a>,
        body: Body,
        target: &'a Exchange,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>> {
        Box::pin(Oracle::mirror(self, method, url, key, body, target))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The oracle `http` mirrors to, if any.
pub(crate) fn of(http: &Http) -> Option<&Oracle> {
    http.oracle()?.as_any().downcast_ref::<Oracle>()
}

impl Oracle {
    /// Starts the references with the workspaces of the run, on a simulated clock at `sim_at`
    /// when the target's is simulated (else the real clock, and instants judged within
    /// `margin`).
    pub(crate) async fn start(
        target: &Http,
        workspaces: &[&Workspace],
        sim_at: Option<DateTime<Utc>>,
        margin: chrono::Duration,
        timeout: Duration,
    ) -> anyhow::Result<Oracle> {
        let (a, b) = tokio::try_join!(
            reference::start(SEEDS[0], workspaces, sim_at, timeout),
            reference::start(SEEDS[1], workspaces, sim_at, timeout),
        )?;
        let tol = match sim_at {
            Some(_) => Tolerance(1),
            None => Tolerance(margin.num_milliseconds().max(1)),
        };
        Ok(Oracle {
            refs: [a, b],
            target_base: target.base().clone(),
            tol,
            state: Mutex::new(State::default()),
        })
    }

    /// Marks what is mirrored from now on as the traffic of the group `name` (named in each
    /// difference's evidence: a run of that group alone shows it again).
    pub(crate) fn group(&self, name: &'static str) {
        self.state().group = Some(name);
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends what was sent to the target to both references and judges the target's answer.
    pub(crate) async fn mirror(
        &self,
        method: &Method,
        url: &Url,
        key: Key<'_>,
        body: Body,
        target: &Exchange,
    ) {
        let Some(relative) = self.relative(url) else {
            return;
        };
        let judged = relative.first().is_some_and(|s| s == "api");
        let operation = judged
            .then(|| {
                let path = format!("/{}", relative.join("/"));
                match Catalogue::platform().resolve(method.as_str(), &path) {
                    Resolved::Operation(_, op, _) => Some(op.operation_id.clone()),
                    _ => None,
                }
            })
            .flatten();
        let mut answers = self.send_both(method, &relative, url, key, &body).await;
        let Some(operation) = operation else {
            return;
        };
        if target.status == 0 || still_processing(target, &answers) {
            return;
        }
        let how = differ::Judging {
            tol: self.tol,
            creates: method == Method::POST,
            items_order: items_order(&operation, url),
            resource: differ::rules::Resource::of_operation(&operation),
        };
        let mut outcome = self.compare(target, &answers, &how);
        let deadline = contracts::clock::Stopwatch::start();
        while *method == Method::GET
            && !outcome.differences.is_empty()
            && deadline.elapsed() < SETTLE
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
            answers = self.send_both(method, &relative, url, key, &body).await;
            outcome = self.compare(
                target,
                &answers,
                &differ::Judging {
                    creates: false,
                    ..how
                },
            );
        }
        let mut st = self.state();
        let group = st.group;
        let tally = st.ops.entry(operation).or_default();
        tally.answers += 1;
        tally.compared += outcome.compared;
        tally.free += outcome.free;
        for d in outcome.differences {
            let shown = json!({
                "request": target.request,
                "group": group,
                "path": d.path,
                "what": d.what,
                "target": d.target,
                "reference": d.reference,
                "rule": d.rule.row,
            });
            tally.file(shown, d.rule.source, group);
        }
    }

    fn compare(
        &self,
        target: &Exchange,
        answers: &[Exchange; 2],
        how: &differ::Judging,
    ) -> differ::Outcome {
        let (t, a, b) = (view(target), view(&answers[0]), view(&answers[1]));
        let mut st = self.state();
        differ::diff(&t, [&a, &b], &mut st.ids, how)
    }

    /// The segments of `url` below the target's base, when it is the target's.
    fn relative(&self, url: &Url) -> Option<Vec<String>> {
        if url.origin() != self.target_base.origin() {
            return None;
        }
        let base: Vec<&str> = self
            .target_base
            .path_segments()
            .map(|s| s.filter(|p| !p.is_empty()).collect())
            .unwrap_or_default();
        let segs: Vec<String> = url.path_segments()?.map(decode_segment).collect();
        if segs.len() < base.len() || segs.iter().zip(&base).any(|(a, b)| a != b) {
            return None;
        }
        Some(segs[base.len()..].to_vec())
    }

    async fn send_both(
        &self,
        method: &Method,
        relative: &[String],
        url: &Url,
        key: Key<'_>,
        body: &Body,
    ) -> [Exchange; 2] {
        let one = |which: usize| {
            let ids = self.state().ids.clone();
            let segments: Vec<String> = relative
                .iter()
                .map(|s| ids.to_reference(s, which).unwrap_or(s).to_string())
                .collect();
            let query: Vec<(String, String)> = url
                .query_pairs()
                .map(|(k, v)| {
                    let v = ids
                        .to_reference(&v, which)
                        .map(str::to_string)
                        .unwrap_or(v.into_owned());
                    (k.into_owned(), v)
                })
                .collect();
            let body = self.translate(body, &ids, which);
            (segments, query, body)
        };
        let (s0, q0, b0) = one(0);
        let (s1, q1, b1) = one(1);
        let q0: Vec<(&str, String)> = q0.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        let q1: Vec<(&str, String)> = q1.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        let (x, y) = tokio::join!(
            self.refs[0]
                .http
                .call_plain(method.clone(), &s0, &q0, key, b0),
            self.refs[1]
                .http
                .call_plain(method.clone(), &s1, &q1, key, b1),
        );
        [x, y]
    }

    /// `body` for reference `which`: every string that is a known target id replaced by the
    /// reference's, every webhook URL (`webhook_config.url`) pointed at its sink (the path
    /// kept).
    fn translate(&self, body: &Body, ids: &IdMap, which: usize) -> Body {
        match body {
            Body::Json(v) => Body::Json(self.translate_value(v, None, ids, which)),
            other => other.clone(),
        }
    }

    fn translate_value(&self, v: &Value, parent: Option<&str>, ids: &IdMap, which: usize) -> Value {
        match v {
            Value::String(s) => {
                if let Some(r) = ids.to_reference(s, which) {
                    return Value::String(r.to_string());
                }
                v.clone()
            }
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|i| self.translate_value(i, parent, ids, which))
                    .collect(),
            ),
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| {
                        let hook = parent == Some("webhook_config") && k == "url";
                        let v = match (hook, v.as_str().and_then(|u| Url::parse(u).ok())) {
                            (true, Some(u)) => {
                                let mut to = format!("{}{}", self.refs[which].sink, u.path());
                                if let Some(q) = u.query() {
                                    to.push('?');
                                    to.push_str(q);
                                }
                                Value::String(to)
                            }
                            _ => self.translate_value(v, Some(k), ids, which),
                        };
                        (k.clone(), v)
                    })
                    .collect(),
            ),
            _ => v.clone(),
        }
    }

    /// Takes the target's webhook events, to be compared with the references' when the run
    /// is judged.
    pub(crate) fn target_events(&self, events: Vec<Value>) {
        let mut st = self.state();
        st.events_group = st.group;
        st.events.extend(events);
    }

    /// The references' events, once their number stops growing (they deliver as their
    /// clocks are moved, over HTTP, a moment after the target).
    async fn settled_events(&self) -> [Vec<Value>; 2] {
        let count = || {
            self.refs
                .iter()
                .map(|r| r.events.lock().map_or(0, |e| e.len()))
                .sum::<usize>()
        };
        let watch = contracts::clock::Stopwatch::start();
        let mut last = count();
        while watch.elapsed() < SETTLE {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let now = count();
            if now == last {
                break;
            }
            last = now;
        }
        let take = |r: &Reference| r.events.lock().map(|e| e.clone()).unwrap_or_default();
        [take(&self.refs[0]), take(&self.refs[1])]
    }

    /// Compares the target's events with the references', event by event: a campaign's by
    /// its campaign (mapped), user and retry, an instant call's by its attempt (mapped).
    async fn judge_events(&self) {
        let refs = self.settled_events().await;
        let mut st = self.state();
        let target = std::mem::take(&mut st.events);
        let key = |e: &Value, ids: &IdMap, which: Option<usize>| -> Option<(String, String)> {
            let map = |s: &str| match which {
                Some(w) => ids.to_reference(s, w).unwrap_or(s).to_string(),
                None => s.to_string(),
            };
            match e.get("campaign_id").and_then(Value::as_str) {
                Some(c) => Some((
                    "campaign_event".into(),
                    format!(
                        "{}|{}|{}",
                        map(c),
                        e.get("user_phone_number")
                            .and_then(Value::as_str)
                            .unwrap_or(""),
                        e.get("retry_attempt").cloned().unwrap_or(Value::Null)
                    ),
                )),
                None => e
                    .get("attempt_id")
                    .and_then(Value::as_str)
                    .map(|a| ("outbound_event".into(), map(a))),
            }
        };
        let mut by_key: [BTreeMap<(String, String), Value>; 2] = Default::default();
        for (w, events) in refs.iter().enumerate() {
            for e in events {
                if let Some(k) = key(e, &st.ids, None) {
                    by_key[w].entry(k).or_insert_with(|| e.clone());
                }
            }
        }
        let mut seen: BTreeMap<(String, String), ()> = BTreeMap::new();
        for e in &target {
            let Some(ka) = key(e, &st.ids, Some(0)) else {
                continue;
            };
            let Some(kb) = key(e, &st.ids, Some(1)) else {
                continue;
            };
            if seen.insert(ka.clone(), ()).is_some() {
                continue;
            }
            let (a, b) = (by_key[0].get(&ka), by_key[1].get(&kb));
            let tally_op = ka.0.clone();
            let (a, b) = match (a, b) {
                (Some(a), Some(b)) => (a.clone(), b.clone()),
                (None, None) => {
                    let group = st.events_group;
                    let tally = st.ops.entry(tally_op).or_default();
                    tally.answers += 1;
                    let shown = json!({
                        "request": "a webhook event",
                        "group": group,
                        "path": "",
                        "what": "an event the reference never sent",
                        "target": e,
                        "reference": Value::Null,
                        "rule": "interface.md: Webhooks (events), once per attempt (ref)",
                    });
                    tally.file(shown, Source::Ref, group);
                    continue;
                }
                // One reference sent it, the other not: which attempts happen is drawn.
                _ => continue,
            };
            let how = differ::Judging {
                tol: self.tol,
                creates: true,
                items_order: None,
                resource: differ::rules::Resource::Other,
            };
            let outcome = differ::diff(
                &event_view(e),
                [&event_view(&a), &event_view(&b)],
                &mut st.ids,
                &how,
            );
            let group = st.events_group;
            let tally = st.ops.entry(tally_op).or_default();
            tally.answers += 1;
            tally.compared += outcome.compared;
            tally.free += outcome.free;
            for d in outcome.differences {
                let shown = json!({
                    "request": format!("the event of {}", ka.1),
                    "group": group,
                    "path": d.path,
                    "what": d.what,
                    "target": d.target,
                    "reference": d.reference,
                    "rule": d.rule.row,
                });
                tally.file(shown, d.rule.source, group);
            }
        }
        // Events both references sent, of a resource the target made, that the target never
        // sent.
        let target_keys: BTreeSet<(String, String)> = target
            .iter()
            .filter_map(|e| key(e, &st.ids, Some(0)))
            .collect();
        let mut missing = Vec::new();
        for (k, ev) in &by_key[0] {
            if target_keys.contains(k) {
                continue;
            }
            let id = ev
                .get("campaign_id")
                .or_else(|| ev.get("attempt_id"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let Some(t) = st.ids.to_target(id, 0) else {
                continue;
            };
            let Some(other) = st.ids.to_reference(t, 1) else {
                continue;
            };
            let kb = (k.0.clone(), k.1.replacen(id, other, 1));
            if by_key[1].contains_key(&kb) {
                missing.push((k.0.clone(), ev.clone()));
            }
        }
        let group = st.events_group;
        for (op, ev) in missing {
            let shown = json!({
                "request": "a webhook event",
                "group": group,
                "path": "",
                "what": "an event the reference sent and the target did not",
                "target": Value::Null,
                "reference": ev,
                "rule": "interface.md: Webhooks (events), once per attempt (ref)",
            });
            st.ops
                .entry(op)
                .or_default()
                .file(shown, Source::Ref, group);
        }
    }

    /// The verdicts of the run: one check per operation the suite called, and the warning
    /// on the project's assumptions.
    pub(crate) async fn judge(&self, v: &mut Verdicts, progress: &mut dyn FnMut(&str)) {
        self.judge_events().await;
        let st = self.state();
        let (mut answers, mut compared, mut free) = (0, 0, 0);
        let mut assumed = Vec::new();
        let mut assumed_groups = BTreeSet::new();
        for (op, t) in &st.ops {
            answers += t.answers;
            compared += t.compared;
            free += t.free;
            assumed.extend(t.assumed.iter().cloned());
            assumed_groups.extend(t.assumed_groups.iter().copied());
            let Some(def) = def_for(op) else { continue };
            let mut e = Evidence::new()
                .with("answers", t.answers)
                .with("values_compared", t.compared)
                .with("values_free", t.free)
                .with("differences", t.errors.len())
                .with(
                    "seen_in_groups",
                    t.error_groups.iter().copied().collect::<Vec<_>>(),
                );
            if let Some(first) = t.errors.first() {
                e = e.cause(cause(first));
            }
            let e = e.with(
                "shown",
                t.errors.iter().take(MAX_SHOWN).cloned().collect::<Vec<_>>(),
            );
            // Nothing compared and nothing found: no verdict. A difference found without a
            // value compared (an event no reference sent) still fails.
            if t.compared == 0 && t.errors.is_empty() {
                v.add(Check::skip(
                    def,
                    "could not judge: the references disagreed on every answer of it",
                ));
                continue;
            }
            v.judge(
                def,
                t.errors.is_empty(),
                e,
                "the status, media type and every value the spec or a recorded fact fixes, as \
                 the reference answers the same request",
            );
        }
        for d in CHECKS {
            if !v.has(d) && d.id != ASSUMPTIONS.id {
                v.add(Check::skip(d, "the suite did not call this operation"));
            }
        }
        let mut e = Evidence::new()
            .with("answers", answers)
            .with("differences", assumed.len())
            .with(
                "seen_in_groups",
                assumed_groups.into_iter().collect::<Vec<_>>(),
            );
        if let Some(first) = assumed.first() {
            e = e.cause(cause(first));
        }
        v.judge(
            &ASSUMPTIONS,
            assumed.is_empty(),
            e.with(
                "shown",
                assumed.into_iter().take(MAX_SHOWN).collect::<Vec<_>>(),
            ),
            "the same answers as the reference where only this project's assumptions fix them",
        );
        progress(&format!(
            "oracle: {answers} answers compared with the reference, {compared} values compared, \
             {free} free; {} ids mapped",
            st.ids.len()
        ));
    }
}

/// An exchange as the differ sees it.
fn view(x: &Exchange) -> Answer<'_> {
    Answer {
        status: x.status,
        content_type: x.content_type.as_deref(),
        json: x.json.as_ref(),
        text: &x.text,
    }
}

/// The rule that fixes the order of a list's items, for the operations whose lists are sorted:
/// the campaign list (sorted by `sort_by`, `created_at` by default, `sort_order`, `desc` by
/// default: ref) and the deployment list (its sort parameters: spec; their defaults:
/// assumed). A cohort list's order is not documented.
fn items_order(operation: &str, url: &Url) -> Option<differ::rules::Rule> {
    use differ::rules::{Rule, Source};
    let asked = url
        .query_pairs()
        .any(|(k, _)| k == "sort_order" || k == "sort_by");
    match operation {
        "list_campaigns" => Some(Rule {
            source: Source::Ref,
            row: "interface.md: List campaigns, sort_by (default created_at), sort_order (default desc) (ref)",
        }),
        "list_deployments" if asked => Some(Rule {
            source: Source::Spec,
            row: "spec: Deployments, list query parameters (sort field, sort order asc or desc)",
        }),
        "list_deployments" => Some(Rule {
            source: Source::Assumed,
            row: "interface.md: Deployments, the default sort (created_at, desc) (assumed)",
        }),
        "list_campaign_cohorts" | "list_deployment_cohorts" => Some(Rule {
            source: Source::Assumed,
            row: "interface.md: Cohorts, the list's order (oldest first) (assumed)",
        }),
        _ => None,
    }
}

/// Whether the target answers a cohort still processing where the references finished it:
/// processing is asynchronous ("clients poll the cohort until it is completed or failed"),
/// so the poll that sees it finished is the one judged.
fn still_processing(target: &Exchange, answers: &[Exchange; 2]) -> bool {
    let status = |x: &Exchange| {
        x.json
            .as_ref()
            .and_then(|j| j.get("status"))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    status(target).as_deref() == Some("processing")
        && answers
            .iter()
            .all(|a| status(a).is_some_and(|s| s != "processing"))
}

/// A webhook event as the differ sees it: a JSON answer.
fn event_view(v: &Value) -> Answer<'_> {
    Answer {
        status: 200,
        content_type: Some("application/json"),
        json: Some(v),
        text: "",
    }
}

/// One line for a difference: `PATCH /...: /description: "" where the reference answers "d"
/// (rule)`.
fn cause(d: &Value) -> String {
    format!(
        "{}: {} {}: {} where the reference answers {} ({})",
        d["request"].as_str().unwrap_or(""),
        d["path"].as_str().unwrap_or(""),
        d["what"].as_str().unwrap_or(""),
        d["target"],
        d["reference"],
        d["rule"].as_str().unwrap_or(""),
    )
}

/// A path segment as text (`%20` is a space): ids are mapped as answered, and the
/// references' client encodes the segments again.
fn decode_segment(s: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| s.to_string())
}
