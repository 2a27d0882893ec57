//! The lookup entries of cohorts (`cohort_phone_blocks`): which row of a cohort holds a
//! number, by the number's keyed hash ([`WorkspaceKeys::lookup_hash`]).
//!
//! A cohort's entries are written once, when its users are all stored ([`index_phones`]),
//! sorted by hash and packed [`BLOCK_ENTRIES`] to a row: the row is keyed by the cohort's
//! `num` and its first entry's hash, and holds the entries as one blob of 20 bytes each (the
//! 16-byte hash, then the row as a big-endian `u32`). A million-row upload writes about
//! 21,000 rows instead of a million, in key order; SQLite's cost is per row, so this takes
//! the lookup entries from a fifth of the upload's time to a small part of it.
//!
//! Reading them:
//! - [`find_row`]: one number in one cohort (inbound routing, stop files at each dial) reads
//!   the one block whose first hash is the greatest not above it, and searches it.
//! - [`rows_shared_with`]: which rows of a cohort hold a number that other cohorts hold too
//!   (stop files against a campaign's users) walks the cohorts' blocks side by side in hash
//!   order: each block is read once.
//!
//! [`WorkspaceKeys::lookup_hash`]: crate::keys::WorkspaceKeys::lookup_hash

use std::cmp::Ordering;

use rusqlite::{Connection, Row, Rows, params};

use super::{StoreError, bulk, optional};

/// A lookup entry of a cohort: the keyed hash of an accepted user's number and its row.
/// Ordered by hash, then row (the order [`index_phones`] writes them in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PhoneEntry {
    /// [`WorkspaceKeys::lookup_hash`](crate::keys::WorkspaceKeys::lookup_hash) of the E.164
    /// number.
    pub phone_hash: [u8; 16],
    /// Its row (a cohort has fewer than 2^32 rows: an upload with more fails).
    pub row_no: u32,
}

/// Entries a block holds. 48 entries (960 bytes) keep a block's record within what a page
/// of 4 KiB holds of a `WITHOUT ROWID` row itself (about 1,000 bytes): a lookup reads one
/// page, without an overflow page.
pub(crate) const BLOCK_ENTRIES: usize = 48;

/// Bytes of one packed entry: the hash, then the row (big-endian `u32`).
const ENTRY_BYTES: usize = 20;

/// Writes the lookup entries (hash to row) of a cohort whose users are all stored: `entries`
/// are its accepted users' (taken as they were admitted, so the rows are not read back),
/// sorted here by hash when they are not, and packed into blocks of [`BLOCK_ENTRIES`]. Call
/// it in the transaction that completes the cohort. A cohort's numbers are unique (repeats
/// are rejected); should a hash come twice, its first row is kept.
pub fn index_phones(
    c: &Connection,
    cohort_id: &str,
    entries: &mut [PhoneEntry],
) -> Result<(), StoreError> {
    if !entries.is_sorted() {
        entries.sort_unstable();
    }
    let unique = dedup_sorted(entries);
    let num = cohort_num(c, cohort_id)?
        .ok_or(StoreError::Sqlite(rusqlite::Error::QueryReturnedNoRows))?;
    let blocks: Vec<&[PhoneEntry]> = entries[..unique].chunks(BLOCK_ENTRIES).collect();
    let mut packed = Vec::with_capacity(BLOCK_ENTRIES * ENTRY_BYTES);
    bulk::insert_rows(
        c,
        "cohort_phone_blocks",
        &["cohort_num", "first_hash", "entries"],
        &blocks,
        |s, i, block| {
            packed.clear();
            for e in *block {
                packed.extend_from_slice(&e.phone_hash);
                packed.extend_from_slice(&e.row_no.to_be_bytes());
            }
            s.raw_bind_parameter(i, num)?;
            s.raw_bind_parameter(i + 1, &block[0].phone_hash[..])?;
            // Bound as a copy: `packed` is refilled for the next block.
            s.raw_bind_parameter(i + 2, &packed[..])
        },
    )
}

/// The number (`cohorts.num`) that keys cohort `id`'s lookup entries, if the cohort exists.
pub(crate) fn cohort_num(c: &Connection, id: &str) -> Result<Option<i64>, StoreError> {
    let mut stmt = c.prepare_cached("SELECT num FROM cohorts WHERE id = ?1")?;
    optional(stmt.query_row(params![id], |r| r.get(0)))
}

/// Moves the first entry of each run of equal hashes in sorted `entries` to its front;
/// answers how many there are.
fn dedup_sorted(entries: &mut [PhoneEntry]) -> usize {
    let mut kept = 0;
    for i in 0..entries.len() {
        if kept == 0 || entries[kept - 1].phone_hash != entries[i].phone_hash {
            entries[kept] = entries[i];
            kept += 1;
        }
    }
    kept
}

/// The row of cohort `cohort_num` that holds the number with this hash, if any.
pub(crate) fn find_row(
    c: &Connection,
    cohort_num: i64,
    phone_hash: &[u8; 16],
) -> Result<Option<u32>, StoreError> {
    let mut stmt = c.prepare_cached(
        "SELECT entries FROM cohort_phone_blocks
         WHERE cohort_num = ?1 AND first_hash <= ?2
         ORDER BY first_hash DESC LIMIT 1",
    )?;
    let mut rows = stmt.query(params![cohort_num, &phone_hash[..]])?;
    let Some(r) = rows.next()? else {
        return Ok(None);
    };
    let block = entries_of(r)?;
    let n = block.len() / ENTRY_BYTES;
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        let e = &block[mid * ENTRY_BYTES..][..ENTRY_BYTES];
        match e[..16].cmp(&phone_hash[..]) {
            Ordering::Less => lo = mid + 1,
            Ordering::Greater => hi = mid,
            Ordering::Equal => return Ok(Some(row_of(e))),
        }
    }
    Ok(None)
}

/// The rows of cohort `cohort_num` whose number one of the cohorts `others` holds too, in
/// the order of the numbers' hashes. Each block of these cohorts is read once.
pub(crate) fn rows_shared_with(
    c: &Connection,
    cohort_num: i64,
    others: &[i64],
) -> Result<Vec<u32>, StoreError> {
    const BLOCKS: &str =
        "SELECT entries FROM cohort_phone_blocks WHERE cohort_num = ?1 ORDER BY first_hash";
    let mut found = Vec::new();
    if others.is_empty() {
        return Ok(found);
    }
    let mut stmts = Vec::with_capacity(others.len() + 1);
    for _ in 0..=others.len() {
        stmts.push(c.prepare(BLOCKS)?);
    }
    let mut stmts = stmts.iter_mut();
    let mut own = Cursor::new(stmts.next().expect("one statement per cohort"), cohort_num)?;
    let mut theirs = stmts
        .zip(others)
        .map(|(s, &num)| Cursor::new(s, num))
        .collect::<Result<Vec<_>, _>>()?;
    while let Some(e) = own.current()? {
        let hash: [u8; 16] = e[..16].try_into().expect("16 bytes");
        let row = row_of(e);
        for other in &mut theirs {
            if other.seek(&hash)? {
                found.push(row);
                break;
            }
        }
        own.advance();
    }
    Ok(found)
}

/// A walk through one cohort's entries in hash order, a block at a time.
struct Cursor<'s> {
    rows: Rows<'s>,
    ended: bool,
    block: Vec<u8>,
    at: usize,
}

impl<'s> Cursor<'s> {
    fn new(stmt: &'s mut rusqlite::Statement<'_>, cohort_num: i64) -> Result<Self, StoreError> {
        Ok(Cursor {
            rows: stmt.query(params![cohort_num])?,
            ended: false,
            block: Vec::with_capacity(BLOCK_ENTRIES * ENTRY_BYTES),
            at: 0,
        })
    }

    /// The entry under the cursor (hash and row, packed), reading the next block when this
    /// one is done; `None` past the last.
    fn current(&mut self) -> Result<Option<&[u8]>, StoreError> {
        while self.at + ENTRY_BYTES > self.block.len() {
            if self.ended {
                return Ok(None);
            }
            match self.rows.next()? {
                Some(r) => {
                    self.block.clear();
                    self.block.extend_from_slice(entries_of(r)?);
                    self.at = 0;
                }
                None => self.ended = true,
            }
        }
        Ok(Some(&self.block[self.at..self.at + ENTRY_BYTES]))
    }

    fn advance(&mut self) {
        self.at += ENTRY_BYTES;
    }

    /// Moves to the first entry whose hash is not below `hash`; answers whether it is
    /// `hash`. The hashes sought must not decrease.
    fn seek(&mut self, hash: &[u8; 16]) -> Result<bool, StoreError> {
        while let Some(e) = self.current()? {
            match e[..16].cmp(&hash[..]) {
                Ordering::Less => self.advance(),
                Ordering::Equal => return Ok(true),
                Ordering::Greater => return Ok(false),
            }
        }
        Ok(false)
    }
}

/// A block's packed entries (column 0).
fn entries_of<'r>(r: &'r Row<'_>) -> Result<&'r [u8], StoreError> {
    r.get_ref(0)?
        .as_blob()
        .map_err(|_| StoreError::Corrupt("a block of lookup entries is not a blob".into()))
}

fn row_of(entry: &[u8]) -> u32 {
    u32::from_be_bytes(entry[16..20].try_into().expect("4 bytes"))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// A database at the current schema with cohorts `coh-1` .. `coh-n` (num 1 .. n).
    fn conn(cohorts: i64) -> Connection {
        let c = Connection::open_in_memory().unwrap();
        super::super::migrations::run(&c).unwrap();
        for num in 1..=cohorts {
            c.execute(
                "INSERT INTO cohorts (id, seq, num, org_id, workspace_id, parent_kind, parent_id, name, status,
                                      source_type, category, created_by, updated_by, created_ms, updated_ms)
                 VALUES (?1, ?2, ?2, 'o', 'w', 'campaign', 'cmp-1', 'n', 'processing', 'file_upload', 'cohort',
                         'a', 'a', 0, 0)",
                params![format!("coh-{num}"), num],
            )
            .unwrap();
        }
        c
    }

    /// A hash spread like a keyed hash's, distinct for each `i`.
    fn hash(i: u32) -> [u8; 16] {
        let mut h = [0u8; 16];
        h[..4].copy_from_slice(&i.wrapping_mul(0x9E37_79B9).to_be_bytes());
        h[4..8].copy_from_slice(&i.to_be_bytes());
        h[15] = 0x5a;
        h
    }

    fn entries(ids: impl IntoIterator<Item = u32>) -> Vec<PhoneEntry> {
        ids.into_iter()
            .map(|i| PhoneEntry {
                phone_hash: hash(i),
                row_no: i + 1,
            })
            .collect()
    }

    #[test]
    fn every_entry_is_found_in_its_block_and_no_other_number_is() {
        let c = conn(1);
        // Not sorted: index_phones sorts them.
        let mut all = entries((0..1000).rev());
        index_phones(&c, "coh-1", &mut all).unwrap();
        let blocks: Vec<Vec<u8>> = c
            .prepare("SELECT entries FROM cohort_phone_blocks ORDER BY first_hash")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        // 20 full blocks and one of the 40 left.
        assert_eq!(blocks.len(), 21);
        assert!(
            blocks[..20]
                .iter()
                .all(|b| b.len() == BLOCK_ENTRIES * ENTRY_BYTES)
        );
        assert_eq!(blocks[20].len(), 40 * ENTRY_BYTES);
        for i in 0..1000 {
            assert_eq!(find_row(&c, 1, &hash(i)).unwrap(), Some(i + 1), "entry {i}");
        }
        // Around and between the stored hashes, and in a cohort without entries.
        let mut absent = vec![[0u8; 16], [0xff; 16]];
        absent.extend((0..1000).map(|i| {
            let mut h = hash(i);
            h[15] ^= 1;
            h
        }));
        for h in absent {
            assert_eq!(find_row(&c, 1, &h).unwrap(), None, "{h:?}");
        }
        assert_eq!(find_row(&c, 2, &hash(5)).unwrap(), None);
    }

    #[test]
    fn a_repeated_number_keeps_its_first_row() {
        let c = conn(1);
        let mut all = entries(0..100);
        all.push(PhoneEntry {
            phone_hash: hash(47),
            row_no: 500,
        });
        all.push(PhoneEntry {
            phone_hash: hash(47),
            row_no: 7,
        });
        index_phones(&c, "coh-1", &mut all).unwrap();
        assert_eq!(find_row(&c, 1, &hash(47)).unwrap(), Some(7));
        for i in (0..100).filter(|i| *i != 47) {
            assert_eq!(find_row(&c, 1, &hash(i)).unwrap(), Some(i + 1));
        }
    }

    #[test]
    fn shared_rows_are_exactly_those_whose_number_another_cohort_holds() {
        let c = conn(4);
        let own: Vec<u32> = (0..700).collect();
        let second: Vec<u32> = (300..900).step_by(3).collect();
        let third: Vec<u32> = (0..20).chain([699, 5000]).collect();
        for (id, ids) in [("coh-1", &own), ("coh-2", &second), ("coh-3", &third)] {
            index_phones(&c, id, &mut entries(ids.iter().copied())).unwrap();
        }
        let expect = |others: &[&Vec<u32>]| -> BTreeSet<u32> {
            own.iter()
                .filter(|i| others.iter().any(|o| o.contains(i)))
                .map(|i| i + 1)
                .collect()
        };
        let shared = |others: &[i64]| -> BTreeSet<u32> {
            let rows = rows_shared_with(&c, 1, others).unwrap();
            let set: BTreeSet<u32> = rows.iter().copied().collect();
            assert_eq!(set.len(), rows.len(), "each row once");
            set
        };
        assert_eq!(shared(&[2]), expect(&[&second]));
        assert_eq!(shared(&[3]), expect(&[&third]));
        assert_eq!(shared(&[2, 3]), expect(&[&second, &third]));
        assert_eq!(shared(&[3, 2]), expect(&[&second, &third]));
        // A cohort without entries, and none at all.
        assert!(shared(&[4]).is_empty());
        assert!(shared(&[]).is_empty());
        assert_eq!(shared(&[1]).len(), own.len());
    }
}
