//! `cohorts`: a multipart upload goes `processing` to `completed` with its rows counted as
//! the suite wrote them, its rejected rows are downloadable with the reason of each, its
//! files come back as uploaded, a file missing a column the transformation config names ends
//! `failed`, a paused campaign takes uploads too, and a campaign's cohort list holds that
//! campaign's cohorts, in upload order.
//!
//! The group sends the same users three ways (LF line endings, CRLF line endings, spaces
//! around values) and judges every answer against what it sent: the counts against the
//! rows of its CSV, the files against its bytes ([`super::cohorts_values`]).

use reqwest::Method;
use serde_json::{Value, json};

use super::cohorts_values::{self as values, Upload};
use super::cohorts_values::{upload, wait_for_cohort};
use super::cohorts_ways as ways;
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
    "each upload (LF, CRLF, spaces around values) ends completed; result counts the data rows sent, header excluded: total_records 5 = valid_records 3 + rejected_records 2",
);
const REJECTED_FILE: CheckDef = CheckDef::error(
    "cohorts.rejected_records_file",
    "files?file_type=rejected_records answers the upload's columns plus rejected_reason, and exactly the two rejected rows ('99', u5 and '12345', u4), each with a reason, for each upload",
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
    "files?file_type=cohort answers each CSV as uploaded, byte for byte (LF, CRLF, spaces around values); file_type=cohort_transformation the config as uploaded (the same JSON)",
);

const FILES_VERBATIM: CheckDef = CheckDef::warning(
    "cohorts.files_byte_for_byte",
    "file_type=cohort_transformation answers the JSON byte for byte as uploaded (compact and indented, not re-serialised), and the rejected-records file keeps each rejected row's original values, spaces included (assumed)",
);

const LIST_OWN: CheckDef = CheckDef::error(
    "cohorts.list_only_its_campaign",
    "GET .../campaigns/{id}/cohorts lists that campaign's cohorts and only them: of two campaigns with their own uploads, neither list shows the other's",
);

const LIST_ORDER: CheckDef = CheckDef::warning(
    "cohorts.list_upload_order",
    "GET .../campaigns/{id}/cohorts lists the cohorts in upload order, oldest first (assumed)",
);
const READ_OWN: CheckDef = CheckDef::error(
    "cohorts.read_only_under_its_campaign",
    "a cohort and its files are read under the campaign that holds it only: of two campaigns, each one's cohort read under the other's path (GET .../cohorts/{cohort_id} and .../files) is a 4xx",
);

/// The checks of this group.
pub(crate) const CHECKS: &[CheckDef] = &[
    PROCESSING,
    COMPLETED,
    REJECTED_FILE,
    MISSING_COLUMN,
    UPLOADED_FILES,
    FILES_VERBATIM,
    TO_PAUSED,
    LIST_OWN,
    LIST_ORDER,
    READ_OWN,
    ways::STREAM_COUNTRY,
    ways::PAUSED_DEPLOYMENT,
];

const CAMPAIGN: Makes = Makes::new(Kind::Campaign, "cohorts", 1);
const UPLOADED: Makes = Makes::new(Kind::Cohort, "cohorts-upload", 1);
const CRLF: Makes = Makes::new(Kind::Cohort, "cohorts-crlf", 1);
const SPACED: Makes = Makes::new(Kind::Cohort, "cohorts-spaced", 1);
const MISSING: Makes = Makes::new(Kind::Cohort, "cohorts-missing-column", 1);
const PAUSED: Makes = Makes::new(Kind::Cohort, "cohorts-paused", 1);
const OTHER_CAMPAIGN: Makes = Makes::new(Kind::Campaign, "cohorts-other", 1);
const OTHER: Makes = Makes::new(Kind::Cohort, "cohorts-other", 1);

/// What each check creates: one campaign and its uploads; the list checks a second campaign
/// with an upload of its own.
pub(crate) const MAKES: &[(&CheckDef, &[Makes])] = &[
    (&PROCESSING, &[CAMPAIGN, UPLOADED]),
    (&COMPLETED, &[CAMPAIGN, UPLOADED, CRLF, SPACED]),
    (&REJECTED_FILE, &[CAMPAIGN, UPLOADED, CRLF, SPACED]),
    (&MISSING_COLUMN, &[CAMPAIGN, UPLOADED, MISSING]),
    (&UPLOADED_FILES, &[CAMPAIGN, UPLOADED, CRLF, SPACED]),
    (&FILES_VERBATIM, &[CAMPAIGN, UPLOADED, CRLF, SPACED]),
    (&TO_PAUSED, &[CAMPAIGN, PAUSED]),
    (
        &LIST_OWN,
        &[
            CAMPAIGN,
            UPLOADED,
            CRLF,
            SPACED,
            MISSING,
            PAUSED,
            OTHER_CAMPAIGN,
            OTHER,
        ],
    ),
    (
        &LIST_ORDER,
        &[CAMPAIGN, UPLOADED, CRLF, SPACED, MISSING, PAUSED],
    ),
    (&READ_OWN, &[CAMPAIGN, UPLOADED, OTHER_CAMPAIGN, OTHER]),
    (&ways::STREAM_COUNTRY, &[CAMPAIGN, ways::STREAMED]),
    (
        &ways::PAUSED_DEPLOYMENT,
        &[ways::DEPLOYMENT, ways::DEPLOYMENT_COHORT],
    ),
];

/// Runs the group.
pub(crate) async fn run(cx: &Ctx, v: &mut Verdicts) {
    let x = cx
        .create_scheduled_campaign(&cx.names.name(CAMPAIGN.label))
        .await;
    let Some(campaign) = x.str_field("campaign_id").map(str::to_string) else {
        return v.blocked("creating a campaign to upload cohorts to", x.evidence());
    };
    let parent = Parent::Campaign(&campaign);

    // The same users three ways; each answer judged against what was sent.
    let sent = [
        (UPLOADED.label, values::lf_csv(), values::compact_config()),
        (CRLF.label, values::crlf_csv(), values::indented_config()),
        (SPACED.label, values::spaced_csv(), values::compact_config()),
    ];
    let mut uploads = Vec::new();
    for (label, csv, config) in sent {
        let x = send(cx, parent, label, &csv, &config).await;
        uploads.push(Upload::new(label, csv, config, x));
    }
    // The cohorts of the campaign in the order their uploads were accepted.
    let mut accepted: Vec<String> = uploads.iter().filter_map(Upload::id).collect();
    for u in &mut uploads {
        if let Some(id) = u.id() {
            u.done = Some(wait_for_cohort(cx, parent, &id).await);
        }
    }
    let main = &uploads[0];
    judge_processing(v, main);
    judge_completed(cx, v, &uploads);
    match uploads.iter().find(|u| u.id().is_none()) {
        Some(refused) => v.blocked_only(
            &[&REJECTED_FILE, &UPLOADED_FILES, &FILES_VERBATIM],
            "uploading a cohort",
            refused.x.evidence(),
        ),
        None => files(cx, v, parent, &uploads).await,
    }

    let x = upload(cx, parent, MISSING.label, "mobile").await;
    match x.str_field("cohort_id").map(str::to_string) {
        Some(id) => {
            accepted.push(id.clone());
            let done = wait_for_cohort(cx, parent, &id).await;
            if let Some(ok) = &main.done {
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

    let other = other_campaign(cx).await;
    match (&other, main.id()) {
        (Ok(other), Some(mine)) => {
            cross_reads(cx, v, (&campaign, &mine), (&other.0, &other.1)).await
        }
        (Err(x), _) => v.blocked_only(
            &[&READ_OWN],
            "creating a second campaign with a cohort",
            x.evidence(),
        ),
        (_, None) => v.blocked_only(&[&READ_OWN], "uploading a cohort", main.x.evidence()),
    }
    accepted.extend(to_paused(cx, v, &campaign).await);
    lists(cx, v, &campaign, &accepted, other).await;
    ways::run(cx, v, &campaign).await;
}

/// Each campaign's cohort read under the other campaign's path, the cohort and its file,
/// beside the same reads under its own: those answer 200, these a 4xx.
async fn cross_reads(cx: &Ctx, v: &mut Verdicts, a: (&str, &str), b: (&str, &str)) {
    let reads = |parent: &str, cohort: &str| {
        let (cohort_path, files_path) = (
            cx.paths.cohorts(Parent::Campaign(parent), &[cohort]),
            cx.paths
                .cohorts(Parent::Campaign(parent), &[cohort, "files"]),
        );
        async move {
            [
                cx.get(&cohort_path, &[]).await,
                cx.get(&files_path, &[("file_type", "cohort".to_string())])
                    .await,
            ]
        }
    };
    let own: Vec<Exchange> = [reads(a.0, a.1).await, reads(b.0, b.1).await].concat();
    let crossed: Vec<Exchange> = [reads(b.0, a.1).await, reads(a.0, b.1).await].concat();
    v.varied(
        &READ_OWN,
        "status",
        own.iter().chain(&crossed).map(|x| x.status),
    );
    let ok = own.iter().all(|x| x.status == 200) && crossed.iter().all(super::exchange::is_4xx);
    v.judge(
        &READ_OWN,
        ok,
        Exchange::all(&own.iter().chain(&crossed).collect::<Vec<_>>()),
        format!(
            "200 for each cohort and its file under its own campaign; a 4xx for cohort {} under campaign {} and cohort {} under campaign {}",
            a.1, b.0, b.1, a.0
        ),
    );
}

/// The upload's answer: at once, `processing`, with a cohort id.
fn judge_processing(v: &mut Verdicts, main: &Upload) {
    let x = &main.x;
    if let Some(done) = &main.done {
        v.varied(&PROCESSING, "status", [status_of(x), status_of(done)]);
    }
    v.judge(
        &PROCESSING,
        x.status == 200 && main.id().is_some() && x.str_field("status") == Some("processing"),
        x.evidence(),
        "200 with a cohort_id and \"status\": \"processing\"",
    );
}

/// Each upload ends `completed` with its data rows counted as the suite wrote them.
fn judge_completed(cx: &Ctx, v: &mut Verdicts, uploads: &[Upload]) {
    let mut calls = Vec::new();
    let mut ok = true;
    for u in uploads {
        calls.push(&u.x);
        let Some(done) = &u.done else {
            ok = false;
            continue;
        };
        calls.push(done);
        let result = &done.body()["result"];
        let kinds = [
            (result["valid_records"].as_u64() > Some(0)).then_some("valid"),
            (result["rejected_records"].as_u64() > Some(0)).then_some("rejected"),
        ];
        v.varied(&COMPLETED, "rows", kinds.into_iter().flatten());
        ok &= done.str_field("status") == Some("completed") && values::counts_ok(result);
    }
    let sent: Value = uploads
        .iter()
        .map(|u| (u.label.to_string(), json!(u.csv)))
        .collect::<serde_json::Map<_, _>>()
        .into();
    let valid = COHORT_CSV_ROWS - COHORT_CSV_REJECTED;
    v.judge(
        &COMPLETED,
        ok,
        Exchange::all(&calls)
            .with("uploaded", sent)
            .with(
                "rows_sent",
                format!(
                    "{COHORT_CSV_ROWS} data rows under a header in each file, of which {COHORT_CSV_REJECTED} have the numbers '99' and '12345'"
                ),
            ),
        format!(
            "each upload \"status\": \"completed\" within {} s with result {{\"total_records\": {COHORT_CSV_ROWS}, \"valid_records\": {valid}, \"rejected_records\": {COHORT_CSV_REJECTED}}} (the data rows sent, header excluded; total = valid + rejected)",
            cx.settings.cohort_timeout_secs
        ),
    );
}

/// The files of each upload: the rejected records, the CSV and the config as uploaded.
async fn files(cx: &Ctx, v: &mut Verdicts, parent: Parent<'_>, uploads: &[Upload]) {
    let mut rejected = Vec::new();
    let mut csvs = Vec::new();
    let mut configs = Vec::new();
    for u in uploads {
        let id = u.id().unwrap_or_default();
        let file = |kind: &'static str| {
            let path = cx.paths.cohorts(parent, &[&id, "files"]);
            async move { cx.get(&path, &[("file_type", kind.to_string())]).await }
        };
        rejected.push(file("rejected_records").await);
        csvs.push(file("cohort").await);
        configs.push(file("cohort_transformation").await);
    }

    let listed = csv::Reader::from_reader(rejected[0].text.as_bytes())
        .records()
        .count();
    v.varied(&REJECTED_FILE, "rows", [COHORT_CSV_ROWS as usize, listed]);
    let ok = rejected.iter().all(values::rejected_file_ok);
    v.judge(
        &REJECTED_FILE,
        ok,
        Exchange::all(&rejected.iter().collect::<Vec<_>>()),
        "200 with a CSV for each upload: its header (phone, id, first_name) plus rejected_reason, then only the rows of '99' (u5) and '12345' (u4), each with a reason",
    );

    v.varied(
        &UPLOADED_FILES,
        "content_type",
        [&csvs[0], &configs[0]].map(|x| x.content_type.clone().unwrap_or_default()),
    );
    v.varied(
        &UPLOADED_FILES,
        "csv as sent",
        uploads.iter().map(|u| u.csv.clone()),
    );
    let ok = uploads
        .iter()
        .zip(csvs.iter().zip(&configs))
        .all(|(u, (csv, config))| {
            csv.status == 200
                && csv.text == u.csv
                && config.status == 200
                && config.json.is_some()
                && config.json == serde_json::from_str(&u.config).ok()
        });
    let calls: Vec<&Exchange> = csvs.iter().chain(&configs).collect();
    v.judge(
        &UPLOADED_FILES,
        ok,
        Exchange::all(&calls).with("sent", values::sent_files(uploads)),
        "200 with each CSV exactly as uploaded for file_type=cohort (its line endings and the spaces around its values kept), and 200 with the same JSON as uploaded for file_type=cohort_transformation",
    );

    v.varied(
        &FILES_VERBATIM,
        "config as sent",
        uploads.iter().map(|u| u.config.clone()),
    );
    v.varied(
        &FILES_VERBATIM,
        "rejected row",
        values::rejected_row_forms(),
    );
    let ok = uploads
        .iter()
        .zip(configs.iter().zip(&rejected))
        .all(|(u, (config, file))| {
            config.status == 200 && config.text == u.config && values::rejected_values_kept(u, file)
        });
    let calls: Vec<&Exchange> = configs.iter().chain(&rejected).collect();
    v.judge(
        &FILES_VERBATIM,
        ok,
        Exchange::all(&calls)
            .with("sent", values::sent_files(uploads))
            .with("answered", values::answered_files(uploads, &configs, &rejected)),
        "the transformation file byte for byte as uploaded (compact for one upload, indented with a final newline for another); each rejected row listed with its values as uploaded (' 12345 ', ' u4 ', ' Barbara ' keep their spaces)",
    );
}

/// The `status` of an answer as a value.
fn status_of(x: &Exchange) -> Value {
    x.body()["status"].clone()
}

/// Pauses the campaign, then uploads to it: accepted, and processed to completed. Answers
/// the cohort id of the upload, when it answered one.
async fn to_paused(cx: &Ctx, v: &mut Verdicts, campaign: &str) -> Option<String> {
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
    x.str_field("cohort_id").map(str::to_string)
}

/// A second campaign with a cohort of its own (its one row rejected, so that it has no user
/// to call): its id and the cohort's, or the answer that did not give them.
async fn other_campaign(cx: &Ctx) -> Result<(String, String), Exchange> {
    let x = cx
        .create_scheduled_campaign(&cx.names.name(OTHER_CAMPAIGN.label))
        .await;
    let Some(campaign) = x.str_field("campaign_id").map(str::to_string) else {
        return Err(x);
    };
    let parent = Parent::Campaign(&campaign);
    let x = send(
        cx,
        parent,
        OTHER.label,
        values::OTHER_CSV,
        &values::compact_config(),
    )
    .await;
    let Some(id) = x.str_field("cohort_id").map(str::to_string) else {
        return Err(x);
    };
    wait_for_cohort(cx, parent, &id).await;
    Ok((campaign, id))
}

/// Each campaign's cohort list: its own cohorts only (error), in upload order (warning).
async fn lists(
    cx: &Ctx,
    v: &mut Verdicts,
    campaign: &str,
    accepted: &[String],
    other: Result<(String, String), Exchange>,
) {
    let list = |id: String| async move {
        cx.get(
            &cx.paths.cohorts(Parent::Campaign(&id), &[]),
            &[("limit", "100".into())],
        )
        .await
    };
    let mine = list(campaign.to_string()).await;
    let listed = values::listed_ids(&mine);

    let ours: Vec<&String> = listed.iter().filter(|id| accepted.contains(id)).collect();
    let expected: Vec<&String> = accepted.iter().filter(|id| listed.contains(id)).collect();
    v.varied(&LIST_ORDER, "cohort_id", ours.iter().map(|id| id.as_str()));
    v.judge(
        &LIST_ORDER,
        mine.status == 200 && ours == expected,
        mine.evidence().with("accepted_in_order", accepted.to_vec()),
        format!("200 listing the campaign's cohorts in the order their uploads were accepted, oldest first: {accepted:?}"),
    );

    let (other_campaign, other_cohort) = match other {
        Ok(o) => o,
        Err(x) => {
            return v.blocked_only(
                &[&LIST_OWN],
                "creating a second campaign with a cohort",
                x.evidence(),
            );
        }
    };
    let theirs = list(other_campaign.clone()).await;
    let their_listed = values::listed_ids(&theirs);
    v.varied(
        &LIST_OWN,
        "campaign_id",
        [campaign, other_campaign.as_str()],
    );
    v.varied(
        &LIST_OWN,
        "cohort_id",
        accepted.iter().chain([&other_cohort]).cloned(),
    );
    let same = |got: &[String], want: &[String]| {
        got.iter().all(|id| want.contains(id)) && want.iter().all(|id| got.contains(id))
    };
    let want_theirs = [other_cohort.clone()];
    v.judge(
        &LIST_OWN,
        mine.status == 200
            && theirs.status == 200
            && same(&listed, accepted)
            && same(&their_listed, &want_theirs),
        Exchange::all(&[&mine, &theirs]).with("uploaded", {
            let mut m = serde_json::Map::new();
            m.insert(campaign.to_string(), json!(accepted));
            m.insert(other_campaign.clone(), json!(want_theirs));
            Value::Object(m)
        }),
        format!(
            "200 for both lists: campaign {campaign} lists exactly {accepted:?}, campaign {other_campaign} exactly {want_theirs:?}; neither shows the other's cohorts"
        ),
    );
}

/// Uploads `csv` with `config` as a cohort named after `label`.
async fn send(cx: &Ctx, parent: Parent<'_>, label: &str, csv: &str, config: &str) -> Exchange {
    cx.call(
        Method::POST,
        &cx.paths.cohorts(parent, &["upload"]),
        &[],
        Body::Multipart(fixtures::cohort_form(&cx.names.name(label), csv, config)),
    )
    .await
}
