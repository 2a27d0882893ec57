//! Cohort inputs: the transformation config and the JSON stream body.

use serde_json::Value;

use super::{Ctx, Options, limits};
use crate::domain::phone;
use crate::error::{Loc, ValidationErrors};
use crate::model::{CohortStream, ColumnRule, Transformation};
use crate::wire::{AppOverrides, CohortCategory, CohortStreamUser};

const CONFIG_KEYS: &[&str] = &[
    "phone_number",
    "user_identifier",
    "app_variables",
    "app_overrides",
];
/// The override keys a transformation may set (reference).
pub(crate) const OVERRIDE_KEYS: &[&str] = &[
    "initial_bot_message",
    "initial_state_name",
    "initial_language_name",
];
const CATEGORIES: &[(&str, CohortCategory)] = &[
    ("cohort", CohortCategory::Cohort),
    ("stop_file", CohortCategory::StopFile),
];

/// Checks a transformation config (the parsed `cohort_transformation_file`) at `loc`.
///
/// Structure errors are reported here (a 422 at upload). Override keys outside the three are
/// not errors here: they are returned in [`Transformation::unknown_overrides`], because the
/// notes make them fail the whole upload (status `failed`) instead.
pub fn transformation_config(
    v: &Value,
    loc: &Loc,
    opts: Options,
) -> Result<Transformation, ValidationErrors> {
    let mut c = Ctx::new(opts);
    let t = transformation(&mut c, v, loc);
    c.into_result(t)
}

fn transformation(c: &mut Ctx, v: &Value, loc: &Loc) -> Option<Transformation> {
    let m = c.object(v, loc, CONFIG_KEYS)?;
    let phone = c.required(m, "phone_number", loc).and_then(|v| {
        let l = loc.at("phone_number");
        let pm = c.object(v, &l, &["column_name", "country_code"])?;
        let column = c
            .required(pm, "column_name", &l)
            .and_then(|v| c.nonempty_string(v, &l.at("column_name")));
        let country = match Ctx::optional(pm, "country_code") {
            Some(v) => country_code(c, v, &l.at("country_code")).map(Some),
            None => Some(None),
        };
        Some((column?, country?))
    });
    let user_identifier = match Ctx::optional(m, "user_identifier") {
        Some(v) => column_rule(c, v, &loc.at("user_identifier")).map(Some),
        None => Some(None),
    };
    let app_variables = match Ctx::optional(m, "app_variables") {
        Some(v) => {
            let l = loc.at("app_variables");
            c.object(v, &l, &[]).and_then(|vm| {
                let mut out = Vec::with_capacity(vm.len());
                let mut ok = true;
                for (name, rule) in vm {
                    if name.is_empty() {
                        c.value_error(&l, "agent variable names must not be empty");
                        ok = false;
                        continue;
                    }
                    match column_rule(c, rule, &l.at(name.as_str())) {
                        Some(r) => out.push((name.clone(), r)),
                        None => ok = false,
                    }
                }
                ok.then_some(out)
            })
        }
        None => Some(Vec::new()),
    };
    let overrides = match Ctx::optional(m, "app_overrides") {
        Some(v) => {
            let l = loc.at("app_overrides");
            c.object(v, &l, &[]).and_then(|om| {
                let mut known = Vec::new();
                let mut unknown = Vec::new();
                let mut ok = true;
                for (key, mapping) in om {
                    let kl = l.at(key.as_str());
                    let column = c.object(mapping, &kl, &["column_name"]).and_then(|mm| {
                        c.required(mm, "column_name", &kl)
                            .and_then(|v| c.nonempty_string(v, &kl.at("column_name")))
                    });
                    match column {
                        Some(col) if OVERRIDE_KEYS.contains(&key.as_str()) => {
                            known.push((key.clone(), col))
                        }
                        Some(_) => unknown.push(key.clone()),
                        None => ok = false,
                    }
                }
                ok.then_some((known, unknown))
            })
        }
        None => Some((Vec::new(), Vec::new())),
    };
    let (phone_column, country_code) = phone?;
    let (app_overrides, unknown_overrides) = overrides?;
    Some(Transformation {
        phone_column,
        country_code,
        user_identifier: user_identifier?,
        app_variables: app_variables?,
        app_overrides,
        unknown_overrides,
    })
}

fn column_rule(c: &mut Ctx, v: &Value, loc: &Loc) -> Option<ColumnRule> {
    let m = c.object(v, loc, &["column_name", "required"])?;
    let column = c
        .required(m, "column_name", loc)
        .and_then(|v| c.nonempty_string(v, &loc.at("column_name")));
    let required = match Ctx::optional(m, "required") {
        Some(v) => c.boolean(v, &loc.at("required")),
        None => Some(false),
    };
    Some(ColumnRule {
        column: column?,
        required: required?,
    })
}

/// An ISO 3166-1 alpha-2 region (`IN`) or a calling code (`91`, `+91`).
fn country_code(c: &mut Ctx, v: &Value, loc: &Loc) -> Option<String> {
    let s = c.string(v, loc)?;
    let digits = s.strip_prefix('+').unwrap_or(s);
    let numeric =
        !digits.is_empty() && digits.len() <= 3 && digits.bytes().all(|b| b.is_ascii_digit());
    if numeric || phone::calling_code(s).is_some() {
        Some(s.to_string())
    } else {
        c.value_error(
            loc,
            format_args!(
                "unknown country code '{s}'; use an ISO 3166-1 alpha-2 region such as 'IN' or 'US', or a calling code such as '91'"
            ),
        );
        None
    }
}

const STREAM_KEYS: &[&str] = &["name", "cohort_category", "country_code", "users"];
const USER_KEYS: &[&str] = &[
    "phone_number",
    "user_identifier",
    "app_variables",
    "app_overrides",
];

/// Checks a cohort stream body: a name, an optional category and region, and 1 to 1000
/// users. Each user must be well-formed; whether its number normalises is decided when the
/// cohort is processed (a bad number rejects that user only).
pub fn cohort_stream(body: &Value, opts: Options) -> Result<CohortStream, ValidationErrors> {
    let mut c = Ctx::new(opts);
    let s = stream(&mut c, body);
    c.into_result(s)
}

fn stream(c: &mut Ctx, body: &Value) -> Option<CohortStream> {
    let loc = Loc::body();
    let m = c.object(body, &loc, STREAM_KEYS)?;
    let name = c
        .required(m, "name", &loc)
        .and_then(|v| c.name(v, &loc.at("name")));
    let category = match Ctx::optional(m, "cohort_category") {
        Some(v) => c.choice(v, &loc.at("cohort_category"), CATEGORIES),
        None => Some(CohortCategory::Cohort),
    };
    let country = match Ctx::optional(m, "country_code") {
        Some(v) => country_code(c, v, &loc.at("country_code")).map(Some),
        None => Some(None),
    };
    let users = c.required(m, "users", &loc).and_then(|v| {
        let l = loc.at("users");
        let items = c.array_len(
            v,
            &l,
            limits::STREAM_USERS_MIN,
            Some(limits::STREAM_USERS_MAX),
        )?;
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match user(c, item, &l.at(i)) {
                Some(u) => out.push(u),
                None => ok = false,
            }
        }
        ok.then_some(out)
    });
    Some(CohortStream {
        name: name?,
        category: category?,
        country_code: country?,
        users: users?,
    })
}

fn user(c: &mut Ctx, v: &Value, loc: &Loc) -> Option<CohortStreamUser> {
    let m = c.object(v, loc, USER_KEYS)?;
    let phone = c
        .required(m, "phone_number", loc)
        .and_then(|v| c.string(v, &loc.at("phone_number")).map(str::to_string));
    let user_identifier = match Ctx::optional(m, "user_identifier") {
        Some(v) => c
            .string(v, &loc.at("user_identifier"))
            .map(|s| Some(s.to_string())),
        None => Some(None),
    };
    let app_variables = match Ctx::optional(m, "app_variables") {
        Some(v) => c.dict(v, &loc.at("app_variables")).map(Some),
        None => Some(None),
    };
    let app_overrides = match Ctx::optional(m, "app_overrides") {
        Some(v) => {
            let l = loc.at("app_overrides");
            c.object(v, &l, OVERRIDE_KEYS).and_then(|om| {
                let mut o = AppOverrides::default();
                let mut ok = true;
                for key in OVERRIDE_KEYS {
                    if let Some(v) = Ctx::optional(om, key) {
                        match c.string(v, &l.at(*key)) {
                            Some(s) => {
                                let s = Some(s.to_string());
                                match *key {
                                    "initial_bot_message" => o.initial_bot_message = s,
                                    "initial_state_name" => o.initial_state_name = s,
                                    _ => o.initial_language_name = s,
                                }
                            }
                            None => ok = false,
                        }
                    }
                }
                ok.then_some(Some(o))
            })
        }
        None => Some(None),
    };
    Some(CohortStreamUser {
        phone_number: phone?,
        user_identifier: user_identifier?,
        app_variables: app_variables?,
        app_overrides: app_overrides?,
    })
}
