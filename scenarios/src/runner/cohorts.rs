//! A cohort's upload: the CSV (inline, from a file beside the scenario, or generated from a
//! number pattern) and its transformation config (given, or made from the CSV's header).

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{Map, Value, json};

use crate::scenario::setup::{CohortDef, Generate};

/// The CSV bytes and the transformation config of a cohort.
pub(crate) fn build(c: &CohortDef, dir: &Path) -> Result<(Vec<u8>, Value)> {
    let csv = if let Some(text) = &c.csv {
        text.trim_start_matches('\n').as_bytes().to_vec()
    } else if let Some(file) = &c.file {
        let p = dir.join(file);
        std::fs::read(&p).with_context(|| format!("reading cohort file {}", p.display()))?
    } else if let Some(g) = &c.generate {
        generate(g)?
    } else {
        anyhow::bail!("cohort {:?} has no users", c.key);
    };
    let transformation = match &c.transformation {
        Some(t) => t.clone(),
        None => default_transformation(&csv),
    };
    Ok((csv, transformation))
}

/// The data rows of a cohort's CSV (the records after the header, as the platform's reader
/// takes them: blank lines skipped, a quoted field's line breaks inside its record): a
/// generated cohort's count, without reading it again.
pub(crate) fn rows(c: &CohortDef, csv: &[u8]) -> u64 {
    if let Some(g) = &c.generate {
        return g.count;
    }
    let mut r = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(csv);
    let mut record = csv::ByteRecord::new();
    let mut n = 0u64;
    while let Ok(true) = r.read_byte_record(&mut record) {
        n += 1;
    }
    n.saturating_sub(1)
}

/// `phone_number`, `user_identifier`, then one column per variable. The templates are split
/// once, and each row's fields are filled into the same buffers: a million rows are
/// generated before the upload, with nothing else running.
fn generate(g: &Generate) -> Result<Vec<u8>> {
    use std::fmt::Write as _;
    let numbers = g.number_pattern().map_err(anyhow::Error::msg)?;
    let mut w = csv::Writer::from_writer(Vec::with_capacity(g.count as usize * 40));
    let mut header = vec!["phone_number".to_string(), "user_identifier".to_string()];
    header.extend(g.variables.keys().cloned());
    w.write_record(&header)?;
    // Each template's text between its `{i}`s, as `str::replace` would find them.
    let templates: Vec<Vec<&str>> = std::iter::once(g.identifier.as_deref().unwrap_or("user-{i}"))
        .chain(g.variables.values().map(String::as_str))
        .map(|t| t.split("{i}").collect())
        .collect();
    let mut row = vec![String::new(); header.len()];
    let mut n = String::new();
    for i in g.first..g.first + g.count {
        n.clear();
        let _ = write!(n, "{i}");
        row[0].clear();
        numbers.push(i, &mut row[0]);
        for (field, parts) in row[1..].iter_mut().zip(&templates) {
            field.clear();
            for (k, part) in parts.iter().enumerate() {
                if k > 0 {
                    field.push_str(&n);
                }
                field.push_str(part);
            }
        }
        w.write_record(&row)?;
    }
    w.into_inner().context("writing the generated CSV")
}

/// The default config: `phone_number` and `user_identifier` columns when present (else the
/// first column is the number), every other column an agent variable.
fn default_transformation(csv: &[u8]) -> Value {
    let mut r = csv::ReaderBuilder::new().from_reader(csv);
    let header: Vec<String> = r
        .headers()
        .map(|h| h.iter().map(str::to_string).collect())
        .unwrap_or_default();
    let phone = header
        .iter()
        .find(|h| h.as_str() == "phone_number")
        .or(header.first())
        .cloned()
        .unwrap_or_else(|| "phone_number".into());
    let mut t = json!({"phone_number": {"column_name": phone}});
    if header.iter().any(|h| h == "user_identifier") {
        t["user_identifier"] = json!({"column_name": "user_identifier"});
    }
    let vars: Map<String, Value> = header
        .iter()
        .filter(|h| **h != phone && h.as_str() != "user_identifier")
        .map(|h| (h.clone(), json!({"column_name": h})))
        .collect();
    if !vars.is_empty() {
        t["app_variables"] = Value::Object(vars);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_users_fill_the_pattern_and_the_variables() {
        let g = Generate {
            count: 3,
            numbers: "+1202555##00".into(),
            first: 9,
            identifier: Some("c{i}".into()),
            variables: [("tier".to_string(), "gold, {i}".to_string())].into(),
        };
        let csv = String::from_utf8(generate(&g).unwrap()).unwrap();
        assert_eq!(
            csv,
            "phone_number,user_identifier,tier\n+12025550900,c9,\"gold, 9\"\n+12025551000,c10,\"gold, 10\"\n+12025551100,c11,\"gold, 11\"\n"
        );
        // Every `{i}` of a template is filled, and nothing else of it changes.
        let g = Generate {
            count: 2,
            numbers: "##+1".into(),
            first: 7,
            identifier: Some("{i}{i}-{i}{".into()),
            variables: [("a".to_string(), "i}{i".to_string())].into(),
        };
        assert_eq!(
            String::from_utf8(generate(&g).unwrap()).unwrap(),
            "phone_number,user_identifier,a\n07+1,77-7{,i}{i\n08+1,88-8{,i}{i\n"
        );
        let def = |csv: &str| CohortDef {
            csv: Some(csv.into()),
            ..serde_json::from_value(json!({"key": "k", "campaign": "c"})).unwrap()
        };
        assert_eq!(rows(&def(&csv), csv.as_bytes()), 3);
        // A quoted line break, a blank line and no newline at the end: two rows.
        let text = "phone_number,note\n+12025550100,\"two\nlines\"\n\n+12025550101,x";
        assert_eq!(rows(&def(text), text.as_bytes()), 2);
        assert_eq!(rows(&def(""), b""), 0);
        let t = default_transformation(csv.as_bytes());
        assert_eq!(
            t,
            json!({"phone_number": {"column_name": "phone_number"}, "user_identifier": {"column_name": "user_identifier"},
                   "app_variables": {"tier": {"column_name": "tier"}}})
        );
    }
}
