//! Reading a spelling: components, Windows rules, plain components and
//! portable names. Pure functions of the text.

use crate::{NotPortable, PathError, Unjudgeable};

/// One component of a spelling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part<'a> {
    /// `..`
    Up,
    /// A name (never empty, `.` or `..`).
    Name(&'a [u8]),
}

/// A spelling split into components.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Spelled<'a> {
    /// Starts at `/` rather than at the base.
    pub(crate) absolute: bool,
    pub(crate) parts: Vec<Part<'a>>,
}

impl Spelled<'_> {
    pub(crate) fn names(&self) -> usize {
        self.parts
            .iter()
            .filter(|p| matches!(p, Part::Name(_)))
            .count()
    }

    pub(crate) fn has_up(&self) -> bool {
        self.parts.contains(&Part::Up)
    }
}

/// Split with POSIX rules: `/` separates, everything else is a name byte.
pub(crate) fn split_posix(bytes: &[u8]) -> Spelled<'_> {
    let absolute = bytes.first() == Some(&b'/');
    let parts = bytes
        .split(|b| *b == b'/')
        .filter_map(|name| match name {
            b"" | b"." => None,
            b".." => Some(Part::Up),
            _ => Some(Part::Name(name)),
        })
        .collect();
    Spelled { absolute, parts }
}

/// Split with Windows rules: `/` and `\` separate, and each name is read as
/// Windows opens it (trailing dots and spaces and a `:stream` suffix
/// dropped, so `.. ` is `..` and `.env.` is `.env`).
///
/// # Errors
///
/// A component that names a device, an 8.3 short name, or that is nothing
/// but dots and spaces beyond `..`.
pub(crate) fn split_windows(spelling: &str) -> Result<Spelled<'_>, Unjudgeable> {
    let bytes = spelling.as_bytes();
    let absolute = matches!(bytes.first(), Some(b'/' | b'\\'));
    let mut parts = Vec::new();
    if spelling.chars().any(is_best_fit_lookalike) {
        return Err(Unjudgeable::BestFit);
    }
    for raw in bytes.split(|b| *b == b'/' || *b == b'\\') {
        if raw.is_empty() {
            continue;
        }
        if is_device_name(raw) {
            return Err(Unjudgeable::ReservedName);
        }
        if looks_like_short_name(raw) {
            return Err(Unjudgeable::ShortName);
        }
        let name = windows_alias_of(raw);
        match name {
            b"." => {}
            b".." => parts.push(Part::Up),
            b"" => {
                // `...`, `. .`, `:x`: Windows strips it to nothing or to a
                // stream of the directory; neither is a name we can judge.
                return Err(Unjudgeable::EmptyName);
            }
            _ => parts.push(Part::Name(name)),
        }
    }
    Ok(Spelled { absolute, parts })
}

/// The spelling-level refusals: NUL always; device and
/// verbatim namespaces, UNC and drive spellings when Windows rules apply.
pub(crate) fn unjudgeable(spelling: &str, windows: bool) -> Option<Unjudgeable> {
    let bytes = spelling.as_bytes();
    if bytes.contains(&0) {
        return Some(Unjudgeable::Nul);
    }
    if !windows {
        return None;
    }
    let sep = |b: Option<&u8>| matches!(b, Some(b'/' | b'\\'));
    if sep(bytes.first()) && sep(bytes.get(1)) {
        return Some(match (bytes.get(2), bytes.get(3)) {
            (Some(b'.' | b'?'), None) => Unjudgeable::DeviceNamespace,
            (Some(b'.' | b'?'), next) if sep(next) => Unjudgeable::DeviceNamespace,
            _ => Unjudgeable::Unc,
        });
    }
    if bytes.starts_with(b"\\??\\") || bytes.starts_with(b"/??/") {
        return Some(Unjudgeable::DeviceNamespace);
    }
    if let [letter, b':', ..] = bytes
        && letter.is_ascii_alphabetic()
    {
        return Some(Unjudgeable::Drive);
    }
    None
}

/// `text` without trailing bytes from `what`.
fn trim_end<'t>(mut text: &'t [u8], what: &[u8]) -> &'t [u8] {
    while let Some((last, rest)) = text.split_last() {
        if what.contains(last) {
            text = rest;
        } else {
            break;
        }
    }
    text
}

/// A name as Windows opens it: a `:stream` suffix and trailing dots and
/// spaces dropped (`.env::$DATA` and `.env. ` are `.env`). `.` and `..`
/// are kept.
pub(crate) fn windows_alias_of(name: &[u8]) -> &[u8] {
    let end = name.iter().position(|b| *b == b':').unwrap_or(name.len());
    let bare = name.get(..end).unwrap_or(name);
    let stripped = trim_end(bare, b". ");
    if !stripped.is_empty() {
        return stripped;
    }
    // Nothing but dots and spaces: `. ` is `.` and `.. ` is `..`; anything
    // else (`...`, `. .`) has no name left.
    match trim_end(bare, b" ") {
        b"." => b".",
        b".." => b"..",
        _ => b"",
    }
}

const DEVICES: [&str; 6] = ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"];

/// `CON`, `nul.txt`, `COM1`, `LPT¹.log`, `CONIN$` ...: a reserved device
/// name, with or without an extension, in any case, with trailing spaces
/// or dots, or a stream suffix.
pub(crate) fn is_device_name(name: &[u8]) -> bool {
    let end = name
        .iter()
        .position(|b| *b == b':' || *b == b'.')
        .unwrap_or(name.len());
    let base = trim_end(name.get(..end).unwrap_or(name), b" ");
    if DEVICES
        .iter()
        .any(|d| d.as_bytes().eq_ignore_ascii_case(base))
    {
        return true;
    }
    let (Some(prefix), Some(digit)) = (base.get(..3), base.get(3..)) else {
        return false;
    };
    if !prefix.eq_ignore_ascii_case(b"COM") && !prefix.eq_ignore_ascii_case(b"LPT") {
        return false;
    }
    // One digit, ASCII or superscript ¹ ² ³ (which Windows also reads).
    matches!(digit, [d] if d.is_ascii_digit()) || matches!(digit, [0xC2, 0xB9 | 0xB2 | 0xB3])
}

/// `GIT~1`, `PROGRA~1.TXT`: the shape of a Windows 8.3 short name.
pub(crate) fn looks_like_short_name(name: &[u8]) -> bool {
    let Some(tilde) = name.iter().position(|b| *b == b'~') else {
        return false;
    };
    let (base, rest) = name.split_at(tilde);
    let rest = rest.get(1..).unwrap_or_default();
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if base.is_empty() || base.len() > 7 || digits == 0 || base.contains(&b'.') {
        return false;
    }
    match rest.get(digits..) {
        Some([]) | None => true,
        Some([b'.', ext @ ..]) => ext.len() <= 3 && !ext.contains(&b'.'),
        Some(_) => false,
    }
}

/// Whether `spelling` is one plain component: a single name,
/// no `/` or `\`, not `.` or `..`, and nothing Windows reads specially (`:`,
/// a trailing dot or space, `*?"<>|`, control characters, a reserved device
/// name). Such a spelling costs one lookup when nothing has that name.
pub(crate) fn is_plain(spelling: &str) -> bool {
    let bytes = spelling.as_bytes();
    if bytes.is_empty() || spelling == "." || spelling == ".." {
        return false;
    }
    if matches!(bytes.last(), Some(b'.' | b' ')) {
        return false;
    }
    if spelling.chars().any(|c| {
        c.is_control() || matches!(c, '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|')
    }) {
        return false;
    }
    !is_device_name(bytes)
}

/// A plain component that Windows rules still refuse (short names,
/// best-fit look-alikes): it must take the full check.
pub(crate) fn windows_reads_specially(name: &str) -> bool {
    looks_like_short_name(name.as_bytes()) || name.chars().any(is_best_fit_lookalike)
}

/// Characters that Windows' best-fit mapping (ANSI code pages) turns into
/// `/`, `\`, `:` or `.`: the full-width and mathematical look-alikes, and
/// the currency signs that share the backslash's byte in the Japanese (`¥`,
/// code page 932) and Korean (`₩`, code page 949) code pages, where a
/// program using the ANSI APIs reads them as a separator.
fn is_best_fit_lookalike(c: char) -> bool {
    matches!(
        c,
        '\u{FF0F}'
            | '\u{FF3C}'
            | '\u{2215}'
            | '\u{2216}'
            | '\u{FF1A}'
            | '\u{2024}'
            | '\u{FF0E}'
            | '\u{00A5}'
            | '\u{20A9}'
            | '\u{FFE5}'
            | '\u{FFE6}'
    )
}

fn is_bidi(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Check that a name about to be **created** is portable and unambiguous on
/// every platform, as git's NTFS protection is: no control or
/// bidirectional-text characters, none of `: * ? " < > | \ /`, no trailing
/// dot or space, no reserved device name (`CON`, `nul.txt`, `COM¹`), and no
/// 8.3 short-name shape (`GIT~1`), which Windows may resolve to another
/// file such as `.git`.
///
/// ```
/// use agentcaps_paths::check_portable_name;
/// assert!(check_portable_name("notes.txt").is_ok());
/// assert!(check_portable_name("aux.c").is_err());
/// assert!(check_portable_name("GIT~1").is_err());
/// ```
///
/// # Errors
///
/// [`PathError::NotPortable`] naming the component and the rule.
pub fn check_portable_name(component: &str) -> Result<(), PathError> {
    let refuse = |why| {
        Err(PathError::NotPortable {
            name: component.to_owned(),
            why,
        })
    };
    if component.is_empty() || component == "." || component == ".." {
        return refuse(NotPortable::Empty);
    }
    if component.chars().any(char::is_control) {
        return refuse(NotPortable::Control);
    }
    if component.chars().any(is_bidi) {
        return refuse(NotPortable::Bidi);
    }
    if component.chars().any(|c| {
        matches!(c, ':' | '*' | '?' | '"' | '<' | '>' | '|' | '\\' | '/')
            || is_best_fit_lookalike(c)
    }) {
        return refuse(NotPortable::Reserved);
    }
    if component.ends_with(['.', ' ']) {
        return refuse(NotPortable::TrailingDotOrSpace);
    }
    if is_device_name(component.as_bytes()) {
        return refuse(NotPortable::DeviceName);
    }
    if looks_like_short_name(component.as_bytes()) {
        return refuse(NotPortable::ShortName);
    }
    Ok(())
}

/// [`check_portable_name`] for a name that may not be UTF-8.
pub(crate) fn check_portable_os(name: &std::ffi::OsStr) -> Result<(), PathError> {
    check_portable_bytes(crate::location::os_bytes(name))
}

/// [`check_portable_name`] for raw bytes (not UTF-8 is not portable).
pub(crate) fn check_portable_bytes(name: &[u8]) -> Result<(), PathError> {
    match std::str::from_utf8(name) {
        Ok(text) => check_portable_name(text),
        Err(_) => Err(PathError::NotPortable {
            name: String::from_utf8_lossy(name).into_owned(),
            why: NotPortable::NotUtf8,
        }),
    }
}
