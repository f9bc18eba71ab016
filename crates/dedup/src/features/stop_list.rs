/// A stop word list's words: each line up to a `#`, trimmed and
/// lower-cased, without empty ones and repeats, sorted by their bytes
/// (the order stores digest, `Features::describe`). Borrowed from `list`
/// where lower-casing changes nothing.
///
/// Shared as source by build.rs, which reads the bundled lists so once,
/// at build time (a process read them at start-up: a fifth of a
/// one-document `crawl dedup`'s CPU, issue 37), and by `features`, which
/// reads a configured list at start-up; so the two cannot drift apart.
pub fn stop_word_list(list: &str) -> Vec<std::borrow::Cow<'_, str>> {
    use std::borrow::Cow;
    let mut words: Vec<Cow<'_, str>> = list
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|w| !w.is_empty())
        .map(|w| {
            // `str::to_lowercase` maps char by char except a final sigma,
            // which is an upper-case `Σ` and so changes on its own.
            let same = w.chars().all(|c| {
                let mut lower = c.to_lowercase();
                lower.next() == Some(c) && lower.next().is_none()
            });
            if same { Cow::Borrowed(w) } else { Cow::Owned(w.to_lowercase()) }
        })
        .collect();
    words.sort_unstable();
    words.dedup();
    words
}
