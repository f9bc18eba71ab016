//! `lang` on every kept and duplicate line, and `crawl.languages`.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::support::server::{Reply, Server};
use crate::support::{field, page, path_of, site_crawl};

const ZH: &str = "长江流域遭遇罕见高温干旱，多地启动抗旱应急响应。气象部门预计，未来一周仍将持续晴热天气，\
                  农业和供水部门正在加紧调度水源，保障群众生活用水和农田灌溉。专家提醒公众注意防暑降温。";
const ZH_TW: &str = "長江流域遭遇罕見高溫乾旱，多地啟動抗旱應急響應。氣象部門預計，未來一週仍將持續晴熱天氣，\
                     農業和供水部門正在加緊調度水源，保障群眾生活用水和農田灌溉。專家提醒公眾注意防暑降溫。";
const EN: &str = "The city council approved the new budget on Tuesday after a long debate. Spending on parks, \
                  libraries and roads will rise next year, while the property tax stays the same for residents.";
const DE: &str = "Der Stadtrat hat am Dienstag nach langer Debatte den neuen Haushalt beschlossen. Die Ausgaben \
                  für Parks, Bibliotheken und Straßen steigen im nächsten Jahr, die Grundsteuer bleibt gleich.";

fn site() -> Server {
    Server::start(|req| {
        let links: Vec<String> = ["/zh", "/zh-tw", "/en", "/de"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        match req.path.as_str() {
            "/" => Reply::html(page("Home", EN, &links)),
            "/zh" => Reply::html(page("长江抗旱", ZH, &[])),
            "/zh-tw" => Reply::html(page("長江抗旱", ZH_TW, &[])),
            "/en" => Reply::html(page("Budget", &format!("{EN} {EN}"), &[])),
            "/de" => Reply::html(page("Haushalt", DE, &[])),
            _ => Reply::status(404),
        }
    })
}

fn langs(lines: &[serde_json::Value]) -> BTreeMap<String, String> {
    lines
        .iter()
        .map(|v| {
            (
                path_of(field(v, "url")),
                v.get("lang").and_then(|l| l.as_str()).unwrap_or("-").to_string(),
            )
        })
        .collect()
}

#[test]
fn every_verdict_names_its_language_and_languages_keeps_only_those() {
    let server = site();
    let dir = crate::support::tempdir("lang");
    let dirs = site_crawl(dir.path(), &format!("{}/", server.base()), 2, "");
    dirs.run_ok(Duration::from_secs(60));
    let mut all = langs(&dirs.kept());
    all.extend(langs(&dirs.duplicates()));
    assert_eq!(all["/zh"], "zh", "{all:?}");
    assert_eq!(
        all["/zh-tw"], "zh",
        "the traditional copy, a duplicate, says zh too: {all:?}"
    );
    assert_eq!(all["/en"], "en", "{all:?}");
    assert_eq!(all["/de"], "de", "{all:?}");

    let dir = crate::support::tempdir("lang");
    let dirs = site_crawl(
        dir.path(),
        &format!("{}/", server.base()),
        2,
        "languages = [\"zh\", \"en\"]\n",
    );
    dirs.run_ok(Duration::from_secs(60));
    let mut judged = langs(&dirs.kept());
    judged.extend(langs(&dirs.duplicates()));
    assert!(!judged.contains_key("/de"), "{judged:?}");
    for p in ["/", "/zh", "/zh-tw", "/en"] {
        assert!(judged.contains_key(p), "{p}: {judged:?}");
    }
    let filtered: Vec<String> = dirs
        .errors()
        .iter()
        .filter(|e| field(e, "kind") == "filtered_lang")
        .map(|e| path_of(field(e, "url")))
        .collect();
    assert_eq!(filtered, ["/de"]);
    assert_eq!(dirs.stats()["filtered_lang"].as_u64(), Some(1));
}
