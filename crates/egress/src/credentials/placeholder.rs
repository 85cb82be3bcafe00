//! Placeholders: a random stand-in for a secret, new for every run, with
//! the secret's length, its prefix (up to and including the first `_` or
//! `-`: `ghp_`, `sk-`, `npm_`) and, position by position, the same class
//! of character (lower case, upper case, digit; anything else is kept), so
//! a program that checks a token's shape accepts it.

/// Randomised positions a value needs after its prefix: fewer, and a
/// placeholder could be guessed or equal the value itself.
pub const MIN_RANDOM_POSITIONS: usize = 12;

/// How many positions of `value` a placeholder randomises.
#[must_use]
pub fn random_positions(value: &str) -> usize {
    let (_, rest) = split_prefix(value);
    rest.chars().filter(char::is_ascii_alphanumeric).count()
}

/// `(prefix, rest)`: the prefix ends with the first `_` or `-` (none when
/// the value has neither, or only at its very end).
fn split_prefix(value: &str) -> (&str, &str) {
    match value.find(['_', '-']) {
        Some(i) if i + 1 < value.len() => value.split_at(i + 1),
        _ => ("", value),
    }
}

/// A placeholder for `value`, drawn from `random` (bytes of a secure
/// random source; one per randomised position, refilled as needed).
///
/// # Errors
///
/// When the random source fails.
pub(crate) fn make(
    value: &str,
    mut random: impl FnMut(&mut [u8]) -> Result<(), ()>,
) -> Result<String, ()> {
    let (prefix, rest) = split_prefix(value);
    let mut out = String::with_capacity(value.len());
    out.push_str(prefix);
    let mut pool = [0u8; 64];
    let mut used = pool.len();
    let mut next = |n: u8| -> Result<char, ()> {
        // Rejection sampling: no bias toward the first letters.
        let limit = 256 - (256 % u16::from(n));
        loop {
            if used == pool.len() {
                random(&mut pool)?;
                used = 0;
            }
            let b = pool.get(used).copied().unwrap_or(0);
            used += 1;
            if u16::from(b) < limit {
                return Ok(char::from(b % n));
            }
        }
    };
    for c in rest.chars() {
        let shifted = |base: u8, n: u8, next: &mut dyn FnMut(u8) -> Result<char, ()>| {
            next(n).map(|d| char::from(base + d as u8))
        };
        let p = match c {
            'a'..='z' => shifted(b'a', 26, &mut next)?,
            'A'..='Z' => shifted(b'A', 26, &mut next)?,
            '0'..='9' => shifted(b'0', 10, &mut next)?,
            other => other,
        };
        out.push(p);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{make, random_positions};

    fn class(c: char) -> u8 {
        match c {
            'a'..='z' => 1,
            'A'..='Z' => 2,
            '0'..='9' => 3,
            _ => 0,
        }
    }

    fn rng() -> impl FnMut(&mut [u8]) -> Result<(), ()> {
        let mut state = 0x9e37_79b9_u32;
        move |buf| {
            for b in buf {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                *b = (state >> 24) as u8;
            }
            Ok(())
        }
    }

    #[test]
    fn keeps_length_prefix_and_classes() {
        for value in [
            "ghp_AbCdEf0123456789xyzXYZ0123456789ab",
            "sk-proj-AbC123dEf456GhI789",
            "npm_abcdefghijklmnopqrstuvwxyz0123456789",
            "eyJhbGciOi.eyJzdWIiOiIx.SflKxwRJSMeKKF2QT4fwpM",
            "plainlowercaseanddigits0123",
        ] {
            let p = make(value, rng()).unwrap();
            assert_eq!(p.len(), value.len(), "{value} -> {p}");
            assert_ne!(p, value);
            let prefix = value.find(['_', '-']).map_or(0, |i| i + 1);
            assert_eq!(p[..prefix], value[..prefix]);
            for (a, b) in p.chars().zip(value.chars()) {
                assert_eq!(class(a), class(b), "{value} -> {p}");
                if class(b) == 0 {
                    assert_eq!(a, b);
                }
            }
        }
    }

    #[test]
    fn counts_only_what_is_randomised() {
        assert_eq!(random_positions("ghp_abc"), 3);
        assert_eq!(random_positions("----"), 0);
        assert_eq!(random_positions("abc_"), 4 - 1);
    }

    #[test]
    fn a_failing_source_is_an_error() {
        assert!(make("abcdefghijklmnop", |_| Err(())).is_err());
    }
}
