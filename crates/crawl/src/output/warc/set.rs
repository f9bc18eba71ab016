//! The files of a WARC set on disk: their names and serials, cutting a
//! set back to a checkpoint (its own on resume, or a gone worker's), and
//! the CDXJ indexes of its finished files.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context, Result};

use super::record::warc_date;
use super::{WarcAt, WarcSettings};
use crate::output::cdxj;

/// `PREFIX-YYYYmmddHHMMSS-SERIAL.warc.gz` in the archive's directory.
pub(super) fn new_path(settings: &WarcSettings, serial: u64) -> PathBuf {
    let stamp: String = warc_date(SystemTime::now())
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    settings
        .warc_dir
        .join(format!("{}-{stamp}-{serial:05}.warc.gz", settings.warc_prefix))
}

/// The files of the set named `prefix` in `dir`, by serial.
pub(super) fn set_files(dir: &Path, prefix: &str) -> Result<Vec<(u64, PathBuf)>> {
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(anyhow::Error::new(e).context(format!("cannot list {}", dir.display()))),
    };
    for e in entries {
        let e = e.with_context(|| format!("cannot list {}", dir.display()))?;
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(serial) = serial_of(name, prefix) {
            out.push((serial, e.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// The serial of a file name of the set `prefix`, if it is one.
pub(super) fn serial_of(name: &str, prefix: &str) -> Option<u64> {
    serial_with(name, prefix, ".warc.gz")
}

/// The serial of a file name of the set `prefix` ending with `suffix`.
pub(super) fn serial_with(name: &str, prefix: &str, suffix: &str) -> Option<u64> {
    let rest = name
        .strip_prefix(prefix)?
        .strip_prefix('-')?
        .strip_suffix(suffix)?;
    let (stamp, serial) = rest.split_once('-')?;
    if stamp.len() != 14 || !stamp.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if serial.is_empty() || !serial.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    serial.parse().ok()
}

/// Indexes the finished WARC file `path` (CDXJ, beside it): from the
/// lines its writer `kept` when it has them (see [`cdxj`]), else by
/// reading it back. A failure is a warning (the archive is whole without
/// its index).
pub(super) fn index_or_warn(path: &Path, kept: Option<&mut Vec<String>>) {
    let written = match kept {
        Some(lines) => cdxj::write_index_lines(path, lines),
        None => cdxj::write_index(path),
    };
    match written {
        Ok(p) => tracing::debug!(index = %p.display(), "CDXJ index written"),
        Err(e) => tracing::warn!("no CDXJ index for {}: {e}", path.display()),
    }
}

/// Removes the CDXJ indexes (and leftover temporary ones) of the set
/// `prefix` in `dir` from serial `from` on: of files about to be cut,
/// written on or deleted, or already gone.
pub(super) fn remove_indexes_from(dir: &Path, prefix: &str, from: u64) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(anyhow::Error::new(e).context(format!("cannot list {}", dir.display()))),
    };
    let mut removed = false;
    for e in entries {
        let e = e.with_context(|| format!("cannot list {}", dir.display()))?;
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let serial = serial_with(name, prefix, ".cdxj").or_else(|| serial_with(name, prefix, ".cdxj.tmp"));
        if serial.is_some_and(|s| s >= from) {
            std::fs::remove_file(e.path())
                .with_context(|| format!("cannot delete {}", e.path().display()))?;
            removed = true;
        }
    }
    if removed {
        sync_dir(dir)?;
    }
    Ok(())
}

/// Whether `dir` holds files of the set `prefix` (what a new crawl must
/// not mix its records with).
pub fn set_exists(dir: &Path, prefix: &str) -> Result<Vec<PathBuf>> {
    Ok(set_files(dir, prefix)?.into_iter().map(|(_, p)| p).collect())
}

/// Cuts the set `prefix` in `dir` of a worker that is gone back to `at`
/// (its last acknowledged position; `None`: it acknowledged no record, and
/// its files are deleted); returns the bytes cut. Its files are final then
/// (until it restarts under its id): those without a CDXJ index get one.
pub fn cut_gone(dir: &Path, prefix: &str, at: Option<WarcAt>) -> Result<u64> {
    let mut cut = 0;
    let files = set_files(dir, prefix)?;
    // The indexes of the files cut or deleted go first.
    let cut_from = match at {
        Some(at) => {
            let cut_back = files
                .iter()
                .any(|(s, p)| *s == at.serial && std::fs::metadata(p).map_or(true, |m| m.len() > at.offset));
            if cut_back { at.serial } else { at.serial + 1 }
        }
        None => 0,
    };
    remove_indexes_from(dir, prefix, cut_from)?;
    for (serial, path) in files {
        let len = std::fs::metadata(&path)
            .with_context(|| format!("cannot read the size of {}", path.display()))?
            .len();
        match at {
            Some(at) if serial < at.serial => {}
            Some(at) if serial == at.serial => {
                if len > at.offset {
                    let f = OpenOptions::new()
                        .write(true)
                        .open(&path)
                        .with_context(|| format!("cannot open {}", path.display()))?;
                    f.set_len(at.offset)
                        .and_then(|()| f.sync_data())
                        .with_context(|| format!("cannot truncate {}", path.display()))?;
                    cut += len - at.offset;
                }
            }
            _ => {
                std::fs::remove_file(&path).with_context(|| format!("cannot delete {}", path.display()))?;
                cut += len;
            }
        }
    }
    for (_, path) in set_files(dir, prefix)? {
        if !cdxj::index_path(&path).exists() {
            index_or_warn(&path, None);
        }
    }
    Ok(cut)
}

pub(super) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("cannot sync directory {}", dir.display()))
}
