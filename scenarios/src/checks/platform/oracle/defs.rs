//! The oracle's checks: one per operation of the contract, and one warning for the points
//! only this project assumed.

use crate::checks::CheckDef;

macro_rules! oracle_defs {
    ($($name:ident = ($op:literal, $id:literal, $what:literal);)*) => {
        $(
            #[doc = concat!("`", $id, "`")]
            pub(crate) const $name: CheckDef = CheckDef::error(
                $id,
                concat!($what, " as the reference platform answers the same requests"),
            );
        )*
        /// The operations and their checks.
        const BY_OPERATION: &[(&str, CheckDef)] = &[$(($op, $name)),*];
    };
}

oracle_defs! {
    CREATE_OUTBOUND = ("create_outbound", "oracle.create_outbound", "POST .../outbounds");
    CREATE_CAMPAIGN = ("create_campaign", "oracle.create_campaign", "POST .../campaigns");
    LIST_CAMPAIGNS = ("list_campaigns", "oracle.list_campaigns", "GET .../campaigns");
    GET_CAMPAIGN = ("get_campaign", "oracle.get_campaign", "GET .../campaigns/{id}");
    PATCH_CAMPAIGN = ("patch_campaign", "oracle.patch_campaign", "PATCH .../campaigns/{id}");
    SET_CAMPAIGN_STATUS = ("set_campaign_status", "oracle.set_campaign_status", "PUT .../campaigns/{id}/status");
    UPLOAD_CAMPAIGN_COHORT = ("upload_campaign_cohort", "oracle.upload_campaign_cohort", "POST .../campaigns/{id}/cohorts/upload");
    STREAM_CAMPAIGN_COHORT = ("stream_campaign_cohort", "oracle.stream_campaign_cohort", "POST .../campaigns/{id}/cohorts/stream");
    LIST_CAMPAIGN_COHORTS = ("list_campaign_cohorts", "oracle.list_campaign_cohorts", "GET .../campaigns/{id}/cohorts");
    GET_CAMPAIGN_COHORT = ("get_campaign_cohort", "oracle.get_campaign_cohort", "GET .../campaigns/{id}/cohorts/{cohort_id}");
    GET_CAMPAIGN_COHORT_FILE = ("get_campaign_cohort_file", "oracle.get_campaign_cohort_file", "GET .../campaigns/{id}/cohorts/{cohort_id}/files");
    CREATE_DEPLOYMENT = ("create_deployment", "oracle.create_deployment", "POST .../deployments");
    LIST_DEPLOYMENTS = ("list_deployments", "oracle.list_deployments", "GET .../deployments");
    GET_DEPLOYMENT = ("get_deployment", "oracle.get_deployment", "GET .../deployments/{id}");
    PATCH_DEPLOYMENT = ("patch_deployment", "oracle.patch_deployment", "PATCH .../deployments/{id}");
    SET_DEPLOYMENT_STATUS = ("set_deployment_status", "oracle.set_deployment_status", "PUT .../deployments/{id}/status");
    DELETE_DEPLOYMENT = ("delete_deployment", "oracle.delete_deployment", "DELETE .../deployments/{id}");
    UPLOAD_DEPLOYMENT_COHORT = ("upload_deployment_cohort", "oracle.upload_deployment_cohort", "POST .../deployments/{id}/cohorts/upload");
    STREAM_DEPLOYMENT_COHORT = ("stream_deployment_cohort", "oracle.stream_deployment_cohort", "POST .../deployments/{id}/cohorts/stream");
    LIST_DEPLOYMENT_COHORTS = ("list_deployment_cohorts", "oracle.list_deployment_cohorts", "GET .../deployments/{id}/cohorts");
    GET_DEPLOYMENT_COHORT = ("get_deployment_cohort", "oracle.get_deployment_cohort", "GET .../deployments/{id}/cohorts/{cohort_id}");
    GET_DEPLOYMENT_COHORT_FILE = ("get_deployment_cohort_file", "oracle.get_deployment_cohort_file", "GET .../deployments/{id}/cohorts/{cohort_id}/files");
    CAMPAIGN_EVENTS = ("campaign_event", "oracle.campaign_events", "every campaign call event (one per attempt, its every field)");
    OUTBOUND_EVENTS = ("outbound_event", "oracle.outbound_events", "every instant outbound call's event (its every field)");
}

/// `oracle.assumptions`.
pub(crate) const ASSUMPTIONS: CheckDef = CheckDef::warning(
    "oracle.assumptions",
    "answers agree with the reference platform where only this project's assumptions fix them",
);

/// Every check of the group, in report order.
pub(crate) const CHECKS: &[CheckDef] = &[
    CREATE_OUTBOUND,
    CREATE_CAMPAIGN,
    LIST_CAMPAIGNS,
    GET_CAMPAIGN,
    PATCH_CAMPAIGN,
    SET_CAMPAIGN_STATUS,
    UPLOAD_CAMPAIGN_COHORT,
    STREAM_CAMPAIGN_COHORT,
    LIST_CAMPAIGN_COHORTS,
    GET_CAMPAIGN_COHORT,
    GET_CAMPAIGN_COHORT_FILE,
    CREATE_DEPLOYMENT,
    LIST_DEPLOYMENTS,
    GET_DEPLOYMENT,
    PATCH_DEPLOYMENT,
    SET_DEPLOYMENT_STATUS,
    DELETE_DEPLOYMENT,
    UPLOAD_DEPLOYMENT_COHORT,
    STREAM_DEPLOYMENT_COHORT,
    LIST_DEPLOYMENT_COHORTS,
    GET_DEPLOYMENT_COHORT,
    GET_DEPLOYMENT_COHORT_FILE,
    CAMPAIGN_EVENTS,
    OUTBOUND_EVENTS,
    ASSUMPTIONS,
];

/// Why the group is skipped without the oracle.
pub(crate) const NO_ORACLE: &str =
    "--no-oracle: the answers are not compared with the reference platform's";

/// The check of `operation`.
pub(crate) fn def_for(operation: &str) -> Option<&'static CheckDef> {
    BY_OPERATION
        .iter()
        .find(|(op, _)| *op == operation)
        .map(|(_, d)| d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_of_the_contract_has_its_check() {
        let catalogue = contracts::operations::Catalogue::platform();
        for op in catalogue.operations() {
            if op.path.starts_with("/api/") {
                assert!(def_for(&op.operation_id).is_some(), "{}", op.operation_id);
            }
        }
        assert_eq!(CHECKS.len(), BY_OPERATION.len() + 1);
    }
}
