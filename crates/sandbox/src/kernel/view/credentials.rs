//! Credentials inside what the view holds read-only: the runtime (`/usr`)
//! and each tool installation or cache directory it binds whole can hold
//! files with registry tokens and passwords — cargo's `credentials.toml`
//! in a `CARGO_HOME` of `/usr/local/cargo` (the Rust container images),
//! an `.npmrc` at the top of `~/.nvm`. The view hides each one that
//! exists under an empty, read-only file (or directory).
//!
//! Only named spots are looked at, never a whole tree: a few `stat` calls
//! and one directory listing per installation, per run.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use agentcaps_paths::PathPolicy;

use crate::kernel::rules::RUNTIME_DIRS;

/// Names (and two paths) that hold credentials at the top of a tool
/// installation or cache the view binds whole.
pub(crate) const CREDENTIAL_NAMES: &[&str] = &[
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pypirc",
    "pip.conf",
    ".netrc",
    ".git-credentials",
    "credentials",
    "credentials.toml",
    ".docker/config.json",
];

/// Where the runtime holds credentials when tools keep their home in it:
/// cargo's in the Rust images.
const RUNTIME_CREDENTIALS: &[&str] = &[
    "/usr/local/cargo/credentials",
    "/usr/local/cargo/credentials.toml",
];

/// npm's global configuration under a `/usr/local` or `/usr` prefix (and
/// `etc/npmrc` in each installation bound whole): hidden only when it
/// holds a token or password, for it commonly holds what npm needs to
/// work (`cafile`, the registry).
const GLOBAL_NPMRC: &[&str] = &["/usr/local/etc/npmrc", "/usr/etc/npmrc"];

/// The keys of an npmrc that carry a secret.
const NPMRC_SECRET_KEYS: &[&str] = &["_auth", "_password", "token", "password"];

/// Bytes of a global npmrc read to look for a secret; a longer one is
/// hidden whole.
const NPMRC_READ_LIMIT: u64 = 64 * 1024;

/// Variables naming a directory, and the files in it that hold
/// credentials.
const DIRS_IN_ENV: &[(&str, &[&str])] = &[
    ("CARGO_HOME", &["credentials", "credentials.toml"]),
    ("DOCKER_CONFIG", &["config.json"]),
];

/// Variables naming a file that holds credentials.
const FILES_IN_ENV: &[&str] = &[
    "NPM_CONFIG_USERCONFIG",
    "npm_config_userconfig",
    "NPM_CONFIG_GLOBALCONFIG",
    "npm_config_globalconfig",
    "NETRC",
    "PIP_CONFIG_FILE",
];

/// One entry the view hides: where it is in the view, and whether it is a
/// directory (hidden under an empty directory, else an empty file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hidden {
    /// Its path in the view.
    pub(crate) at: PathBuf,
    /// A directory.
    pub(crate) dir: bool,
}

/// What the view holds read-only, for [`to_hide`].
pub(crate) struct Held<'a> {
    /// Tool installations and caches the view binds whole (their tops are
    /// listed and judged).
    pub(crate) whole: &'a [PathBuf],
    /// The roots of the path policy: what lies in them follows its rules.
    pub(crate) roots: &'a [(PathBuf, bool)],
    /// The command's environment (the runner's own is read too).
    pub(crate) env: &'a [(OsString, OsString)],
}

/// The credential files (and the entries `policy` blocks) that exist in
/// what the view holds read-only outside the roots: the named spots of
/// the runtime, the files the environment names (`CARGO_HOME`'s
/// `credentials.toml`, `NPM_CONFIG_USERCONFIG`, …) and, at the top of each
/// directory bound whole, [`CREDENTIAL_NAMES`] and every entry whose path
/// `policy` blocks (`.env`, `.ssh`, `*.pem`). A link is hidden where it
/// leads, when that is in the view.
pub(crate) fn to_hide(policy: &PathPolicy, held: &Held<'_>) -> Vec<Hidden> {
    let mut candidates: Vec<PathBuf> = RUNTIME_CREDENTIALS.iter().map(PathBuf::from).collect();
    let runner_env: Vec<(OsString, OsString)> = DIRS_IN_ENV
        .iter()
        .map(|(name, _)| *name)
        .chain(FILES_IN_ENV.iter().copied())
        .filter_map(|name| Some((OsString::from(name), std::env::var_os(name)?)))
        .collect();
    for (name, value) in held.env.iter().chain(&runner_env) {
        let value = Path::new(value);
        if !value.is_absolute() {
            continue;
        }
        if let Some((_, files)) = DIRS_IN_ENV.iter().find(|(n, _)| name == *n) {
            candidates.extend(files.iter().map(|f| value.join(f)));
        } else if FILES_IN_ENV.iter().any(|n| name == *n) {
            candidates.push(value.to_path_buf());
        }
    }
    for dir in held.whole {
        candidates.extend(
            CREDENTIAL_NAMES
                .iter()
                .filter(|n| n.contains('/'))
                .map(|n| dir.join(n)),
        );
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let named = entry
                .file_name()
                .to_str()
                .is_some_and(|n| CREDENTIAL_NAMES.contains(&n));
            if named || policy.blocked_entry(&path).is_some() {
                candidates.push(path);
            }
        }
    }
    let npmrcs = GLOBAL_NPMRC
        .iter()
        .map(PathBuf::from)
        .chain(held.whole.iter().map(|d| d.join("etc/npmrc")));
    candidates.extend(npmrcs.filter(|path| holds_a_secret(path)));
    let mut views = Views::new(held.whole);
    let mut hidden: Vec<Hidden> = Vec::new();
    for candidate in candidates {
        if std::fs::symlink_metadata(&candidate).is_err() {
            continue;
        }
        // Where it really is (a link is hidden where it leads; a dangling
        // one leads nowhere readable).
        let Ok(real) = std::fs::canonicalize(&candidate) else {
            continue;
        };
        let Ok(meta) = std::fs::metadata(&real) else {
            continue;
        };
        let Some(at) = views.in_view(&real) else {
            // Not in what the view holds: nothing to hide.
            continue;
        };
        if held
            .roots
            .iter()
            .any(|(root, _)| at.starts_with(root) || real.starts_with(root))
            || hidden.iter().any(|h| h.at == at)
        {
            continue;
        }
        hidden.push(Hidden {
            at,
            dir: meta.is_dir(),
        });
    }
    // What lies in a hidden directory is gone with it.
    let dirs: Vec<PathBuf> = hidden
        .iter()
        .filter(|h| h.dir)
        .map(|h| h.at.clone())
        .collect();
    hidden.retain(|h| !dirs.iter().any(|d| h.at != *d && h.at.starts_with(d)));
    hidden
}

/// The directories the view holds read-only (the runtime's and those
/// bound whole), each with where it really is, found on first need.
struct Views<'a> {
    dirs: Vec<(&'a Path, Option<Option<PathBuf>>)>,
}

impl<'a> Views<'a> {
    fn new(whole: &'a [PathBuf]) -> Self {
        let runtime = RUNTIME_DIRS.iter().map(Path::new);
        Self {
            dirs: runtime
                .chain(whole.iter().map(PathBuf::as_path))
                .map(|d| (d, None))
                .collect(),
        }
    }

    /// The path in the view of the real, canonical path `real`: beneath
    /// the directory of the view that holds it.
    fn in_view(&mut self, real: &Path) -> Option<PathBuf> {
        for (dir, canonical) in &mut self.dirs {
            let canonical = canonical.get_or_insert_with(|| std::fs::canonicalize(*dir).ok());
            if let Some(canonical) = canonical
                && let Ok(rel) = real.strip_prefix(&*canonical)
            {
                return Some(dir.join(rel));
            }
        }
        None
    }
}

/// Whether the npm configuration file at `path` (when there is one) names
/// a token or password — or cannot be read whole to tell.
fn holds_a_secret(path: &Path) -> bool {
    use std::io::Read;
    let Ok(file) = std::fs::File::open(path) else {
        // Absent (or unreadable here, and so in the view too).
        return false;
    };
    let mut text = Vec::new();
    if file
        .take(NPMRC_READ_LIMIT + 1)
        .read_to_end(&mut text)
        .is_err()
        || text.len() as u64 > NPMRC_READ_LIMIT
    {
        return true;
    }
    let text = String::from_utf8_lossy(&text).to_lowercase();
    NPMRC_SECRET_KEYS.iter().any(|key| text.contains(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> PathPolicy {
        PathPolicy::builder()
            .allow("/nonexistent-root")
            .build()
            .expect("policy")
    }

    #[test]
    fn an_npmrc_is_hidden_only_when_it_holds_a_secret() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("npmrc");
        for (text, secret) in [
            ("cafile=/etc/ssl/certs/ca-certificates.crt\n", false),
            ("registry=https://registry.example/\n", false),
            ("//registry.example/:_authToken=abc\n", true),
            ("//registry.example/:_AUTH=abc\n", true),
            ("_password=abc\n", true),
        ] {
            std::fs::write(&path, text).expect("write");
            assert_eq!(holds_a_secret(&path), secret, "{text}");
        }
        let huge = "x".repeat(usize::try_from(NPMRC_READ_LIMIT).expect("limit") + 1);
        std::fs::write(&path, huge).expect("write");
        assert!(holds_a_secret(&path), "too long to tell: hidden");
        assert!(!holds_a_secret(&dir.path().join("absent")));
    }

    #[test]
    fn the_top_of_a_directory_bound_whole_is_judged_and_nothing_deeper() {
        let dir = tempfile::tempdir().expect("tempdir");
        let tool = dir.path().canonicalize().expect("canonical").join("tool");
        for rel in [
            ".npmrc",
            "credentials.toml",
            ".env.local",
            "bin/prog",
            "lib/.npmrc",
            "cargo/credentials",
        ] {
            let path = tool.join(rel);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, "x").expect("write");
        }
        std::fs::create_dir_all(tool.join(".ssh")).expect("mkdir");
        std::os::unix::fs::symlink("/nonexistent/secret", tool.join(".netrc")).expect("link");
        let whole = [tool.clone()];
        std::fs::write(tool.join(".ssh/netrc"), "x").expect("write");
        let env = [
            (
                OsString::from("CARGO_HOME"),
                OsString::from(tool.join("cargo")),
            ),
            // In a hidden directory: hidden with it.
            (
                OsString::from("NETRC"),
                OsString::from(tool.join(".ssh/netrc")),
            ),
        ];
        let held = Held {
            whole: &whole,
            roots: &[],
            env: &env,
        };
        // (What the host's own runtime holds is left out.)
        let in_tool = |held: &Held<'_>| -> Vec<Hidden> {
            let all = to_hide(&policy(), held);
            all.into_iter()
                .filter(|h| h.at.starts_with(&tool))
                .collect()
        };
        let mut hidden = in_tool(&held);
        hidden.sort_by(|a, b| a.at.cmp(&b.at));
        let expected: Vec<Hidden> = [
            (".env.local", false),
            (".npmrc", false),
            (".ssh", true),
            ("cargo/credentials", false),
            ("credentials.toml", false),
        ]
        .iter()
        .map(|(rel, dir)| Hidden {
            at: tool.join(rel),
            dir: *dir,
        })
        .collect();
        assert_eq!(hidden, expected);
        // Inside a root, the root's own rules decide.
        let roots = [(tool.clone(), true)];
        let held = Held {
            whole: &whole,
            roots: &roots,
            env: &env,
        };
        assert_eq!(in_tool(&held), Vec::new());
        // A credential file outside what the view holds is not hidden: the
        // view does not show it at all.
        let held = Held {
            whole: &[],
            roots: &[],
            env: &env,
        };
        assert_eq!(in_tool(&held), Vec::new());
    }
}
