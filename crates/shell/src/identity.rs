//! Which program a spelling of `argv[0]` names, for matching rules.

/// Windows executable suffixes ignored when naming a program.
const SUFFIXES: &[&str] = &[".exe", ".com", ".bat", ".cmd"];

/// The identity of a program spelling: its file name (after the last `/` or
/// `\`), lower case, without trailing dots or spaces (which Windows drops)
/// and without a Windows executable suffix. `/usr/bin/file`, `FILE` and
/// `file.exe` are all `file`.
pub(crate) fn identity(spelling: &str) -> String {
    let name = spelling.rsplit(['/', '\\']).next().unwrap_or(spelling);
    let mut name = name.trim_end_matches(['.', ' ']).to_lowercase();
    for suffix in SUFFIXES {
        if let Some(stem) = name.strip_suffix(suffix) {
            if !stem.is_empty() {
                name = stem.trim_end_matches(['.', ' ']).to_owned();
            }
            break;
        }
    }
    name
}

/// Whether `spelling` is a bare name (no directory part on any platform).
pub(crate) fn is_bare(spelling: &str) -> bool {
    !spelling.contains(['/', '\\'])
}

#[cfg(test)]
mod tests {
    use super::identity;

    #[test]
    fn seed_spellings_are_all_file() {
        for spelling in [
            "/usr/bin/file",
            "FILE",
            "file.exe",
            "File.EXE",
            "C:\\bin\\file.com",
            "file.exe. ",
        ] {
            assert_eq!(identity(spelling), "file", "{spelling}");
        }
    }

    #[test]
    fn a_suffix_alone_is_not_stripped_to_nothing() {
        assert_eq!(identity(".exe"), ".exe");
    }
}
