//! What distinguishes a dropped page's URL from its kept page's: the URL
//! rewrites behind duplicate URL spaces (`//` merged by the server, an
//! ignored query parameter, `index.html`), which a site owner can fix and a
//! crawler can learn (DUST, Bar-Yossef et al. 2007).

/// The rewrites that turn the kept URL into the dropped one, e.g.
/// "`//` in the path + trailing `/`", "query parameter `sid` added",
/// "another host (mirror.example)" or "another path (under `/mirror/`)":
/// [`crate::rewrite::classify`]'s verdict in the report's words.
pub fn rewrite(dropped: &str, kept: &str) -> String {
    crate::rewrite::classify(dropped, kept).to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::rewrite;

    #[test]
    fn names_the_rewrites() {
        let cases = [
            ("http://a.test//x", "http://a.test/x", "`//` in the path"),
            (
                "http://a.test//x/",
                "http://a.test/x",
                "`//` in the path + trailing `/`",
            ),
            ("http://a.test/d/index.html", "http://a.test/d/", "index file"),
            (
                "http://a.test/d;jsessionid=42/p",
                "http://a.test/d/p",
                "`;` path parameters (session id)",
            ),
            ("http://a.test/P", "http://a.test/p", "case of the path"),
            (
                "http://a.test/p?sid=1&id=2",
                "http://a.test/p?id=2",
                "query parameter `sid` added",
            ),
            (
                "http://a.test/p",
                "http://a.test/p?lang=zh",
                "query parameter `lang` removed",
            ),
            (
                "http://a.test/p?page=2",
                "http://a.test/p?page=1",
                "query values of `page`",
            ),
            ("http://www.a.test/p", "http://a.test/p", "`www.` prefix"),
            ("https://a.test/p", "http://a.test/p", "scheme https"),
            (
                "http://m.test/p",
                "http://a.test/p",
                "another host (copy of a.test)",
            ),
            (
                "http://a.test/mirror/p.html",
                "http://a.test/p.html",
                "another path (under `/mirror/`)",
            ),
            ("http://a.test/q.html", "http://a.test/p.html", "another path"),
            (
                "http://a.test/p",
                "http://a.test/p",
                "same URL (redirect target or URL variant)",
            ),
            ("not a url", "http://a.test/p", "unparsable URL"),
        ];
        for (d, k, want) in cases {
            assert_eq!(rewrite(d, k), want, "{d} vs {k}");
        }
    }
}
