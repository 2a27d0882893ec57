//! The committed OpenAPI documents match the types, hold every path of the spec and the
//! notes, and sample bodies of every schema validate against it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use chrono::TimeZone;
use contracts::error::*;
use contracts::openapi::{byok_document, platform_document, to_committed_json};
use contracts::wire::byok::*;
use contracts::wire::*;
use serde_json::{Value, json};

fn committed(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("openapi")
        .join(name)
}

fn check_committed(name: &str, generated: &str) {
    let path = committed(name);
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, generated).unwrap();
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "{} differs from what the types generate; run `UPDATE_OPENAPI=1 cargo test --workspace --test contracts openapi` and commit the result",
        path.display()
    );
}

#[test]
fn committed_documents_match_the_types() {
    check_committed("platform.json", &to_committed_json(&platform_document()));
    check_committed("byok.json", &to_committed_json(&byok_document()));
}

fn doc_value(doc: &Value) -> Value {
    doc.clone()
}

fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in ["get", "post", "put", "patch", "delete"] {
            if item.get(method).is_some() {
                out.insert((method.to_uppercase(), path.clone()));
            }
        }
    }
    out
}

#[test]
fn documents_are_openapi_3_1() {
    for doc in [doc_value(&platform_document()), doc_value(&byok_document())] {
        assert_eq!(doc["openapi"], "3.1.0");
    }
}

#[test]
fn platform_document_holds_every_path_of_the_spec_and_notes() {
    let ops = operations(&doc_value(&platform_document()));
    let w = "/orgs/{org_id}/workspaces/{workspace_id}";
    let sched = format!("/api/scheduling/v1{w}");
    let auth = format!("/api/app-authoring/v1{w}/deployments");
    let mut expected = vec![
        ("GET".to_string(), "/openapi.json".to_string()),
        ("POST".into(), format!("/api/outbounds/v1{w}/outbounds")),
        ("POST".into(), format!("{sched}/campaigns")),
        ("GET".into(), format!("{sched}/campaigns")),
        ("GET".into(), format!("{sched}/campaigns/{{campaign_id}}")),
        ("PATCH".into(), format!("{sched}/campaigns/{{campaign_id}}")),
        (
            "PUT".into(),
            format!("{sched}/campaigns/{{campaign_id}}/status"),
        ),
        ("POST".into(), auth.clone()),
        ("GET".into(), auth.clone()),
        ("GET".into(), format!("{auth}/{{deployment_id}}")),
        ("PATCH".into(), format!("{auth}/{{deployment_id}}")),
        ("DELETE".into(), format!("{auth}/{{deployment_id}}")),
        ("PUT".into(), format!("{auth}/{{deployment_id}}/status")),
    ];
    for parent in ["campaigns/{campaign_id}", "deployments/{deployment_id}"] {
        let base = format!("{sched}/{parent}/cohorts");
        expected.push(("POST".into(), format!("{base}/upload")));
        expected.push(("POST".into(), format!("{base}/stream")));
        expected.push(("GET".into(), base.clone()));
        expected.push(("GET".into(), format!("{base}/{{cohort_id}}")));
        expected.push(("GET".into(), format!("{base}/{{cohort_id}}/files")));
    }
    expected.push(("GET".into(), "/sim/v1/clock".into()));
    expected.push(("PUT".into(), "/sim/v1/clock".into()));
    expected.push(("POST".into(), "/sim/v1/clock/advance".into()));
    expected.push(("POST".into(), format!("/sim/v1{w}/inbound-calls")));
    expected.push(("GET".into(), format!("/sim/v1{w}/inbound-calls")));
    expected.push(("GET".into(), format!("/sim/v1{w}/webhook-deliveries")));
    expected.push(("POST".into(), format!("/sim/v1{w}/reset")));
    expected.push(("GET".into(), "/sim/v1/journal".into()));
    expected.push(("DELETE".into(), "/sim/v1/journal".into()));
    expected.push(("GET".into(), "/sim/v1/journal/summary".into()));
    expected.push(("GET".into(), "/sim/v1/faults".into()));
    expected.push(("POST".into(), "/sim/v1/faults".into()));
    expected.push(("DELETE".into(), "/sim/v1/faults".into()));
    expected.push(("DELETE".into(), "/sim/v1/faults/{fault_id}".into()));
    expected.push(("GET".into(), "/healthz".into()));
    expected.push(("GET".into(), format!("/admin/v1{w}/data-keys")));
    expected.push(("POST".into(), format!("/admin/v1{w}/data-keys/rotate")));
    expected.push(("GET".into(), "/ui".into()));
    expected.push(("GET".into(), "/sim/v1/stack".into()));
    expected.push((
        "GET".into(),
        format!("/sim/v1{w}/campaigns/{{campaign_id}}/activity"),
    ));
    expected.push((
        "GET".into(),
        format!("/sim/v1{w}/campaigns/{{campaign_id}}/chart"),
    ));
    expected.push(("GET".into(), format!("/sim/v1{w}/key-service/calls")));
    let expected: BTreeSet<_> = expected.into_iter().collect();
    assert_eq!(ops, expected);
}

#[test]
fn byok_document_holds_the_three_endpoints() {
    let ops = operations(&doc_value(&byok_document()));
    let expected: BTreeSet<_> = ["auth", "decrypt-key", "rotate-key"]
        .iter()
        .map(|p| ("POST".to_string(), format!("/{{partner}}/byok/v1/{p}")))
        .collect();
    assert_eq!(ops, expected);
}

#[test]
fn every_platform_route_requires_the_api_key_but_the_document() {
    let doc = doc_value(&platform_document());
    assert_eq!(
        doc["components"]["securitySchemes"]["api_key"],
        json!({"type": "apiKey", "in": "header", "name": "X-API-Key", "description": "The workspace's API key."})
    );
    assert_eq!(doc["security"], json!([{"api_key": []}]));
    assert_eq!(
        doc["paths"]["/openapi.json"]["get"]["security"],
        json!([{}])
    );
}

fn at() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc.with_ymd_and_hms(2026, 3, 2, 12, 0, 0).unwrap()
}

fn summary() -> CampaignSummary {
    CampaignSummary {
        campaign_id: "camp-0000000000000000000a".into(),
        name: "Spring".into(),
        status: CampaignStatus::Scheduled,
        app_id: "app-1".into(),
        app_type: AppType::Agent,
        app_version: 1,
        description: None,
        created_by: "local".into(),
        updated_by: "local".into(),
        created_at: at(),
        updated_at: at(),
    }
}

fn deployment() -> Deployment {
    Deployment {
        deployment_id: "dep-1".into(),
        app_id: "app-1".into(),
        app_version: 1,
        connection_configs: vec![DeploymentConnectionConfig {
            connection_id: "c".into(),
            phone_numbers: vec!["+14155550100".into()],
        }],
        channel_direction: ChannelDirection::Inbound,
        created_by: "local".into(),
        created_at: at(),
        updated_at: at(),
        name: Some("Desk".into()),
        status: Some(DeploymentStatus::Active),
        description: None,
        inbound_config: Some(InboundConfig {
            start_time: "09:00".into(),
            end_time: "17:00".into(),
            allowed_days: vec![DayOfWeek::Monday],
            timezone: "UTC".into(),
        }),
        updated_by: None,
    }
}

fn cohort() -> Cohort {
    Cohort {
        cohort_id: "coh-1".into(),
        name: "Batch 1".into(),
        status: CohortStatus::Completed,
        source_type: CohortSourceType::FileUpload,
        cohort_category: CohortCategory::Cohort,
        result: Some(CohortResult {
            total_records: 3,
            valid_records: 2,
            rejected_records: 1,
        }),
        failure_reason: None,
        created_by: "local".into(),
        updated_by: "local".into(),
        created_at: at(),
        updated_at: at(),
    }
}

fn schedule() -> AllowedSchedule {
    AllowedSchedule {
        timezone: "America/New_York".into(),
        allowed_days: vec![DayOfWeek::Monday, DayOfWeek::Friday],
        allowed_start_time: "09:00".into(),
        allowed_end_time: "17:00".into(),
    }
}

fn connection() -> CampaignConnectionConfig {
    CampaignConnectionConfig {
        connection_id: "c".into(),
        phone_numbers: vec!["+14155550100".into()],
        weight: 3,
    }
}

fn webhook() -> WebhookConfig {
    WebhookConfig {
        url: "https://hooks.example.com/x".into(),
        metadata: Some(json!({"k": "v"}).as_object().unwrap().clone()),
    }
}

fn v<T: serde::Serialize>(t: T) -> Value {
    serde_json::to_value(t).unwrap()
}

/// A sample of every component schema, built from the wire types.
fn samples() -> BTreeMap<&'static str, Vec<Value>> {
    let retry_request = RetryConfigRequest {
        max_retries: Some(2),
        retry_on: Some(RetryOn::List(vec![RetryOutcome::Busy])),
        threshold_seconds: Some(10),
        retry_interval_minutes: None,
    };
    let retry_object = RetryOnObject {
        busy: Some(RetryToggle { enabled: true }),
        short_duration: Some(ShortDurationToggle {
            enabled: true,
            threshold_seconds: Some(12),
        }),
        ..Default::default()
    };
    let app_config_request = CampaignAppConfigRequest {
        app_id: "app-1".into(),
        app_version: 1,
        app_type: Some(AppType::Agent),
        attempts_per_second: 0.5,
        connection_configs: vec![connection()],
        retry_config: Some(retry_request.clone()),
        webhook_config: Some(webhook()),
    };
    let retry = RetryConfig {
        max_retries: 1,
        retry_on: vec![RetryOutcome::ShortDuration],
        threshold_seconds: 10,
        retry_interval_minutes: 30,
    };
    let campaign = Campaign {
        summary: summary(),
        app_config: CampaignAppConfig {
            app_id: "app-1".into(),
            app_version: 1,
            app_type: AppType::Agent,
            attempts_per_second: 1.0,
            connection_configs: vec![connection()],
            retry_config: retry.clone(),
            webhook_config: None,
        },
        start_timestamp: at(),
        end_timestamp: at(),
        allowed_schedule: schedule(),
        statistics: CampaignStatistics {
            capacity_warning: Some("short".into()),
            ..Default::default()
        },
    };
    let transcript = vec![TranscriptTurn {
        role: "agent".into(),
        content: "Hello".into(),
    }];
    let channel = ChannelInfo {
        channel_type: "telephony".into(),
        channel_provider: "c".into(),
        agent_phone_number: "+14155550100".into(),
    };
    let mut m: BTreeMap<&'static str, Vec<Value>> = BTreeMap::new();
    let mut add = |name: &'static str, value: Value| m.entry(name).or_default().push(value);
    add(
        "ValidationErrorBody",
        v(ValidationErrors::single(
            &Loc::body().at("a").at(0),
            ErrorType::Missing,
            "Field required",
        )
        .into_body()),
    );
    add(
        "ErrorDetail",
        v(ErrorDetail {
            loc: vec![LocItem::Key("body".into())],
            msg: "m".into(),
            error_type: "missing".into(),
        }),
    );
    add("LocItem", json!("body"));
    add("LocItem", json!(3));
    add(
        "PlatformErrorBody",
        v(PlatformErrorBody::new(
            "not_found_error",
            "campaign_not_found",
            "m",
        )),
    );
    add(
        "PlatformErrorInfo",
        v(PlatformErrorBody::new("a", "b", "c").error),
    );
    add(
        "OutboundRequest",
        v(OutboundRequest {
            app_config: OutboundAppConfig {
                app_id: "a".into(),
                app_version: 1,
                connection_config: OutboundConnectionConfig {
                    connection_id: "c".into(),
                    agent_phone_number: "+14155550100".into(),
                },
                agent_variables: Some(Default::default()),
                app_type: Some(AppType::Agent),
                app_overrides: Some(AppOverrides {
                    initial_bot_message: Some("hi".into()),
                    ..Default::default()
                }),
            },
            user_config: UserConfig {
                user_phone_number: "+14155550101".into(),
            },
            webhook_config: Some(webhook()),
        }),
    );
    add(
        "OutboundResponse",
        v(OutboundResponse {
            attempt_id: "0195".into(),
        }),
    );
    add(
        "OutboundAppConfig",
        v(OutboundAppConfig {
            app_id: "a".into(),
            app_version: 1,
            connection_config: OutboundConnectionConfig {
                connection_id: "c".into(),
                agent_phone_number: "+14155550100".into(),
            },
            agent_variables: None,
            app_type: None,
            app_overrides: None,
        }),
    );
    add(
        "OutboundConnectionConfig",
        v(OutboundConnectionConfig {
            connection_id: "c".into(),
            agent_phone_number: "+14155550100".into(),
        }),
    );
    add(
        "UserConfig",
        v(UserConfig {
            user_phone_number: "+14155550100".into(),
        }),
    );
    add("AppOverrides", v(AppOverrides::default()));
    add("AppType", v(AppType::Agent));
    add("WebhookConfig", v(webhook()));
    add(
        "CampaignCreateRequest",
        v(CampaignCreateRequest {
            name: "n".into(),
            description: Some("d".into()),
            start_timestamp: at(),
            end_timestamp: at(),
            allowed_schedule: schedule(),
            app_config: app_config_request.clone(),
        }),
    );
    add("CampaignAppConfigRequest", v(app_config_request));
    add("AllowedSchedule", v(schedule()));
    add("DayOfWeek", v(DayOfWeek::Sunday));
    add("CampaignConnectionConfig", v(connection()));
    add("RetryConfigRequest", v(retry_request));
    add(
        "RetryConfigRequest",
        v(RetryConfigRequest {
            retry_on: Some(RetryOn::Object(retry_object)),
            ..Default::default()
        }),
    );
    add("RetryOn", v(RetryOn::List(vec![RetryOutcome::NoAnswer])));
    add("RetryOn", v(RetryOn::Object(retry_object)));
    add("RetryOnObject", v(retry_object));
    add("RetryToggle", v(RetryToggle { enabled: false }));
    add(
        "ShortDurationToggle",
        v(ShortDurationToggle {
            enabled: true,
            threshold_seconds: None,
        }),
    );
    add("RetryOutcome", v(RetryOutcome::ProviderError));
    add("RetryConfig", v(retry));
    add("CampaignSummary", v(summary()));
    add("Campaign", v(campaign.clone()));
    add("CampaignAppConfig", v(campaign.app_config.clone()));
    add("CampaignStatistics", v(campaign.statistics.clone()));
    add("AttemptCounts", v(AttemptCounts::default()));
    add("CampaignStatus", v(CampaignStatus::Cancelled));
    add(
        "CampaignPatchRequest",
        v(CampaignPatchRequest {
            description: Patch::Null,
            end_timestamp: Some(at()),
            app_config: Some(CampaignAppConfigPatch {
                webhook_config: Patch::Null,
                attempts_per_second: Some(2.0),
                ..Default::default()
            }),
            ..Default::default()
        }),
    );
    add(
        "CampaignAppConfigPatch",
        v(CampaignAppConfigPatch::default()),
    );
    add(
        "CampaignStatusRequest",
        v(CampaignStatusRequest {
            action: CampaignAction::Resume,
        }),
    );
    add("CampaignAction", v(CampaignAction::Cancel));
    add("CampaignSortBy", v(CampaignSortBy::StartTimestamp));
    add("SortOrder", v(SortOrder::Asc));
    add(
        "Page_CampaignSummary",
        v(Page {
            items: vec![summary()],
            total: 1,
            limit: 20,
            offset: 0,
            next_page_uri: None,
            prev_page_uri: None,
        }),
    );
    add(
        "Page_DeploymentListItem",
        v(Page {
            items: vec![DeploymentListItem {
                deployment: deployment(),
                phone_numbers: vec!["+14155550100".into()],
            }],
            total: 30,
            limit: 1,
            offset: 1,
            next_page_uri: Some("http://127.0.0.1/x?offset=2&limit=1".into()),
            prev_page_uri: Some("http://127.0.0.1/x?offset=0&limit=1".into()),
        }),
    );
    add(
        "Page_Cohort",
        v(Page {
            items: vec![cohort()],
            total: 1,
            limit: 20,
            offset: 0,
            next_page_uri: None,
            prev_page_uri: None,
        }),
    );
    add("Cohort", v(cohort()));
    add(
        "Cohort",
        v(Cohort {
            status: CohortStatus::Failed,
            result: None,
            failure_reason: Some("no data row".into()),
            ..cohort()
        }),
    );
    add("CohortResult", v(CohortResult::default()));
    add("CohortStatus", v(CohortStatus::Processing));
    add("CohortCategory", v(CohortCategory::StopFile));
    add("CohortSourceType", v(CohortSourceType::Stream));
    add("CohortFileType", v(CohortFileType::RejectedRecords));
    add("TimeZone", json!("Asia/Kolkata"));
    add(
        "CohortUploadForm",
        json!({"name": "Batch", "cohort_file": "phone\n+1415\n", "cohort_transformation_file": {"phone_number": {"column_name": "phone"}}, "cohort_category": "cohort"}),
    );
    add(
        "CohortStreamRequest",
        v(CohortStreamRequest {
            name: "s".into(),
            cohort_category: Some(CohortCategory::Cohort),
            country_code: Some("IN".into()),
            users: vec![CohortStreamUser {
                phone_number: "9876543210".into(),
                user_identifier: Some("u1".into()),
                app_variables: Some(Default::default()),
                app_overrides: Some(AppOverrides {
                    initial_language_name: Some("hi".into()),
                    ..Default::default()
                }),
            }],
        }),
    );
    add(
        "CohortStreamUser",
        v(CohortStreamUser {
            phone_number: "+14155550100".into(),
            user_identifier: None,
            app_variables: None,
            app_overrides: None,
        }),
    );
    add("CohortUserOverrides", v(AppOverrides::default()));
    add(
        "TransformationConfig",
        v(TransformationConfig {
            phone_number: PhoneNumberMapping {
                column_name: "phone".into(),
                country_code: Some("IN".into()),
            },
            user_identifier: Some(ColumnMapping {
                column_name: "id".into(),
                required: true,
            }),
            app_variables: [(
                "name".to_string(),
                ColumnMapping {
                    column_name: "n".into(),
                    required: false,
                },
            )]
            .into(),
            app_overrides: Some(OverrideMappings {
                initial_bot_message: Some(OverrideMapping {
                    column_name: "g".into(),
                }),
                ..Default::default()
            }),
        }),
    );
    add(
        "PhoneNumberMapping",
        v(PhoneNumberMapping {
            column_name: "p".into(),
            country_code: None,
        }),
    );
    add(
        "ColumnMapping",
        v(ColumnMapping {
            column_name: "p".into(),
            required: false,
        }),
    );
    add(
        "OverrideMapping",
        v(OverrideMapping {
            column_name: "p".into(),
        }),
    );
    add("OverrideMappings", v(OverrideMappings::default()));
    add(
        "DeploymentCreateRequest",
        v(DeploymentCreateRequest {
            name: "Desk".into(),
            app_id: "a".into(),
            app_version: 1,
            connection_configs: deployment().connection_configs,
            description: None,
            inbound_config: deployment().inbound_config,
        }),
    );
    add(
        "DeploymentPatchRequest",
        v(DeploymentPatchRequest {
            inbound_config: Patch::Null,
            app_version: Some(2),
            ..Default::default()
        }),
    );
    add(
        "DeploymentConnectionConfig",
        v(deployment().connection_configs[0].clone()),
    );
    add("InboundConfig", v(deployment().inbound_config.unwrap()));
    add("Deployment", v(deployment()));
    add(
        "Deployment",
        v(Deployment {
            name: None,
            status: None,
            inbound_config: None,
            updated_by: Some("x".into()),
            ..deployment()
        }),
    );
    add(
        "DeploymentListItem",
        v(DeploymentListItem {
            deployment: deployment(),
            phone_numbers: vec![],
        }),
    );
    add("DeploymentStatus", v(DeploymentStatus::Paused));
    add(
        "DeploymentStatusRequest",
        v(DeploymentStatusRequest {
            action: DeploymentAction::Pause,
        }),
    );
    add("DeploymentAction", v(DeploymentAction::Resume));
    add("DeploymentSortBy", v(DeploymentSortBy::Name));
    add("ChannelDirection", v(ChannelDirection::InboundOutbound));
    add("TranscriptTurn", v(transcript[0].clone()));
    add("ChannelInfo", v(channel.clone()));
    add("CallStatus", v(CallStatus::NoAnswer));
    add("CompletionStatus", v(CompletionStatus::Partial));
    add("ConnectivityStatus", v(ConnectivityStatus::Busy));
    add("NextActionStatus", v(NextActionStatus::ShortDurationRetry));
    add(
        "OutboundCallEvent",
        v(OutboundCallEvent {
            attempt_id: "a".into(),
            status: CallStatus::Connected,
            channel_info: channel,
            duration: Some(42.5),
            interaction_id: Some("int-1".into()),
            failure_reason: None,
            final_agent_variables: Some(Default::default()),
            webhook_config: webhook(),
            interaction_transcript: Some(transcript.clone()),
        }),
    );
    add(
        "CampaignCallEvent",
        v(CampaignCallEvent {
            app_id: "a".into(),
            app_version: 1,
            attempt_id: "x".into(),
            campaign_id: "camp-1".into(),
            cohort_id: "coh-1".into(),
            completion_status: CompletionStatus::Failed,
            connectivity_status: Some(ConnectivityStatus::Busy),
            next_action_status: Some(NextActionStatus::Retry),
            failure_reason: Some("busy".into()),
            user_identifier: None,
            user_phone_number: "+14155550100".into(),
            agent_phone_number: "+14155550100".into(),
            duration: None,
            interaction_id: None,
            retry_attempt: 0,
            executed_at: at(),
            initial_agent_variables: None,
            final_agent_variables: None,
            interaction_transcript: None,
            metadata: None,
        }),
    );
    add(
        "DeploymentCallEvent",
        v(DeploymentCallEvent {
            app_id: "a".into(),
            app_version: 1,
            deployment_id: "dep-1".into(),
            interaction_id: "int-1".into(),
            user_phone_number: "+14155550100".into(),
            agent_phone_number: "+14155550100".into(),
            duration: Some(3.0),
            final_agent_variables: None,
            output_agent_variables: None,
            start_datetime: at(),
            end_datetime: at(),
            interaction_transcript: Some(transcript),
        }),
    );
    // Simulation
    let inbound = InboundCallRecord {
        call_id: "call-1".into(),
        caller: "+919876543210".into(),
        dialled: "+14155550100".into(),
        at: at(),
        answered: true,
        rejection: None,
        deployment_id: Some("dep-1".into()),
        interaction_id: Some("int-1".into()),
        cohort_id: Some("coh-1".into()),
        user_identifier: Some("u1".into()),
        agent_variables: Some(json!({"name": "Ada"}).as_object().unwrap().clone()),
        duration: Some(61.5),
        ends_at: Some(at()),
    };
    let rejected = InboundCallRecord {
        answered: false,
        rejection: Some(InboundRejection::DeploymentPaused),
        interaction_id: None,
        cohort_id: None,
        user_identifier: None,
        agent_variables: None,
        duration: None,
        ends_at: None,
        ..inbound.clone()
    };
    let delivery = WebhookDeliveryRecord {
        delivery_id: "whd-1".into(),
        kind: "campaign".into(),
        subject_id: "att".into(),
        url: "https://h.example/x".into(),
        status: DeliveryStatus::Pending,
        tries: 1,
        last_status_code: Some(500),
        last_error: Some("HTTP 500".into()),
        created_at: at(),
        next_try_at: Some(at()),
        delivered_at: None,
    };
    let byok_key = DataKeyInfo {
        key_id: 2,
        key_alias: "tenant-a".into(),
        provider: DataKeyProvider::Byok,
        active: true,
        created_at: at(),
    };
    let local_key = DataKeyInfo {
        key_id: 1,
        key_alias: "local".into(),
        provider: DataKeyProvider::Local,
        active: false,
        created_at: at(),
    };
    add("DataKeyInfo", v(&byok_key));
    add("DataKeyInfo", v(&local_key));
    add("DataKeyProvider", v(DataKeyProvider::Local));
    add("DataKeyProvider", v(DataKeyProvider::Byok));
    add(
        "DataKeyList",
        v(DataKeyList {
            items: vec![local_key, byok_key],
        }),
    );
    add("DataKeyList", v(DataKeyList { items: vec![] }));
    add(
        "SimClockState",
        v(SimClockState {
            now: at(),
            simulated: true,
        }),
    );
    add(
        "ClockAdvanceRequest",
        v(ClockAdvanceRequest {
            seconds: Some(90.0),
            to: None,
        }),
    );
    add(
        "ClockAdvanceRequest",
        v(ClockAdvanceRequest {
            seconds: None,
            to: Some(at()),
        }),
    );
    add("ClockSetRequest", v(ClockSetRequest { now: at() }));
    add(
        "ClockAdvanceResult",
        v(ClockAdvanceResult {
            from: at(),
            now: at(),
            steps: 3,
            dials: 2,
            ..Default::default()
        }),
    );
    add(
        "InboundCallRequest",
        v(InboundCallRequest {
            caller: "+14155550100".into(),
            dialled: "+14155550100".into(),
        }),
    );
    add("InboundRejection", v(InboundRejection::OutsideSchedule));
    add("InboundCallRecord", v(inbound.clone()));
    add("InboundCallRecord", v(rejected));
    add("DeliveryStatus", v(DeliveryStatus::Delivered));
    add("WebhookDeliveryRecord", v(delivery.clone()));
    add(
        "Page_InboundCallRecord",
        v(Page {
            items: vec![inbound],
            total: 1,
            limit: 20,
            offset: 0,
            next_page_uri: None,
            prev_page_uri: None,
        }),
    );
    add(
        "Page_WebhookDeliveryRecord",
        v(Page {
            items: vec![delivery],
            total: 1,
            limit: 20,
            offset: 0,
            next_page_uri: None,
            prev_page_uri: None,
        }),
    );
    // The journal and the fault rules.
    let violation = Violation {
        kind: ViolationKind::UnknownField,
        loc: vec![
            LocItem::Key("body".into()),
            LocItem::Key("desciption".into()),
        ],
        msg: "Extra inputs are not permitted (the platform ignored it)".into(),
        error_type: "extra_forbidden".into(),
    };
    let applied = AppliedFault {
        fault_id: "flt-1".into(),
        kind: "status".into(),
        effect: "503".into(),
    };
    let warning = Violation {
        kind: ViolationKind::TrailingSlash,
        loc: vec![LocItem::Key("path".into())],
        msg: "the path ends with '/'".into(),
        error_type: "trailing_slash".into(),
    };
    let uploaded = UploadedCohort {
        cohort_id: "coh-1".into(),
        status: CohortStatus::Failed,
        failure_reason: Some("the header row has no column 'phone'".into()),
    };
    add("UploadedCohort", v(uploaded.clone()));
    let workspace_id = WorkspaceId {
        org_id: "o".into(),
        workspace_id: "w".into(),
    };
    add("WorkspaceId", v(workspace_id.clone()));
    let reset = WorkspaceReset {
        workspace: workspace_id.clone(),
        removed: ResetCounts {
            campaigns: 1,
            deployments: 2,
            cohorts: 3,
            calls: 4,
            inbound_calls: 5,
            webhook_deliveries: 6,
            journal_entries: 7,
            fault_rules: 1,
        },
    };
    add("ResetCounts", v(reset.removed));
    add("WorkspaceReset", v(reset));
    // The live page's routes.
    let key_service = KeyServiceView {
        org_id: "o".into(),
        workspace_id: "w".into(),
        byok_base_url: "http://127.0.0.1:8081/acme/byok/v1".into(),
        client_id: Some("platform".into()),
        key_alias: "tenant-a".into(),
        audit: true,
    };
    add("KeyServiceView", v(key_service.clone()));
    let clock = StackClock {
        now: at(),
        simulated: true,
        may_move: true,
        next_due_at: Some(at()),
    };
    add("StackClock", v(clock.clone()));
    add(
        "StackClock",
        v(StackClock {
            next_due_at: None,
            ..clock.clone()
        }),
    );
    add(
        "StackView",
        v(StackView {
            platform_url: "http://127.0.0.1:8080".into(),
            openapi_url: "http://127.0.0.1:8080/openapi.json".into(),
            key_name: "ci".into(),
            workspaces: vec![workspace_id.clone()],
            clock,
            seed: Some(42),
            key_services: vec![key_service],
        }),
    );
    let change = CampaignStatusChange {
        at: at(),
        status: CampaignStatus::Active,
        cause: StatusChangeCause::StartReached,
        by: None,
    };
    add("CampaignStatusChange", v(change.clone()));
    add("StatusChangeCause", v(StatusChangeCause::Pause));
    add(
        "CampaignActivity",
        v(CampaignActivity {
            campaign_id: "camp-1".into(),
            name: "Spring".into(),
            status: CampaignStatus::Active,
            status_changes: vec![change],
            from: at(),
            until: at(),
            bucket_secs: 60,
            series: vec!["connected".into(), "busy".into()],
            buckets: vec![vec![0, 3, 1]],
            windows: vec![[
                "2026-03-02T09:00:00.000Z".into(),
                "2026-03-02T17:00:00.000Z".into(),
            ]],
        }),
    );
    let call = KeyServiceCall {
        seq: 1,
        at: at(),
        endpoint: "decrypt-key".into(),
        caller: Some("platform".into()),
        key_alias: Some("tenant-a".into()),
        outcome: "OK".into(),
        status: Some(200),
        latency_ms: 0.4,
        faults: vec![],
        reason: Some(KeyCallReason::KeyExpired),
        request_id: None,
    };
    add("KeyServiceCall", v(call.clone()));
    add("KeyCallReason", v(KeyCallReason::ColdStart));
    add(
        "KeyServiceCalls",
        v(KeyServiceCalls {
            items: vec![call],
            next_seq: 2,
            dropped: 0,
        }),
    );
    let entry = JournalEntry {
        seq: 1,
        at: at(),
        method: "POST".into(),
        path: "/api/app-authoring/v1/orgs/o/workspaces/w/deployments".into(),
        query: serde_json::Map::new(),
        operation_id: Some("create_deployment".into()),
        path_template: Some(
            "/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments".into(),
        ),
        org_id: Some("o".into()),
        workspace_id: Some("w".into()),
        owner: Some(workspace_id.clone()),
        api_key: ApiKeyUse::Valid,
        key_name: Some("ci".into()),
        status: Some(200),
        duration_ms: 1.5,
        request: JournalBody {
            content_type: Some("application/json".into()),
            bytes: 20,
            json: Some(json!({"desciption": "<string>"})),
            note: None,
        },
        response: JournalBody {
            content_type: Some("application/json".into()),
            bytes: 20_000,
            json: None,
            note: Some("larger than the journal's body limit of 8192 bytes".into()),
        },
        verdict: Verdict::Violates,
        violations: vec![violation.clone()],
        warnings: vec![warning.clone()],
        fault: Some(applied.clone()),
        cohort: Some(uploaded.clone()),
    };
    let example = ViolationExample {
        seq: 1,
        method: "POST".into(),
        path: "/api/x".into(),
        status: None,
        violations: vec![violation.clone()],
    };
    let failed = FailedUpload {
        seq: 3,
        method: "POST".into(),
        path: "/api/scheduling/v1/orgs/o/workspaces/w/deployments/dep-1/cohorts/upload".into(),
        cohort_id: "coh-1".into(),
        failure_reason: "the header row has no column 'phone'".into(),
    };
    add("FailedUpload", v(failed.clone()));
    let op_summary = OperationSummary {
        operation_id: "create_deployment".into(),
        method: "POST".into(),
        path: "/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments".into(),
        tag: "deployments".into(),
        calls: 1,
        statuses: [("200".to_string(), 1)].into_iter().collect(),
        violating_requests: 1,
        documented_statuses_not_seen: vec![401],
        undocumented_statuses: vec![503],
        examples: vec![example.clone()],
        failed_uploads: 1,
        failed_upload_examples: vec![failed.clone()],
    };
    let unknown = UnknownRoutes {
        requests: 1,
        examples: vec![example.clone()],
    };
    let coverage = Coverage {
        operations: 22,
        called: 1,
        percent: 4.5,
    };
    let not_found = RefusedRequests {
        requests: 1,
        listed: vec![RefusedRequest {
            seq: 2,
            method: "DELETE".into(),
            path: "/api/app-authoring/v1/orgs/o/workspaces/w/deployments/dep-1".into(),
            operation_id: "delete_deployment".into(),
            message: Some("no deployment 'dep-1'".into()),
        }],
    };
    add("Verdict", v(Verdict::NotJudged));
    add("ViolationKind", v(ViolationKind::MissingKey));
    add("Violation", v(violation));
    add("ApiKeyUse", v(ApiKeyUse::Missing));
    add("JournalBody", v(entry.request.clone()));
    add("AppliedFault", v(applied));
    add("JournalEntry", v(entry.clone()));
    add(
        "Page_JournalEntry",
        v(Page {
            items: vec![entry],
            total: 1,
            limit: 20,
            offset: 0,
            next_page_uri: None,
            prev_page_uri: None,
        }),
    );
    let flagged = FlaggedRequests {
        requests: 1,
        examples: vec![ViolationExample {
            seq: 4,
            method: "GET".into(),
            path: "/api/app-authoring/v1/orgs/o/workspaces/w/deployments/".into(),
            status: Some(200),
            violations: vec![warning],
        }],
    };
    add("ViolationExample", v(example));
    add("OperationSummary", v(op_summary.clone()));
    add("UnknownRoutes", v(unknown.clone()));
    add("Coverage", v(coverage.clone()));
    add(
        "JournalSummary",
        v(JournalSummary {
            since: at(),
            requests: 1,
            conforming: 0,
            violating: 1,
            not_judged: 0,
            faults_injected: 0,
            entries_kept: 1,
            entries_dropped: 0,
            capacity: 10_000,
            coverage,
            operations: vec![op_summary],
            not_called: vec!["create_campaign".into()],
            unknown_routes: unknown,
            not_found: not_found.clone(),
            conflicts: RefusedRequests::default(),
            too_large: RefusedRequests::default(),
            failed_uploads: 1,
            trailing_slash: flagged.clone(),
            repeated_query: FlaggedRequests::default(),
        }),
    );
    add("RefusedRequest", v(not_found.listed[0].clone()));
    add("RefusedRequests", v(not_found));
    add("FlaggedRequests", v(flagged));
    let mut rule = FaultRule::new(FaultKind::Status);
    rule.status = Some(503);
    rule.operation_id = Some("list_deployments".into());
    rule.from = Some(at());
    rule.times = Some(2);
    add("FaultKind", v(FaultKind::RateLimit));
    add("FaultRule", v(rule.clone()));
    let state = FaultRuleState {
        fault_id: "flt-1".into(),
        rule,
        matched: 3,
        injected: 2,
        remaining: Some(0),
        applies_to: Some(vec![workspace_id]),
    };
    add("FaultRuleState", v(state.clone()));
    add(
        "Page_FaultRuleState",
        v(Page {
            items: vec![state],
            total: 1,
            limit: 20,
            offset: 0,
            next_page_uri: None,
            prev_page_uri: None,
        }),
    );
    add(
        "Health",
        v(Health {
            status: "ok".into(),
        }),
    );
    // BYOK
    add(
        "ByokErrorBody",
        v(ByokErrorBody::new(
            ByokErrorCode::KeyNotFound,
            "no such alias",
        )),
    );
    add(
        "ByokErrorInfo",
        v(ByokErrorBody::new(ByokErrorCode::RateLimited, "slow down").error),
    );
    add("ByokErrorCode", v(ByokErrorCode::DecryptionFailed));
    add(
        "AuthForm",
        v(AuthForm {
            grant_type: GRANT_TYPE_CLIENT_CREDENTIALS.into(),
        }),
    );
    add(
        "AuthResponse",
        v(AuthResponse {
            data: AccessToken {
                access_token: "jwt".into(),
                token_type: "Bearer".into(),
                expires_in: 3600,
            },
        }),
    );
    add(
        "AccessToken",
        v(AccessToken {
            access_token: "jwt".into(),
            token_type: "Bearer".into(),
            expires_in: 3600,
        }),
    );
    add(
        "DecryptKeyRequest",
        v(DecryptKeyRequest {
            data: DecryptKeyData {
                key_alias: "k".into(),
                encrypted_key: ENCRYPTED_KEY.into(),
            },
        }),
    );
    add(
        "DecryptKeyData",
        v(DecryptKeyData {
            key_alias: "k".into(),
            encrypted_key: ENCRYPTED_KEY.into(),
        }),
    );
    add(
        "DecryptKeyResponse",
        v(DecryptKeyResponse {
            data: PlaintextKey {
                plaintext_key: "AAAA".into(),
            },
        }),
    );
    add(
        "PlaintextKey",
        v(PlaintextKey {
            plaintext_key: "AAAA".into(),
        }),
    );
    add(
        "RotateKeyRequest",
        v(RotateKeyRequest {
            data: RotateKeyData {
                key_alias: "k".into(),
            },
        }),
    );
    add(
        "RotateKeyData",
        v(RotateKeyData {
            key_alias: "k".into(),
        }),
    );
    add(
        "RotateKeyResponse",
        v(RotateKeyResponse {
            data: RotatedKey {
                encrypted_dek: ENCRYPTED_KEY.into(),
                key_alias: "k".into(),
                plaintext_dek: "AAAA".into(),
            },
        }),
    );
    add(
        "RotatedKey",
        v(RotatedKey {
            encrypted_dek: ENCRYPTED_KEY.into(),
            key_alias: "k".into(),
            plaintext_dek: "AAAA".into(),
        }),
    );
    m
}

/// A well-formed encrypted key (an envelope of 32 zero bytes).
const ENCRYPTED_KEY: &str = "byok:v1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

fn validator(doc: &Value, schema: &str) -> jsonschema::Validator {
    let mut root = doc.clone();
    root["$ref"] = json!(format!("#/components/schemas/{schema}"));
    jsonschema::draft202012::new(&root).unwrap_or_else(|e| panic!("{schema}: {e}"))
}

fn check_samples(doc: &Value, samples: &BTreeMap<&'static str, Vec<Value>>) {
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for name in schemas.keys() {
        let values = samples
            .get(name.as_str())
            .unwrap_or_else(|| panic!("no sample body for schema {name}: add one to samples()"));
        let validator = validator(doc, name);
        for value in values {
            let errors: Vec<String> = validator
                .iter_errors(value)
                .map(|e| e.to_string())
                .collect();
            assert!(
                errors.is_empty(),
                "{name} sample {value} does not validate: {errors:?}"
            );
        }
    }
}

#[test]
fn sample_bodies_of_every_platform_schema_validate() {
    check_samples(&doc_value(&platform_document()), &samples());
}

#[test]
fn sample_bodies_of_every_byok_schema_validate() {
    check_samples(&doc_value(&byok_document()), &samples());
}

#[test]
fn schemas_refuse_what_the_wire_refuses() {
    let doc = doc_value(&platform_document());
    let status = validator(&doc, "CampaignStatusRequest");
    assert!(!status.is_valid(&json!({"action": "stop"})));
    assert!(!status.is_valid(&json!({})));
    let deployment = validator(&doc, "DeploymentCreateRequest");
    assert!(
        !deployment.is_valid(&json!({"name": "x"})),
        "required fields"
    );
    let event = validator(&doc, "CampaignCallEvent");
    assert!(!event.is_valid(&json!({"completion_status": "done"})));
    let key = validator(&doc, "DataKeyInfo");
    assert!(!key.is_valid(&json!({"key_id": 1, "key_alias": "k", "provider": "hsm", "active": true, "created_at": "2026-03-02T12:00:00.000Z"})));
    assert!(!key.is_valid(&json!({"key_id": -1, "key_alias": "k", "provider": "byok", "active": true, "created_at": "2026-03-02T12:00:00.000Z"})));
    assert!(!key.is_valid(&json!({"key_alias": "k", "provider": "byok", "active": true, "created_at": "2026-03-02T12:00:00.000Z"})));
}
