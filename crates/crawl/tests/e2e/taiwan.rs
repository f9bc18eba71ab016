//! End-to-end: a zh-TW edition of a zh-CN page, written in Taiwan words
//! (軟體 for 软件, 程式 for 程序, 資料 for 数据: OpenCC s2twp), served over
//! loopback (issue 35, fifth round). The default `clean.convert_chinese =
//! "t2s_tw"` folds Taiwan vocabulary, so the edition is found as the copy it
//! is; script conversion alone (`t2s`, the former default) keeps both. A
//! data directory built under `t2s` keeps it when the setting is left
//! unset, instead of refusing to resume.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::support::server::{Reply, Request, Server};
use crate::support::{field, path_of, site_crawl, tempdir};

const MAINLAND: [&str; 8] = [
    "这个软件通过网络把程序的信息保存到文件里，数据由服务器处理。",
    "默认情况下，打印机会列出内存中的所有文件和数据。",
    "用户可以在网络设置中修改默认的服务器地址，软件会重新读取信息。",
    "如果程序发现文件损坏，它会从服务器下载新的数据并保存到内存。",
    "管理员应该定期检查软件的日志文件，确认网络和服务器都正常运行。",
    "安装程序以前，请先备份硬盘上的重要文件，并关闭其他软件。",
    "这个程序支持多种视频格式，也可以通过网络共享打印机。",
    "升级服务器的操作系统时，数据库里的数据不会丢失。",
];

/// `MAINLAND` through OpenCC s2twp: Taiwan script and vocabulary.
const TAIWAN: [&str; 8] = [
    "這個軟體通過網路把程式的資訊儲存到檔案裡，資料由伺服器處理。",
    "預設情況下，印表機會列出記憶體中的所有檔案和資料。",
    "使用者可以在網路設定中修改預設的伺服器地址，軟體會重新讀取資訊。",
    "如果程式發現檔案損壞，它會從伺服器下載新的資料並儲存到記憶體。",
    "管理員應該定期檢查軟體的日誌檔案，確認網路和伺服器都正常執行。",
    "安裝程式以前，請先備份硬碟上的重要檔案，並關閉其他軟體。",
    "這個程式支援多種影片格式，也可以通過網路共享印表機。",
    "升級伺服器的作業系統時，資料庫裡的資料不會丟失。",
];

fn page(title: &str, paragraphs: &[&str]) -> String {
    let body: String = paragraphs.iter().map(|p| format!("<p>{p}</p>")).collect();
    format!("<!doctype html><html><head><title>{title}</title></head><body><main>{body}</main></body></html>")
}

fn site() -> Server {
    Server::start(|req: &Request| match req.path.as_str() {
        "/" => Reply::html(
            "<!doctype html><html><head><title>help</title></head><body>\
             <a href=\"/zh-cn/guide.html\">简体</a> <a href=\"/zh-tw/guide.html\">繁體</a></body></html>"
                .to_string(),
        ),
        "/zh-cn/guide.html" => Reply::html(page("软件说明", &MAINLAND)),
        "/zh-tw/guide.html" => Reply::html(page("軟體說明", &TAIWAN)),
        _ => Reply::status(404),
    })
}

const EDITIONS: [&str; 2] = ["/zh-cn/guide.html", "/zh-tw/guide.html"];

/// How many of the two editions the crawl in `dirs` dropped (as a copy of
/// the other) and kept.
fn editions(dirs: &crate::support::Dirs) -> (usize, usize) {
    let is_edition = |v: &serde_json::Value, key: &str| EDITIONS.contains(&path_of(field(v, key)).as_str());
    let dropped = dirs
        .duplicates()
        .iter()
        .filter(|v| is_edition(v, "url") && is_edition(v, "duplicate_of"))
        .count();
    let kept = dirs.kept().iter().filter(|v| is_edition(v, "url")).count();
    (dropped, kept)
}

#[test]
fn a_taiwan_edition_is_the_copy_of_its_mainland_page_by_default() {
    let server = site();
    let dir = tempdir("e2e-taiwan-");
    let dirs = site_crawl(dir.path(), &format!("{}/", server.base()), 1, "");
    dirs.run_ok(Duration::from_secs(60));
    assert_eq!(editions(&dirs), (1, 1), "{}", dirs.log());
}

#[test]
fn script_folding_alone_keeps_both_and_its_data_directory_keeps_it() {
    let server = site();
    let dir = tempdir("e2e-taiwan-t2s-");
    let dirs = site_crawl(
        dir.path(),
        &format!("{}/", server.base()),
        1,
        "\n[clean]\nconvert_chinese = \"t2s\"\n",
    );
    dirs.run_ok(Duration::from_secs(60));
    assert_eq!(editions(&dirs), (0, 2), "{}", dirs.log());

    // The same data directory with the setting left unset: the index was
    // built under the former default, so the crawl keeps it (and says so)
    // instead of refusing every existing data directory.
    dirs.edit_config("convert_chinese = \"t2s\"", "");
    dirs.run_ok(Duration::from_secs(60));
    let log = dirs.log();
    assert!(
        log.contains("clean.convert_chinese = \"t2s\"") && log.contains("keeping it"),
        "{log}"
    );

    // Given explicitly, the new profile is refused by that index, by name.
    dirs.edit_config("[clean]", "[clean]\nconvert_chinese = \"t2s_tw\"");
    let before = dirs.log().len();
    let (status, _) = dirs.run(Duration::from_secs(60));
    let log = dirs.log();
    let log = log.get(before..).unwrap_or_default();
    assert!(!status.success(), "{log}");
    assert!(
        log.contains("\"t2s\" there, \"t2s_tw\" now") && !log.contains("keeping it"),
        "{log}"
    );
}
