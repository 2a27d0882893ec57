//! The times of a campaign's dials ([`DialTimes`]), in the order they were made, in about
//! four bytes each: the 2.6 million dials of a 1,000,000-user run fit in 10 MB where one
//! `i64` each (and a growing `Vec`'s spare half) took up to 50.

/// Times a block holds at most.
const BLOCK: usize = 4096;

/// Dial times (milliseconds since the epoch), each no earlier than the one before, as the
/// engine makes dials: in blocks of up to [`BLOCK`], each a first time and every time's
/// offset from it. Counts the dials between two instants by two binary searches.
#[derive(Clone, Debug, Default)]
pub(crate) struct DialTimes {
    /// The blocks, oldest first.
    blocks: Vec<Block>,
    /// Times in all.
    len: u64,
}

#[derive(Clone, Debug)]
struct Block {
    /// The block's first time.
    first: i64,
    /// Times in the blocks before this one.
    before: u64,
    /// Each time's offset from `first` (the first's is 0).
    offsets: Vec<u32>,
}

impl DialTimes {
    /// Adds a time, no earlier than the last one added (an earlier one, or one more than
    /// 49 days after its block's first, starts a block of its own).
    pub(crate) fn push(&mut self, ms: i64) {
        let len = self.len;
        self.len += 1;
        if let Some(b) = self.blocks.last_mut()
            && b.offsets.len() < BLOCK
            && let Some(offset) = ms.checked_sub(b.first).and_then(|d| u32::try_from(d).ok())
        {
            b.offsets.push(offset);
            return;
        }
        let mut offsets = Vec::with_capacity(BLOCK);
        offsets.push(0);
        self.blocks.push(Block {
            first: ms,
            before: len,
            offsets,
        });
    }

    /// Every time.
    #[cfg(test)]
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Times before `ms`.
    fn before(&self, ms: i64) -> u64 {
        let i = self.blocks.partition_point(|b| b.first < ms);
        let Some(b) = i.checked_sub(1).map(|i| &self.blocks[i]) else {
            return 0;
        };
        let within = b.offsets.partition_point(|o| b.first + i64::from(*o) < ms);
        b.before + within as u64
    }

    /// Times in `[from, until)` (milliseconds since the epoch).
    pub(crate) fn between(&self, from: i64, until: i64) -> u64 {
        self.before(until).saturating_sub(self.before(from))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain count the blocks must agree with.
    fn naive(times: &[i64], from: i64, until: i64) -> u64 {
        times.iter().filter(|t| **t >= from && **t < until).count() as u64
    }

    #[test]
    fn counts_agree_with_a_plain_list_across_blocks_ties_and_long_gaps() {
        // Dials 20 ms apart, ties, and gaps longer than a block's offsets can hold (u32
        // milliseconds: 49.7 days), over more than three blocks.
        let mut times = vec![];
        let mut t: i64 = 1_772_438_400_000;
        for i in 0..(3 * BLOCK as i64 + 700) {
            t += match i % 997 {
                0 => 60 * 86_400_000,
                k if k % 5 == 0 => 0,
                _ => 20,
            };
            times.push(t);
        }
        let mut log = DialTimes::default();
        for t in &times {
            log.push(*t);
        }
        assert_eq!(log.len(), times.len() as u64);
        assert!(log.blocks.len() > 4, "the gaps start blocks of their own");
        let (lo, hi) = (times[0], *times.last().unwrap());
        let probes: Vec<i64> = times
            .iter()
            .step_by(37)
            .flat_map(|t| [t - 1, *t, t + 1])
            .chain([lo - 1_000, hi + 1_000, i64::MIN, i64::MAX])
            .collect();
        for (i, from) in probes.iter().enumerate() {
            for until in probes.iter().skip(i).step_by(11) {
                assert_eq!(
                    log.between(*from, *until),
                    naive(&times, *from, *until),
                    "[{from}, {until})"
                );
            }
        }
        assert_eq!(log.between(hi, lo), 0, "an empty span counts nothing");
        assert_eq!(DialTimes::default().between(lo, hi), 0);
    }
}
