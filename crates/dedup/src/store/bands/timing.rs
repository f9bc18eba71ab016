//! Not tests: the table's lookup and insert costs and its memory, run by
//! hand (see `lookup_ns`).

use super::*;

/// Not a test: ns per lookup in a 10M-key index (`BANDS_TIMING_KEYS`
/// keys: 60000000 for a compact table), one key at a time vs ten
/// together, and the index's resident memory (`cargo test --release
/// -p simcrawl-dedup --lib bands::timing -- --ignored --nocapture`).
#[test]
#[ignore]
fn lookup_ns() {
    let keys: u64 = std::env::var("BANDS_TIMING_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let key = |i: u64| crate::hash::fmix64(i ^ 0x5555);
    let rss = || {
        let s = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
        let field = |name: &str| {
            s.lines()
                .find(|l| l.starts_with(name))
                .map(str::to_owned)
                .unwrap_or_default()
        };
        format!("{} {}", field("Rss:"), field("AnonHugePages:"))
    };
    let before = rss();
    let t = std::time::Instant::now();
    let mut index = BandIndex::default();
    for i in 0..keys {
        index.add(key(i), i);
    }
    println!(
        "{keys} keys: built in {:.1} s, {} slots of {} bytes, {} overflowed; {before} -> {}",
        t.elapsed().as_secs_f64(),
        index.layout.slots(),
        index.layout.width,
        index.overflow.len(),
        rss()
    );
    let queries: Vec<u64> = (0..2_000_000u64).map(|i| key(i + 20_000_000)).collect();
    let mut out = Vec::new();
    for round in 0..3 {
        let t = std::time::Instant::now();
        for &q in &queries {
            index.get(q, &mut out);
        }
        let one = t.elapsed().as_nanos() as f64 / queries.len() as f64;
        let t = std::time::Instant::now();
        for ten in queries.chunks(10) {
            index.each_of(ten, |_, ids| out.extend_from_slice(ids));
        }
        let together = t.elapsed().as_nanos() as f64 / queries.len() as f64;
        let t = std::time::Instant::now();
        for (i, &q) in queries.iter().enumerate() {
            index.add(q, i as u64);
        }
        let add = t.elapsed().as_nanos() as f64 / queries.len() as f64;
        for (i, &q) in queries.iter().enumerate() {
            index.remove(q, i as u64);
        }
        let t = std::time::Instant::now();
        for (doc, ten) in queries.chunks(10).enumerate() {
            index.each_of(ten, |_, ids| out.extend_from_slice(ids));
            for &q in ten {
                index.add(q, doc as u64);
            }
        }
        let check = t.elapsed().as_nanos() as f64 / queries.len() as f64;
        for (doc, ten) in queries.chunks(10).enumerate() {
            for &q in ten {
                index.remove(q, doc as u64);
            }
        }
        println!("round {round}: each_of(10) then add {check:.0} ns per key");
        println!(
            "round {round}: get {one:.0} ns, each_of(10) {together:.0} ns per key, add {add:.0} ns; {}",
            out.len()
        );
    }
}
