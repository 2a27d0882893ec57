//! Where the seeded id generators stand, kept in the database so that a restarted platform
//! carries on drawing where it stopped.
//!
//! Resource ids (campaigns, deployments, cohorts, attempts, inbound calls) come from one
//! stream of the seed ([`contracts::ids::stream::RESOURCES`]). Every draw records the
//! stream's new position in `id_state` before the id is used, on the writer connection, so
//! the position in the database is always the position in memory: the same seed and the same
//! requests give the same ids whether or not the platform was stopped (cleanly or killed) in
//! between, and a restart never draws an id again. A platform started with another seed over
//! the same database starts that seed's stream from its beginning (ids of different seeds are
//! different streams of 100 random bits).
//!
//! Request ids sent to other services come from another stream
//! ([`contracts::ids::stream::REQUESTS`]): each start takes a fresh segment of 2^40 words of
//! it (counted in `id_state` too), so they never repeat across restarts either, and drawing
//! them never moves the resource stream.

use contracts::ids::{IdGen, stream};
use rusqlite::{Connection, OptionalExtension, params};

use super::StoreError;

/// Migration 5: the table of generator positions.
pub(super) const MIGRATION: &str = r#"
    CREATE TABLE id_state (
        stream    TEXT PRIMARY KEY,
        seed      INTEGER NOT NULL,
        word_pos  INTEGER NOT NULL
    ) WITHOUT ROWID;
"#;

const RESOURCES: &str = "resources";
const REQUEST_SEGMENTS: &str = "request_segments";
/// Words of the request stream each start may use: 2^38 request ids, far more than a run
/// draws.
const REQUEST_SEGMENT_WORDS: u128 = 1 << 40;

/// The resource id generator of a platform, whose position lives in the database.
#[derive(Debug)]
pub(crate) struct PersistentIds {
    generator: IdGen,
}

impl PersistentIds {
    /// The generator of `seed`, at the position the database kept for that seed (its start
    /// when none, or when the database was last used with another seed).
    pub(crate) fn load(c: &Connection, seed: u64) -> Result<PersistentIds, StoreError> {
        let kept: Option<(i64, i64)> = c
            .query_row(
                "SELECT seed, word_pos FROM id_state WHERE stream = ?1",
                [RESOURCES],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let word_pos = match kept {
            Some((s, pos)) if s == seed as i64 => u128::try_from(pos).unwrap_or(0),
            _ => 0,
        };
        Ok(PersistentIds {
            generator: IdGen::seeded_at(seed, stream::RESOURCES, word_pos),
        })
    }

    /// The seed.
    pub(crate) fn seed(&self) -> u64 {
        self.generator.seed()
    }

    /// Draws with `f` and records the stream's new position on `c`, the writer connection,
    /// before answering. Call it with the writer held (so that draws and records keep one
    /// order), outside any transaction or inside the one that stores what the id names (a
    /// create: the id and the resource commit together; a rollback leaves an id that named
    /// nothing stored, which a restart may draw again). When the record fails the draw is
    /// undone and the error answered: nothing drawn goes unrecorded.
    pub(crate) fn draw<T>(
        &self,
        c: &Connection,
        f: impl FnOnce(&IdGen) -> T,
    ) -> Result<T, StoreError> {
        let before = self.generator.word_pos();
        let out = f(&self.generator);
        let after = i64::try_from(self.generator.word_pos())
            .map_err(|_| StoreError::Corrupt("the id stream's position passed 2^63 words".into()));
        let recorded = after.and_then(|after| {
            c.execute(
                "INSERT INTO id_state (stream, seed, word_pos) VALUES (?1, ?2, ?3)
                 ON CONFLICT (stream) DO UPDATE SET seed = excluded.seed, word_pos = excluded.word_pos",
                params![RESOURCES, self.seed() as i64, after],
            )
            .map_err(StoreError::from)
        });
        match recorded {
            Ok(_) => Ok(out),
            Err(e) => {
                self.generator.set_word_pos(before);
                Err(e)
            }
        }
    }
}

/// The request id generator of this start of the platform: a segment of the request stream
/// no earlier start used (counted in `id_state`).
pub(crate) fn request_ids(c: &Connection, seed: u64) -> Result<IdGen, StoreError> {
    let segment: i64 = c
        .query_row(
            "INSERT INTO id_state (stream, seed, word_pos) VALUES (?1, ?2, 1)
             ON CONFLICT (stream) DO UPDATE SET word_pos = word_pos + 1
             RETURNING word_pos - 1",
            params![REQUEST_SEGMENTS, seed as i64],
            |r| r.get(0),
        )
        .map_err(StoreError::from)?;
    let start = u128::try_from(segment).unwrap_or(0) * REQUEST_SEGMENT_WORDS;
    Ok(IdGen::seeded_at(seed, stream::REQUESTS, start))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(MIGRATION).unwrap();
        c
    }

    #[test]
    fn a_reloaded_generator_carries_on_where_the_last_draw_left_it() {
        let c = db();
        let straight = IdGen::seeded(9);
        let expected: Vec<String> = (0..4).map(|_| straight.campaign_id()).collect();
        let mut got = {
            let ids = PersistentIds::load(&c, 9).unwrap();
            vec![
                ids.draw(&c, |g| g.campaign_id()).unwrap(),
                ids.draw(&c, |g| g.campaign_id()).unwrap(),
            ]
        };
        // As after a restart: a new generator from what the database kept.
        let again = PersistentIds::load(&c, 9).unwrap();
        got.push(again.draw(&c, |g| g.campaign_id()).unwrap());
        got.push(again.draw(&c, |g| g.campaign_id()).unwrap());
        assert_eq!(got, expected, "the same ids as without the reload");
        // Another seed starts its own stream from the beginning.
        let other = PersistentIds::load(&c, 10).unwrap();
        assert_eq!(
            other.draw(&c, |g| g.campaign_id()).unwrap(),
            IdGen::seeded(10).campaign_id()
        );
    }

    #[test]
    fn a_draw_whose_position_cannot_be_kept_is_undone() {
        let c = db();
        let ids = PersistentIds::load(&c, 9).unwrap();
        c.execute_batch("DROP TABLE id_state").unwrap();
        assert!(ids.draw(&c, |g| g.campaign_id()).is_err());
        c.execute_batch(MIGRATION).unwrap();
        assert_eq!(
            ids.draw(&c, |g| g.campaign_id()).unwrap(),
            IdGen::seeded(9).campaign_id(),
            "the failed draw was undone"
        );
    }

    #[test]
    fn each_start_draws_request_ids_from_its_own_segment() {
        let c = db();
        let first = request_ids(&c, 9).unwrap().uuid_v4();
        let second = request_ids(&c, 9).unwrap().uuid_v4();
        assert_ne!(first, second);
        assert_eq!(
            first,
            IdGen::seeded_at(9, stream::REQUESTS, 0).uuid_v4(),
            "the first start begins the stream"
        );
    }
}
