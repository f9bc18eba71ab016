//! What a crawl and a batch run write: the JSON lines of kept pages, dropped
//! copies and failures ([`lines`]), the crash-safe files they go to
//! ([`sinks`]), and the one place that turns a verdict into its lines and
//! counters ([`record`]), for both backends of the daemon and for
//! `crawl dedup`. A new output (WARC) is added here, once.

pub mod appender;
pub mod cdxj;
pub mod lines;
pub mod record;
pub mod sinks;
pub mod warc;
