//! Capturing a stream up to a cap, and decoding it without cutting a
//! character; counting what a running command wrote so far.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The bytes a running command has written so far to its standard output
/// and error together (those kept and those cut at the cap), readable
/// while it runs: for a host that reports a command's progress. Clones
/// share the count.
#[derive(Debug, Clone, Default)]
pub struct OutputCounter(Arc<AtomicU64>);

impl OutputCounter {
    /// A count at zero.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The bytes written so far.
    #[must_use]
    pub fn bytes(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    fn add(&self, n: usize) {
        self.0.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// Bytes kept from one stream, and whether more were discarded.
#[derive(Debug, Default)]
pub(crate) struct Capture {
    pub(crate) bytes: Vec<u8>,
    pub(crate) truncated: bool,
    cap: usize,
    counter: Option<OutputCounter>,
}

impl Capture {
    /// At most `cap` bytes kept; every byte counted into `counter`.
    pub(crate) fn new(cap: u64, counter: Option<&OutputCounter>) -> Self {
        Self {
            bytes: Vec::new(),
            truncated: false,
            cap: usize::try_from(cap).unwrap_or(usize::MAX),
            counter: counter.cloned(),
        }
    }

    /// Keep what fits under the cap; note that the rest was discarded.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        if let Some(counter) = &self.counter {
            counter.add(chunk.len());
        }
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
        let mut c = Capture::new(5, None);
        c.push(b"abc");
        c.push(b"defgh");
        assert_eq!(c.bytes, b"abcde");
        assert!(c.truncated);
    }

    #[test]
    fn a_character_cut_by_the_cap_is_dropped_whole() {
        for cap in 0..=7 {
            let mut c = Capture::new(cap, None);
            c.push("aé€😀".as_bytes()); // 1 + 2 + 3 + 4 bytes
            let text = c.text();
            assert!(!text.contains('\u{FFFD}'), "cap {cap}: {text:?}");
            assert!("aé€😀".starts_with(&text), "cap {cap}: {text:?}");
        }
    }

    #[test]
    fn invalid_bytes_inside_are_replaced() {
        let mut c = Capture::new(100, None);
        c.push(b"a\xffb");
        assert_eq!(c.text(), "a\u{FFFD}b");
    }
}
