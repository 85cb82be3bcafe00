//! Capturing a stream up to a cap, and decoding it without cutting a
//! character.

/// Bytes kept from one stream, and whether more were discarded.
#[derive(Debug, Default)]
pub(crate) struct Capture {
    pub(crate) bytes: Vec<u8>,
    pub(crate) truncated: bool,
    cap: usize,
}

impl Capture {
    pub(crate) fn new(cap: u64) -> Self {
        Self {
            bytes: Vec::new(),
            truncated: false,
            cap: usize::try_from(cap).unwrap_or(usize::MAX),
        }
    }

    /// Keep what fits under the cap; note that the rest was discarded.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        let room = self.cap.saturating_sub(self.bytes.len());
        let (kept, dropped) = chunk.split_at(room.min(chunk.len()));
        self.bytes.extend_from_slice(kept);
        if !dropped.is_empty() {
            self.truncated = true;
        }
    }

    /// The text: UTF-8 with invalid bytes replaced; when truncated, an
    /// incomplete character at the cut is dropped rather than replaced.
    pub(crate) fn text(&self) -> String {
        let bytes = if self.truncated {
            &self.bytes[..complete_prefix(&self.bytes)]
        } else {
            &self.bytes[..]
        };
        String::from_utf8_lossy(bytes).into_owned()
    }
}

/// The length of `bytes` without a trailing incomplete UTF-8 sequence.
fn complete_prefix(bytes: &[u8]) -> usize {
    // A character is at most 4 bytes: look at the last 3 for its lead byte.
    for back in 1..=3.min(bytes.len()) {
        let at = bytes.len() - back;
        let byte = bytes[at];
        if byte & 0b1100_0000 == 0b1000_0000 {
            continue; // a continuation byte: keep looking for the lead
        }
        let needed = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if needed > back { at } else { bytes.len() };
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_keeps_the_head_and_notes_the_rest() {
        let mut c = Capture::new(5);
        c.push(b"abc");
        c.push(b"defgh");
        assert_eq!(c.bytes, b"abcde");
        assert!(c.truncated);
    }

    #[test]
    fn a_character_cut_by_the_cap_is_dropped_whole() {
        for cap in 0..=7 {
            let mut c = Capture::new(cap);
            c.push("aé€😀".as_bytes()); // 1 + 2 + 3 + 4 bytes
            let text = c.text();
            assert!(!text.contains('\u{FFFD}'), "cap {cap}: {text:?}");
            assert!("aé€😀".starts_with(&text), "cap {cap}: {text:?}");
        }
    }

    #[test]
    fn invalid_bytes_inside_are_replaced() {
        let mut c = Capture::new(100);
        c.push(b"a\xffb");
        assert_eq!(c.text(), "a\u{FFFD}b");
    }
}
