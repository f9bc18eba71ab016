//! What the quality gates share (`html_gate.rs`, `genre_gate.rs`): where
//! their labelled sets are, and reading the tables they print (`crawl eval
//! --crawled`, `scripts/news_copy_recall.py`).

/// The labelled set a gate runs on, from the environment variable `var`;
/// `None` (the gate is skipped) outside CI, where `scripts/test.sh` sets
/// it. In CI a missing set fails the gate: it must run. `how` says how to
/// build the set.
pub fn labelled_set(var: &str, gate: &str, how: &str) -> Option<String> {
    let Ok(set) = std::env::var(var) else {
        assert!(
            std::env::var("CI").is_err(),
            "CI must run the {gate}: set {var} (scripts/test.sh does)"
        );
        eprintln!("{var} not set: {how}");
        return None;
    };
    Some(set)
}

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
