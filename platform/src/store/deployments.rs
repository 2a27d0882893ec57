//! Deployment rows and the numbers they own. A number belongs to at most one deployment of
//! a workspace (assumed): the `deployment_numbers` primary key enforces it.

use chrono::{DateTime, Utc};
use contracts::model::DeploymentSpec;
use contracts::validate::ListParams;
use contracts::wire::{
    ChannelDirection, Deployment, DeploymentCreateRequest, DeploymentSortBy, DeploymentStatus,
    SortOrder,
};
use rusqlite::{Connection, Row, params};

use super::{StoreError, WorkspaceRef, from_json, from_ms, like_substring, ms, optional, to_json};

/// A stored deployment.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DeploymentRecord {
    /// `dep-…`.
    pub(crate) id: String,
    /// Its workspace.
    pub(crate) ws: WorkspaceRef,
    /// `active` or `paused`.
    pub(crate) status: DeploymentStatus,
    /// The configuration, in its canonical wire form (validated when it was stored).
    pub(crate) config: DeploymentCreateRequest,
    /// Who created it.
    pub(crate) created_by: String,
    /// Who changed it last (null until the first change).
    pub(crate) updated_by: Option<String>,
    /// When it was created.
    pub(crate) created_at: DateTime<Utc>,
    /// When it last changed.
    pub(crate) updated_at: DateTime<Utc>,
}

impl DeploymentRecord {
    /// The answer for this deployment.
    pub(crate) fn to_wire(&self) -> Deployment {
        Deployment {
            deployment_id: self.id.clone(),
            app_id: self.config.app_id.clone(),
            app_version: self.config.app_version,
            connection_configs: self.config.connection_configs.clone(),
            channel_direction: ChannelDirection::Inbound,
            created_by: self.created_by.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            name: Some(self.config.name.clone()),
            status: Some(self.status),
            description: self.config.description.clone(),
            inbound_config: self.config.inbound_config.clone(),
            updated_by: self.updated_by.clone(),
        }
    }

    /// The configuration as validated domain types.
    pub(crate) fn spec(&self) -> Result<DeploymentSpec, StoreError> {
        DeploymentSpec::try_from(&self.config)
            .map_err(|e| StoreError::Corrupt(format!("deployment {}: {e}", self.id)))
    }

    /// Every number of every connection, in order.
    pub(crate) fn phone_numbers(&self) -> Vec<String> {
        self.config
            .connection_configs
            .iter()
            .flat_map(|c| c.phone_numbers.iter().cloned())
            .collect()
    }
}

/// A number that already belongs to another deployment of the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NumberTaken {
    /// The number.
    pub(crate) phone_number: String,
    /// The deployment that has it.
    pub(crate) deployment_id: String,
}

const COLUMNS: &str =
    "id, org_id, workspace_id, status, spec, created_by, updated_by, created_ms, updated_ms";

fn read(r: &Row<'_>) -> rusqlite::Result<Raw> {
    Ok((
        r.get(0)?,
        WorkspaceRef::new(r.get::<_, String>(1)?, r.get::<_, String>(2)?),
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
        r.get(8)?,
    ))
}

type Raw = (
    String,
    WorkspaceRef,
    String,
    String,
    String,
    Option<String>,
    i64,
    i64,
);

fn finish(raw: Raw) -> Result<DeploymentRecord, StoreError> {
    let (id, ws, status, spec, created_by, updated_by, created, updated) = raw;
    let config: DeploymentCreateRequest = from_json(&spec)?;
    let status = match status.as_str() {
        "active" => DeploymentStatus::Active,
        "paused" => DeploymentStatus::Paused,
        other => {
            return Err(StoreError::Corrupt(format!(
                "deployment {id}: status {other}"
            )));
        }
    };
    Ok(DeploymentRecord {
        id,
        ws,
        status,
        config,
        created_by,
        updated_by,
        created_at: from_ms(created),
        updated_at: from_ms(updated),
    })
}

/// The first of `numbers` that another deployment of the workspace owns.
pub(crate) fn number_conflict(
    c: &Connection,
    ws: &WorkspaceRef,
    numbers: &[String],
    except: Option<&str>,
) -> Result<Option<NumberTaken>, StoreError> {
    let mut stmt = c.prepare_cached(
        "SELECT deployment_id FROM deployment_numbers
         WHERE org_id = ?1 AND workspace_id = ?2 AND phone_number = ?3",
    )?;
    for p in numbers {
        let owner: Option<String> =
            optional(stmt.query_row(params![ws.org_id, ws.workspace_id, p], |r| r.get(0)))?;
        if let Some(owner) = owner
            && Some(owner.as_str()) != except
        {
            return Ok(Some(NumberTaken {
                phone_number: p.clone(),
                deployment_id: owner,
            }));
        }
    }
    Ok(None)
}

fn write_numbers(c: &Connection, rec: &DeploymentRecord) -> Result<(), StoreError> {
    c.execute(
        "DELETE FROM deployment_numbers WHERE deployment_id = ?1",
        params![rec.id],
    )?;
    let mut stmt = c.prepare_cached(
        "INSERT INTO deployment_numbers (org_id, workspace_id, phone_number, deployment_id, position)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (i, p) in rec.phone_numbers().iter().enumerate() {
        stmt.execute(params![
            rec.ws.org_id,
            rec.ws.workspace_id,
            p,
            rec.id,
            i as i64
        ])?;
    }
    Ok(())
}

/// Inserts a deployment and claims its numbers. The caller checks [`number_conflict`] in
/// the same transaction first.
pub(crate) fn insert(c: &Connection, rec: &DeploymentRecord) -> Result<(), StoreError> {
    c.execute(
        "INSERT INTO deployments (id, seq, org_id, workspace_id, name, description, status, app_id, app_version,
                                  spec, created_by, updated_by, created_ms, updated_ms)
         VALUES (?1, (SELECT IFNULL(MAX(seq), 0) + 1 FROM deployments), ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        params![
            rec.id,
            rec.ws.org_id,
            rec.ws.workspace_id,
            rec.config.name,
            rec.config.description,
            rec.status.as_str(),
            rec.config.app_id,
            rec.config.app_version,
            to_json(&rec.config),
            rec.created_by,
            rec.updated_by,
            ms(rec.created_at),
            ms(rec.updated_at),
        ],
    )?;
    write_numbers(c, rec)
}

/// Writes a deployment's configuration, status and last change, and its numbers.
pub(crate) fn update(c: &Connection, rec: &DeploymentRecord) -> Result<(), StoreError> {
    c.execute(
        "UPDATE deployments SET name = ?2, description = ?3, status = ?4, app_version = ?5, spec = ?6,
                updated_by = ?7, updated_ms = ?8
         WHERE id = ?1",
        params![
            rec.id,
            rec.config.name,
            rec.config.description,
            rec.status.as_str(),
            rec.config.app_version,
            to_json(&rec.config),
            rec.updated_by,
            ms(rec.updated_at),
        ],
    )?;
    write_numbers(c, rec)
}

/// Deletes a deployment, its numbers and its cohorts, for good. Answers whether it existed.
pub(crate) fn delete(c: &Connection, ws: &WorkspaceRef, id: &str) -> Result<bool, StoreError> {
    let n = c.execute(
        "DELETE FROM deployments WHERE id = ?1 AND org_id = ?2 AND workspace_id = ?3",
        params![id, ws.org_id, ws.workspace_id],
    )?;
    if n > 0 {
        c.execute(
            "DELETE FROM cohorts WHERE parent_kind = 'deployment' AND parent_id = ?1",
            params![id],
        )?;
    }
    Ok(n > 0)
}

/// A deployment of the workspace, or `None`.
pub(crate) fn get(
    c: &Connection,
    ws: &WorkspaceRef,
    id: &str,
) -> Result<Option<DeploymentRecord>, StoreError> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM deployments WHERE id = ?1 AND org_id = ?2 AND workspace_id = ?3"
    ))?;
    optional(stmt.query_row(params![id, ws.org_id, ws.workspace_id], read))?
        .map(finish)
        .transpose()
}

/// The deployment that owns a number in a workspace, if any (inbound routing).
pub(crate) fn by_number(
    c: &Connection,
    ws: &WorkspaceRef,
    phone_number: &str,
) -> Result<Option<DeploymentRecord>, StoreError> {
    let id: Option<String> = optional(c.query_row(
        "SELECT deployment_id FROM deployment_numbers WHERE org_id = ?1 AND workspace_id = ?2 AND phone_number = ?3",
        params![ws.org_id, ws.workspace_id, phone_number],
        |r| r.get(0),
    ))?;
    match id {
        Some(id) => get(c, ws, &id),
        None => Ok(None),
    }
}

/// One page of the workspace's deployments and the total number of matches. `search`
/// matches the name, the description or a phone number, case-insensitively.
pub(crate) fn list(
    c: &Connection,
    ws: &WorkspaceRef,
    p: &ListParams<DeploymentSortBy>,
) -> Result<(Vec<DeploymentRecord>, u64), StoreError> {
    let order = match p.sort_by {
        DeploymentSortBy::CreatedAt => "created_ms",
        DeploymentSortBy::UpdatedAt => "updated_ms",
        DeploymentSortBy::Name => "name COLLATE NOCASE",
    };
    let dir = match p.sort_order {
        SortOrder::Asc => "ASC",
        SortOrder::Desc => "DESC",
    };
    let search = p.search.as_deref().map(like_substring);
    let filter = r"d.org_id = ?1 AND d.workspace_id = ?2
        AND (?3 IS NULL OR d.name LIKE ?3 ESCAPE '\' OR d.description LIKE ?3 ESCAPE '\'
             OR EXISTS (SELECT 1 FROM deployment_numbers n
                        WHERE n.deployment_id = d.id AND n.phone_number LIKE ?3 ESCAPE '\'))";
    let total: i64 = c
        .prepare_cached(&format!(
            "SELECT COUNT(*) FROM deployments d WHERE {filter}"
        ))?
        .query_row(params![ws.org_id, ws.workspace_id, search], |r| r.get(0))?;
    let cols = COLUMNS
        .split(", ")
        .map(|c| format!("d.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {cols} FROM deployments d WHERE {filter} ORDER BY d.{order} {dir}, d.seq {dir} LIMIT ?4 OFFSET ?5"
    ))?;
    let rows = stmt
        .query_map(
            params![
                ws.org_id,
                ws.workspace_id,
                search,
                p.limit as i64,
                p.offset as i64
            ],
            read,
        )?
        .collect::<Result<Vec<_>, _>>()?;
    let items = rows
        .into_iter()
        .map(finish)
        .collect::<Result<Vec<_>, _>>()?;
    Ok((items, total as u64))
}

/// Up to `cap` deployments of the workspace with their insertion sequence, oldest first
/// (the list cache's load).
pub(crate) fn all(
    c: &Connection,
    ws: &WorkspaceRef,
    cap: usize,
) -> Result<Vec<(i64, DeploymentRecord)>, StoreError> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS}, seq FROM deployments WHERE org_id = ?1 AND workspace_id = ?2
         ORDER BY seq LIMIT ?3"
    ))?;
    let rows = stmt
        .query_map(params![ws.org_id, ws.workspace_id, cap as i64], |r| {
            Ok((read(r)?, r.get::<_, i64>(9)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    rows.into_iter()
        .map(|(raw, seq)| Ok((seq, finish(raw)?)))
        .collect()
}
