//! The differ: one answer of a target against the same request's answers of two reference
//! platforms, value by value. Shared by `harness check platform`'s oracle, and by anything
//! else that compares an implementation with the reference.
//!
//! The two references run with different seeds: a part of the answer on which they differ
//! (an id, anything drawn) is **free** and not compared, except that an id is compared
//! through the map of ids learnt as resources were created (the target's campaign `T` is the
//! references' `A` and `B`, so a later answer naming another campaign in its place differs).
//! Every other part is compared with what the references answered: the status (then the
//! body only when the statuses agree), the media type, and the body, value by value, as the
//! contract means the values ([`values`]): instants as instants, numbers of their kind, ids
//! through the map, page links by their path and query. A field the references answer and
//! the target leaves out differs; a field the target adds does not (the contract does not
//! forbid extensions). Arrays whose order the contract fixes are compared in order, others
//! ([`rules::unordered`]) as collections, items matched by their id or their `loc`. A CSV
//! file is compared row by row.
//!
//! Each difference names its path, both values and the rule it answers to ([`rules`]):
//! spec, recorded fact or the project's assumption.

pub mod rules;
pub mod values;

use serde::Serialize;
use serde_json::{Map, Value};

use self::rules::{Rule, Source};
pub use self::values::IdMap;
use self::values::{instant, kind, millis_between, same, url_meaning};

/// One answer as the differ sees it.
#[derive(Clone, Copy, Debug)]
pub struct Answer<'a> {
    /// The status.
    pub status: u16,
    /// The `Content-Type`, if any.
    pub content_type: Option<&'a str>,
    /// The body as JSON, when it is.
    pub json: Option<&'a Value>,
    /// The body as text.
    pub text: &'a str,
}

/// One place where the target's answer differs from the references'.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    /// A JSON Pointer into the body (`/items/0/status`), or `status` / `content-type`.
    pub path: String,
    /// What differs, in words.
    pub what: String,
    /// The target's value (`null` when absent).
    pub target: Value,
    /// The reference's value.
    pub reference: Value,
    /// The rule the part answers to.
    pub rule: Rule,
}

/// What comparing one answer found.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The differences.
    pub differences: Vec<Difference>,
    /// Values compared.
    pub compared: usize,
    /// Values the references disagree on (not compared), and values free by the contract.
    pub free: usize,
}

/// How instants may differ and still be the same (milliseconds).
#[derive(Clone, Copy, Debug)]
pub struct Tolerance(pub i64);

/// How one answer is judged.
#[derive(Clone, Copy, Debug)]
pub struct Judging {
    /// How far instants may differ.
    pub tol: Tolerance,
    /// The request made something (a `POST`): its ids are learnt first (ids a read answers
    /// are only compared: a list that names a resource nobody made must not teach its id).
    pub creates: bool,
    /// The rule that fixes the order of a list's `items`, when one does (a list sorted by
    /// default or as asked): the target's must then be the references' wherever both
    /// references agree on it.
    pub items_order: Option<Rule>,
    /// What a success answer holds, which names its fields' rules (a refusal's body is
    /// judged as an error body, whatever the operation).
    pub resource: rules::Resource,
}

/// Compares `target` with the two references' answers to the same request.
pub fn diff(target: &Answer, refs: [&Answer; 2], ids: &mut IdMap, how: &Judging) -> Outcome {
    let (tol, creates) = (how.tol, how.creates);
    let mut out = Outcome::default();
    let [a, b] = refs;
    if a.status != b.status {
        out.free += 1;
        return out;
    }
    out.compared += 1;
    if target.status != a.status {
        out.differences.push(Difference {
            path: "status".into(),
            what: format!(
                "status {} where the reference answers {}",
                target.status, a.status
            ),
            target: target.status.into(),
            reference: a.status.into(),
            rule: rules::status(a.status),
        });
        return out;
    }
    if a.status == 204 || (a.json.is_none() && a.text.is_empty()) {
        return out;
    }
    let essence = |ct: Option<&str>| {
        ct.map(|c| {
            c.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
    };
    if essence(a.content_type) == essence(b.content_type) {
        out.compared += 1;
        if essence(target.content_type) != essence(a.content_type) {
            out.differences.push(Difference {
                path: "content-type".into(),
                what: "another media type".into(),
                target: target.content_type.into(),
                reference: a.content_type.into(),
                rule: rules::media_type(),
            });
            return out;
        }
    }
    match (target.json, a.json, b.json) {
        (Some(t), Some(x), Some(y)) => {
            if creates {
                learn(t, [x, y], ids);
            }
            let resource = if (200..300).contains(&a.status) {
                how.resource
            } else {
                rules::Resource::Other
            };
            let mut w = Walk {
                ids,
                tol,
                items_order: how.items_order,
                resource,
                out: &mut out,
            };
            w.value(&mut Vec::new(), t, x, y);
        }
        (None, Some(x), Some(_)) => out.differences.push(Difference {
            path: String::new(),
            what: "the body is not JSON".into(),
            target: Value::String(target.text.chars().take(200).collect()),
            reference: x.clone(),
            rule: rules::media_type(),
        }),
        (_, None, None) if essence(a.content_type).as_deref() == Some("text/csv") => {
            csv(target.text, [a.text, b.text], ids, &mut out);
        }
        _ => {}
    }
    out
}

/// Whether a field holds an id.
fn is_id_field(key: &str) -> bool {
    key.ends_with("_id") || key == "id"
}

/// Learns the ids the references created where the target created one: each id field of the
/// answer's objects (not of its lists) on which the two references differ.
fn learn(t: &Value, refs: [&Value; 2], ids: &mut IdMap) {
    let (Value::Object(t), Value::Object(a), Value::Object(b)) = (t, refs[0], refs[1]) else {
        return;
    };
    for (k, av) in a {
        let (Some(tv), Some(bv)) = (t.get(k), b.get(k)) else {
            continue;
        };
        if is_id_field(k)
            && let (Some(ts), Some(x), Some(y)) = (tv.as_str(), av.as_str(), bv.as_str())
            && x != y
        {
            ids.learn(ts, 0, x);
            ids.learn(ts, 1, y);
        } else {
            learn(tv, [av, bv], ids);
        }
    }
}

struct Walk<'a> {
    ids: &'a IdMap,
    tol: Tolerance,
    items_order: Option<Rule>,
    resource: rules::Resource,
    out: &'a mut Outcome,
}

fn pointer(path: &[String]) -> String {
    path.iter()
        .map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1")))
        .collect()
}

impl Walk<'_> {
    fn differ(&mut self, path: &[String], what: String, t: Value, r: Value, rule: Rule) {
        self.out.differences.push(Difference {
            path: pointer(path),
            what,
            target: t,
            reference: r,
            rule,
        });
    }

    fn value(&mut self, path: &mut Vec<String>, t: &Value, a: &Value, b: &Value) {
        let rule = rules::path(self.resource, path);
        if rule.source == Source::Free {
            self.out.free += 1;
            return;
        }
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => self.object(path, t, x, y),
            (Value::Array(x), Value::Array(y)) => self.array(path, t, x, y),
            _ => self.scalar(path, t, a, b, rule),
        }
    }

    fn object(
        &mut self,
        path: &mut Vec<String>,
        t: &Value,
        a: &Map<String, Value>,
        b: &Map<String, Value>,
    ) {
        let Value::Object(tm) = t else {
            let rule = rules::path(self.resource, path);
            self.differ(
                path,
                format!("{} where the reference answers an object", kind(t)),
                t.clone(),
                Value::Object(a.clone()),
                rule,
            );
            return;
        };
        for (k, av) in a {
            let Some(bv) = b.get(k) else {
                // Answered by one reference only: not fixed.
                self.out.free += 1;
                continue;
            };
            path.push(k.clone());
            match tm.get(k) {
                Some(tv) => self.value(path, tv, av, bv),
                None => {
                    let rule = rules::presence(self.resource, path);
                    self.differ(path, format!("no {k}"), Value::Null, av.clone(), rule);
                }
            }
            path.pop();
        }
    }

    fn array(&mut self, path: &mut Vec<String>, t: &Value, a: &[Value], b: &[Value]) {
        let rule = rules::path(self.resource, path);
        let Value::Array(tv) = t else {
            self.differ(
                path,
                format!("{} where the reference answers an array", kind(t)),
                t.clone(),
                Value::Array(a.to_vec()),
                rule,
            );
            return;
        };
        let field = path.last().map(String::as_str).unwrap_or("");
        let ordered = !rules::unordered(field) && a == b;
        if a.len() != b.len() {
            // The references hold different numbers: the length is not fixed.
            self.out.free += 1;
            return;
        }
        self.out.compared += 1;
        if tv.len() != a.len() {
            self.differ(
                path,
                format!("{} items where the reference answers {}", tv.len(), a.len()),
                Value::from(tv.len()),
                Value::from(a.len()),
                rule,
            );
        }
        if ordered || a.is_empty() {
            for (i, ((ti, ai), bi)) in tv.iter().zip(a).zip(b).enumerate() {
                path.push(i.to_string());
                self.value(path, ti, ai, bi);
                path.pop();
            }
            return;
        }
        self.collection(path, tv, a, b);
    }

    /// Items matched whatever their order: by their id (mapped), by their `loc`, or by being
    /// the same value; an item of the references the target lacks, or one the target adds
    /// that the references lack, differs.
    fn collection(&mut self, path: &mut Vec<String>, t: &[Value], a: &[Value], b: &[Value]) {
        let rule = rules::path(self.resource, path);
        let key = a.first().and_then(|first| match first {
            Value::Object(m) => m.keys().find(|k| is_id_field(k) || *k == "loc").cloned(),
            _ => None,
        });
        let mut used = vec![false; t.len()];
        for (i, ai) in a.iter().enumerate() {
            // The other reference's item at the same key (their order may differ).
            let bi = match &key {
                Some(k) => b
                    .iter()
                    .find(|bj| {
                        bj.get(k) == ai.get(k)
                            || (is_id_field(k) && {
                                // The same resource: both references' ids of one target id.
                                let (x, y) = (ai.get(k), bj.get(k));
                                t.iter().any(|tj| {
                                    tj.get(k).and_then(Value::as_str).is_some_and(|ts| {
                                        self.ids.to_reference(ts, 0) == x.and_then(Value::as_str)
                                            && self.ids.to_reference(ts, 1)
                                                == y.and_then(Value::as_str)
                                    })
                                })
                            })
                    })
                    .unwrap_or(&b[i]),
                None => b.iter().find(|bj| *bj == ai).unwrap_or(&b[i]),
            };
            let found = t.iter().enumerate().position(|(j, tj)| {
                !used[j]
                    && match &key {
                        Some(k) => match (tj.get(k), ai.get(k)) {
                            (Some(x), Some(y)) => same(x, y, self.ids, 0, self.tol.0),
                            _ => false,
                        },
                        None => same(tj, ai, self.ids, 0, self.tol.0),
                    }
            });
            match found {
                Some(j) => {
                    used[j] = true;
                    if key.is_some() {
                        path.push(j.to_string());
                        self.value(path, &t[j], ai, bi);
                        path.pop();
                    } else {
                        self.out.compared += 1;
                    }
                }
                None => {
                    path.push(i.to_string());
                    let what = match &key {
                        Some(k) => format!(
                            "no item with the reference's {k} {}",
                            ai.get(k).cloned().unwrap_or(Value::Null)
                        ),
                        None => "an item of the reference is missing".to_string(),
                    };
                    self.differ(path, what, Value::Null, ai.clone(), rule);
                    path.pop();
                }
            }
        }
        if let (Some(order_rule), Some(k), true) = (
            self.items_order,
            &key,
            path.len() == 1 && path[0] == "items",
        ) {
            self.order(path, t, a, b, k, order_rule);
        }
        for (j, tj) in t.iter().enumerate() {
            if !used[j] {
                path.push(j.to_string());
                self.differ(
                    path,
                    "an item the reference does not answer".into(),
                    tj.clone(),
                    Value::Null,
                    rule,
                );
                path.pop();
            }
        }
    }

    /// The order of a list's items, where the references agree on it: the target's items
    /// (by their mapped ids) in the same order.
    fn order(
        &mut self,
        path: &[String],
        t: &[Value],
        a: &[Value],
        b: &[Value],
        k: &str,
        rule: Rule,
    ) {
        let targets = |items: &[Value], which: usize| -> Option<Vec<String>> {
            items
                .iter()
                .map(|i| {
                    let id = i.get(k)?.as_str()?;
                    self.ids.to_target(id, which).map(str::to_string)
                })
                .collect()
        };
        let (Some(x), Some(y)) = (targets(a, 0), targets(b, 1)) else {
            return;
        };
        if x != y {
            // The references order their items otherwise (ties broken by their own ids).
            self.out.free += 1;
            return;
        }
        self.out.compared += 1;
        let got: Vec<String> = t
            .iter()
            .filter_map(|i| i.get(k)?.as_str().map(str::to_string))
            .filter(|id| x.contains(id))
            .collect();
        let want: Vec<String> = x.into_iter().filter(|id| got.contains(id)).collect();
        if got != want {
            self.out.differences.push(Difference {
                path: pointer(path),
                what: "the items in another order".into(),
                target: got.into(),
                reference: want.into(),
                rule,
            });
        }
    }

    fn scalar(&mut self, path: &[String], t: &Value, a: &Value, b: &Value, rule: Rule) {
        if a != b {
            // Instants the references answer a moment apart (a real clock) are still judged,
            // within that moment.
            if let (Some(x), Some(y), Some(z)) = (instant(t), instant(a), instant(b))
                && millis_between(y, z) <= self.tol.0.max(1) * 4
            {
                self.out.compared += 1;
                let tolerance = self.tol.0.max(millis_between(y, z));
                if millis_between(x, y) > tolerance && millis_between(x, z) > tolerance {
                    self.differ(path, "another instant".into(), t.clone(), a.clone(), rule);
                }
                return;
            }
            // Page links name each reference's own host: their meaning is compared.
            if let (Some(x), Some(y)) = (
                url_meaning(a, self.ids, None),
                url_meaning(b, self.ids, None),
            ) && x == y
            {
                self.out.compared += 1;
                if !same(t, a, self.ids, 0, self.tol.0) {
                    self.differ(path, "another link".into(), t.clone(), a.clone(), rule);
                }
                return;
            }
            // An id both references made: the target's must be the one mapped to them.
            if let (Some(x), Some(y), Some(ts)) = (a.as_str(), b.as_str(), t.as_str())
                && let (Some(mx), Some(my)) =
                    (self.ids.to_reference(ts, 0), self.ids.to_reference(ts, 1))
            {
                self.out.compared += 1;
                if mx != x || my != y {
                    self.differ(
                        path,
                        "another resource's id".into(),
                        t.clone(),
                        a.clone(),
                        rule,
                    );
                }
                return;
            }
            self.out.free += 1;
            return;
        }
        self.out.compared += 1;
        if !same(t, a, self.ids, 0, self.tol.0) {
            let what = if kind(t) != kind(a) {
                format!("{} where the reference answers {}", kind(t), kind(a))
            } else {
                "another value".to_string()
            };
            self.differ(path, what, t.clone(), a.clone(), rule);
        }
    }
}

/// A CSV file: the header and the rows (each row's cells through the id map), and the
/// number of rows; a column free by the contract (a reason's wording) is not compared.
fn csv(t: &str, refs: [&str; 2], ids: &IdMap, out: &mut Outcome) {
    let rows = |s: &str| -> Vec<Vec<String>> {
        csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(s.as_bytes())
            .records()
            .filter_map(Result::ok)
            .map(|r| r.iter().map(str::to_string).collect())
            .collect()
    };
    let (tr, ar, br) = (rows(t), rows(refs[0]), rows(refs[1]));
    if ar != br && ar.len() != br.len() {
        out.free += 1;
        return;
    }
    let header = ar.first().cloned().unwrap_or_default();
    let rule = Rule {
        source: Source::Ref,
        row: "interface.md: Cohorts, files (the rejected rows with the original columns plus rejected_reason) (ref)",
    };
    out.compared += 1;
    if tr.first() != Some(&header) {
        out.differences.push(Difference {
            path: "/0".into(),
            what: "another header row".into(),
            target: tr.first().cloned().unwrap_or_default().into(),
            reference: header.clone().into(),
            rule,
        });
        return;
    }
    if tr.len() != ar.len() {
        out.differences.push(Difference {
            path: String::new(),
            what: format!("{} rows where the reference answers {}", tr.len(), ar.len()),
            target: tr.len().into(),
            reference: ar.len().into(),
            rule,
        });
        return;
    }
    for (i, (trow, arow)) in tr.iter().zip(&ar).enumerate().skip(1) {
        for (c, (tc, ac)) in trow.iter().zip(arow).enumerate() {
            let column = header.get(c).map(String::as_str).unwrap_or("");
            if rules::field(column).source == Source::Free {
                out.free += 1;
                continue;
            }
            out.compared += 1;
            if tc != ac && ids.to_reference(tc, 0) != Some(ac.as_str()) {
                out.differences.push(Difference {
                    path: format!("/{i}/{column}"),
                    what: "another cell".into(),
                    target: tc.clone().into(),
                    reference: ac.clone().into(),
                    rule,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests;
