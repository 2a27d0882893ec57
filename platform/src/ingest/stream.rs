//! A JSON stream's users through the [row rules](super::rows), before the answer: a number
//! that does not normalise, or repeats an earlier user of the stream, rejects that user; the
//! rest are sealed for the cohort.
//!
//! The stream's `cohort` file is the request's users as CSV
//! (`phone_number,user_identifier,app_variables,app_overrides`, the last two as compact JSON
//! text, empty when absent); its `rejected_records` file adds `rejected_reason`.

use contracts::model::CohortStream;
use contracts::wire::CohortResult;

use super::rows::{Admission, stream_user};
use crate::keys::WorkspaceKeys;
use crate::store::StoreError;
use crate::store::cohorts::{AdmittedUsers, PhoneEntry, UserBatch};

/// The columns of a stream's `cohort` file.
const HEADER: [&str; 4] = [
    "phone_number",
    "user_identifier",
    "app_variables",
    "app_overrides",
];

/// What a stream comes to before it is stored.
#[derive(Debug)]
pub(crate) struct PreparedStream {
    /// The accepted users, sealed, in request order.
    pub(crate) users: UserBatch,
    /// Their lookup entries.
    pub(crate) phones: Vec<PhoneEntry>,
    /// The `cohort` file.
    pub(crate) cohort_csv: Vec<u8>,
    /// The `rejected_records` file, when a user was rejected.
    pub(crate) rejected_csv: Option<Vec<u8>>,
    /// The counts.
    pub(crate) result: CohortResult,
}

/// Applies the row rules to a stream's users, sealing the accepted ones for `cohort_id`.
pub(crate) fn prepare(
    keys: &WorkspaceKeys,
    cohort_id: &str,
    req: &CohortStream,
) -> Result<PreparedStream, StoreError> {
    let mut cohort_csv = csv::Writer::from_writer(Vec::new());
    let mut rejected: Option<csv::Writer<Vec<u8>>> = None;
    cohort_csv.write_record(HEADER).expect("CSV to memory");
    let mut admission = Admission::new(keys);
    let mut users = AdmittedUsers::default();
    for (i, u) in req.users.iter().enumerate() {
        let row_no = i as u64 + 1;
        let variables_text = u
            .app_variables
            .as_ref()
            .map(|v| serde_json::to_string(v).expect("JSON serialises"))
            .unwrap_or_default();
        let overrides_text = u
            .app_overrides
            .as_ref()
            .map(|v| serde_json::to_string(v).expect("JSON serialises"))
            .unwrap_or_default();
        let fields = [
            u.phone_number.as_str(),
            u.user_identifier.as_deref().unwrap_or(""),
            variables_text.as_str(),
            overrides_text.as_str(),
        ];
        cohort_csv.write_record(fields).expect("CSV to memory");
        let verdict = match stream_user(u, req.country_code.as_deref()) {
            Err(reason) => Err(reason),
            Ok(user) => admission.admit(row_no, &user, &mut users),
        };
        if let Err(reason) = verdict {
            let w = rejected.get_or_insert_with(|| {
                let mut w = csv::Writer::from_writer(Vec::new());
                let mut h = HEADER.to_vec();
                h.push("rejected_reason");
                w.write_record(h).expect("CSV to memory");
                w
            });
            let mut row = fields.to_vec();
            row.push(reason.as_str());
            w.write_record(row).expect("CSV to memory");
        }
    }
    let total = req.users.len() as u64;
    let valid = users.len() as u64;
    Ok(PreparedStream {
        users: users.seal(keys, cohort_id),
        phones: admission.into_phones(),
        cohort_csv: cohort_csv.into_inner().expect("CSV to memory"),
        rejected_csv: rejected.map(|w| w.into_inner().expect("CSV to memory")),
        result: CohortResult {
            total_records: total,
            valid_records: valid,
            rejected_records: total - valid,
        },
    })
}
