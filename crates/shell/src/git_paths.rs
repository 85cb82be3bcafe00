//! The paths inside git's arguments that name no file by their spelling.
//!
//! - **Object names**: `REV:PATH` (`HEAD:.env`), `:PATH` and `:N:PATH`
//!   (the index), and `-L START,END:PATH` print a file of the repository.
//!   The `PATH` part is judged like a pathspec, so a blocked name is
//!   refused (`git show HEAD:.env` is `blocked`) whatever the revision.
//!   Every tail after a `:` is judged (a revision holds no `:`, and one
//!   inside `@{…}` only adds a spelling to judge); a tail that starts with
//!   `//` is the rest of a URL and names no file. A leading `:` may carry
//!   pathspec magic (`:(top)x`, `:!x`, `:/x`): the name after it is judged.
//! - **Local remotes**: a `file://` URL names the directory at its path
//!   (`file:///srv/repo` is `/srv/repo`; percent escapes are judged both
//!   ways), judged like the absolute or relative path of a local remote
//!   (which is judged as given). `git push` writes its remote: the first
//!   operand and `--repo`, when they are not another machine's URL, are
//!   judged for writing.
//!
//! A secret that was once committed is still in the history: `git log -p`
//! and `git show REV` without a path print whole commits, whose contents
//! no path check sees. Keep blocked files out of repositories the agent
//! may read.

/// The path parts of one git argument (see the module docs).
pub(crate) fn paths_in(arg: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(path) = file_url_path(arg) {
        push_decoded(&mut out, path);
        return out;
    }
    if let Some(rest) = arg.strip_prefix(':') {
        out.push(index_or_magic_path(rest).to_owned());
    }
    for (at, _) in arg.match_indices(':') {
        let tail = arg.get(at + 1..).unwrap_or_default();
        if !tail.is_empty() && !tail.starts_with("//") {
            out.push(tail.to_owned());
        }
    }
    out.retain(|p| !p.is_empty());
    out.dedup();
    out
}

/// What git writes of a `push` remote given as `remote` (the first
/// operand, or the value of `--repo`): its path, when it names a local
/// directory. `None` for another machine (`scheme://…` other than
/// `file://`, `host:path`) and for a name without `/` (a configured
/// remote such as `origin`, whose URL the command line does not show;
/// `.` and `..` are directories).
pub(crate) fn pushed_path(remote: &str) -> Option<Vec<String>> {
    if let Some(path) = file_url_path(remote) {
        let mut out = Vec::new();
        push_decoded(&mut out, path);
        return Some(out);
    }
    let head = remote.split('/').next().unwrap_or(remote);
    if remote.contains("://") || head.contains(':') {
        return None;
    }
    if remote.contains('/') || remote == "." || remote == ".." {
        Some(vec![remote.to_owned()])
    } else {
        None
    }
}

/// The paths of a `file://` URL (any case), raw and percent-decoded.
pub(crate) fn file_url_paths(arg: &str) -> Option<Vec<String>> {
    let path = file_url_path(arg)?;
    let mut out = Vec::new();
    push_decoded(&mut out, path);
    Some(out)
}

/// The path of a `file://` URL (any case): after the host, which git
/// ignores when it is empty or `localhost`. A URL with another host still
/// names its path here (judged, never passed unjudged).
fn file_url_path(arg: &str) -> Option<&str> {
    let scheme = arg.get(..7)?;
    if !scheme.eq_ignore_ascii_case("file://") {
        return None;
    }
    let rest = arg.get(7..).unwrap_or_default();
    Some(match rest.find('/') {
        Some(at) => rest.get(at..).unwrap_or(rest),
        None => rest,
    })
}

/// `N:PATH` (a stage of the index), `(magic)PATH`, `!PATH`, `^PATH`,
/// `/PATH` (from the top of the tree) or `PATH`.
fn index_or_magic_path(rest: &str) -> &str {
    let mut chars = rest.chars();
    if let (Some(n), Some(':')) = (chars.next(), chars.next())
        && n.is_ascii_digit()
    {
        return rest.get(2..).unwrap_or_default();
    }
    if let Some(magic) = rest.strip_prefix('(') {
        return magic.split_once(')').map_or("", |(_, path)| path);
    }
    rest.trim_start_matches(['!', '^', '/'])
}

/// `path`, and its percent-decoded form when that differs.
fn push_decoded(out: &mut Vec<String>, path: &str) {
    out.push(path.to_owned());
    let decoded = percent_decoded(path);
    if decoded != path {
        out.push(decoded);
    }
}

fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b, hex) {
            (b'%', Some(value)) => {
                out.push(value);
                i += 3;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_names_give_their_path() {
        assert_eq!(paths_in("HEAD:.env"), [".env"]);
        assert_eq!(paths_in(":.env"), [".env"]);
        assert!(paths_in(":0:.env").contains(&".env".to_owned()));
        assert!(paths_in(":2:sub/.env").contains(&"sub/.env".to_owned()));
        assert!(paths_in("10,20:key.pem").contains(&"key.pem".to_owned()));
        assert!(paths_in("HEAD@{1:2}:.env").contains(&".env".to_owned()));
        assert!(paths_in(":(top).env").contains(&".env".to_owned()));
        assert!(paths_in(":!.env").contains(&".env".to_owned()));
        assert!(paths_in(":/.env").contains(&".env".to_owned()));
        assert!(paths_in("HEAD").is_empty());
        assert!(paths_in("main..topic").is_empty());
    }

    #[test]
    fn urls_name_no_file_but_file_urls_do() {
        assert!(paths_in("https://example.invalid/repo.git").is_empty());
        assert_eq!(paths_in("file:///srv/repo"), ["/srv/repo"]);
        assert_eq!(paths_in("FILE://localhost/srv/repo"), ["/srv/repo"]);
        assert_eq!(paths_in("file:///a/%2e%2e/b"), ["/a/%2e%2e/b", "/a/../b"]);
        assert_eq!(paths_in("git@example.invalid:team/repo"), ["team/repo"]);
    }

    #[test]
    fn pushed_remotes_that_are_local_directories() {
        assert_eq!(
            pushed_path("../outside/repo"),
            Some(vec!["../outside/repo".to_owned()])
        );
        assert_eq!(pushed_path("/srv/repo"), Some(vec!["/srv/repo".to_owned()]));
        assert_eq!(
            pushed_path("file:///srv/repo"),
            Some(vec!["/srv/repo".to_owned()])
        );
        assert_eq!(pushed_path("."), Some(vec![".".to_owned()]));
        assert_eq!(pushed_path("origin"), None);
        assert_eq!(pushed_path("https://example.invalid/r"), None);
        assert_eq!(pushed_path("host:team/repo"), None);
    }
}
