//! A secret value that is never printed: no `Display`, a `Debug` that
//! shows only its length, and its memory overwritten when dropped.

use zeroize::Zeroizing;

/// A credential's real value. It can be read only through
/// [`Secret::expose`]; formatting it shows `Secret(<redacted, N bytes>)`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Zeroizing<String>);

impl Secret {
    /// Wraps `value`.
    #[must_use]
    pub fn new(value: String) -> Secret {
        Secret(Zeroizing::new(value))
    }

    /// The value itself, for the one place that sends it.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Its length in bytes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True for an empty value.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret(<redacted, {} bytes>)", self.0.len())
    }
}

#[cfg(test)]
mod tests {
    use super::Secret;

    #[test]
    fn debug_never_shows_the_value() {
        let secret = Secret::new("ghp_realvalue123".to_owned());
        let shown = format!("{secret:?} {secret:#?}");
        assert!(!shown.contains("realvalue"), "{shown}");
        assert!(shown.contains("16 bytes"), "{shown}");
    }
}
