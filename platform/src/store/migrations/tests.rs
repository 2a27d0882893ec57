//! The migrations, each from the schema before it, with rows to carry over.

use super::*;
use crate::store::testing::rows;

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

/// The columns of `table`, in order.
fn columns(c: &Connection, table: &str) -> Vec<String> {
    rows(
        c,
        "SELECT name FROM pragma_table_info(?1) ORDER BY cid",
        [table],
        |r| r.get(0),
    )
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
    migrate_to(&c, 1);
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
    let rows: Vec<(String, Vec<u8>, i64)> = rows(
        &c,
        "SELECT k.id, p.phone_hash, p.row_no FROM cohort_phones p
             JOIN cohorts k ON k.num = p.cohort_num ORDER BY p.row_no",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    );
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
    migrate_to(&c, 6);
    c.execute_batch(
        "INSERT INTO campaign_users VALUES ('cmp-1', 1, 'coh-1', 1, 'done', 2, 5, 'busy'),
                                           ('cmp-1', 2, 'coh-1', 2, 'ready', 1, 7, NULL);",
    )
    .unwrap();
    migrate_to(&c, 7);
    let rows: Vec<(i64, String, i64, i64)> = rows(
        &c,
        "SELECT * FROM campaign_users ORDER BY queue_seq",
        [],
        |r| Ok((r.get(1)?, r.get(4)?, r.get(5)?, r.get(6)?)),
    );
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
    migrate_to(&c, 7);
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
        rows(
            c,
            "SELECT k.id, p.phone_hash, p.row_no FROM cohort_phones p
             JOIN cohorts k ON k.num = p.cohort_num ORDER BY k.id, p.phone_hash",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
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
    migrate_to(&c, 9);
    let rows: Vec<(String, i64, String, i64, i64)> = rows(
        &c,
        "SELECT k.id, u.queue_seq, u.state, u.attempts, u.due_ms FROM campaign_users u
             JOIN campaigns k ON k.seq = u.campaign_num ORDER BY k.id, u.queue_seq",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
    );
    assert_eq!(
        rows,
        [
            ("cmp-a".into(), 9, "ready".into(), 0, 10),
            ("cmp-a".into(), 4294967298, "done".into(), 3, 50),
            ("cmp-b".into(), 5, "calling".into(), 1, 70),
        ]
    );
    let columns = columns(&c, "campaign_users");
    assert_eq!(
        columns,
        ["campaign_num", "queue_seq", "state", "attempts", "due_ms"]
    );
}

#[test]
fn migration_11_gives_each_admitted_cohort_a_range_of_ids_and_keeps_every_user() {
    use crate::store::campaign_users::{Admitted, CampaignUsers, admitted_ranges, ready_users};
    let c = Connection::open_in_memory().unwrap();
    migrate_to(&c, 10);
    let q = |position: i64, row: i64| (position << 32) + row;
    c.execute_batch(
        "INSERT INTO campaigns (id, seq, org_id, workspace_id, name, status, start_ms, end_ms, spec,
                                created_by, updated_by, created_ms, updated_ms)
         VALUES ('cmp-a', 3, 'o', 'w', 'a', 'active', 0, 1, '{}', 'x', 'x', 0, 0),
                ('cmp-b', 7, 'o', 'w', 'b', 'active', 0, 1, '{}', 'x', 'x', 0, 0);
         INSERT INTO campaign_cohorts (campaign_id, cohort_id, position, admitted_ms)
         VALUES ('cmp-b', 'coh-3', 0, 0), ('cmp-a', 'coh-1', 0, 0), ('cmp-a', 'stp-1', 1, 0),
                ('cmp-a', 'coh-2', 2, 0);",
    )
    .unwrap();
    // (campaign number, queue order, state, attempts, due).
    let users = [
        (7, q(0, 5), "calling", 1, 70),
        (3, q(0, 9), "ready", 2, 90),
        (3, q(2, 2), "done", 3, 50),
        (3, q(0, 1), "ready", 0, 10),
        (3, q(0, 2), "excluded", 0, 20),
    ];
    for (num, seq, state, attempts, due) in users {
        c.execute(
            "INSERT INTO campaign_users (campaign_num, queue_seq, state, attempts, due_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![num, seq, state, attempts, due],
        )
        .unwrap();
    }
    run(&c).unwrap();
    // In campaign number and position order: rows 0 to 9 of cmp-a's first cohort, 0 to
    // 2 of its third, 0 to 5 of cmp-b's; the stop file took none.
    let range = |position, first_user, last_user| Admitted {
        position,
        first_user,
        last_user,
    };
    assert_eq!(
        admitted_ranges(&c, "cmp-a").unwrap(),
        [range(0, 1, 10), range(1, 0, -1), range(2, 11, 13)]
    );
    assert_eq!(admitted_ranges(&c, "cmp-b").unwrap(), [range(0, 14, 19)]);
    // Every user is where the writer looks for it, as it was.
    for (num, seq, state, attempts, due) in users {
        let campaign = if num == 3 { "cmp-a" } else { "cmp-b" };
        let id = CampaignUsers::read(&c, campaign)
            .unwrap()
            .user_id(seq)
            .unwrap();
        let row: (String, i64, i64) = c
            .query_row(
                "SELECT state, attempts, due_ms FROM campaign_users WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(row, (state.to_string(), attempts, due));
    }
    let count: i64 = c
        .query_row("SELECT COUNT(*) FROM campaign_users", [], |r| r.get(0))
        .unwrap();
    assert_eq!(count, users.len() as i64);
    let ready: Vec<(i64, u32, i64)> = ready_users(&c, "cmp-a")
        .unwrap()
        .into_iter()
        .map(|u| (u.queue_seq, u.attempts, u.due_ms))
        .collect();
    assert_eq!(ready, [(q(0, 1), 0, 10), (q(0, 9), 2, 90)]);
    let columns = columns(&c, "campaign_users");
    assert_eq!(columns, ["id", "state", "attempts", "due_ms"]);
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
        rows(
            c,
            "SELECT * FROM cohort_phone_blocks ORDER BY cohort_num, first_hash",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
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

#[test]
fn migration_12_gives_every_campaign_a_revision_from_0() {
    let c = Connection::open_in_memory().unwrap();
    migrate_to(&c, 11);
    c.execute_batch(
        "INSERT INTO campaigns (id, seq, org_id, workspace_id, name, status, start_ms, end_ms, spec,
                                created_by, updated_by, created_ms, updated_ms)
         VALUES ('cmp-a', 3, 'o', 'w', 'a', 'paused', 0, 1, '{}', 'x', 'x', 0, 5);",
    )
    .unwrap();
    migrate_to(&c, 12);
    assert_eq!(columns(&c, "campaigns").last().unwrap(), "revision");
    let live = crate::store::campaigns::live_campaign_ids(&c).unwrap();
    assert_eq!(live, [("cmp-a".to_string(), 0)]);
}
