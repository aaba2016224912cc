//! A secret setting (a password, a URL that may carry one): `Debug` prints `***`, so a logged
//! configuration never shows it. `flow config check` redacts it from its definition.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A string that stays out of `Debug` output; [`expose`](Self::expose) is the one way to read it.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for the one place that needs it (a login, a connection).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_value() {
        let s = Secret::from("hunter2");
        assert_eq!(format!("{s:?} {:?}", Some(&s)), "*** Some(***)");
        assert_eq!(s.expose(), "hunter2");
    }
}
