//! The end-to-end tests, one binary (one link, one `support`): each module
//! runs the real `crawl` binary against HTTP servers on 127.0.0.1 (and a
//! real Redis server for `redis`, a real Chromium for `report_browser`).
//! `cargo test -p simcrawl --test e2e MODULE::` runs one module.
//!
//! The quality gates (`eval_set`, `html_gate`), the hostile server (it
//! measures peak memory, so it runs alone) and the fuzz run stay binaries of
//! their own.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

mod articles;
mod batch_cli;
mod canonical;
mod check;
mod cli;
mod crawl;
mod dust;
mod extents;
mod jobs;
mod lang;
mod listing;
mod messages;
mod outputs;
mod politeness;
mod private;
mod redis;
mod report_browser;
mod revisit;
mod taiwan;
mod template;
mod waits;
mod warc;
mod warc_input;
mod writer;
