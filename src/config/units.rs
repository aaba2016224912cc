//! Units of typed settings: durations as whole seconds or milliseconds in files and variables
//! (`*_SECS`, `*_MS`) and [`Duration`](std::time::Duration)s in the tree; URLs parsed once.

macro_rules! unit {
    ($name:ident, $to:ident, $from:ident, $what:literal) => {
        #[doc = concat!("A duration in whole ", $what, ".")]
        pub mod $name {
            use std::time::Duration;

            use serde::{Deserialize, Deserializer, Serializer};

            pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
                // Whole units only come in, so nothing is lost going out.
                s.serialize_u64(u64::try_from(d.$to()).unwrap_or(u64::MAX))
            }

            pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
                u64::deserialize(d).map(Duration::$from)
            }
        }
    };
}

unit!(secs, as_secs, from_secs, "seconds");
unit!(millis, as_millis, from_millis, "milliseconds");

/// An optional URL, parsed once at load; empty is unset.
pub mod optional_url {
    use reqwest::Url;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(url: &Option<Url>, s: S) -> Result<S::Ok, S::Error> {
        match url {
            Some(url) => s.serialize_some(url.as_str()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Url>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(text) if !text.is_empty() => Url::parse(&text)
                .map(Some)
                .map_err(serde::de::Error::custom),
            _ => Ok(None),
        }
    }
}
