//! MD5 digests and their hex form, shared by the modules that record or key
//! by a digest (canonical URLs, title keys, the IDF and segmenter digests,
//! the replicated store's chain). A leaf module: it uses nothing of the
//! crate, so every other module can use it without an import cycle.

use md5::{Digest, Md5};

/// MD5 of `text`'s UTF-8 bytes.
pub(crate) fn md5_of(text: &str) -> [u8; 16] {
    md5_of_bytes(text.as_bytes())
}

/// MD5 of `bytes`.
pub(crate) fn md5_of_bytes(bytes: &[u8]) -> [u8; 16] {
    let mut h = Md5::new();
    h.update(bytes);
    h.finalize().into()
}

/// Lowercase hex of `bytes`, two digits a byte.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of [`hex`]'s text (either case), or `None` for an odd
/// length or a character that is not a hex digit. Read where values
/// travel as hex (sketches and outlines under `serde`).
#[cfg(feature = "serde")]
pub(crate) fn from_hex(text: &str) -> Option<Vec<u8>> {
    // `from_str_radix` alone would take a sign ("+f").
    if !text.len().is_multiple_of(2) || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_hex_of_known_inputs() {
        assert_eq!(hex(&md5_of("")), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(hex(&md5_of_bytes(b"abc")), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(md5_of("abc"), md5_of_bytes(b"abc"));
        assert_eq!(hex(&[0x00, 0x0f, 0xff]), "000fff");
    }

    #[cfg(feature = "serde")]
    #[test]
    fn hex_reads_back() {
        assert_eq!(from_hex("000fFf"), Some(vec![0x00, 0x0f, 0xff]));
        assert_eq!(from_hex(""), Some(vec![]));
        for bad in ["0", "0g", "+1", "é0"] {
            assert_eq!(from_hex(bad), None, "{bad}");
        }
    }
}
