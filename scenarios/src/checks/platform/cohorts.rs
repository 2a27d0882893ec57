//! `cohorts`: a multipart upload goes `processing` to `completed`, its rejected rows are
//! counted and downloadable with the reason of each, and a file missing a column the
//! transformation config names ends `failed`; a paused campaign takes uploads too.

use std::time::Duration;

use contracts::clock::Stopwatch;
use reqwest::Method;
use serde_json::Value;

use super::context::Ctx;
use super::exchange::Body;
use super::exchange::Exchange;
use super::fixtures::{self, COHORT_CSV_REJECTED, COHORT_CSV_ROWS, Kind, Makes};
use super::target::Parent;
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

const TO_PAUSED: CheckDef = CheckDef::error(
    "cohorts.upload_to_paused_campaign",
    "a paused campaign takes a cohort upload (the spec: after a pause), processed to completed",
);

const UPLOADED_FILES: CheckDef = CheckDef::error(
    "cohorts.uploaded_files",
    "files?file_type=cohort answers the CSV as uploaded, file_type=cohort_transformation the config as uploaded",
);

/// The checks of this group.
pub(crate) const CHECKS: &[CheckDef] = &[
    PROCESSING,
    COMPLETED,
    REJECTED_FILE,
    MISSING_COLUMN,
    UPLOADED_FILES,
    TO_PAUSED,
];

const CAMPAIGN: Makes = Makes::new(Kind::Campaign, "cohorts", 1);
const UPLOADED: Makes = Makes::new(Kind::Cohort, "cohorts-upload", 1);
const MISSING: Makes = Makes::new(Kind::Cohort, "cohorts-missing-column", 1);
const PAUSED: Makes = Makes::new(Kind::Cohort, "cohorts-paused", 1);

/// What each check creates: one campaign and its uploads.
pub(crate) const MAKES: &[(&CheckDef, &[Makes])] = &[
    (&PROCESSING, &[CAMPAIGN, UPLOADED]),
    (&COMPLETED, &[CAMPAIGN, UPLOADED]),
    (&REJECTED_FILE, &[CAMPAIGN, UPLOADED]),
    (&MISSING_COLUMN, &[CAMPAIGN, UPLOADED, MISSING]),
    (&UPLOADED_FILES, &[CAMPAIGN, UPLOADED]),
    (&TO_PAUSED, &[CAMPAIGN, PAUSED]),
];

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

/// Runs the group.
pub(crate) async fn run(cx: &Ctx, v: &mut Verdicts) {
    let x = cx
        .create_scheduled_campaign(&cx.names.name(CAMPAIGN.label))
        .await;
    let Some(campaign) = x.str_field("campaign_id").map(str::to_string) else {
        return v.blocked("creating a campaign to upload cohorts to", x.evidence());
    };
    let parent = Parent::Campaign(&campaign);

    let x = upload(cx, parent, UPLOADED.label, "phone").await;
    let cohort_id = x.str_field("cohort_id").map(str::to_string);
    let mut completed = None;
    if let Some(id) = &cohort_id {
        let done = wait_for_cohort(cx, parent, id).await;
        v.varied(&PROCESSING, "status", [status_of(&x), status_of(&done)]);
        let result = &done.body()["result"];
        let rejected = result["rejected_records"].as_u64();
        let kinds = [
            (result["valid_records"].as_u64() > Some(0)).then_some("valid"),
            (rejected > Some(0)).then_some("rejected"),
        ];
        v.varied(&COMPLETED, "rows", kinds.into_iter().flatten());
        v.judge(
            &COMPLETED,
            done.str_field("status") == Some("completed") && rejected == Some(COHORT_CSV_REJECTED),
            Exchange::all(&[&x, &done]).with(
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
        let listed = csv::Reader::from_reader(file.text.as_bytes())
            .records()
            .count();
        v.varied(&REJECTED_FILE, "rows", [COHORT_CSV_ROWS as usize, listed]);
        v.judge(
            &REJECTED_FILE,
            rejected_file_ok(&file),
            file.evidence(),
            "200 with a CSV: the header of the upload plus rejected_reason, then the row of '12345' with a reason",
        );
        uploaded_files(cx, v, parent, id).await;
        completed = Some(done);
    } else {
        v.blocked_only(
            &[&COMPLETED, &REJECTED_FILE, &UPLOADED_FILES],
            "uploading a cohort",
            x.evidence(),
        );
    }
    v.judge(
        &PROCESSING,
        x.status == 200 && cohort_id.is_some() && x.str_field("status") == Some("processing"),
        x.evidence(),
        "200 with a cohort_id and \"status\": \"processing\"",
    );

    let x = upload(cx, parent, MISSING.label, "mobile").await;
    match x.str_field("cohort_id").map(str::to_string) {
        Some(id) => {
            let done = wait_for_cohort(cx, parent, &id).await;
            if let Some(ok) = &completed {
                v.varied(&MISSING_COLUMN, "status", [status_of(ok), status_of(&done)]);
            }
            v.judge(
                &MISSING_COLUMN,
                done.str_field("status") == Some("failed"),
                Exchange::all(&[&x, &done]),
                "\"status\": \"failed\" (the config names the column 'mobile', the file has none)",
            );
        }
        None => v.judge(
            &MISSING_COLUMN,
            false,
            x.evidence(),
            "200 with status processing, then failed (the file has no column 'mobile')",
        ),
    }

    to_paused(cx, v, &campaign).await;
}

/// The upload's own files: the CSV byte for byte, the transformation config as JSON.
async fn uploaded_files(cx: &Ctx, v: &mut Verdicts, parent: Parent<'_>, id: &str) {
    let file = |kind: &'static str| {
        let path = cx.paths.cohorts(parent, &[id, "files"]);
        async move { cx.get(&path, &[("file_type", kind.to_string())]).await }
    };
    let csv = file("cohort").await;
    let config = file("cohort_transformation").await;
    v.varied(
        &UPLOADED_FILES,
        "content_type",
        [&csv, &config].map(|x| x.content_type.clone().unwrap_or_default()),
    );
    v.judge(
        &UPLOADED_FILES,
        csv.status == 200
            && csv.text == fixtures::COHORT_CSV
            && config.status == 200
            && config.json == Some(fixtures::transformation("phone")),
        Exchange::all(&[&csv, &config]),
        "200 with the CSV exactly as uploaded for file_type=cohort, and 200 with the transformation config as uploaded for file_type=cohort_transformation",
    );
}

/// The `status` of an answer as a value.
fn status_of(x: &Exchange) -> Value {
    x.body()["status"].clone()
}

/// Pauses the campaign, then uploads to it: accepted, and processed to completed.
async fn to_paused(cx: &Ctx, v: &mut Verdicts, campaign: &str) {
    let before = cx.get(&cx.paths.campaign(campaign), &[]).await;
    let paused = super::states::campaign_action(cx, campaign, "pause").await;
    let parent = Parent::Campaign(campaign);
    let x = upload(cx, parent, PAUSED.label, "phone").await;
    let done = match x.str_field("cohort_id") {
        Some(id) => wait_for_cohort(cx, parent, id).await,
        None => x.clone(),
    };
    v.varied(
        &TO_PAUSED,
        "campaign status",
        [status_of(&before), status_of(&paused)],
    );
    v.judge(
        &TO_PAUSED,
        paused.str_field("status") == Some("paused")
            && x.str_field("status") == Some("processing")
            && done.str_field("status") == Some("completed"),
        Exchange::all(&[&paused, &x, &done]),
        "the campaign paused; the upload answered 200 \"status\": \"processing\" and ended completed",
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
