//! What the `cohorts` group sends and how it holds the answers to it: the CSV files (the
//! fixture with LF line endings, with CRLF, with spaces around values), the transformation
//! config compact and indented, and the judgements that compare an answer with what was
//! sent: the counts with the rows of the CSV, the rejected-records file with its rows, a list
//! with the cohorts uploaded.

use std::time::Duration;

use contracts::clock::Stopwatch;
use reqwest::Method;
use serde_json::{Map, Value, json};

use super::context::Ctx;
use super::exchange::{Body, Exchange};
use super::fixtures::{
    self, COHORT_CSV, COHORT_CSV_REJECTED, COHORT_CSV_REJECTED_ROWS, COHORT_CSV_ROWS,
};
use super::target::Parent;

/// The columns of every CSV the group uploads.
const COLUMNS: [&str; 3] = ["phone", "id", "first_name"];

/// The users of [`COHORT_CSV`] with spaces around their values (around the number too in the
/// rejected row; the valid numbers as the fixture writes them, so that the counts do not
/// depend on how a platform reads spaces in a number).
const SPACED_CSV: &str = concat!(
    "phone,id,first_name\n",
    "+12025550102, u1 , Ada \n",
    " 99 , u5 , Edsger \n",
    "(303) 555-0102, u2 , Grace \n",
    "404-555-0102, u3 , Alan \n",
    " 12345 , u4 , Barbara \n",
);

/// The cohort of the second campaign: one row, rejected, so that it has no user to call.
pub(super) const OTHER_CSV: &str = "phone,id,first_name\n12345,o1,Other\n";

/// Uploads the fixture to `parent` as a cohort named after `label`, its config naming
/// `phone_column` as the phone column.
pub(crate) async fn upload(
    cx: &Ctx,
    parent: Parent<'_>,
    label: &str,
    phone_column: &str,
) -> Exchange {
    cx.call(
        Method::POST,
        &cx.paths.cohorts(parent, &["upload"]),
        &[],
        Body::Multipart(fixtures::cohort_upload(&cx.names.name(label), phone_column)),
    )
    .await
}

/// Polls a cohort until it is no longer `processing` (or the cohort timeout passes);
/// answers the last read.
pub(crate) async fn wait_for_cohort(cx: &Ctx, parent: Parent<'_>, cohort_id: &str) -> Exchange {
    let watch = Stopwatch::start();
    let deadline = Duration::from_secs(cx.settings.cohort_timeout_secs);
    let mut pause = Duration::from_millis(20);
    loop {
        let x = cx.get(&cx.paths.cohorts(parent, &[cohort_id]), &[]).await;
        let processing = x.str_field("status") == Some("processing");
        if !x.is_success() || !processing || watch.elapsed() >= deadline {
            return x;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(500));
    }
}

/// One upload: what was sent, the answer, and the cohort's last read once processed.
#[derive(Debug)]
pub(super) struct Upload {
    /// The label of its name.
    pub(super) label: &'static str,
    /// The CSV as sent.
    pub(super) csv: String,
    /// The transformation config as sent.
    pub(super) config: String,
    /// The upload's answer.
    pub(super) x: Exchange,
    /// The cohort once no longer processing, when the upload answered an id.
    pub(super) done: Option<Exchange>,
}

impl Upload {
    /// An upload of `csv` and `config` answered `x`.
    pub(super) fn new(label: &'static str, csv: String, config: String, x: Exchange) -> Upload {
        Upload {
            label,
            csv,
            config,
            x,
            done: None,
        }
    }

    /// The cohort id its answer gave.
    pub(super) fn id(&self) -> Option<String> {
        self.x.str_field("cohort_id").map(str::to_string)
    }
}

/// The fixture, LF line endings.
pub(super) fn lf_csv() -> String {
    COHORT_CSV.to_string()
}

/// The fixture with CRLF line endings.
pub(super) fn crlf_csv() -> String {
    COHORT_CSV.replace('\n', "\r\n")
}

/// The fixture's users with spaces around their values.
pub(super) fn spaced_csv() -> String {
    SPACED_CSV.to_string()
}

/// The transformation config of the fixture, compact.
pub(super) fn compact_config() -> String {
    fixtures::transformation("phone").to_string()
}

/// The same config indented, with a final newline.
pub(super) fn indented_config() -> String {
    let v = fixtures::transformation("phone");
    serde_json::to_string_pretty(&v).unwrap_or_else(|_| v.to_string()) + "\n"
}

/// What each upload sent, by label, as evidence.
pub(super) fn sent_files(uploads: &[Upload]) -> Value {
    let m: Map<String, Value> = uploads
        .iter()
        .map(|u| {
            (
                u.label.to_string(),
                json!({"cohort_file": u.csv, "cohort_transformation_file": u.config}),
            )
        })
        .collect();
    Value::Object(m)
}

/// The text of the config and rejected-records files answered for each upload, by label, as
/// evidence (the calls show a JSON body parsed, not its bytes).
pub(super) fn answered_files(
    uploads: &[Upload],
    configs: &[Exchange],
    rejected: &[Exchange],
) -> Value {
    let m: Map<String, Value> = uploads
        .iter()
        .zip(configs.iter().zip(rejected))
        .map(|(u, (config, file))| {
            (
                u.label.to_string(),
                json!({"cohort_transformation": config.text, "rejected_records": file.text}),
            )
        })
        .collect();
    Value::Object(m)
}

/// `result` counts the data rows the suite sent (the header is no record): every row, the
/// valid ones, the rejected ones, and the total is the other two together.
pub(super) fn counts_ok(result: &Value) -> bool {
    let n = |k: &str| result[k].as_u64();
    let (Some(total), Some(valid), Some(rejected)) = (
        n("total_records"),
        n("valid_records"),
        n("rejected_records"),
    ) else {
        return false;
    };
    total == COHORT_CSV_ROWS
        && rejected == COHORT_CSV_REJECTED
        && valid == COHORT_CSV_ROWS - COHORT_CSV_REJECTED
        && total == valid + rejected
}

/// A CSV whose header has the upload's columns and `rejected_reason`, and exactly the
/// rejected rows, each once, in any order: the number `99` of the user `u5` and `12345` of
/// `u4` (compared without surrounding spaces), each with a reason.
pub(super) fn rejected_file_ok(x: &Exchange) -> bool {
    if x.status != 200 {
        return false;
    }
    let mut reader = csv::ReaderBuilder::new().from_reader(x.text.as_bytes());
    let Ok(header) = reader.headers().cloned() else {
        return false;
    };
    let at = |name: &str| header.iter().position(|h| h == name);
    let (Some(reason), Some(phone), Some(id)) = (at("rejected_reason"), at("phone"), at("id"))
    else {
        return false;
    };
    if !COLUMNS.iter().all(|c| at(c).is_some()) {
        return false;
    }
    let rows: Vec<csv::StringRecord> = reader.records().filter_map(Result::ok).collect();
    fn trimmed(r: &csv::StringRecord, i: usize) -> Option<&str> {
        r.get(i).map(str::trim)
    }
    let mut listed: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| trimmed(r, reason).is_some_and(|s| !s.is_empty()))
        .filter_map(|r| Some((trimmed(r, phone)?, trimmed(r, id)?)))
        .collect();
    listed.sort();
    let mut want = COHORT_CSV_REJECTED_ROWS.to_vec();
    want.sort();
    rows.len() as u64 == COHORT_CSV_REJECTED && listed == want
}

/// The header and rows of a CSV, as far as they read.
fn read(text: &str) -> Option<(Vec<String>, Vec<Vec<String>>)> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(text.as_bytes());
    let header = reader.headers().ok()?.iter().map(str::to_string).collect();
    let rows = reader
        .records()
        .filter_map(Result::ok)
        .map(|r| r.iter().map(str::to_string).collect())
        .collect();
    Some((header, rows))
}

fn trim_all(values: &[String]) -> Vec<&str> {
    values.iter().map(|s| s.trim()).collect()
}

/// Each row of the rejected-records `file` that is a row of the upload (its values equal
/// once spaces are trimmed) holds the values as uploaded, spaces included. Which rows the
/// file lists, and its columns, are `cohorts.rejected_records_file`'s to judge: a file that
/// lists none of the upload's rows leaves nothing to judge here.
pub(super) fn rejected_values_kept(u: &Upload, file: &Exchange) -> bool {
    let (Some((columns, sent)), Some((header, listed))) = (read(&u.csv), read(&file.text)) else {
        return true;
    };
    let Some(at): Option<Vec<usize>> = columns
        .iter()
        .map(|c| header.iter().position(|h| h == c))
        .collect()
    else {
        return true;
    };
    listed.iter().all(|row| {
        let values: Vec<String> = at
            .iter()
            .map(|&i| row.get(i).cloned().unwrap_or_default())
            .collect();
        sent.iter()
            .filter(|s| trim_all(s) == trim_all(&values))
            .all(|s| *s == values)
    })
}

/// The rejected row of the spaced upload as sent and trimmed: what tells them apart.
pub(super) fn rejected_row_forms() -> Vec<String> {
    let last = SPACED_CSV.lines().last().unwrap_or_default();
    let trimmed: Vec<&str> = last.split(',').map(str::trim).collect();
    vec![last.to_string(), trimmed.join(",")]
}

/// The `cohort_id`s of a page's items, in the order listed.
pub(super) fn listed_ids(x: &Exchange) -> Vec<String> {
    x.body()["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["cohort_id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_files_hold_the_same_users() {
        let rows = |text: &str| {
            let (header, rows) = read(text).unwrap();
            let rows: Vec<Vec<String>> = rows
                .iter()
                .map(|r| trim_all(r).into_iter().map(str::to_string).collect())
                .collect();
            (header, rows)
        };
        let lf = rows(&lf_csv());
        assert_eq!(lf.1.len() as u64, COHORT_CSV_ROWS);
        assert_eq!(rows(&crlf_csv()), lf);
        assert_eq!(rows(&spaced_csv()), lf);
        assert!(crlf_csv().contains("\r\n") && !lf_csv().contains('\r'));
        assert_eq!(
            rejected_row_forms(),
            [" 12345 , u4 , Barbara ", "12345,u4,Barbara"]
        );
        assert_ne!(compact_config(), indented_config());
        assert_eq!(
            serde_json::from_str::<Value>(&indented_config()).unwrap(),
            fixtures::transformation("phone")
        );
    }
}
