//! The admin API's operations on a workspace's data keys (the harness's own, not part of the
//! interface spec): list them, rotate to a new one. No answer carries key material.

use contracts::wire::{DataKeyInfo, DataKeyList, DataKeyProvider};

use crate::app::App;
use crate::auth::Principal;
use crate::error::ApiError;
use crate::store::DataKeyRow;

/// The workspace's data keys, oldest first; the last is the active one.
pub(crate) async fn data_keys(app: &App, who: &Principal) -> Result<DataKeyList, ApiError> {
    let rows = app.keys.rows(&who.ws).await?;
    let last = rows.last().map(|r| r.id);
    Ok(DataKeyList {
        items: rows.iter().map(|r| info(r, Some(r.id) == last)).collect(),
    })
}

/// A new data key from the workspace's key service (BYOK: `rotate-key`) becomes active.
pub(crate) async fn rotate(
    app: &App,
    who: &Principal,
    trace_id: Option<&str>,
) -> Result<DataKeyInfo, ApiError> {
    let row = app.keys.rotate(&who.ws, trace_id).await?;
    Ok(info(&row, true))
}

/// What the API tells of a data key: never the key.
fn info(row: &DataKeyRow, active: bool) -> DataKeyInfo {
    DataKeyInfo {
        key_id: row.id,
        key_alias: row.key_alias.clone(),
        provider: if row.provider == "byok" {
            DataKeyProvider::Byok
        } else {
            DataKeyProvider::Local
        },
        active,
        created_at: row.created_at,
    }
}
