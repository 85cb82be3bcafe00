//! A target file seen as lines: content without terminator, and the
//! terminator kept apart so CRLF files stay CRLF.

/// One line of a file: byte ranges into the file's buffer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FileLine {
    start: usize,
    /// End of the content (before `\r\n` or `\n`).
    content_end: usize,
    /// End including the terminator.
    end: usize,
}

/// A file's bytes and its lines.
pub(crate) struct Text<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) lines: Vec<FileLine>,
    /// The terminator added lines get: `\r\n` when most lines end so.
    pub(crate) eol: &'static [u8],
}

impl<'a> Text<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        let mut lines = Vec::new();
        let (mut crlf, mut lf) = (0usize, 0usize);
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', bytes) {
            let content_end = if nl > start && bytes.get(nl - 1) == Some(&b'\r') {
                crlf += 1;
                nl - 1
            } else {
                lf += 1;
                nl
            };
            lines.push(FileLine {
                start,
                content_end,
                end: nl + 1,
            });
            start = nl + 1;
        }
        if start < bytes.len() {
            lines.push(FileLine {
                start,
                content_end: bytes.len(),
                end: bytes.len(),
            });
        }
        let eol: &'static [u8] = if crlf > lf { b"\r\n" } else { b"\n" };
        Text { bytes, lines, eol }
    }

    pub(crate) fn len(&self) -> usize {
        self.lines.len()
    }

    /// The content of line `i` (0-based), without terminator.
    pub(crate) fn content(&self, i: usize) -> &'a [u8] {
        self.lines
            .get(i)
            .and_then(|l| self.bytes.get(l.start..l.content_end))
            .unwrap_or_default()
    }

    /// Line `i` with its terminator, exactly as in the file.
    pub(crate) fn whole(&self, i: usize) -> &'a [u8] {
        self.lines
            .get(i)
            .and_then(|l| self.bytes.get(l.start..l.end))
            .unwrap_or_default()
    }
}

/// A patch line's text without a trailing `\r` (patches may be CRLF).
pub(crate) fn patch_content(s: &str) -> &[u8] {
    s.strip_suffix('\r').unwrap_or(s).as_bytes()
}

/// Output being assembled: a line is terminated when another follows it.
pub(crate) struct Output {
    pub(crate) bytes: Vec<u8>,
    open: bool,
    eol: &'static [u8],
}

impl Output {
    pub(crate) fn new(capacity: usize, eol: &'static [u8]) -> Self {
        Output {
            bytes: Vec::with_capacity(capacity),
            open: false,
            eol,
        }
    }

    fn close_open_line(&mut self) {
        if self.open {
            self.bytes.extend_from_slice(self.eol);
            self.open = false;
        }
    }

    /// Appends a line exactly as the file had it (terminator included).
    pub(crate) fn push_whole(&mut self, line: &[u8]) {
        self.close_open_line();
        self.bytes.extend_from_slice(line);
        self.open = !line.ends_with(b"\n");
    }

    /// Appends a new line's content; it gets the file's terminator.
    pub(crate) fn push_new(&mut self, content: &[u8]) {
        self.close_open_line();
        self.bytes.extend_from_slice(content);
        self.bytes.extend_from_slice(self.eol);
    }

    /// Makes the last line end without (`false`) or with (`true`) a terminator.
    pub(crate) fn set_final_newline(&mut self, on: bool) {
        if on {
            self.close_open_line();
        } else if !self.open {
            if self.bytes.ends_with(b"\r\n") {
                self.bytes.truncate(self.bytes.len() - 2);
            } else if self.bytes.ends_with(b"\n") {
                self.bytes.truncate(self.bytes.len() - 1);
            }
            self.open = !self.bytes.is_empty();
        }
    }
}
