//! The index of a set's originals (`PREFIX-originals.redb`): the first
//! response of each payload, for the revisit records of later copies.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::{Context, Result};
use redb::{Database, ReadOnlyTable, ReadableDatabase, ReadableTable, TableDefinition};

use super::{WarcAt, WarcSettings};

/// The earlier response of a payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Original {
    pub(super) uri: String,
    pub(super) date: String,
    pub(super) id: String,
}

/// Payload digest -> its first response (`Original`) and where that
/// response's record ends (serial, offset).
pub(super) const ORIGINALS: TableDefinition<&[u8], (u64, u64, &str, &str, &str)> =
    TableDefinition::new("originals");
/// Where a record of [`ORIGINALS`] ends -> its payload digest: what a cut
/// back to a checkpoint removes.
pub(super) const ENDS: TableDefinition<(u64, u64), &[u8]> = TableDefinition::new("ends");

/// The originals of a set, persisted next to its files
/// (`PREFIX-originals.redb`): revisits need no scan of the archives when
/// the writer opens (a resume, or a refused acknowledgement in the shared
/// mode), and memory holds only the originals written since the last sync.
///
/// Crash-consistent: an entry is committed only after its record is synced
/// to its file, and opening at a checkpoint first removes (durably) every
/// entry past it, before anything is written there again; so an entry never
/// names a record that is not in the archive. The reverse (a record without
/// an entry, e.g. a set from before the index, or a crash between the sync
/// and the commit) only means a later copy of it is archived in full.
#[derive(Debug, Clone)]
pub(super) struct Index {
    db: std::sync::Arc<Database>,
    path: PathBuf,
    /// The originals as of this index's last change, read by [`Index::get`]
    /// until the next one ([`Index::add`], [`Index::cut`]): a read
    /// transaction begun and the table opened for each response archived
    /// were 3.5% of the writer thread's perf samples in a `--warc` `crawl
    /// bench` (issue 37). Only this process writes the file (redb refuses a
    /// second), so nothing else can make it stale. Not shared by clones.
    reader: Reader,
}

/// [`Index::reader`]: `None` until the first look-up after a change.
#[derive(Default)]
struct Reader(std::cell::RefCell<Option<Originals>>);

/// The originals table of a read transaction.
type Originals = ReadOnlyTable<&'static [u8], (u64, u64, &'static str, &'static str, &'static str)>;

impl Clone for Reader {
    fn clone(&self) -> Self {
        Reader::default()
    }
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reader")
    }
}

impl Index {
    pub(super) fn open(settings: &WarcSettings) -> Result<Index> {
        let path = settings
            .warc_dir
            .join(format!("{}-originals.redb", settings.warc_prefix));
        let db = match Database::create(&path) {
            Ok(db) => db,
            // In use: another writer of the same set.
            Err(e @ redb::DatabaseError::DatabaseAlreadyOpen) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("cannot open the revisit index {}", path.display())));
            }
            // Unreadable: an empty index is a correct one (copies of the
            // payloads it held are archived in full).
            Err(e) => {
                tracing::warn!(
                    "the revisit index {} is unreadable ({e}); starting it anew",
                    path.display()
                );
                std::fs::remove_file(&path).with_context(|| format!("cannot delete {}", path.display()))?;
                Database::create(&path)
                    .with_context(|| format!("cannot create the revisit index {}", path.display()))?
            }
        };
        Ok(Index {
            db: std::sync::Arc::new(db),
            path,
            reader: Reader::default(),
        })
    }

    fn context(&self) -> String {
        format!("the revisit index {}", self.path.display())
    }

    /// Removes every entry whose record ends past `at` (`at.serial` and
    /// later files when `at.offset` is 0: a file begun anew).
    pub(super) fn cut(&self, at: WarcAt) -> Result<()> {
        self.reader.0.replace(None);
        let txn = self.db.begin_write().with_context(|| self.context())?;
        {
            let mut ends = txn.open_table(ENDS).with_context(|| self.context())?;
            let mut originals = txn.open_table(ORIGINALS).with_context(|| self.context())?;
            let start = (at.serial, at.offset.saturating_add(1));
            let mut gone = Vec::new();
            for e in ends.range(start..).with_context(|| self.context())? {
                let (k, v) = e.with_context(|| self.context())?;
                gone.push((k.value(), v.value().to_vec()));
            }
            for (end, digest) in &gone {
                ends.remove(end).with_context(|| self.context())?;
                originals
                    .remove(digest.as_slice())
                    .with_context(|| self.context())?;
            }
        }
        txn.commit().with_context(|| self.context())
    }

    /// Drops the read snapshot: another clone of this index (the
    /// appender thread's, [`super::WarcSink::sync`]) committed since it
    /// was taken.
    pub(super) fn forget_snapshot(&self) {
        self.reader.0.replace(None);
    }

    pub(super) fn get(&self, digest: &[u8; 20]) -> Result<Option<Original>> {
        let mut reader = self.reader.0.borrow_mut();
        let table = match &mut *reader {
            Some(t) => t,
            None => {
                let txn = self.db.begin_read().with_context(|| self.context())?;
                match txn.open_table(ORIGINALS) {
                    Ok(t) => reader.insert(t),
                    Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
                    Err(e) => return Err(anyhow::Error::new(e).context(self.context())),
                }
            }
        };
        Ok(table
            .get(digest.as_slice())
            .with_context(|| self.context())?
            .map(|v| {
                let (_, _, uri, date, id) = v.value();
                Original {
                    uri: uri.to_string(),
                    date: date.to_string(),
                    id: id.to_string(),
                }
            }))
    }

    /// Commits `pending` (records synced to their files).
    pub(super) fn add(&self, pending: &HashMap<[u8; 20], (WarcAt, Original)>) -> Result<()> {
        if pending.is_empty() {
            return Ok(());
        }
        // The snapshot read so far goes: it would hold the pages this
        // commit frees, and miss what it adds.
        self.reader.0.replace(None);
        let txn = self.db.begin_write().with_context(|| self.context())?;
        {
            let mut ends = txn.open_table(ENDS).with_context(|| self.context())?;
            let mut originals = txn.open_table(ORIGINALS).with_context(|| self.context())?;
            for (digest, (end, o)) in pending {
                if originals
                    .get(digest.as_slice())
                    .with_context(|| self.context())?
                    .is_some()
                {
                    continue;
                }
                originals
                    .insert(
                        digest.as_slice(),
                        (
                            end.serial,
                            end.offset,
                            o.uri.as_str(),
                            o.date.as_str(),
                            o.id.as_str(),
                        ),
                    )
                    .with_context(|| self.context())?;
                ends.insert((end.serial, end.offset), digest.as_slice())
                    .with_context(|| self.context())?;
            }
        }
        txn.commit().with_context(|| self.context())
    }
}
