//! The crawl binary's own records, kept in the dedup store's redb file so
//! they commit in the same transaction as the dedup tiers.

use anyhow::Result;
use redb::{ReadableDatabase, Table, TableDefinition, WriteTransaction};

/// Checkpoints: sink offsets, batch progress, counters.
pub const STATE: TableDefinition<&str, &[u8]> = TableDefinition::new("crawl_state");

/// Opens the state table on a write transaction.
pub fn open(txn: &WriteTransaction) -> Result<Table<'_, &'static str, &'static [u8]>, redb::TableError> {
    txn.open_table(STATE)
}

/// Reads a value outside any write transaction.
pub fn read(db: &redb::Database, key: &str) -> Result<Option<Vec<u8>>> {
    let txn = db.begin_read()?;
    let table = match txn.open_table(STATE) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    Ok(table.get(key)?.map(|v| v.value().to_vec()))
}

/// Reads a JSON value outside any write transaction.
pub fn read_json<T: serde::de::DeserializeOwned>(db: &redb::Database, key: &str) -> Result<Option<T>> {
    match read(db, key)? {
        Some(bytes) => Ok(Some(serde_json::from_slice(&bytes)?)),
        None => Ok(None),
    }
}

/// Writes a JSON value in a write transaction.
pub fn put_json<T: serde::Serialize>(
    table: &mut Table<'_, &'static str, &'static [u8]>,
    key: &str,
    value: &T,
) -> Result<(), dedup::Error> {
    let bytes = serde_json::to_vec(value).map_err(|e| dedup::Error::Storage(e.into()))?;
    table
        .insert(key, bytes.as_slice())
        .map_err(|e| dedup::Error::Storage(e.into()))?;
    Ok(())
}

/// Maps any error into the dedup crate's storage error, for use inside
/// `RedbStore::write_with` closures.
pub fn store_err(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> dedup::Error {
    dedup::Error::Storage(e.into())
}
