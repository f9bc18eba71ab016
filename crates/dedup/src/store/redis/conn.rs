//! Connecting to the namespace's server (under Redis Cluster, the master
//! serving its slot, found with `CLUSTER SLOTS`), timeouts, error
//! classification, retries' backoff, and scanning or clearing a namespace.

use std::time::Duration;

use redis::{Connection, RedisError, Value};

use super::{RedisOptions, RedisStore};
use crate::error::{Error, Result};

impl RedisStore {
    /// A pooled connection, or a new one.
    pub(super) fn conn(&self) -> Result<Connection> {
        if let Some(c) = self.pool.lock().pop() {
            return Ok(c);
        }
        self.connect()
    }

    /// A new connection, to the master holding the namespace's slot when
    /// the server is a cluster node.
    pub(super) fn connect(&self) -> Result<Connection> {
        connect_namespace(&self.client, &self.options, &self.url).map_err(|e| self.fail(e, false))
    }

    /// A Redis error as this crate's: connection trouble is
    /// [`Error::Disconnected`] (retry), anything else a store error naming
    /// the server.
    pub(super) fn fail(&self, e: RedisError, maybe_applied: bool) -> Error {
        let (error, reroute) = classify(&self.url, e, maybe_applied);
        if reroute {
            // Pooled connections may point at the old owner of the slot;
            // new ones ask the cluster again.
            self.pool.lock().clear();
        }
        error
    }
}

/// `text` as a literal in a Redis glob pattern (`SCAN MATCH`, `KEYS`):
/// `*`, `?`, `[`, `]` and `\` escaped with a backslash. Unescaped, clearing
/// the namespace `a*` would clear `ab`'s keys too.
fn glob_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Calls `each` with the keys of `namespace` (every key under its `{NS}`
/// hash tag) on the server of `conn`, a `SCAN` page (up to ~1000 keys) at
/// a time.
pub(in crate::store) fn for_each_key(
    conn: &mut Connection,
    namespace: &str,
    mut each: impl FnMut(&mut Connection, Vec<Vec<u8>>) -> redis::RedisResult<()>,
) -> redis::RedisResult<()> {
    let pattern = format!("{{{}}}:*", glob_literal(namespace));
    let mut cursor: u64 = 0;
    loop {
        let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .query(conn)?;
        if !keys.is_empty() {
            each(conn, keys)?;
        }
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}

/// Deletes every key of `namespace` on the server of `conn` (a connection
/// from [`connect_namespace`], so under Redis Cluster the master holding
/// the namespace), whichever store or frontier wrote them. Not atomic with
/// respect to concurrent writers.
///
/// ```no_run
/// use simcrawl_dedup::{RedisOptions, store::{clear_namespace, connect_namespace}};
/// let client = redis::Client::open("redis://127.0.0.1:6379/0").unwrap();
/// let options = RedisOptions { namespace: "news".into(), ..Default::default() };
/// let mut conn = connect_namespace(&client, &options, "redis://127.0.0.1:6379/0")?;
/// clear_namespace(&mut conn, "news")?;
/// # Ok::<(), redis::RedisError>(())
/// ```
pub fn clear_namespace(conn: &mut Connection, namespace: &str) -> redis::RedisResult<()> {
    for_each_key(conn, namespace, |conn, keys| {
        redis::cmd("UNLINK").arg(&keys).query::<Value>(conn).map(drop)
    })
}

/// The client for `url` and the URL as shown in messages (no password),
/// once `options.namespace` is known to be usable as a hash tag.
pub(in crate::store) fn open_client(url: &str, options: &RedisOptions) -> Result<(redis::Client, String)> {
    let shown = redact(url);
    let ns = &options.namespace;
    if ns.is_empty() || ns.contains(['{', '}', ':']) || ns.contains(char::is_whitespace) {
        return Err(Error::Config(format!(
            "Redis namespace {ns:?} must be non-empty, without '{{', '}}', ':' or spaces"
        )));
    }
    let client = redis::Client::open(url).map_err(|e| Error::Unreachable {
        url: shown.clone(),
        source: Box::new(e),
    })?;
    Ok((client, shown))
}

/// A new connection to the server of `client` or, when it is a cluster
/// node, to the master serving `options.namespace`'s slot (every key
/// under the `{NS}` hash tag lives there): named `simcrawl:NS`, with the
/// options' timeouts. The stores connect this way; so can anything else
/// keeping keys under the namespace's tag (the crawler's frontier), so
/// that it works against a cluster given any node's URL. `url` is only
/// for messages.
///
/// ```no_run
/// use simcrawl_dedup::{RedisOptions, store::connect_namespace};
/// let client = redis::Client::open("redis://10.0.0.1:7000/0").unwrap();
/// let options = RedisOptions { namespace: "news".into(), ..Default::default() };
/// let mut conn = connect_namespace(&client, &options, "redis://10.0.0.1:7000/0")?;
/// let _: () = redis::cmd("SET").arg("{news}:f:hello").arg(1).query(&mut conn)?;
/// # Ok::<(), redis::RedisError>(())
/// ```
pub fn connect_namespace(
    client: &redis::Client,
    options: &RedisOptions,
    url: &str,
) -> std::result::Result<Connection, RedisError> {
    let mut conn = connect_to(client, options)?;
    let slots = redis::cmd("CLUSTER").arg("SLOTS").query::<Value>(&mut conn);
    if let Ok(slots) = slots
        && let Some((host, port)) = slot_owner(&slots, slot(options.namespace.as_bytes()))
    {
        let info = client.get_connection_info();
        let here = info.addr().to_string();
        if here != format!("{host}:{port}") {
            tracing::debug!(url, "namespace {} served by {host}:{port}", options.namespace);
            let target = info.clone().set_addr(redis::ConnectionAddr::Tcp(host, port));
            let client = redis::Client::open(target)?;
            conn = connect_to(&client, options)?;
        }
    }
    Ok(conn)
}

fn connect_to(client: &redis::Client, options: &RedisOptions) -> std::result::Result<Connection, RedisError> {
    let mut conn = client.get_connection_with_timeout(options.connect_timeout)?;
    conn.set_read_timeout(Some(options.io_timeout))?;
    conn.set_write_timeout(Some(options.io_timeout))?;
    // Named, so `CLIENT LIST` shows which namespace a connection serves.
    redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg(format!("simcrawl:{}", options.namespace))
        .query::<Value>(&mut conn)?;
    Ok(conn)
}

/// A Redis error as this crate's, and whether connections must ask the
/// cluster again where the namespace lives: connection trouble is
/// [`Error::Disconnected`] (retry), anything else a store error naming
/// the server.
pub(in crate::store) fn classify(url: &str, e: RedisError, maybe_applied: bool) -> (Error, bool) {
    let not_ready = matches!(
        e.kind(),
        redis::ErrorKind::Server(redis::ServerErrorKind::BusyLoading | redis::ServerErrorKind::MasterDown)
    );
    if e.is_cluster_error() || not_ready {
        // The slot moved (resharding, failover), the cluster is down, a
        // restarted server is still loading its data, or a replica lost
        // its master: the command was refused, so nothing was applied.
        let error = Error::Disconnected {
            url: url.to_string(),
            maybe_applied: false,
            source: Box::new(e),
        };
        return (error, true);
    }
    (fail(url, e, maybe_applied), false)
}

fn fail(url: &str, e: RedisError, maybe_applied: bool) -> Error {
    if e.is_io_error() || e.is_connection_dropped() || e.is_timeout() || e.is_connection_refusal() {
        Error::Disconnected {
            url: url.to_string(),
            maybe_applied,
            source: Box::new(e),
        }
    } else {
        Error::Storage(format!("Redis at {url}: {e}").into())
    }
}

/// Sleeps a little before attempt `attempt + 1`: 0.1 ms doubling up to
/// ~25 ms, jittered so that colliding writers do not collide again.
pub(in crate::store) fn backoff(attempt: u32) {
    let cap = 100u64 << attempt.min(8);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut x = u64::from(nanos) ^ (std::process::id() as u64).rotate_left(32);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    std::thread::sleep(Duration::from_micros(x % cap + 1));
}

/// `url` without its password, for messages and logs: the password of a
/// `redis://user:password@host` URL becomes `***`; a URL without one, or
/// one that does not parse, is returned as it is.
///
/// ```
/// use simcrawl_dedup::store::redact;
/// assert_eq!(redact("redis://u:secret@h:1/0"), "redis://u:***@h:1/0");
/// assert_eq!(redact("redis://:hunter2@h:6379/0"), "redis://:***@h:6379/0");
/// assert_eq!(redact("redis://h:6379/0"), "redis://h:6379/0");
/// ```
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            u.to_string()
        }
        Err(_) => url.to_string(),
    }
}

/// Redis Cluster's hash slot of a hash tag.
fn slot(tag: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in tag {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc % 16384
}

/// The master serving `slot`, from a `CLUSTER SLOTS` reply.
fn slot_owner(slots: &Value, slot: u16) -> Option<(String, u16)> {
    let Value::Array(ranges) = slots else {
        return None;
    };
    for range in ranges {
        let Value::Array(parts) = range else { continue };
        let (Some(Value::Int(start)), Some(Value::Int(end)), Some(Value::Array(master))) =
            (parts.first(), parts.get(1), parts.get(2))
        else {
            continue;
        };
        if (*start..=*end).contains(&i64::from(slot)) {
            let host = match master.first()? {
                Value::BulkString(b) => String::from_utf8(b.clone()).ok()?,
                Value::SimpleString(s) => s.clone(),
                _ => return None,
            };
            let Value::Int(port) = master.get(1)? else {
                return None;
            };
            return Some((host, u16::try_from(*port).ok()?));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_slots_match_redis() {
        // The specification's CRC16 check value, and `CLUSTER KEYSLOT` of
        // a Redis 7.0 server.
        assert_eq!(slot(b"123456789"), 0x31c3);
        assert_eq!(slot(b"alpha"), 865);
        assert_eq!(slot(b"beta"), 15419);
    }

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(redact("redis://u:secret@h:1/0"), "redis://u:***@h:1/0");
        assert_eq!(redact("redis://h:1/0"), "redis://h:1/0");
    }
}
