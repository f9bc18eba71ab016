//! Did-you-mean for the settings: serde's "unknown field" and "unknown
//! variant" errors turned into the full dotted key and the closest name
//! the setting takes.

use super::{defaults_table, dotted, lookup};

/// A mistyped key or value named in full, with the closest name the
/// setting takes: "unknown setting `fetch.per_host_delay_m`: did you mean
/// `fetch.per_host_delay_ms`?" rather than serde's list of every field of
/// the table. `error` is serde's message ("unknown field `x`, expected one
/// of ..." or "unknown variant ..."), `given` the table it was read from
/// (to find where the key sits). `None` when `error` is neither.
pub(super) fn suggestion(error: &str, given: &toml::Table) -> Option<String> {
    let (what, rest) = if let Some(r) = error.split("unknown field `").nth(1) {
        ("field", r)
    } else {
        ("variant", error.split("unknown variant `").nth(1)?)
    };
    let (name, rest) = rest.split_once('`')?;
    let expected: Vec<&str> = rest
        .split_once("expected")
        .map(|(_, list)| list.lines().next().unwrap_or_default())
        .unwrap_or_default()
        .split('`')
        .skip(1)
        .step_by(2)
        .collect();
    let closest = expected
        .iter()
        .map(|c| (strsim::damerau_levenshtein(name, c), *c))
        .filter(|(d, c)| *d <= (c.len() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c);
    if what == "variant" {
        let key = path_of_value(given, "", name).unwrap_or_default();
        let choices = expected.join(", ");
        return Some(match closest {
            Some(c) => format!("`{key}` cannot be \"{name}\": did you mean \"{c}\"? ({choices})"),
            None => format!("`{key}` cannot be \"{name}\": it takes one of {choices}"),
        });
    }
    let defaults = defaults_table().ok()?;
    let key = path_of_key(given, "", name, &defaults).unwrap_or_else(|| name.to_string());
    let parent = key
        .rsplit_once('.')
        .map(|(p, _)| format!("{p}."))
        .unwrap_or_default();
    Some(match closest {
        Some(c) => format!("unknown setting `{key}`: did you mean `{parent}{c}`?"),
        None => format!(
            "unknown setting `{key}` (`crawl config --default` lists every setting; this table takes {})",
            expected
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })
}

/// The dotted path in `t` of a key `name` that the defaults do not know.
fn path_of_key(t: &toml::Table, prefix: &str, name: &str, defaults: &toml::Table) -> Option<String> {
    for (k, v) in t {
        let key = dotted(prefix, k);
        if k == name && lookup(defaults, &key).is_none() {
            return Some(key);
        }
        if let toml::Value::Table(sub) = v
            && let Some(found) = path_of_key(sub, &key, name, defaults)
        {
            return Some(found);
        }
    }
    None
}

/// The dotted path in `t` of a string value `value`.
fn path_of_value(t: &toml::Table, prefix: &str, value: &str) -> Option<String> {
    for (k, v) in t {
        let key = dotted(prefix, k);
        match v {
            toml::Value::String(s) if s == value => return Some(key),
            toml::Value::Table(sub) => {
                if let Some(found) = path_of_value(sub, &key, value) {
                    return Some(found);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::config::Config;

    #[test]
    fn unknown_keys_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(&p, "[dedup]\nblokcs = 6\n").unwrap();
        let e = format!("{:#}", Config::load(Some(&p)).unwrap_err());
        assert!(
            e.contains("c.toml, line 2: unknown setting `dedup.blokcs`: did you mean `dedup.blocks`?"),
            "{e}"
        );
        // Nothing close: the names the table takes.
        std::fs::write(&p, "[store]\nzzzzzzzz = 6\n").unwrap();
        let e = format!("{:#}", Config::load(Some(&p)).unwrap_err());
        assert!(
            e.contains("unknown setting `store.zzzzzzzz`") && e.contains("`data_dir`"),
            "{e}"
        );
        // Ranges are checked on reading, with the full name.
        std::fs::write(&p, "[dedup]\ntitle_min_similarity = 1.5\n").unwrap();
        let e = format!("{:#}", Config::load(Some(&p)).unwrap_err());
        assert!(
            e.contains("dedup.title_min_similarity = 1.5: must be between 0 and 1"),
            "{e}"
        );
        std::fs::write(&p, "[dedup]\nwindow = \"7 parsecs\"\n").unwrap();
        let e = format!("{:#}", Config::load(Some(&p)).unwrap_err());
        assert!(e.contains("invalid window"), "{e}");
    }
}
