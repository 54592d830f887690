//! The database behind a [`History`]: the values that go in and come out, statements with
//! `$N` placeholders run on either store, and transactions.

use crate::copy::CopyMessage;
use crate::{pg, History, HistoryError};
use rusqlite::Connection;
use std::cell::RefCell;

/// The database behind a [`History`].
pub(crate) enum Store {
    Sqlite(Connection),
    // A RefCell because reading needs the connection's buffers; a History is used by one
    // thread at a time.
    Postgres(Box<RefCell<pg::Client>>),
}

/// A value going to or coming from the database.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl Cell {
    pub(crate) fn text(self) -> Option<String> {
        match self {
            Cell::Null => None,
            Cell::Int(i) => Some(i.to_string()),
            Cell::Real(r) => Some(r.to_string()),
            Cell::Text(t) => Some(t),
            Cell::Blob(b) => Some(String::from_utf8_lossy(&b).into_owned()),
        }
    }
    /// The bytes of a BLOB (BYTEA) column; PostgreSQL sends them as text, `\x` and hex.
    pub(crate) fn bytes(self) -> Option<Vec<u8>> {
        match self {
            Cell::Blob(b) => Some(b),
            Cell::Text(t) => {
                let hex = t.strip_prefix("\\x")?.as_bytes();
                hex.chunks(2)
                    .map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
                    .collect()
            }
            _ => None,
        }
    }
    pub(crate) fn string(self) -> String {
        self.text().unwrap_or_default()
    }
    pub(crate) fn int(&self) -> i64 {
        match self {
            Cell::Int(i) => *i,
            Cell::Real(r) => *r as i64,
            Cell::Text(t) => t.parse().unwrap_or(0),
            Cell::Null | Cell::Blob(_) => 0,
        }
    }
    /// NULL (how NaN is stored) reads as NaN.
    pub(crate) fn real(&self) -> f64 {
        match self {
            Cell::Int(i) => *i as f64,
            Cell::Real(r) => *r,
            Cell::Text(t) => t.parse().unwrap_or(f64::NAN),
            Cell::Null | Cell::Blob(_) => f64::NAN,
        }
    }
    /// As PostgreSQL reads a text parameter.
    pub(crate) fn pg_text(&self) -> Option<String> {
        match self {
            Cell::Null => None,
            Cell::Int(i) => Some(i.to_string()),
            Cell::Real(r) if r.is_infinite() => {
                Some(if *r > 0.0 { "Infinity" } else { "-Infinity" }.into())
            }
            Cell::Real(r) => Some(r.to_string()),
            Cell::Text(t) => Some(t.clone()),
            Cell::Blob(b) => {
                let mut hex = String::with_capacity(2 + 2 * b.len());
                hex.push_str("\\x");
                for byte in b {
                    use std::fmt::Write as _;
                    let _ = write!(hex, "{byte:02x}");
                }
                Some(hex)
            }
        }
    }

    /// The field as PostgreSQL's binary COPY takes it: the column types oscost's tables use
    /// (TEXT, INTEGER as 4 bytes, DOUBLE PRECISION, BYTEA), NULL as length -1. How rows were
    /// written before [`crate::copy`]; kept as the reference its output is held to.
    #[cfg(test)]
    pub(crate) fn copy_binary(&self, out: &mut Vec<u8>) {
        let mut field = |bytes: &[u8]| {
            out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
            out.extend_from_slice(bytes);
        };
        match self {
            Cell::Null => out.extend_from_slice(&(-1i32).to_be_bytes()),
            Cell::Int(i) => field(&(*i as i32).to_be_bytes()),
            Cell::Real(r) => field(&r.to_be_bytes()),
            Cell::Text(t) => field(t.as_bytes()),
            Cell::Blob(b) => field(b),
        }
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Cell {
        Cell::Text(s.to_owned())
    }
}
impl From<&String> for Cell {
    fn from(s: &String) -> Cell {
        Cell::Text(s.clone())
    }
}
impl From<String> for Cell {
    fn from(s: String) -> Cell {
        Cell::Text(s)
    }
}
impl From<i64> for Cell {
    fn from(i: i64) -> Cell {
        Cell::Int(i)
    }
}
impl<T: Into<Cell>> From<Option<T>> for Cell {
    fn from(v: Option<T>) -> Cell {
        v.map_or(Cell::Null, Into::into)
    }
}
/// NaN is stored as NULL (SQLite would anyway).
pub(crate) fn real(v: f64) -> Cell {
    if v.is_nan() {
        Cell::Null
    } else {
        Cell::Real(v)
    }
}

impl rusqlite::ToSql for Cell {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        // Borrowed: a document's body is not copied again to be bound.
        Ok(ToSqlOutput::Borrowed(match self {
            Cell::Null => ValueRef::Null,
            Cell::Int(i) => ValueRef::Integer(*i),
            Cell::Real(r) => ValueRef::Real(*r),
            Cell::Text(t) => ValueRef::Text(t.as_bytes()),
            Cell::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

fn from_sqlite(v: rusqlite::types::Value) -> Cell {
    use rusqlite::types::Value;
    match v {
        Value::Null => Cell::Null,
        Value::Integer(i) => Cell::Int(i),
        Value::Real(r) => Cell::Real(r),
        Value::Text(t) => Cell::Text(t),
        Value::Blob(b) => Cell::Blob(b),
    }
}

impl History {
    /// The rows `sql` (with `$N` placeholders) gives.
    pub(crate) fn query(&self, sql: &str, params: &[Cell]) -> Result<Vec<Vec<Cell>>, HistoryError> {
        match &self.store {
            Store::Sqlite(conn) => {
                let mut st = conn.prepare_cached(&sql.replace('$', "?"))?;
                let n = st.column_count();
                let rows = st.query_map(rusqlite::params_from_iter(params), |r| {
                    (0..n)
                        .map(|i| r.get::<_, rusqlite::types::Value>(i).map(from_sqlite))
                        .collect::<rusqlite::Result<Vec<Cell>>>()
                })?;
                Ok(rows.collect::<rusqlite::Result<_>>()?)
            }
            Store::Postgres(client) => {
                let text = params.iter().map(Cell::pg_text).collect();
                let mut out = client.borrow_mut().run(&[(sql, text)])?;
                let rows = out.pop().map(|o| o.rows).unwrap_or_default();
                Ok(rows
                    .into_iter()
                    .map(|r| {
                        r.into_iter()
                            .map(|c| c.map_or(Cell::Null, Cell::Text))
                            .collect()
                    })
                    .collect())
            }
        }
    }

    /// Runs writes in order, each with its parameters; returns the rows each one touched. On
    /// PostgreSQL they go in one exchange with the server.
    pub(crate) fn execute(
        &self,
        statements: &[(&str, Vec<Cell>)],
    ) -> Result<Vec<u64>, HistoryError> {
        match &self.store {
            Store::Sqlite(conn) => statements
                .iter()
                .map(|(sql, params)| {
                    let mut st = conn.prepare_cached(&sql.replace('$', "?"))?;
                    Ok(st.execute(rusqlite::params_from_iter(params))? as u64)
                })
                .collect(),
            Store::Postgres(client) => {
                let text: Vec<(&str, Vec<Option<String>>)> = statements
                    .iter()
                    .map(|(sql, p)| (*sql, p.iter().map(Cell::pg_text).collect()))
                    .collect();
                Ok(client
                    .borrow_mut()
                    .run(&text)?
                    .iter()
                    .map(|o| o.affected)
                    .collect())
            }
        }
    }

    /// Appends rows to `table` (the values of `columns` in order) inside the transaction
    /// begun: on PostgreSQL one binary `COPY` of `copy`, rows already written in its form
    /// (an INTEGER column takes 4 bytes), sent as they are; on SQLite a prepared insert per row
    /// of `cells`, asked for only there. No conflict is allowed for: the caller inserts only
    /// rows of runs it has just inserted itself.
    pub(crate) fn append<'a, 'c>(
        &self,
        table: &str,
        columns: &[&str],
        copy: impl Iterator<Item = &'a CopyMessage>,
        cells: impl FnOnce() -> &'c [Vec<Cell>],
    ) -> Result<u64, HistoryError> {
        let names = columns.join(", ");
        match &self.store {
            Store::Sqlite(conn) => {
                let rows = cells();
                if rows.is_empty() {
                    return Ok(0);
                }
                let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
                let mut st = conn.prepare_cached(&format!(
                    "INSERT INTO {table} ({names}) VALUES ({})",
                    marks.join(", ")
                ))?;
                let mut n = 0;
                for row in rows {
                    n += st.execute(rusqlite::params_from_iter(row))? as u64;
                }
                Ok(n)
            }
            Store::Postgres(client) => {
                let messages: Vec<&CopyMessage> = copy.filter(|m| m.rows() > 0).collect();
                if messages.is_empty() {
                    return Ok(0);
                }
                Ok(client.borrow_mut().copy_in_rows(
                    &format!("COPY {table} ({names}) FROM STDIN (FORMAT binary)"),
                    &messages,
                )?)
            }
        }
    }

    /// What goes in `runs.document` for a run whose document is in `documents`: the column
    /// is NOT NULL in SQLite, whose tables cannot drop that, and JSONB in PostgreSQL.
    pub(crate) fn no_document(&self) -> Cell {
        match &self.store {
            Store::Sqlite(_) => Cell::Text(String::new()),
            Store::Postgres(_) => Cell::Null,
        }
    }

    /// Runs `f` in a write transaction: all of it is kept, or none.
    pub(crate) fn write<T>(
        &mut self,
        f: impl FnOnce(&History) -> Result<T, HistoryError>,
    ) -> Result<T, HistoryError> {
        // SQLite: IMMEDIATE takes the write lock at the start, so a second writer waits (busy
        // timeout) instead of failing when it would upgrade a read lock in the middle.
        let (begin, commit, rollback) = match &self.store {
            Store::Sqlite(_) => ("BEGIN IMMEDIATE", "COMMIT", "ROLLBACK"),
            Store::Postgres(_) => ("BEGIN", "COMMIT", "ROLLBACK"),
        };
        self.batch(begin)?;
        match f(self) {
            Ok(v) => {
                self.batch(commit)?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.batch(rollback);
                Err(e)
            }
        }
    }

    fn batch(&self, sql: &str) -> Result<(), HistoryError> {
        match &self.store {
            Store::Sqlite(conn) => Ok(conn.execute_batch(sql)?),
            Store::Postgres(client) => Ok(client.borrow_mut().batch(sql)?),
        }
    }
}

/// The next cell of a row (NULL past its end, which the queries above never reach).
pub(crate) fn next(row: &mut impl Iterator<Item = Cell>) -> Cell {
    row.next().unwrap_or(Cell::Null)
}

pub(crate) fn first(row: Vec<Cell>) -> Cell {
    row.into_iter().next().unwrap_or(Cell::Null)
}
