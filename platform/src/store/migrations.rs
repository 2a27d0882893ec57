//! Schema migrations, in code. `PRAGMA user_version` records how many have run; each runs
//! once, in its own transaction.

use rusqlite::Connection;

use super::StoreError;

/// Every migration, in order. Append only: never edit one that has shipped.
const MIGRATIONS: &[&str] = &[
    // 1: the API's resources.
    r#"
    CREATE TABLE data_keys (
        id            INTEGER PRIMARY KEY,
        org_id        TEXT NOT NULL,
        workspace_id  TEXT NOT NULL,
        provider      TEXT NOT NULL,
        key_alias     TEXT NOT NULL,
        encrypted_key TEXT NOT NULL,
        created_at    INTEGER NOT NULL
    );
    CREATE INDEX data_keys_ws ON data_keys (org_id, workspace_id, id);

    CREATE TABLE campaigns (
        id            TEXT PRIMARY KEY,
        seq           INTEGER NOT NULL UNIQUE,
        org_id        TEXT NOT NULL,
        workspace_id  TEXT NOT NULL,
        name          TEXT NOT NULL,
        description   TEXT,
        status        TEXT NOT NULL,
        start_ms      INTEGER NOT NULL,
        end_ms        INTEGER NOT NULL,
        spec          TEXT NOT NULL,
        created_by    TEXT NOT NULL,
        updated_by    TEXT NOT NULL,
        created_ms    INTEGER NOT NULL,
        updated_ms    INTEGER NOT NULL
    );
    CREATE INDEX campaigns_ws ON campaigns (org_id, workspace_id, seq);
    -- One index per sort order of the list, so a page is read in order, not sorted.
    CREATE INDEX campaigns_created ON campaigns (org_id, workspace_id, created_ms, seq);
    CREATE INDEX campaigns_updated ON campaigns (org_id, workspace_id, updated_ms, seq);
    CREATE INDEX campaigns_name ON campaigns (org_id, workspace_id, name COLLATE NOCASE, seq);
    CREATE INDEX campaigns_start ON campaigns (org_id, workspace_id, start_ms, seq);
    CREATE INDEX campaigns_due ON campaigns (status, start_ms, end_ms);

    CREATE TABLE deployments (
        id            TEXT PRIMARY KEY,
        seq           INTEGER NOT NULL UNIQUE,
        org_id        TEXT NOT NULL,
        workspace_id  TEXT NOT NULL,
        name          TEXT NOT NULL,
        description   TEXT,
        status        TEXT NOT NULL,
        app_id        TEXT NOT NULL,
        app_version   INTEGER NOT NULL,
        spec          TEXT NOT NULL,
        created_by    TEXT NOT NULL,
        updated_by    TEXT,
        created_ms    INTEGER NOT NULL,
        updated_ms    INTEGER NOT NULL
    );
    CREATE INDEX deployments_ws ON deployments (org_id, workspace_id, seq);
    CREATE INDEX deployments_created ON deployments (org_id, workspace_id, created_ms, seq);
    CREATE INDEX deployments_updated ON deployments (org_id, workspace_id, updated_ms, seq);
    CREATE INDEX deployments_name ON deployments (org_id, workspace_id, name COLLATE NOCASE, seq);

    -- The platform's own numbers, not users' data: one deployment per number and workspace.
    CREATE TABLE deployment_numbers (
        org_id        TEXT NOT NULL,
        workspace_id  TEXT NOT NULL,
        phone_number  TEXT NOT NULL,
        deployment_id TEXT NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
        position      INTEGER NOT NULL,
        PRIMARY KEY (org_id, workspace_id, phone_number)
    );
    CREATE INDEX deployment_numbers_dep ON deployment_numbers (deployment_id, position);

    CREATE TABLE cohorts (
        id            TEXT PRIMARY KEY,
        seq           INTEGER NOT NULL UNIQUE,
        org_id        TEXT NOT NULL,
        workspace_id  TEXT NOT NULL,
        parent_kind   TEXT NOT NULL,
        parent_id     TEXT NOT NULL,
        name          TEXT NOT NULL,
        status        TEXT NOT NULL,
        source_type   TEXT NOT NULL,
        category      TEXT NOT NULL,
        total_records    INTEGER,
        valid_records    INTEGER,
        rejected_records INTEGER,
        failure_reason   TEXT,
        country_code  TEXT,
        created_by    TEXT NOT NULL,
        updated_by    TEXT NOT NULL,
        created_ms    INTEGER NOT NULL,
        updated_ms    INTEGER NOT NULL
    );
    CREATE INDEX cohorts_parent ON cohorts (parent_kind, parent_id, seq);
    CREATE INDEX cohorts_status ON cohorts (status);

    -- Files are stored as sealed chunks so that no file is ever held whole in memory.
    CREATE TABLE files (
        id        INTEGER PRIMARY KEY,
        cohort_id TEXT NOT NULL REFERENCES cohorts (id) ON DELETE CASCADE,
        kind      TEXT NOT NULL,
        size      INTEGER NOT NULL DEFAULT 0,
        chunks    INTEGER NOT NULL DEFAULT 0,
        complete  INTEGER NOT NULL DEFAULT 0,
        UNIQUE (cohort_id, kind)
    );
    CREATE TABLE file_chunks (
        file_id INTEGER NOT NULL REFERENCES files (id) ON DELETE CASCADE,
        seq     INTEGER NOT NULL,
        data    BLOB NOT NULL,
        PRIMARY KEY (file_id, seq)
    ) WITHOUT ROWID;

    -- One row per accepted user. `phone_hash` is a keyed hash (no plaintext number is
    -- stored); `data` is a sealed blob of the user's number, identifier and variables.
    CREATE TABLE cohort_users (
        cohort_id  TEXT NOT NULL REFERENCES cohorts (id) ON DELETE CASCADE,
        row_no     INTEGER NOT NULL,
        phone_hash BLOB NOT NULL,
        data       BLOB NOT NULL,
        PRIMARY KEY (cohort_id, row_no)
    ) WITHOUT ROWID;
    CREATE INDEX cohort_users_phone ON cohort_users (phone_hash);

    CREATE TABLE attempts (
        id            TEXT PRIMARY KEY,
        kind          TEXT NOT NULL,
        org_id        TEXT NOT NULL,
        workspace_id  TEXT NOT NULL,
        status        TEXT NOT NULL,
        payload       BLOB NOT NULL,
        created_ms    INTEGER NOT NULL,
        updated_ms    INTEGER NOT NULL
    );
    CREATE INDEX attempts_status ON attempts (kind, status);
    "#,
    // 2: cohort phone lookups move to their own table, written once per cohort in hash
    // order when processing completes. Kept on `cohort_users`, the index took one random
    // page write per accepted row (a million-row upload wrote gigabytes of WAL); rows now go
    // to `cohort_users` in row order only, and a cohort's lookup entries form one contiguous
    // key range. Existing users are carried over.
    r#"
    DROP INDEX cohort_users_phone;
    CREATE TABLE cohort_phones (
        cohort_id  TEXT NOT NULL REFERENCES cohorts (id) ON DELETE CASCADE,
        phone_hash BLOB NOT NULL,
        row_no     INTEGER NOT NULL,
        PRIMARY KEY (cohort_id, phone_hash)
    ) WITHOUT ROWID;
    INSERT OR IGNORE INTO cohort_phones (cohort_id, phone_hash, row_no)
        SELECT cohort_id, phone_hash, row_no FROM cohort_users ORDER BY cohort_id, phone_hash, row_no;
    "#,
    // 3: the campaign engine: its state of each campaign, the users it admitted
    // (`campaign_users`), calls rebuilt with the engine's columns (`calls`), result counts
    // (`statistics`), webhook deliveries (`deliveries`) and inbound calls (`inbound`).
    r#"
    -- Engine state of a campaign: pacing and routing (JSON), and which cohorts it admitted.
    ALTER TABLE campaigns ADD COLUMN engine_state TEXT;
    CREATE TABLE campaign_cohorts (
        campaign_id TEXT NOT NULL,
        cohort_id   TEXT NOT NULL,
        position    INTEGER NOT NULL,
        admitted_ms INTEGER NOT NULL,
        PRIMARY KEY (campaign_id, cohort_id)
    ) WITHOUT ROWID;

    -- One row per user admitted to a campaign.
    --   ready      waits for a dial (due_ms: the earliest)
    --   calling    a call is in progress
    --   done       finished: completed, or a final outcome, or out of retries
    --   excluded   in a stop file of the campaign; never dialled (again)
    --   unfinished the campaign ended or was cancelled before the user was done
    -- queue_seq: the cohort's admission position in the high 32 bits, its row in the low.
    CREATE TABLE campaign_users (
        campaign_id TEXT NOT NULL,
        queue_seq   INTEGER NOT NULL,
        cohort_id   TEXT NOT NULL,
        row_no      INTEGER NOT NULL,
        state       TEXT NOT NULL,
        attempts    INTEGER NOT NULL DEFAULT 0,
        due_ms      INTEGER NOT NULL,
        last_result TEXT,
        PRIMARY KEY (campaign_id, queue_seq)
    ) WITHOUT ROWID;

    -- Calls: campaign dials and instant outbound calls. Rebuilt without rowid (one B-tree
    -- keyed by the time-ordered attempt id) with the engine's columns.
    CREATE TABLE attempts_v3 (
        id             TEXT PRIMARY KEY,
        kind           TEXT NOT NULL,
        org_id         TEXT NOT NULL,
        workspace_id   TEXT NOT NULL,
        status         TEXT NOT NULL,
        payload        BLOB NOT NULL,
        created_ms     INTEGER NOT NULL,
        updated_ms     INTEGER NOT NULL,
        campaign_id    TEXT,
        cohort_id      TEXT,
        row_no         INTEGER,
        retry_attempt  INTEGER,
        dialed_ms      INTEGER,
        ends_ms        INTEGER,
        outcome        TEXT,
        failure_reason TEXT,
        talk_ms        INTEGER,
        connection_id  TEXT,
        agent_number   TEXT,
        result         TEXT
    ) WITHOUT ROWID;
    INSERT INTO attempts_v3 (id, kind, org_id, workspace_id, status, payload, created_ms, updated_ms)
        SELECT id, kind, org_id, workspace_id, status, payload, created_ms, updated_ms FROM attempts;
    DROP TABLE attempts;
    ALTER TABLE attempts_v3 RENAME TO attempts;
    -- Only calls not yet ended need finding by status: a partial index stays small.
    CREATE INDEX attempts_live ON attempts (status, ends_ms) WHERE status <> 'ended';

    -- Ended campaign attempts counted by result (the statistics read these).
    CREATE TABLE campaign_results (
        campaign_id TEXT NOT NULL,
        result      TEXT NOT NULL,
        n           INTEGER NOT NULL,
        PRIMARY KEY (campaign_id, result)
    ) WITHOUT ROWID;

    CREATE TABLE webhook_deliveries (
        id           TEXT PRIMARY KEY,
        seq          INTEGER NOT NULL UNIQUE,
        org_id       TEXT NOT NULL,
        workspace_id TEXT NOT NULL,
        kind         TEXT NOT NULL,
        subject_id   TEXT NOT NULL,
        url          TEXT NOT NULL,
        body         BLOB NOT NULL,
        status       TEXT NOT NULL,
        tries        INTEGER NOT NULL DEFAULT 0,
        next_try_ms  INTEGER,
        last_status  INTEGER,
        last_error   TEXT,
        created_ms   INTEGER NOT NULL,
        delivered_ms INTEGER
    );
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_try_ms, seq);
    CREATE INDEX webhook_deliveries_ws ON webhook_deliveries (org_id, workspace_id, seq);

    CREATE TABLE inbound_calls (
        id             TEXT PRIMARY KEY,
        seq            INTEGER NOT NULL UNIQUE,
        org_id         TEXT NOT NULL,
        workspace_id   TEXT NOT NULL,
        dialled        TEXT NOT NULL,
        at_ms          INTEGER NOT NULL,
        answered       INTEGER NOT NULL,
        rejection      TEXT,
        deployment_id  TEXT,
        interaction_id TEXT,
        cohort_id      TEXT,
        talk_ms        INTEGER,
        ends_ms        INTEGER,
        ended          INTEGER NOT NULL DEFAULT 0,
        details        BLOB
    );
    CREATE INDEX inbound_calls_ws ON inbound_calls (org_id, workspace_id, seq);
    CREATE INDEX inbound_calls_open ON inbound_calls (answered, ended, ends_ms);
"#,
    // 4: a check value per data key (see crypto::key_check), so that a key service answering
    // the wrong plaintext for a stored key is caught before anything is sealed with it.
    // NULL for keys stored before; filled in at their next decryption.
    r#"
    ALTER TABLE data_keys ADD COLUMN key_check BLOB;
    "#,
    // 5: where the seeded id generators stand (see store::ids), so that a restart with the
    // same seed carries on instead of drawing ids already stored.
    super::ids::MIGRATION,
    // 6: what the live page (`/ui`) shows of a campaign's past (see store::activity): the
    // status actions taken, from which the status changes are told again, and the ended
    // dials counted by the minute they were dialled and their result.
    super::activity::MIGRATION,
    // 7: `campaign_users.last_result` goes: nothing read it, and the engine rewrote it at
    // every call's end (the results are counted in `campaign_results` and kept per call in
    // `attempts`).
    r#"
    ALTER TABLE campaign_users DROP COLUMN last_result;
    "#,
    // 8: a cohort gets a number (`num`, assigned once when its row is inserted) that names
    // it in its lookup entries: `cohort_phones` repeated the 24-character cohort id in every
    // entry, a million times for a million-row upload; an integer key halves the entries'
    // size and makes writing them about twice as fast. Existing entries are carried over.
    r#"
    ALTER TABLE cohorts ADD COLUMN num INTEGER;
    UPDATE cohorts SET num = seq;
    CREATE UNIQUE INDEX cohorts_num ON cohorts (num);
    CREATE TABLE cohort_phones_v8 (
        cohort_num INTEGER NOT NULL REFERENCES cohorts (num) ON DELETE CASCADE,
        phone_hash BLOB NOT NULL,
        row_no     INTEGER NOT NULL,
        PRIMARY KEY (cohort_num, phone_hash)
    ) WITHOUT ROWID;
    INSERT INTO cohort_phones_v8 (cohort_num, phone_hash, row_no)
        SELECT k.num, p.phone_hash, p.row_no FROM cohort_phones p JOIN cohorts k ON k.id = p.cohort_id
        ORDER BY k.num, p.phone_hash;
    DROP TABLE cohort_phones;
    ALTER TABLE cohort_phones_v8 RENAME TO cohort_phones;
    "#,
    // 9: `campaign_users` is keyed by the campaign's number (`campaigns.seq`, unique and
    // never changed) instead of its 24-character id, and drops `cohort_id` and `row_no`:
    // both are in `queue_seq` (the cohort's admission position, in `campaign_cohorts`, in
    // the high 32 bits, the row in the low ones). A row went from about 80 bytes to about
    // 20, and the engine updates one per dial: a million users' table is a quarter of the
    // pages to search, change and copy through the WAL. Existing rows are carried over.
    r#"
    CREATE TABLE campaign_users_v9 (
        campaign_num INTEGER NOT NULL,
        queue_seq    INTEGER NOT NULL,
        state        TEXT NOT NULL,
        attempts     INTEGER NOT NULL DEFAULT 0,
        due_ms       INTEGER NOT NULL,
        PRIMARY KEY (campaign_num, queue_seq)
    ) WITHOUT ROWID;
    INSERT INTO campaign_users_v9 (campaign_num, queue_seq, state, attempts, due_ms)
        SELECT k.seq, u.queue_seq, u.state, u.attempts, u.due_ms
        FROM campaign_users u JOIN campaigns k ON k.id = u.campaign_id
        ORDER BY k.seq, u.queue_seq;
    DROP TABLE campaign_users;
    ALTER TABLE campaign_users_v9 RENAME TO campaign_users;
    "#,
    // 10: a cohort's lookup entries are packed, 48 to a row (`store/cohort_phones.rs`): its
    // hashes in order, each followed by its row as a big-endian 32-bit number, keyed by the
    // first hash of the block. A million-row upload wrote a million rows of 20 bytes, a fifth
    // of its time; it now writes about 21,000. Existing entries are carried over, packed as
    // `index_phones` packs them (an entry whose hash is not 16 bytes could match no lookup,
    // and would misalign its block: it is left out).
    r#"
    CREATE TABLE cohort_phone_blocks (
        cohort_num INTEGER NOT NULL REFERENCES cohorts (num) ON DELETE CASCADE,
        first_hash BLOB NOT NULL,
        entries    BLOB NOT NULL,
        PRIMARY KEY (cohort_num, first_hash)
    ) WITHOUT ROWID;
    INSERT INTO cohort_phone_blocks (cohort_num, first_hash, entries)
        SELECT cohort_num, MIN(phone_hash),
               unhex(group_concat(hex(phone_hash) || printf('%08X', row_no), '' ORDER BY phone_hash))
        FROM (SELECT cohort_num, phone_hash, row_no,
                     (row_number() OVER (PARTITION BY cohort_num ORDER BY phone_hash) - 1) / 48 AS block
              FROM cohort_phones WHERE length(phone_hash) = 16)
        GROUP BY cohort_num, block
        ORDER BY cohort_num, block;
    DROP TABLE cohort_phones;
    "#,
    // 11: `campaign_users` is keyed by one integer, its rowid `id`, instead of the campaign's
    // number and the queue order: each admitted cohort takes a range of ids (`first_user` +
    // its row, up to `last_user`, in `campaign_cohorts`). The engine updates one row per
    // dial; finding it by one integer in a rowid table, and rewriting a record of three
    // columns, is about a quarter cheaper than the two-column key's search and the delete and
    // insert of a table without rowid. Existing rows are carried over, each campaign's
    // cohorts given consecutive ranges in admission order (a user whose cohort has no row in
    // `campaign_cohorts` belonged to no admission, and is left out: admission writes both).
    r#"
    ALTER TABLE campaign_cohorts ADD COLUMN first_user INTEGER;
    ALTER TABLE campaign_cohorts ADD COLUMN last_user INTEGER;
    UPDATE campaign_cohorts SET first_user = s.first_user, last_user = s.first_user + s.last_row
    FROM (
        SELECT k.id AS campaign_id, u.queue_seq >> 32 AS position,
               MAX(u.queue_seq & 4294967295) AS last_row,
               1 + COALESCE(SUM(MAX(u.queue_seq & 4294967295) + 1) OVER (
                   ORDER BY k.seq, u.queue_seq >> 32
                   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS first_user
        FROM campaign_users u JOIN campaigns k ON k.seq = u.campaign_num
        GROUP BY k.seq, u.queue_seq >> 32
    ) AS s
    WHERE campaign_cohorts.campaign_id = s.campaign_id AND campaign_cohorts.position = s.position;
    CREATE TABLE campaign_users_v11 (
        id       INTEGER PRIMARY KEY,
        state    TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        due_ms   INTEGER NOT NULL
    );
    INSERT INTO campaign_users_v11 (id, state, attempts, due_ms)
        SELECT a.first_user + (u.queue_seq & 4294967295), u.state, u.attempts, u.due_ms
        FROM campaign_users u JOIN campaigns k ON k.seq = u.campaign_num
        JOIN campaign_cohorts a ON a.campaign_id = k.id AND a.position = u.queue_seq >> 32
        ORDER BY 1;
    DROP TABLE campaign_users;
    ALTER TABLE campaign_users_v11 RENAME TO campaign_users;
    "#,
    // 12: a campaign's revision, counted up by every change made through the API
    // (`campaigns::update`: a PATCH, a pause, a resume, a cancel). The engine takes a change
    // in when the revision differs from the one it runs. It compared `updated_ms`, which two
    // changes at one instant (a create and a PATCH, a pause and a resume, on a simulated
    // clock that did not move) leave as it was: the engine that looked between the two
    // missed the second.
    r#"
    ALTER TABLE campaigns ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
    "#,
];

/// Brings the schema up to date.
pub(super) fn run(conn: &Connection) -> Result<(), StoreError> {
    let done: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(done as usize) {
        let tx = conn.unchecked_transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        tx.commit()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
