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
mod tests {
    use super::*;

    /// Runs the migrations up to number `n` (1-based), as `run` would have at that version.
    fn migrate_to(c: &Connection, n: usize) {
        let done: i64 = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        for (i, sql) in MIGRATIONS[..n].iter().enumerate().skip(done as usize) {
            c.execute_batch(sql).unwrap();
            c.pragma_update(None, "user_version", i as i64 + 1).unwrap();
        }
    }

    #[test]
    fn migrations_run_once_and_record_the_version() {
        let c = Connection::open_in_memory().unwrap();
        run(&c).unwrap();
        run(&c).unwrap();
        let v: i64 = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v as usize, MIGRATIONS.len());
    }

    #[test]
    fn migration_2_carries_phone_lookups_over() {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(MIGRATIONS[0]).unwrap();
        c.pragma_update(None, "user_version", 1).unwrap();
        c.execute_batch(
            "INSERT INTO cohorts (id, seq, org_id, workspace_id, parent_kind, parent_id, name, status,
                                  source_type, category, created_by, updated_by, created_ms, updated_ms)
             VALUES ('coh-1', 1, 'o', 'w', 'deployment', 'dep-1', 'n', 'completed', 'stream', 'cohort',
                     'a', 'a', 0, 0);
             INSERT INTO cohort_users VALUES ('coh-1', 1, x'01', x'00'), ('coh-1', 2, x'02', x'00');",
        )
        .unwrap();
        migrate_to(&c, 9);
        // Carried over by migration 2, then keyed by the cohort's number by migration 8.
        let rows: Vec<(String, Vec<u8>, i64)> = c
            .prepare(
                "SELECT k.id, p.phone_hash, p.row_no FROM cohort_phones p
                 JOIN cohorts k ON k.num = p.cohort_num ORDER BY p.row_no",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            rows,
            [("coh-1".into(), vec![1], 1), ("coh-1".into(), vec![2], 2)]
        );
        let index: i64 = c
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name = 'cohort_users_phone'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(index, 0);
    }

    #[test]
    fn migration_7_drops_last_result_and_keeps_every_user() {
        let c = Connection::open_in_memory().unwrap();
        for (i, sql) in MIGRATIONS[..6].iter().enumerate() {
            c.execute_batch(sql).unwrap();
            c.pragma_update(None, "user_version", i as i64 + 1).unwrap();
        }
        c.execute_batch(
            "INSERT INTO campaign_users VALUES ('cmp-1', 1, 'coh-1', 1, 'done', 2, 5, 'busy'),
                                               ('cmp-1', 2, 'coh-1', 2, 'ready', 1, 7, NULL);",
        )
        .unwrap();
        migrate_to(&c, 7);
        let rows: Vec<(i64, String, i64, i64)> = c
            .prepare("SELECT * FROM campaign_users ORDER BY queue_seq")
            .unwrap()
            .query_map([], |r| Ok((r.get(1)?, r.get(4)?, r.get(5)?, r.get(6)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows, [(1, "done".into(), 2, 5), (2, "ready".into(), 1, 7)]);
        let columns: i64 = c
            .query_row(
                "SELECT COUNT(*) FROM pragma_table_info('campaign_users')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(columns, 7);
    }

    #[test]
    fn migration_8_keys_the_lookup_entries_by_the_cohorts_number() {
        let c = Connection::open_in_memory().unwrap();
        c.pragma_update(None, "foreign_keys", "ON").unwrap();
        for (i, sql) in MIGRATIONS[..7].iter().enumerate() {
            c.execute_batch(sql).unwrap();
            c.pragma_update(None, "user_version", i as i64 + 1).unwrap();
        }
        c.execute_batch(
            "INSERT INTO cohorts (id, seq, org_id, workspace_id, parent_kind, parent_id, name, status,
                                  source_type, category, created_by, updated_by, created_ms, updated_ms)
             VALUES ('coh-a', 4, 'o', 'w', 'deployment', 'dep-1', 'n', 'completed', 'stream', 'cohort', 'a', 'a', 0, 0),
                    ('coh-b', 9, 'o', 'w', 'deployment', 'dep-1', 'n', 'completed', 'stream', 'cohort', 'a', 'a', 0, 0);
             INSERT INTO cohort_phones VALUES ('coh-a', x'01', 1), ('coh-a', x'02', 2), ('coh-b', x'01', 7);",
        )
        .unwrap();
        migrate_to(&c, 9);
        let entries = |c: &Connection| -> Vec<(String, Vec<u8>, i64)> {
            c.prepare(
                "SELECT k.id, p.phone_hash, p.row_no FROM cohort_phones p
                 JOIN cohorts k ON k.num = p.cohort_num ORDER BY k.id, p.phone_hash",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
        };
        assert_eq!(
            entries(&c),
            [
                ("coh-a".into(), vec![1], 1),
                ("coh-a".into(), vec![2], 2),
                ("coh-b".into(), vec![1], 7)
            ]
        );
        // Deleting a cohort deletes its entries, and only its own.
        c.execute("DELETE FROM cohorts WHERE id = 'coh-a'", [])
            .unwrap();
        assert_eq!(entries(&c), [("coh-b".into(), vec![1], 7)]);
        let all: i64 = c
            .query_row("SELECT COUNT(*) FROM cohort_phones", [], |r| r.get(0))
            .unwrap();
        assert_eq!(all, 1);
    }

    #[test]
    fn migration_9_keys_campaign_users_by_the_campaigns_number() {
        let c = Connection::open_in_memory().unwrap();
        migrate_to(&c, 8);
        c.execute_batch(
            "INSERT INTO campaigns (id, seq, org_id, workspace_id, name, status, start_ms, end_ms, spec,
                                    created_by, updated_by, created_ms, updated_ms)
             VALUES ('cmp-a', 3, 'o', 'w', 'a', 'active', 0, 1, '{}', 'x', 'x', 0, 0),
                    ('cmp-b', 7, 'o', 'w', 'b', 'active', 0, 1, '{}', 'x', 'x', 0, 0);
             INSERT INTO campaign_users (campaign_id, queue_seq, cohort_id, row_no, state, attempts, due_ms)
             VALUES ('cmp-b', 5, 'coh-1', 5, 'calling', 1, 70),
                    ('cmp-a', 4294967298, 'coh-2', 2, 'done', 3, 50),
                    ('cmp-a', 9, 'coh-1', 9, 'ready', 0, 10);",
        )
        .unwrap();
        run(&c).unwrap();
        let rows: Vec<(String, i64, String, i64, i64)> = c
            .prepare(
                "SELECT k.id, u.queue_seq, u.state, u.attempts, u.due_ms FROM campaign_users u
                 JOIN campaigns k ON k.seq = u.campaign_num ORDER BY k.id, u.queue_seq",
            )
            .unwrap()
            .query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            rows,
            [
                ("cmp-a".into(), 9, "ready".into(), 0, 10),
                ("cmp-a".into(), 4294967298, "done".into(), 3, 50),
                ("cmp-b".into(), 5, "calling".into(), 1, 70),
            ]
        );
        let columns: Vec<String> = c
            .prepare("SELECT name FROM pragma_table_info('campaign_users') ORDER BY cid")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            columns,
            ["campaign_num", "queue_seq", "state", "attempts", "due_ms"]
        );
    }

    #[test]
    fn migration_10_packs_the_lookup_entries_as_index_phones_does() {
        use crate::store::cohort_phones::{PhoneEntry, find_row, index_phones};
        let hash = |i: u32| -> [u8; 16] {
            let mut h = [0u8; 16];
            h[..4].copy_from_slice(&i.wrapping_mul(0x9E37_79B9).to_be_bytes());
            h[4..8].copy_from_slice(&i.to_be_bytes());
            h
        };
        // Three blocks (48, 48 and 4 entries) in one cohort, one entry in another.
        let a: Vec<PhoneEntry> = (1..=100)
            .map(|i| PhoneEntry {
                phone_hash: hash(i),
                row_no: i * 3,
            })
            .collect();
        let b = vec![PhoneEntry {
            phone_hash: hash(1),
            row_no: 7,
        }];
        let cohorts = "INSERT INTO cohorts (id, seq, num, org_id, workspace_id, parent_kind, parent_id, name, status,
                                            source_type, category, created_by, updated_by, created_ms, updated_ms)
             VALUES ('coh-a', 4, 4, 'o', 'w', 'deployment', 'dep-1', 'n', 'completed', 'stream', 'cohort', 'a', 'a', 0, 0),
                    ('coh-b', 9, 9, 'o', 'w', 'deployment', 'dep-1', 'n', 'completed', 'stream', 'cohort', 'a', 'a', 0, 0);";
        let old = Connection::open_in_memory().unwrap();
        migrate_to(&old, 9);
        old.execute_batch(cohorts).unwrap();
        for (num, entries) in [(4, &a), (9, &b)] {
            for e in entries {
                old.execute(
                    "INSERT INTO cohort_phones (cohort_num, phone_hash, row_no) VALUES (?1, ?2, ?3)",
                    rusqlite::params![num, &e.phone_hash[..], e.row_no],
                )
                .unwrap();
            }
        }
        // An entry whose hash is not 16 bytes is left out.
        old.execute(
            "INSERT INTO cohort_phones (cohort_num, phone_hash, row_no) VALUES (9, x'01', 999)",
            [],
        )
        .unwrap();
        migrate_to(&old, 10);
        let new = Connection::open_in_memory().unwrap();
        run(&new).unwrap();
        new.execute_batch(cohorts).unwrap();
        index_phones(&new, "coh-a", &mut a.clone()).unwrap();
        index_phones(&new, "coh-b", &mut b.clone()).unwrap();
        let blocks = |c: &Connection| -> Vec<(i64, Vec<u8>, Vec<u8>)> {
            c.prepare("SELECT * FROM cohort_phone_blocks ORDER BY cohort_num, first_hash")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        assert_eq!(blocks(&old).len(), 4);
        assert_eq!(blocks(&old), blocks(&new));
        for e in &a {
            assert_eq!(find_row(&old, 4, &e.phone_hash).unwrap(), Some(e.row_no));
        }
        assert_eq!(find_row(&old, 9, &hash(1)).unwrap(), Some(7));
        assert_eq!(find_row(&old, 9, &hash(2)).unwrap(), None);
        let left: i64 = old
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name = 'cohort_phones'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(left, 0);
        // Deleting a cohort (a deployment's deletion deletes its cohorts) deletes its blocks,
        // and only its own.
        old.pragma_update(None, "foreign_keys", "ON").unwrap();
        old.execute("DELETE FROM cohorts WHERE id = 'coh-a'", [])
            .unwrap();
        let nums: Vec<i64> = blocks(&old).into_iter().map(|(num, ..)| num).collect();
        assert_eq!(nums, [9]);
    }
}
