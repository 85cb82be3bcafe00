//! `paths` of a credential: patterns over the request path (`*` within
//! one segment, `**` for any number of segments), matched after the path
//! is normalised the WHATWG way (dot segments, also percent-encoded ones,
//! resolved) and percent-encoded unreserved characters decoded. Anything
//! else stays encoded: `acme%2F..%2Fother` is one segment, never `acme`.

/// A compiled path pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathPattern {
    text: String,
    segments: Vec<String>,
}

impl PathPattern {
    /// Compiles `raw`, which must start with `/`.
    pub(crate) fn new(raw: &str) -> Result<PathPattern, String> {
        if !raw.starts_with('/') {
            return Err(format!("`{raw}` must start with `/`"));
        }
        let normal = normalise(raw).ok_or_else(|| format!("`{raw}` is not a URL path"))?;
        if normal != raw {
            return Err(format!("`{raw}` is not in normal form (write `{normal}`)"));
        }
        Ok(PathPattern {
            text: raw.to_owned(),
            segments: raw[1..].split('/').map(str::to_owned).collect(),
        })
    }

    /// The pattern as written.
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// Does the (normalised) `path` match?
    pub(crate) fn matches(&self, path: &str) -> bool {
        let Some(rest) = path.strip_prefix('/') else {
            return false;
        };
        let segs: Vec<&str> = rest.split('/').collect();
        // reach[j]: the pattern's first i segments can match the path's
        // first j segments.
        let mut reach = vec![false; segs.len() + 1];
        reach[0] = true;
        for pat in &self.segments {
            let mut next = vec![false; segs.len() + 1];
            if pat == "**" {
                let mut on = false;
                for j in 0..=segs.len() {
                    on = on || reach[j];
                    next[j] = on;
                }
            } else {
                for j in 0..segs.len() {
                    if reach[j] && segment_matches(pat, segs[j]) {
                        next[j + 1] = true;
                    }
                }
            }
            reach = next;
        }
        reach[segs.len()]
    }
}

/// `*` matches any run of characters within one segment.
fn segment_matches(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// The request target's path as a server reads it: dot segments resolved
/// (also `%2e%2e`), percent-encoded unreserved characters decoded, the
/// query left out. `None` when it cannot be read as a path.
pub(crate) fn normalise(target: &str) -> Option<String> {
    let path = target.split(['?', '#']).next().unwrap_or_default();
    if !path.starts_with('/') {
        return None;
    }
    let mut url = url::Url::parse("https://agentcaps.invalid/").ok()?;
    url.set_path(path);
    Some(decode_unreserved(url.path()))
}

fn decode_unreserved(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = path.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
            && (b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
        {
            out.push(char::from(b));
            i += 3;
            continue;
        }
        let ch = path[i..].chars().next().unwrap_or('\u{fffd}');
        out.push(ch);
        i += ch.len_utf8().max(1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{PathPattern, normalise};

    fn matches(pattern: &str, target: &str) -> bool {
        let path = normalise(target).unwrap();
        PathPattern::new(pattern).unwrap().matches(&path)
    }

    #[test]
    fn double_star_is_any_number_of_segments() {
        assert!(matches("/repos/acme/**", "/repos/acme/x/y"));
        assert!(matches("/repos/acme/**", "/repos/acme/"));
        assert!(matches("/repos/acme/**", "/repos/acme"));
        assert!(!matches("/repos/acme/**", "/repos/acmeco/x"));
        assert!(matches("/a/*/c", "/a/bee/c"));
        assert!(!matches("/a/*/c", "/a/b/x/c"));
        assert!(matches("/v1/*.json", "/v1/index.json"));
    }

    #[test]
    fn dot_segments_and_encodings_cannot_leave_the_pattern() {
        assert!(!matches("/repos/acme/**", "/repos/acme/../other/x"));
        assert!(!matches("/repos/acme/**", "/repos/acme/%2e%2e/other/x"));
        assert!(!matches("/repos/acme/**", "/repos/acme/.%2E/other"));
        assert!(!matches("/repos/acme/**", "/repos/acme%2F..%2Fother"));
        assert!(matches("/repos/acme/**", "/repos/%61cme/x"));
        assert!(matches("/repos/acme/**", "/repos/acme/x?u=/other"));
    }

    #[test]
    fn patterns_are_written_in_normal_form() {
        assert!(PathPattern::new("repos").is_err());
        assert!(PathPattern::new("/a/../b").is_err());
        assert!(PathPattern::new("/a/**").is_ok());
    }
}
