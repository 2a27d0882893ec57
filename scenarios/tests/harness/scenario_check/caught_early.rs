//! What `scenario check` catches before a run: a misspelt field (with the one meant), a
//! time without quotes or an offset, generated numbers the platform rejects, steps the
//! platform would refuse given the statuses the timeline leads to, expectations that cannot
//! be met by construction; and what the platform accepts passes.

use super::{BASE, problems};

/// A deployment to add to [`BASE`].
const DEPLOYMENT: &str = "\n[[deployments]]\nkey = \"d\"\n\n[deployments.request]\nname = \"Desk\"\napp_id = \"app-1\"\napp_version = 1\nconnection_configs = [{ connection_id = \"conn-d\", phone_numbers = [\"+14155550999\"] }]\n";

fn step(at: &str, rest: &str) -> String {
    format!("\n[[timeline]]\nat = \"{at}\"\n{rest}\n")
}

case!(
    misspelt_request_field,
    BASE.replace("attempts_per_second = 1", "attempts_per_sec = 1")
);
case!(
    misspelt_scenario_field,
    BASE.replace("end = \"+1d\"", "ned = \"+1d\"")
);
case!(
    unquoted_date_time,
    BASE.replace(
        "start = \"2026-03-02T08:00:00Z\"",
        "start = 2026-03-02T08:00:00Z"
    )
);
case!(
    time_without_offset,
    BASE.replace(
        "start = \"2026-03-02T08:00:00Z\"",
        "start = \"2026-03-02T08:00:00\""
    )
);
case!(date_without_time, format!("until = \"2026-03-05\"\n{BASE}"));
case!(
    pattern_one_digit_too_many,
    BASE.replace("\"+1312444####\"", "\"+13124440####\"")
);
case!(
    resume_after_cancel,
    format!(
        "{BASE}{}{}",
        step("+3h", "do = \"cancel\"\ncampaign = \"c\""),
        step("+4h", "do = \"resume\"\ncampaign = \"c\"")
    )
);
case!(
    pause_after_the_end,
    format!("{BASE}{}", step("+2d", "do = \"pause\"\ncampaign = \"c\""))
);
case!(
    patch_while_active,
    format!(
        "{BASE}{}",
        step(
            "+2h",
            "do = \"patch_campaign\"\ncampaign = \"c\"\npatch = { name = \"Later\" }"
        )
    )
);
case!(
    patch_refused_by_the_api,
    format!(
        "{BASE}{}",
        step(
            "+30m",
            "do = \"patch_campaign\"\ncampaign = \"c\"\npatch = { nmae = \"Later\", app_config = { attempts_per_second = 900 } }"
        )
    )
);
case!(
    deployment_deleted_twice,
    format!(
        "{BASE}{DEPLOYMENT}{}{}",
        step("+1h", "do = \"delete_deployment\"\ndeployment = \"d\""),
        step("+2h", "do = \"pause_deployment\"\ndeployment = \"d\"")
    )
);
case!(
    deployment_paused_twice,
    format!(
        "{BASE}{DEPLOYMENT}{}{}",
        step("+1h", "do = \"pause_deployment\"\ndeployment = \"d\""),
        step("+2h", "do = \"pause_deployment\"\ndeployment = \"d\"")
    )
);
case!(
    deployment_patch_refused_by_the_api,
    format!(
        "{BASE}{DEPLOYMENT}{}",
        step(
            "+1h",
            "do = \"patch_deployment\"\ndeployment = \"d\"\npatch = { app_version = 0 }"
        )
    )
);
case!(
    upload_after_cancel,
    format!("{BASE}{}", step("+3h", "do = \"cancel\"\ncampaign = \"c\"")).replace(
        "campaign = \"c\"\ngenerate",
        "campaign = \"c\"\nupload_at = \"+4h\"\ngenerate"
    )
);
case!(
    upload_to_a_deleted_deployment,
    format!(
        "{BASE}{DEPLOYMENT}{}\n[[cohorts]]\nkey = \"callers\"\ndeployment = \"d\"\ncsv = \"phone_number\\n+12025550188\\n\"\n{}",
        step("+1h", "do = \"delete_deployment\"\ndeployment = \"d\""),
        step("+2h", "do = \"upload_cohort\"\ncohort = \"callers\"")
    )
);
case!(
    attempts_per_user_of_a_number_in_no_cohort,
    format!(
        "{BASE}\n[[expect]]\ncheck = \"attempts_per_user\"\ncampaign = \"c\"\nnumber = \"+13124440010\"\nattempts = 1\n"
    )
);
case!(
    attempts_per_user_of_no_number,
    format!(
        "{BASE}\n[[expect]]\ncheck = \"attempts_per_user\"\ncampaign = \"c\"\nnumber = \"312 444 0001\"\nattempts = 1\n"
    )
);
case!(
    key_service_outcome_unknown,
    format!(
        "{BASE}\n[[expect]]\ncheck = \"key_service_calls\"\noutcome = \"UNAVAILABLE\"\ncalls = 0\n"
    )
);
case!(
    weight_split_unknown_connection,
    format!(
        "{BASE}\n[[expect]]\ncheck = \"weight_split\"\ncampaign = \"c\"\nshares = {{ conn-a = 0.5, conn-b = 0.5 }}\n"
    )
);
case!(
    numbers_used_equally_unknown_connection,
    format!(
        "{BASE}\n[[expect]]\ncheck = \"numbers_used_equally\"\ncampaign = \"c\"\nconnection = \"conn-A\"\n"
    )
);
case!(
    inbound_rejection_unknown,
    format!(
        "{BASE}{}\n[[expect]]\ncheck = \"inbound\"\ncall = \"x\"\nanswered = false\nrejection = \"paused\"\n",
        step(
            "+2h",
            "do = \"inbound_call\"\nkey = \"x\"\ncaller = \"+12025550188\"\ndialled = \"+14155550100\""
        )
    )
);
case!(
    inbound_rejection_when_answered,
    format!(
        "{BASE}{}\n[[expect]]\ncheck = \"inbound\"\ncall = \"x\"\nanswered = true\nrejection = \"deployment_paused\"\n",
        step(
            "+2h",
            "do = \"inbound_call\"\nkey = \"x\"\ncaller = \"+12025550188\"\ndialled = \"+14155550100\""
        )
    )
);

/// Steps the platform accepts pass: a patch while paused, then resumed; a number of a CSV
/// cohort in national form; connections a patch brings.
#[test]
fn what_the_platform_accepts_passes() {
    let text = format!(
        "{BASE}{}{}{}\n[[cohorts]]\nkey = \"more\"\ncampaign = \"c\"\ncsv = \"phone\\n(312) 555-0142\\n\"\ntransformation = {{ phone_number = {{ column_name = \"phone\", country_code = \"US\" }} }}\n\n[[expect]]\ncheck = \"attempts_per_user\"\ncampaign = \"c\"\nnumber = \"+13125550142\"\nattempts = 1\n\n[[expect]]\ncheck = \"weight_split\"\ncampaign = \"c\"\nshares = {{ conn-a = 0.5, conn-b = 0.5 }}\n",
        step("+2h", "do = \"pause\"\ncampaign = \"c\""),
        step(
            "+2h",
            "do = \"patch_campaign\"\ncampaign = \"c\"\npatch = { app_config = { connection_configs = [{ connection_id = \"conn-a\", phone_numbers = [\"+14155550100\"], weight = 1 }, { connection_id = \"conn-b\", phone_numbers = [\"+14155550101\"], weight = 1 }] } }"
        ),
        step("+2h", "do = \"resume\"\ncampaign = \"c\"")
    );
    assert_eq!(problems(&text), "ok");
}
