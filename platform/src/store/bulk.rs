//! Many rows inserted with few statements: [`insert_rows`] binds [`ROWS_PER_STATEMENT`]
//! rows into one multi-row `INSERT ... VALUES (...), (...)` at a time, and the rest one by
//! one. Each statement SQLite runs costs its own setup, seek and tear-down; with 64 rows a
//! statement, a million lookup entries are written in under half the time of one statement
//! a row (measured on the cohort upload's lookup entries).
//!
//! [`insert_rows_sharing`] does the same for rows that share some of their values (a
//! campaign's dials: its workspace, campaign and cohort), which it binds once a statement
//! (`INSERT ... SELECT ?1, ?2, column1, ... FROM (VALUES (...), (...))`): SQLite copies every
//! text bound, so a value bound once instead of 64 times is 63 copies fewer.

use rusqlite::{Connection, Statement};

use super::StoreError;

/// Rows bound into one statement. With the widest rows written so (an attempt's 20
/// columns), 1,280 parameters: far under SQLite's limit (32,766).
pub(crate) const ROWS_PER_STATEMENT: usize = 64;

/// Inserts `rows` into `table (columns)` in order, binding each row's `columns.len()` values
/// with `bind(statement, first, row)`, where `first` is the 1-based index of the row's first
/// parameter. The statements are prepared once per connection (cached).
pub(crate) fn insert_rows<T>(
    c: &Connection,
    table: &str,
    columns: &[&str],
    rows: &[T],
    bind: impl FnMut(&mut Statement<'_>, usize, &T) -> rusqlite::Result<()>,
) -> Result<(), StoreError> {
    insert_rows_sharing(c, table, &[], |_| Ok(()), columns, rows, bind)
}

/// [`insert_rows`] for rows that have the values of the columns `shared` in common: they
/// are bound once a statement, by `bind_shared(statement)` as parameters 1 to
/// `shared.len()`; each row's own values follow (`first` counts from after them).
pub(crate) fn insert_rows_sharing<T>(
    c: &Connection,
    table: &str,
    shared: &[&str],
    mut bind_shared: impl FnMut(&mut Statement<'_>) -> rusqlite::Result<()>,
    columns: &[&str],
    rows: &[T],
    mut bind: impl FnMut(&mut Statement<'_>, usize, &T) -> rusqlite::Result<()>,
) -> Result<(), StoreError> {
    let (lead, width) = (shared.len(), columns.len());
    let one_row = format!("({})", vec!["?"; width].join(", "));
    let names = shared.iter().chain(columns).copied().collect::<Vec<_>>();
    let head = format!("INSERT INTO {table} ({})", names.join(", "));
    let mut chunks = rows.chunks_exact(ROWS_PER_STATEMENT);
    if chunks.len() > 0 {
        let values = vec![one_row.as_str(); ROWS_PER_STATEMENT].join(", ");
        let sql = if shared.is_empty() {
            format!("{head} VALUES {values}")
        } else {
            let picked = (1..=lead)
                .map(|i| format!("?{i}"))
                .chain((1..=width).map(|i| format!("column{i}")))
                .collect::<Vec<_>>();
            format!("{head} SELECT {} FROM (VALUES {values})", picked.join(", "))
        };
        let mut many = c.prepare_cached(&sql)?;
        bind_shared(&mut many)?;
        for chunk in chunks.by_ref() {
            for (i, row) in chunk.iter().enumerate() {
                bind(&mut many, lead + i * width + 1, row)?;
            }
            many.raw_execute()?;
        }
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut single = c.prepare_cached(&format!(
            "{head} VALUES ({})",
            vec!["?"; lead + width].join(", ")
        ))?;
        bind_shared(&mut single)?;
        for row in rest {
            bind(&mut single, lead + 1, row)?;
            single.raw_execute()?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch("CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT NOT NULL)")
            .unwrap();
        c
    }

    fn insert(c: &Connection, rows: &[(i64, String)]) -> Result<(), StoreError> {
        insert_rows(c, "t", &["a", "b"], rows, |s, first, (a, b)| {
            s.raw_bind_parameter(first, a)?;
            s.raw_bind_parameter(first + 1, b)
        })
    }

    fn stored(c: &Connection) -> Vec<(i64, String)> {
        c.prepare("SELECT a, b FROM t ORDER BY a")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn every_row_is_written_once_with_its_own_values() {
        // Around the statement's size: none, a remainder only, exact chunks, chunks and a
        // remainder.
        for n in [0, 1, 63, 64, 65, 128, 200] {
            let c = table();
            let rows: Vec<(i64, String)> = (0..n as i64).map(|i| (i, format!("v{i}"))).collect();
            insert(&c, &rows).unwrap();
            assert_eq!(stored(&c), rows, "{n} rows");
        }
    }

    #[test]
    fn shared_values_go_into_every_row_beside_its_own() {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(
            "CREATE TABLE s (g TEXT NOT NULL, a INTEGER PRIMARY KEY, h INTEGER, b TEXT)",
        )
        .unwrap();
        // Two groups, each through whole statements and a remainder, bound one after the
        // other on the same cached statements.
        for (group, n) in [("x", 130i64), ("y", 67)] {
            let base = if group == "x" { 0 } else { 1000 };
            let rows: Vec<(i64, String)> =
                (0..n).map(|i| (base + i, format!("{group}{i}"))).collect();
            insert_rows_sharing(
                &c,
                "s",
                &["g", "h"],
                |s| {
                    s.raw_bind_parameter(1, group)?;
                    s.raw_bind_parameter(2, base + 7)
                },
                &["a", "b"],
                &rows,
                |s, first, (a, b)| {
                    s.raw_bind_parameter(first, a)?;
                    s.raw_bind_parameter(first + 1, b)
                },
            )
            .unwrap();
        }
        let stored: Vec<(String, i64, i64, String)> = c
            .prepare("SELECT g, a, h, b FROM s ORDER BY a")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let want: Vec<(String, i64, i64, String)> = (0..130)
            .map(|i| ("x".to_string(), i, 7, format!("x{i}")))
            .chain((0..67).map(|i| ("y".to_string(), 1000 + i, 1007, format!("y{i}"))))
            .collect();
        assert_eq!(stored, want);
    }

    #[test]
    fn a_failing_row_is_reported() {
        let c = table();
        let mut rows: Vec<(i64, String)> = (0..100).map(|i| (i, format!("v{i}"))).collect();
        rows[70].0 = 3; // repeats a key of the first statement
        assert!(insert(&c, &rows).is_err());
    }
}
