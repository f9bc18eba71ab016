//! Properties of URL canonicalization (the URL tier's key).
//!
//! 1. Idempotence over arbitrary byte strings: `canon(canon(u)) == canon(u)`
//!    (strings that do not parse as http(s) URLs are skipped).
//! 2. Canonical forms are equal exactly when the URLs mean the same: URLs
//!    are generated from a model of what their path and query *mean*, each
//!    written with randomly chosen escapes, and two of them must get one
//!    canonical form if and only if their models are equal after the
//!    tier's normalizations (query parameters sorted, empty ones and
//!    tracking parameters removed).
//!
//! Longer runs: `SIMCRAWL_FUZZ_CASES=100000 cargo test --release -p simcrawl-dedup --test canonical_props`.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use simcrawl_dedup::CanonicalUrl;

fn cases() -> u32 {
    std::env::var("SIMCRAWL_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512)
}

// ---------------------------------------------------------------------------
// 1. Idempotence.

/// Bytes biased towards what URLs are made of, escapes above all.
fn url_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        4 => prop::sample::select(b"%%%%0123456789abcdefABCDEF".to_vec()),
        3 => prop::sample::select(b"/?&=#+.;:@!$'()*,[]^|{}`\\\"<> ~-_".to_vec()),
        2 => prop::sample::select(b"xyzXYZ".to_vec()),
        1 => any::<u8>(),
    ]
}

fn arbitrary_url() -> impl Strategy<Value = String> {
    let prefix = prop::sample::select(vec![
        "",
        "http://a.test/",
        "https://A.test:443/p/",
        "http://a.test/s?",
        "http://a.test/s?q=",
        "http://u:p@a.test:8080",
        "http:",
    ]);
    // Bytes, and pieces of escapes that complete or break each other.
    let piece = prop_oneof![
        3 => url_byte().prop_map(|b| vec![b]),
        1 => prop::sample::select(vec!["%2", "%3", "%35", "%66", "%46", "%5e", "%7C", "%25", "%%", "%e4%b8"])
            .prop_map(|p| p.as_bytes().to_vec()),
    ];
    (prefix, prop::collection::vec(piece, 0..40)).prop_map(|(p, pieces)| {
        let bytes: Vec<u8> = pieces.concat();
        format!("{p}{}", String::from_utf8_lossy(&bytes))
    })
}

// ---------------------------------------------------------------------------
// 2. The model: what a path or query means, token by token.

/// One unit of meaning in a path segment or a query key or value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Tok {
    /// A data byte: written raw where that means the same, else escaped.
    Byte(u8),
    /// A reserved character written raw (RFC 3986 section 2.2): it may
    /// delimit something for the server, so it is not the same as its
    /// escape.
    Delim(u8),
}

/// A token as generated, with the choices that decide how it is written.
#[derive(Clone, Debug)]
enum Atom {
    /// One token; `how` picks among its spellings, `upper` the hex case.
    One { tok: Tok, how: u8, upper: bool },
    /// A non-ASCII character: its UTF-8 bytes, written raw or escaped.
    Char { c: char, raw: bool, upper: bool },
}

#[derive(Clone, Copy, PartialEq)]
enum Part {
    Path,
    Query,
}

const UNRESERVED_EXTRA: &[u8] = b"-._~";
/// Neither reserved nor unreserved: raw, they mean what their escape means
/// (the URL parser escapes some of them itself).
const UNSAFE: &[u8] = b"^|{}`\"<>";
/// Reserved characters that may be written raw in a path segment.
const PATH_DELIMS: &[u8] = b"!$&'()*+,;=:@[]";
/// Reserved characters that may be written raw in a query key or value
/// (`&`, `=` and `+` are the query's own syntax; `'` is escaped by the URL
/// parser in http(s) queries, as browsers do, so it is data there).
const QUERY_DELIMS: &[u8] = b"!$()*,;:@/?[]";

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || UNRESERVED_EXTRA.contains(&b)
}

impl Atom {
    fn toks(&self, out: &mut Vec<Tok>) {
        match self {
            Atom::One { tok, .. } => out.push(*tok),
            Atom::Char { c, .. } => {
                let mut buf = [0u8; 4];
                out.extend(c.encode_utf8(&mut buf).bytes().map(Tok::Byte));
            }
        }
    }
}

fn escape(b: u8, upper: bool) -> String {
    if upper {
        format!("%{b:02X}")
    } else {
        format!("%{b:02x}")
    }
}

/// A written token: its text, and whether it is a `%` standing alone
/// (valid only when no two hex digits follow it).
struct Piece {
    text: String,
    stray: bool,
}

/// The ways a token may be written in `part` without changing its meaning.
fn spell(atom: &Atom, part: Part) -> Piece {
    let escaped = |b: u8, upper: bool| Piece {
        text: escape(b, upper),
        stray: false,
    };
    match *atom {
        Atom::Char { c, raw: true, .. } => Piece {
            text: c.to_string(),
            stray: false,
        },
        Atom::Char { c, raw: false, upper } => {
            let mut buf = [0u8; 4];
            Piece {
                text: c
                    .encode_utf8(&mut buf)
                    .bytes()
                    .map(|b| escape(b, upper))
                    .collect(),
                stray: false,
            }
        }
        Atom::One {
            tok: Tok::Delim(b), ..
        } => Piece {
            text: char::from(b).to_string(),
            stray: false,
        },
        Atom::One {
            tok: Tok::Byte(b),
            how,
            upper,
        } => {
            let raw_ok = is_unreserved(b) || UNSAFE.contains(&b) || (part == Part::Query && b == b'\'');
            match (how % 3, b) {
                // A literal `%` may stand alone (see `render`).
                (0, b'%') => Piece {
                    text: "%".into(),
                    stray: true,
                },
                (0, _) if raw_ok => Piece {
                    text: char::from(b).to_string(),
                    stray: false,
                },
                // A space in a query, as forms write it.
                (1, b' ') if part == Part::Query => Piece {
                    text: "+".into(),
                    stray: false,
                },
                _ => escaped(b, upper),
            }
        }
    }
}

/// Writes a run of atoms; a stray `%` that two hex digits follow would be
/// an escape, so it is written `%25` there instead.
fn render(atoms: &[Atom], part: Part) -> String {
    let pieces: Vec<Piece> = atoms.iter().map(|a| spell(a, part)).collect();
    let mut out = String::new();
    for (i, p) in pieces.iter().enumerate() {
        if p.stray {
            let rest: String = pieces[i + 1..].iter().map(|p| p.text.as_str()).collect();
            let b = rest.as_bytes();
            if b.len() >= 2 && b[0].is_ascii_hexdigit() && b[1].is_ascii_hexdigit() {
                out.push_str("%25");
                continue;
            }
        }
        out.push_str(&p.text);
    }
    out
}

fn toks(atoms: &[Atom]) -> Vec<Tok> {
    let mut out = Vec::new();
    for a in atoms {
        a.toks(&mut out);
    }
    out
}

fn data_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        6 => prop::sample::select(b"abcAB019".to_vec()),
        3 => prop::sample::select(b"%%%".to_vec()),
        3 => prop::sample::select(UNSAFE.to_vec()),
        2 => prop::sample::select(b"-._~ '".to_vec()),
        2 => prop::sample::select(b"/?#&=+;:@,!$()*[]\\".to_vec()),
        1 => any::<u8>(),
    ]
}

fn atom(part: Part) -> impl Strategy<Value = Atom> {
    let delims = match part {
        Part::Path => PATH_DELIMS,
        Part::Query => QUERY_DELIMS,
    };
    prop_oneof![
        8 => (data_byte(), any::<u8>(), any::<bool>())
            .prop_map(|(b, how, upper)| Atom::One { tok: Tok::Byte(b), how, upper }),
        2 => (prop::sample::select(delims.to_vec()), any::<bool>())
            .prop_map(|(b, upper)| Atom::One { tok: Tok::Delim(b), how: 0, upper }),
        1 => (prop::sample::select(vec!['é', '中', '€', '😀']), any::<bool>(), any::<bool>())
            .prop_map(|(c, raw, upper)| Atom::Char { c, raw, upper }),
    ]
}

/// Keys the tier removes (any case, with escaped letters) mixed with
/// ordinary ones.
fn key() -> impl Strategy<Value = Vec<Atom>> {
    let named = (
        prop::sample::select(vec![
            "utm_source",
            "utm_",
            "gclid",
            "fbclid",
            "_hsenc",
            "id",
            "q",
            "ref_url",
        ]),
        prop::collection::vec((any::<u8>(), any::<bool>(), any::<bool>()), 12),
    )
        .prop_map(|(name, choices)| {
            name.bytes()
                .zip(choices)
                .map(|(b, (how, upper, caps))| Atom::One {
                    tok: Tok::Byte(if caps { b.to_ascii_uppercase() } else { b }),
                    how,
                    upper,
                })
                .collect::<Vec<_>>()
        });
    prop_oneof![
        1 => named,
        2 => prop::collection::vec(atom(Part::Query), 0..4),
    ]
}

/// A query value: data, or one of the tier's "this is a URL" spellings.
fn value() -> impl Strategy<Value = Option<Vec<Atom>>> {
    let plain = prop::collection::vec(atom(Part::Query), 0..5);
    let url = (
        prop::sample::select(vec!["http://a.test/", "//b.test/x"]),
        any::<u64>(),
    )
        .prop_map(|(u, bits)| {
            u.bytes()
                .enumerate()
                .map(|(i, b)| {
                    let escaped = bits >> (i % 64) & 1 == 1;
                    let tok = if b == b':' || b == b'/' {
                        if escaped { Tok::Byte(b) } else { Tok::Delim(b) }
                    } else {
                        Tok::Byte(b)
                    };
                    Atom::One {
                        tok,
                        how: 0,
                        upper: bits >> ((i + 7) % 64) & 1 == 1,
                    }
                })
                .collect::<Vec<_>>()
        });
    prop_oneof![
        1 => Just(None),
        4 => plain.prop_map(Some),
        1 => url.prop_map(Some),
    ]
}

/// A URL as generated: path segments and query pairs.
#[derive(Clone, Debug)]
struct Model {
    segments: Vec<Vec<Atom>>,
    pairs: Vec<(Vec<Atom>, Option<Vec<Atom>>)>,
    fragment: &'static str,
}

fn model() -> impl Strategy<Value = Model> {
    (
        prop::collection::vec(prop::collection::vec(atom(Part::Path), 0..5), 1..4),
        prop::collection::vec((key(), value()), 0..4),
        prop::sample::select(vec!["", "#", "#top", "#a%2"]),
    )
        .prop_map(|(segments, pairs, fragment)| {
            no_dot_segments(Model {
                segments,
                pairs,
                fragment,
            })
        })
}

/// "." and ".." segments (however escaped) are resolved by the parser, not
/// part of what a path means: they are made data by a leading `x`.
fn no_dot_segments(mut m: Model) -> Model {
    for s in &mut m.segments {
        let t = toks(s);
        if !t.is_empty() && t.len() <= 2 && t.iter().all(|t| *t == Tok::Byte(b'.')) {
            s.insert(
                0,
                Atom::One {
                    tok: Tok::Byte(b'x'),
                    how: 0,
                    upper: false,
                },
            );
        }
    }
    m
}

/// The same URL written again with other choices of spelling.
fn respell(m: &Model, seed: u64) -> Model {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut redo = |atoms: &[Atom]| -> Vec<Atom> {
        atoms
            .iter()
            .map(|a| {
                let r = next();
                match *a {
                    Atom::One { tok, .. } => Atom::One {
                        tok,
                        how: r as u8,
                        upper: r >> 8 & 1 == 1,
                    },
                    Atom::Char { c, .. } => Atom::Char {
                        c,
                        raw: r & 1 == 1,
                        upper: r >> 1 & 1 == 1,
                    },
                }
            })
            .collect()
    };
    Model {
        segments: m.segments.iter().map(|s| redo(s)).collect(),
        pairs: m
            .pairs
            .iter()
            .map(|(k, v)| (redo(k), v.as_ref().map(|v| redo(v))))
            .collect(),
        fragment: if seed & 1 == 1 { "#other" } else { "" },
    }
}

/// A small change of meaning (or none, when it lands on an equal token).
fn mutate(m: &Model, at: usize, to: Tok) -> Model {
    let mut m = m.clone();
    let mut slots: Vec<&mut Atom> = m.segments.iter_mut().flatten().collect();
    for (k, v) in &mut m.pairs {
        slots.extend(k.iter_mut());
        if let Some(v) = v {
            slots.extend(v.iter_mut());
        }
    }
    if !slots.is_empty() {
        let n = slots.len();
        *slots[at % n] = Atom::One {
            tok: to,
            how: 0,
            upper: true,
        };
    }
    no_dot_segments(m)
}

fn write(m: &Model) -> String {
    let path: Vec<String> = m.segments.iter().map(|s| render(s, Part::Path)).collect();
    let mut url = format!("http://a.test/{}", path.join("/"));
    if !m.pairs.is_empty() {
        let pairs: Vec<String> = m
            .pairs
            .iter()
            .map(|(k, v)| match v {
                Some(v) => format!("{}={}", render(k, Part::Query), render(v, Part::Query)),
                None => render(k, Part::Query),
            })
            .collect();
        url.push('?');
        url.push_str(&pairs.join("&"));
    }
    url.push_str(m.fragment);
    url
}

/// Tracking keys of the default list this test's keys can spell.
const TRACKING_EXACT: &[&str] = &["gclid", "fbclid", "_hsenc"];
const TRACKING_PREFIX: &[&str] = &["utm_"];

fn lower(t: &Tok) -> Option<u8> {
    match t {
        Tok::Byte(b) => Some(b.to_ascii_lowercase()),
        Tok::Delim(_) => None,
    }
}

fn is_tracking(key: &[Tok], value: Option<&[Tok]>) -> bool {
    let text: Vec<Option<u8>> = key.iter().map(lower).collect();
    let spelled = |name: &str| name.bytes().map(Some).collect::<Vec<_>>();
    let named = TRACKING_EXACT.iter().any(|n| text == spelled(n))
        || TRACKING_PREFIX.iter().any(|p| text.starts_with(&spelled(p)));
    // A value that is a URL (written raw or escaped) is never tracking.
    let url_like = value.is_some_and(|v| {
        let bytes: Vec<u8> = v
            .iter()
            .map(|t| match t {
                Tok::Byte(b) | Tok::Delim(b) => b.to_ascii_lowercase(),
            })
            .collect();
        bytes.starts_with(b"//") || bytes.windows(3).any(|w| w == b"://")
    });
    named && !url_like
}

/// What a URL means to the URL tier: its path, and its query parameters
/// sorted, without empty ones and tracking ones.
#[allow(clippy::type_complexity)]
fn meaning(m: &Model) -> (Vec<Vec<Tok>>, Vec<(Vec<Tok>, Option<Vec<Tok>>)>) {
    let path = m.segments.iter().map(|s| toks(s)).collect();
    let mut query: Vec<(Vec<Tok>, Option<Vec<Tok>>)> = m
        .pairs
        .iter()
        .map(|(k, v)| (toks(k), v.as_ref().map(|v| toks(v))))
        .filter(|(k, v)| !(k.is_empty() && v.is_none()))
        .filter(|(k, v)| !is_tracking(k, v.as_deref()))
        .collect();
    query.sort();
    (path, query)
}

fn canon(s: &str) -> String {
    CanonicalUrl::parse(s)
        .unwrap_or_else(|e| panic!("{s:?} does not parse: {e}"))
        .as_str()
        .to_string()
}

fn other_tok() -> impl Strategy<Value = Tok> {
    prop_oneof![
        data_byte().prop_map(Tok::Byte),
        prop::sample::select(b"!$()*,;:@[]".to_vec()).prop_map(Tok::Delim),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn canonicalization_is_idempotent(text in arbitrary_url()) {
        if let Ok(once) = CanonicalUrl::parse(&text) {
            let twice = CanonicalUrl::parse(once.as_str());
            prop_assert!(twice.is_ok(), "{:?} -> {} no longer parses", text, once.as_str());
            let twice = twice.unwrap();
            prop_assert_eq!(twice.as_str(), once.as_str(), "from {:?}", text);
        }
    }

    #[test]
    fn one_canonical_form_iff_one_meaning(
        a in model(),
        seed in any::<u64>(),
        change in prop::option::of((any::<usize>(), other_tok())),
    ) {
        let b = match change {
            Some((at, to)) => mutate(&respell(&a, seed), at, to),
            None => respell(&a, seed),
        };
        let (ua, ub) = (write(&a), write(&b));
        let (ca, cb) = (canon(&ua), canon(&ub));
        let same = meaning(&a) == meaning(&b);
        prop_assert_eq!(
            ca == cb,
            same,
            "\n{} -> {}\n{} -> {}\nsame meaning: {}\n{:?}\n{:?}",
            ua, ca, ub, cb, same, meaning(&a), meaning(&b)
        );
        // A canonical form is written the way it is read.
        prop_assert_eq!(canon(&ca), ca.clone());
    }
}

/// The spellings the model relies on, checked one by one so that a
/// failure of the property above points at the model or at the code.
#[test]
fn the_model_writes_what_it_means() {
    let one = |b: u8, how: u8| Atom::One {
        tok: Tok::Byte(b),
        how,
        upper: false,
    };
    assert_eq!(
        render(&[one(b'%', 0), one(b'2', 0), one(b'5', 1)], Part::Path),
        "%2%35"
    );
    assert_eq!(render(&[one(b'%', 0), one(b'a', 0)], Part::Path), "%a");
    assert_eq!(
        render(&[one(b'%', 0), one(b'a', 0), one(b'B', 0)], Part::Path),
        "%25aB"
    );
    assert_eq!(render(&[one(b' ', 1)], Part::Query), "+");
    assert_eq!(render(&[one(b'^', 0), one(b'^', 1)], Part::Path), "^%5e");
    assert_eq!(render(&[one(b'/', 0)], Part::Path), "%2f");
    assert!(is_tracking(
        &[Tok::Byte(b'U'), Tok::Byte(b't'), Tok::Byte(b'm'), Tok::Byte(b'_')],
        None
    ));
    assert!(!is_tracking(
        &[Tok::Byte(b'u'), Tok::Byte(b't'), Tok::Byte(b'm'), Tok::Byte(b'_')],
        Some(&[Tok::Byte(b'/'), Tok::Delim(b'/'), Tok::Byte(b'a')])
    ));
}
