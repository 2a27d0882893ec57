//! The duplicate table: which accepted rows of a cohort hold a phone number, exactly, in
//! the cohort's lookup entries (20 bytes per accepted row, kept anyway for the
//! `cohort_phone_blocks` index) and 8-byte slots pointing into them.

use super::DUPLICATE_LOAD;
use crate::store::cohorts::PhoneEntry;

/// The accepted numbers of a cohort: its lookup entries (keyed hash and row, in row order),
/// which [`index_phones`](crate::store::cohorts::index_phones) writes once the cohort is
/// stored, and an open-addressing table (linear probing) over them of
/// `fingerprint << 32 | position + 1`, where the fingerprint is 32 bits of the keyed phone
/// hash whose top bits also choose the slot, and 0 marks a free slot. A fingerprint match
/// is confirmed against the full hash of the entry it points to: nothing is read back from
/// the store.
pub(crate) struct SeenNumbers {
    slots: Vec<u64>,
    bits: u32,
    entries: Vec<PhoneEntry>,
}

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
            entries: Vec::new(),
        }
    }

    fn home(fp: u32, bits: u32) -> usize {
        (fp as usize) >> (32 - bits)
    }

    /// The first accepted row with this number, if any.
    pub(crate) fn first_row(&self, hash: &[u8; 16]) -> Option<u64> {
        let fp = fingerprint(hash);
        let mask = self.slots.len() - 1;
        let mut i = Self::home(fp, self.bits);
        loop {
            let slot = self.slots[i];
            if slot == 0 {
                return None;
            }
            if (slot >> 32) as u32 == fp {
                let e = &self.entries[(slot & 0xFFFF_FFFF) as usize - 1];
                if e.phone_hash == *hash {
                    return Some(u64::from(e.row_no));
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// Records an accepted row (after [`SeenNumbers::first_row`] found none). Rows come in
    /// increasing order; a cohort has fewer than 2^32 rows.
    pub(crate) fn insert(&mut self, hash: &[u8; 16], row_no: u64) {
        if (self.entries.len() + 1) as f64 > self.slots.len() as f64 * DUPLICATE_LOAD {
            self.grow();
        }
        self.entries.push(PhoneEntry {
            phone_hash: *hash,
            row_no: u32::try_from(row_no).expect("a cohort has fewer than 2^32 rows"),
        });
        Self::place(
            &mut self.slots,
            self.bits,
            u64::from(fingerprint(hash)) << 32 | self.entries.len() as u64,
        );
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

    /// The lookup entries of the accepted rows, in row order; the table is freed.
    pub(crate) fn into_entries(self) -> Vec<PhoneEntry> {
        self.entries
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

    #[test]
    fn the_table_finds_every_repeat_and_nothing_else() {
        let mut s = SeenNumbers::new();
        for n in 1..=100_000 {
            assert_eq!(s.first_row(&h(n)), None);
            s.insert(&h(n), n);
        }
        assert!(s.slots.len() as f64 * DUPLICATE_LOAD >= 100_000.0);
        assert!(
            s.slots.len() <= 1 << 18,
            "8 bytes a slot, at most {} slots",
            1 << 18
        );
        for n in (1..=100_000).step_by(997) {
            assert_eq!(s.first_row(&h(n)), Some(n));
        }
        for n in 200_000..210_000 {
            assert_eq!(s.first_row(&h(n)), None);
        }
        let entries = s.into_entries();
        assert_eq!(entries.len(), 100_000);
        assert_eq!(
            entries[41],
            PhoneEntry {
                phone_hash: h(42),
                row_no: 42
            },
            "in row order"
        );
    }

    #[test]
    fn a_fingerprint_match_is_confirmed_against_the_full_hash() {
        let mut s = SeenNumbers::new();
        let a = h(1);
        let mut b = a;
        b[15] ^= 1; // same fingerprint, another number
        s.insert(&a, 1);
        assert_eq!(s.first_row(&a), Some(1));
        assert_eq!(s.first_row(&b), None);
        s.insert(&b, 2);
        assert_eq!(s.first_row(&b), Some(2));
        assert_eq!(s.first_row(&a), Some(1));
    }
}
