//! Each called user's dials ([`UserLog`]): every dial's called number and attempt index,
//! packed in 8 bytes and appended as the dial is told, then grouped by user when a check
//! asks. Appending costs no lookup: a map of a million users, looked up at each dial, missed
//! the processor's caches twice a dial, about a sixth of the engine thread's time in a
//! 1,000,000-user run.

/// The bits of a packed dial that hold its attempt index.
const INDEX_BITS: u32 = 4;
/// The largest attempt index kept as itself (a larger one counts as this one).
const INDEX_MAX: u32 = (1 << INDEX_BITS) - 1;

const _: () = assert!(contracts::validate::limits::MAX_RETRIES_MAX <= INDEX_MAX);

/// A called number as the key of its user's dials, below 2^60 (so that a dial packs it with
/// its attempt index in 8 bytes): an E.164 number is its digits' value
/// ([`contracts::domain::phone::digits_value`], below 10^15 < 2^50); any other string a
/// hash of it at or above 2^59, so the two kinds never meet.
pub(crate) fn number_key(number: &str) -> u64 {
    contracts::domain::phone::digits_value(number).unwrap_or_else(|| {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        number.hash(&mut h);
        h.finish() >> (64 - 59) | 1 << 59
    })
}

/// One user's dials.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct UserDials {
    /// Dials.
    pub(crate) attempts: u32,
    /// Dials whose attempt index had been dialled before.
    pub(crate) repeats: u32,
    /// Attempt indices dialled (bit i: attempt index i).
    pub(crate) seen: u16,
}

impl UserDials {
    /// The dials of one user, in any order.
    fn of(dials: impl IntoIterator<Item = u64>) -> UserDials {
        let mut u = UserDials::default();
        for d in dials {
            let bit = 1u16 << (d & u64::from(INDEX_MAX));
            u.attempts += 1;
            if u.seen & bit != 0 {
                u.repeats += 1;
            }
            u.seen |= bit;
        }
        u
    }
}

/// A campaign's dials by user: each dial as `number_key << 4 | attempt index`, in the order
/// told until a check groups them (sorted in place, then kept sorted until the next dial).
#[derive(Clone, Debug, Default)]
pub(crate) struct UserLog {
    dials: Vec<u64>,
}

impl UserLog {
    /// Counts a dial of the user `number` ([`number_key`]) with its attempt index.
    pub(crate) fn push(&mut self, number: u64, attempt_index: u32) {
        debug_assert!(number < 1 << 60);
        self.dials
            .push(number << INDEX_BITS | u64::from(attempt_index.min(INDEX_MAX)));
    }

    /// Every dialled user's dials, in the order of their keys.
    pub(crate) fn users(&mut self) -> impl Iterator<Item = UserDials> + '_ {
        if !self.dials.is_sorted() {
            self.dials.sort_unstable();
        }
        self.dials
            .chunk_by(|a, b| a >> INDEX_BITS == b >> INDEX_BITS)
            .map(|dials| UserDials::of(dials.iter().copied()))
    }

    /// The dials of the user `number` ([`number_key`]); none when never dialled.
    pub(crate) fn user(&self, number: u64) -> UserDials {
        UserDials::of(
            self.dials
                .iter()
                .copied()
                .filter(|d| d >> INDEX_BITS == number),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_key_their_users_apart() {
        assert_eq!(number_key("+13125550100"), 13_125_550_100);
        assert_eq!(number_key("+999999999999999"), 999_999_999_999_999);
        // Not E.164 (a leading 0, too long, no `+`, not digits): hashed at or above 2^59,
        // below 2^60, apart from every E.164 number and from each other.
        for odd in [
            "+0123",
            "+1234567890123456",
            "13125550100",
            "+1312555010x",
            "+",
        ] {
            let k = number_key(odd);
            assert!((1 << 59..1 << 60).contains(&k), "{odd}: {k}");
        }
        assert_ne!(number_key("13125550100"), number_key("13125550101"));
    }

    #[test]
    fn dials_are_grouped_by_user_with_their_repeats() {
        let mut log = UserLog::default();
        let (a, b, odd) = (
            number_key("+13125550001"),
            number_key("+13125550002"),
            number_key("0044"),
        );
        for (n, i) in [(b, 0), (a, 0), (odd, 3), (a, 1), (a, 1), (b, 2), (a, 20)] {
            log.push(n, i);
        }
        assert_eq!(
            log.user(a),
            UserDials {
                attempts: 4,
                repeats: 1,
                seen: 0b1000_0000_0000_0011
            }
        );
        assert_eq!(log.user(number_key("+13125550003")), UserDials::default());
        let users: Vec<UserDials> = log.users().collect();
        assert_eq!(
            users,
            [
                log.user(a),
                UserDials {
                    attempts: 2,
                    repeats: 0,
                    seen: 0b101
                },
                UserDials {
                    attempts: 1,
                    repeats: 0,
                    seen: 0b1000
                },
            ]
        );
        // Dials told after a grouping are grouped with the earlier ones.
        log.push(b, 2);
        log.push(number_key("+13125550003"), 0);
        let users: Vec<(u32, u32)> = log.users().map(|u| (u.attempts, u.repeats)).collect();
        assert_eq!(users, [(4, 1), (3, 1), (1, 0), (1, 0)]);
    }
}
