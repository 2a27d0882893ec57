//! `cohorts`: a multipart upload goes `processing` to `completed`, its rejected rows are
//! counted and downloadable with the reason of each, and a file missing a column the
//! transformation config names ends `failed`.

use std::time::Duration;

use contracts::clock::Stopwatch;
use reqwest::Method;

use super::context::Ctx;
use super::exchange::Exchange;
use super::fixtures::{self, COHORT_CSV_REJECTED, COHORT_CSV_ROWS, secs};
use super::target::{Body, Parent};
use super::verdicts::Verdicts;
use crate::checks::CheckDef;

const PROCESSING: CheckDef = CheckDef::error(
    "cohorts.upload_answers_processing",
    "a multipart cohort upload answers at once with a cohort_id and status processing",
);
const COMPLETED: CheckDef = CheckDef::error(
    "cohorts.upload_completes",
    "the upload ends completed; result.rejected_records counts the rejected row (1 of 4)",
);
const REJECTED_FILE: CheckDef = CheckDef::error(
    "cohorts.rejected_records_file",
    "files?file_type=rejected_records answers the rejected row with a rejected_reason column",
);
const MISSING_COLUMN: CheckDef = CheckDef::error(
    "cohorts.missing_column_fails",
    "an upload whose transformation config names a column the file lacks ends failed",
);

/// The checks of this group.
pub const CHECKS: &[CheckDef] = &[PROCESSING, COMPLETED, REJECTED_FILE, MISSING_COLUMN];

/// Polls a cohort until it is no longer `processing` (or the cohort timeout passes);
/// answers the last read.
pub async fn wait_for_cohort(cx: &Ctx, parent: Parent<'_>, cohort_id: &str) -> Exchange {
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

/// Runs the group.
pub async fn run(cx: &Ctx, v: &mut Verdicts) {
    let now = match cx.now().await {
        Ok(n) => n,
        Err(x) => return v.blocked("reading the target's time", x.evidence()),
    };
    let start = now.at + secs(3600);
    let x = cx
        .create_campaign(fixtures::campaign(
            &cx.settings.agent,
            &cx.names.name("cohorts"),
            &cx.names.number(),
            start,
            start + secs(86_400),
        ))
        .await;
    let Some(campaign) = x.str_field("campaign_id").map(str::to_string) else {
        return v.blocked("creating a campaign to upload cohorts to", x.evidence());
    };
    let parent = Parent::Campaign(&campaign);

    let x = upload(cx, parent, "cohorts-upload", "phone").await;
    let cohort_id = x.str_field("cohort_id").map(str::to_string);
    v.judge(
        &PROCESSING,
        x.status == 200 && cohort_id.is_some() && x.str_field("status") == Some("processing"),
        x.evidence(),
        "200 with a cohort_id and \"status\": \"processing\"",
    );
    if let Some(id) = &cohort_id {
        let done = wait_for_cohort(cx, parent, id).await;
        let rejected = done.body()["result"]["rejected_records"].as_u64();
        v.judge(
            &COMPLETED,
            done.str_field("status") == Some("completed") && rejected == Some(COHORT_CSV_REJECTED),
            done.evidence().with(
                "uploaded",
                format!("{COHORT_CSV_ROWS} rows, of which {COHORT_CSV_REJECTED} has the number '12345'"),
            ),
            format!(
                "\"status\": \"completed\" within {} s and result.rejected_records {COHORT_CSV_REJECTED}",
                cx.settings.cohort_timeout_secs
            ),
        );
        let file = cx
            .get(
                &cx.paths.cohorts(parent, &[id, "files"]),
                &[("file_type", "rejected_records".into())],
            )
            .await;
        v.judge(
            &REJECTED_FILE,
            rejected_file_ok(&file),
            file.evidence(),
            "200 with a CSV: the header of the upload plus rejected_reason, then the row of '12345' with a reason",
        );
    } else {
        v.blocked_only(
            &[&COMPLETED, &REJECTED_FILE],
            "uploading a cohort",
            x.evidence(),
        );
    }

    let x = upload(cx, parent, "cohorts-missing-column", "mobile").await;
    let Some(id) = x.str_field("cohort_id").map(str::to_string) else {
        return v.judge(
            &MISSING_COLUMN,
            false,
            x.evidence(),
            "200 with status processing, then failed (the file has no column 'mobile')",
        );
    };
    let done = wait_for_cohort(cx, Parent::Campaign(&campaign), &id).await;
    v.judge(
        &MISSING_COLUMN,
        done.str_field("status") == Some("failed"),
        done.evidence(),
        "\"status\": \"failed\" (the config names the column 'mobile', the file has none)",
    );
}

async fn upload(cx: &Ctx, parent: Parent<'_>, label: &str, phone_column: &str) -> Exchange {
    cx.call(
        Method::POST,
        &cx.paths.cohorts(parent, &["upload"]),
        &[],
        Body::Multipart(fixtures::cohort_upload(&cx.names.name(label), phone_column)),
    )
    .await
}

/// A CSV whose header has the upload's columns and `rejected_reason`, and exactly one row:
/// the one with the number `12345`, with a reason.
fn rejected_file_ok(x: &Exchange) -> bool {
    if x.status != 200 {
        return false;
    }
    let mut reader = csv::ReaderBuilder::new().from_reader(x.text.as_bytes());
    let Ok(header) = reader.headers().cloned() else {
        return false;
    };
    let reason = header.iter().position(|h| h == "rejected_reason");
    let phone = header.iter().position(|h| h == "phone");
    let (Some(reason), Some(phone)) = (reason, phone) else {
        return false;
    };
    let rows: Vec<csv::StringRecord> = reader.records().filter_map(Result::ok).collect();
    rows.len() as u64 == COHORT_CSV_REJECTED
        && rows.iter().all(|r| {
            r.get(phone) == Some("12345") && r.get(reason).is_some_and(|s| !s.trim().is_empty())
        })
}
