//! Serialization of verdicts and signatures (feature `serde`).

use serde::ser::SerializeStruct;

use super::UrlVerdict;

/// A [`crate::Sketch`] as the hexadecimal text of its store encoding
/// ([`crate::Sketch::encode_into`]): the width is in the length.
pub(super) mod sketch {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::sketch::Sketch;

    pub fn serialize<S: Serializer>(sketch: &Option<Sketch>, s: S) -> Result<S::Ok, S::Error> {
        match sketch {
            None => s.serialize_none(),
            Some(k) => {
                let mut bytes = Vec::with_capacity(k.encoded_len());
                k.encode_into(&mut bytes);
                s.serialize_some(&crate::digest::hex(&bytes))
            }
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Sketch>, D::Error> {
        let Some(hex) = Option::<String>::deserialize(d)? else {
            return Ok(None);
        };
        crate::digest::from_hex(&hex)
            .and_then(|bytes| Sketch::decode(&bytes))
            .map(Some)
            .ok_or_else(|| serde::de::Error::custom(format!("invalid sketch of {} hex digits", hex.len())))
    }
}

/// `{"verdict": "new", "canonical": ...}` or `{"verdict": "seen",
/// "canonical": ..., "first": ...}`.
impl serde::Serialize for UrlVerdict {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            UrlVerdict::New(c) => {
                let mut st = s.serialize_struct("UrlVerdict", 2)?;
                st.serialize_field("verdict", "new")?;
                st.serialize_field("canonical", c)?;
                st.end()
            }
            UrlVerdict::Seen { canonical, first } => {
                let mut st = s.serialize_struct("UrlVerdict", 3)?;
                st.serialize_field("verdict", "seen")?;
                st.serialize_field("canonical", canonical)?;
                st.serialize_field("first", first)?;
                st.end()
            }
        }
    }
}
