//! The duplicate table: which accepted rows of a cohort hold a phone number, in about 8
//! bytes per row, exactly (a fingerprint match is confirmed against the full keyed hash).
//!
//! The table holds `fingerprint << 32 | row` slots. The full hash of an earlier row comes
//! from the batch being built, from a batch sent to the writer but not yet committed, or
//! from the store; the caller says where the committed rows are.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use super::DUPLICATE_LOAD;
use crate::store::StoreError;
use crate::store::cohorts::NewUser;

/// The accepted numbers of a cohort, for exact duplicate detection in 8 bytes per slot: an
/// open-addressing table (linear probing) of `fingerprint << 32 | row`, where the
/// fingerprint is 32 bits of the keyed phone hash whose top bits also choose the slot, and
/// row 0 marks a free slot. A fingerprint match is confirmed against the earlier row's full
/// hash: from the batch being built, from a batch sent but not yet committed (copies kept
/// until the writer commits them), or from the store.
pub(crate) struct SeenNumbers {
    slots: Vec<u64>,
    bits: u32,
    len: usize,
    in_flight: VecDeque<SentBatch>,
}

/// A batch sent to the writer: its number and the `(row, hash)` of its users, in row order.
type SentBatch = (u64, Vec<(u64, [u8; 16])>);

fn fingerprint(hash: &[u8; 16]) -> u32 {
    u32::from_le_bytes(hash[..4].try_into().expect("4 bytes"))
}

impl Default for SeenNumbers {
    fn default() -> Self {
        Self::new()
    }
}

impl SeenNumbers {
    const START_BITS: u32 = 12;

    /// An empty table of 4096 slots; it doubles as it fills.
    pub(crate) fn new() -> Self {
        SeenNumbers {
            slots: vec![0; 1 << Self::START_BITS],
            bits: Self::START_BITS,
            len: 0,
            in_flight: VecDeque::new(),
        }
    }

    fn home(fp: u32, bits: u32) -> usize {
        (fp as usize) >> (32 - bits)
    }

    /// The first accepted row with this number, if any. `current` is the batch being built
    /// (in row order); `committed` counts the batches the writer has committed; `stored`
    /// reads a committed row's hash.
    pub(crate) fn first_row(
        &mut self,
        hash: &[u8; 16],
        current: &[NewUser],
        committed: &AtomicU64,
        mut stored: impl FnMut(u64) -> Result<Option<[u8; 16]>, StoreError>,
    ) -> Result<Option<u64>, StoreError> {
        let fp = fingerprint(hash);
        let mask = self.slots.len() - 1;
        let mut i = Self::home(fp, self.bits);
        let done = committed.load(Ordering::Acquire);
        while self.in_flight.front().is_some_and(|(no, _)| *no < done) {
            self.in_flight.pop_front();
        }
        loop {
            let slot = self.slots[i];
            if slot == 0 {
                return Ok(None);
            }
            if (slot >> 32) as u32 == fp {
                let row = slot & 0xFFFF_FFFF;
                let earlier = match current.binary_search_by_key(&row, |u| u.row_no) {
                    Ok(k) => Some(current[k].phone_hash),
                    Err(_) => match self.in_flight.iter().find_map(|(_, rows)| {
                        rows.binary_search_by_key(&row, |(r, _)| *r)
                            .ok()
                            .map(|k| rows[k].1)
                    }) {
                        Some(h) => Some(h),
                        None => stored(row)?,
                    },
                };
                if earlier.as_ref() == Some(hash) {
                    return Ok(Some(row));
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// Records an accepted row (after [`SeenNumbers::first_row`] found none).
    pub(crate) fn insert(&mut self, hash: &[u8; 16], row_no: u64) {
        if (self.len + 1) as f64 > self.slots.len() as f64 * DUPLICATE_LOAD {
            self.grow();
        }
        Self::place(
            &mut self.slots,
            self.bits,
            u64::from(fingerprint(hash)) << 32 | row_no,
        );
        self.len += 1;
    }

    fn place(slots: &mut [u64], bits: u32, entry: u64) {
        let mask = slots.len() - 1;
        let mut i = Self::home((entry >> 32) as u32, bits);
        while slots[i] != 0 {
            i = (i + 1) & mask;
        }
        slots[i] = entry;
    }

    fn grow(&mut self) {
        let bits = self.bits + 1;
        let mut slots = vec![0u64; 1 << bits];
        for &entry in self.slots.iter().filter(|e| **e != 0) {
            Self::place(&mut slots, bits, entry);
        }
        self.slots = slots;
        self.bits = bits;
    }

    /// The batch `no` went to the writer: keep its hashes until it is committed.
    pub(crate) fn batch_sent(&mut self, no: u64, users: &[NewUser]) {
        self.in_flight
            .push_back((no, users.iter().map(|u| (u.row_no, u.phone_hash)).collect()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(n: u64) -> [u8; 16] {
        // Spread like a keyed hash.
        let mut out = [0u8; 16];
        let x = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xDEAD_BEEF;
        let y = n.wrapping_mul(0xC2B2_AE3D_27D4_EB4F).rotate_left(17);
        out[..8].copy_from_slice(&x.to_le_bytes());
        out[8..].copy_from_slice(&y.to_le_bytes());
        out
    }

    fn user(row_no: u64, hash: [u8; 16]) -> NewUser {
        NewUser {
            row_no,
            phone_hash: hash,
            data: Vec::new(),
        }
    }

    #[test]
    fn the_table_finds_every_repeat_and_nothing_else() {
        let committed = AtomicU64::new(0);
        let mut s = SeenNumbers::new();
        let mut lookups = 0;
        // 100,000 numbers, all "committed": the store answers by row.
        let stored = |row: u64| -> Result<Option<[u8; 16]>, StoreError> { Ok(Some(h(row))) };
        for n in 1..=100_000 {
            assert_eq!(s.first_row(&h(n), &[], &committed, stored).unwrap(), None);
            s.insert(&h(n), n);
        }
        assert!(s.slots.len() as f64 * DUPLICATE_LOAD >= 100_000.0);
        assert!(
            s.slots.len() <= 1 << 18,
            "8 bytes a slot, at most {} slots",
            1 << 18
        );
        for n in (1..=100_000).step_by(997) {
            let found = s
                .first_row(&h(n), &[], &committed, |row| {
                    lookups += 1;
                    stored(row)
                })
                .unwrap();
            assert_eq!(found, Some(n));
        }
        for n in 200_000..210_000 {
            assert_eq!(s.first_row(&h(n), &[], &committed, stored).unwrap(), None);
        }
        assert!(lookups >= 101, "confirmed against the store");
    }

    #[test]
    fn a_fingerprint_match_is_confirmed_against_the_full_hash() {
        let committed = AtomicU64::new(0);
        let mut s = SeenNumbers::new();
        let a = h(1);
        let mut b = a;
        b[15] ^= 1; // same fingerprint, another number
        s.insert(&a, 1);
        let current = [user(1, a)];
        let none = |_: u64| -> Result<Option<[u8; 16]>, StoreError> { Ok(None) };
        assert_eq!(
            s.first_row(&a, &current, &committed, none).unwrap(),
            Some(1)
        );
        assert_eq!(s.first_row(&b, &current, &committed, none).unwrap(), None);
        s.insert(&b, 2);
        let current = [user(1, a), user(2, b)];
        assert_eq!(
            s.first_row(&b, &current, &committed, none).unwrap(),
            Some(2)
        );
    }

    #[test]
    fn rows_are_found_in_the_batch_in_flight_until_it_is_committed() {
        let committed = AtomicU64::new(0);
        let mut s = SeenNumbers::new();
        s.insert(&h(1), 1);
        s.batch_sent(0, &[user(1, h(1))]);
        let none = |_: u64| -> Result<Option<[u8; 16]>, StoreError> { Ok(None) };
        assert_eq!(
            s.first_row(&h(1), &[], &committed, none).unwrap(),
            Some(1),
            "in flight"
        );
        committed.store(1, Ordering::Release);
        assert_eq!(
            s.first_row(&h(1), &[], &committed, none).unwrap(),
            None,
            "committed: only the store knows it now"
        );
        assert!(s.in_flight.is_empty());
        let stored = |_: u64| -> Result<Option<[u8; 16]>, StoreError> { Ok(Some(h(1))) };
        assert_eq!(
            s.first_row(&h(1), &[], &committed, stored).unwrap(),
            Some(1)
        );
    }
}
