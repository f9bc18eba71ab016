//! Reading the tables the quality gates print (`crawl eval --crawled`,
//! `scripts/news_copy_recall.py`), shared by `html_gate.rs` and
//! `genre_gate.rs`.

/// The cells of each `| all | ... |` row of a report, in order. For `crawl
/// eval --crawled`: pages, reached, dropped, unique lost, component
/// recall, recall (>= 300 chars), pair recall, false drops, then the
/// suspects.
pub fn total_rows(report: &str) -> Vec<Vec<f64>> {
    report
        .lines()
        .filter(|l| l.starts_with("| all |"))
        .map(|row| {
            row.split('|')
                .map(str::trim)
                .filter(|c| !c.is_empty() && *c != "all")
                .map(|c| c.parse().unwrap_or_else(|_| panic!("cell {c:?} in {row}")))
                .collect()
        })
        .collect()
}
