//! The environment a command gets.
//!
//! Nothing is inherited but the names the host lists (by default `PATH`,
//! `LANG`, `LC_ALL`, `TERM`, `SystemRoot`, whichever exist), plus the
//! host's own `environment`. Variables the agent asks to set — only where
//! the host lets it — are refused when they would make a child load or run
//! code.
//!
//! The command's `PATH` keeps only its absolute entries: an empty or
//! relative entry (`.`, `bin`, a leading or doubled `:`) would make the
//! command — or a program it starts, such as git starting `ssh`, `gpg` or
//! a pager — look for programs in the working directory, which the agent
//! writes. The program named in the command is looked up the same way.
//!
//! Last, every command gets git's `safe.bareRepository=explicit` through
//! `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`, appended
//! after any entries the environment already holds, so it is the last word
//! on that key. A directory the agent wrote (`HEAD`, `config`, `objects/`)
//! is then never taken for a repository just because a `git` runs in it:
//! its `config` could name programs git runs (`core.fsmonitor`, a
//! `textconv` driver, `core.pager`). Repositories with a work tree (`.git`)
//! and `git --git-dir=…` are unaffected. The agent cannot set `GIT_*`
//! itself; a host whose inherited `GIT_CONFIG_COUNT` is not a plain number
//! has its entries replaced by this one.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};

use crate::error::ShellError;

/// The variables inherited by default, whichever exist.
pub const DEFAULT_INHERITED: &[&str] = &["PATH", "LANG", "LC_ALL", "TERM", "SystemRoot"];

/// Variables (exact names, compared ignoring case) that make a child load or
/// run code, or send its traffic or secrets elsewhere.
const REFUSED_NAMES: &[(&str, &str)] = &[
    ("PATH", "it chooses which programs run"),
    ("BASH_ENV", "a shell runs the file it names"),
    ("ENV", "a shell runs the file it names"),
    ("PROMPT_COMMAND", "a shell runs it"),
    ("PS4", "a shell expands it, running commands"),
    ("ZDOTDIR", "zsh runs the startup files it points at"),
    ("SHELLOPTS", "it changes how shells run"),
    ("BASHOPTS", "it changes how shells run"),
    ("IFS", "it changes how shells split words"),
    ("CDPATH", "it changes where shells change directory"),
    ("NODE_OPTIONS", "node loads the code it names"),
    ("NODE_PATH", "node loads modules from it"),
    ("PYTHONSTARTUP", "python runs the file it names"),
    ("PYTHONPATH", "python imports modules from it"),
    ("PYTHONHOME", "python loads its library from it"),
    ("PERL5OPT", "perl runs the options it holds"),
    ("PERL5LIB", "perl loads modules from it"),
    ("PERLLIB", "perl loads modules from it"),
    ("RUBYOPT", "ruby runs the options it holds"),
    ("RUBYLIB", "ruby loads code from it"),
    ("JAVA_TOOL_OPTIONS", "the JVM loads agents it names"),
    ("_JAVA_OPTIONS", "the JVM loads agents it names"),
    ("JDK_JAVA_OPTIONS", "the JVM loads agents it names"),
    ("PAGER", "programs run it as a pager"),
    ("MANPAGER", "man runs it as a pager"),
    ("LESSOPEN", "less runs it on every file"),
    ("LESSCLOSE", "less runs it on every file"),
    ("EDITOR", "programs run it as an editor"),
    ("VISUAL", "programs run it as an editor"),
    ("BROWSER", "programs run it as a browser"),
    (
        "RIPGREP_CONFIG_PATH",
        "rg reads options (such as --pre) from the file it names",
    ),
    (
        "SSLKEYLOGFILE",
        "TLS libraries write session secrets to the file it names",
    ),
    (
        "HTTP_PROXY",
        "it sends network traffic through another host",
    ),
    (
        "HTTPS_PROXY",
        "it sends network traffic through another host",
    ),
    ("ALL_PROXY", "it sends network traffic through another host"),
    ("FTP_PROXY", "it sends network traffic through another host"),
    ("NO_PROXY", "it changes which traffic goes through a proxy"),
    (
        "HOME",
        "programs read their configuration (and hooks) from it",
    ),
    (
        "XDG_CONFIG_HOME",
        "programs read their configuration (and hooks) from it",
    ),
    ("RUSTC_WRAPPER", "cargo runs the program it names"),
    ("RUSTC", "cargo runs the program it names"),
    (
        "GCONV_PATH",
        "the C library loads character-set modules from it",
    ),
    ("LOCPATH", "the C library loads locale data from it"),
    ("NLSPATH", "the C library loads message catalogues from it"),
    (
        "CARGO_BUILD_RUSTC_WRAPPER",
        "cargo runs the program it names",
    ),
    ("RUSTC_WORKSPACE_WRAPPER", "cargo runs the program it names"),
    ("CARGO_BUILD_RUSTC", "cargo runs the program it names"),
    (
        "CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER",
        "cargo runs the program it names",
    ),
    ("RUSTDOC", "cargo runs the program it names"),
    ("CARGO_BUILD_RUSTDOC", "cargo runs the program it names"),
    (
        "RUSTFLAGS",
        "rustc runs the linker (`-C linker=`) and loads plugins it names",
    ),
    (
        "CARGO_BUILD_RUSTFLAGS",
        "rustc runs the linker (`-C linker=`) it names",
    ),
    (
        "CARGO_ENCODED_RUSTFLAGS",
        "rustc runs the linker (`-C linker=`) it names",
    ),
    ("RUSTDOCFLAGS", "rustdoc runs the programs it names"),
    (
        "CARGO_HOME",
        "cargo reads its configuration (and runners) from it",
    ),
    ("CC", "build tools run the compiler it names"),
    ("CXX", "build tools run the compiler it names"),
    ("LD", "build tools run the linker it names"),
    ("AR", "build tools run the archiver it names"),
    ("CPP", "build tools run the preprocessor it names"),
    ("MAKEFLAGS", "make reads options (files to run) from it"),
    (
        "MAKEFILES",
        "make reads the makefiles it names, whose recipes run",
    ),
    (
        "RUSTUP_TOOLCHAIN",
        "rustup runs the toolchain it names, which may be any directory of programs",
    ),
    (
        "RUSTUP_HOME",
        "rustup runs the toolchains (and reads the settings) it holds",
    ),
    (
        "GIT_DIR",
        "git reads the repository it names, whose configuration runs programs",
    ),
    (
        "GIT_WORK_TREE",
        "git writes the work tree it names, which no argument check judges",
    ),
    ("MFLAGS", "make reads options from it"),
    ("GNUMAKEFLAGS", "make reads options from it"),
    ("SHELL", "programs run it as the shell"),
    (
        "OPENSSL_CONF",
        "OpenSSL loads engines and providers named in the file",
    ),
    ("OPENSSL_ENGINES", "OpenSSL loads engines from it"),
    ("OPENSSL_MODULES", "OpenSSL loads providers from it"),
    ("PERL5DB", "perl runs it as the debugger"),
    (
        "GOFLAGS",
        "go reads build flags (-toolexec, -exec) that run programs from it",
    ),
    (
        "GOENV",
        "go reads its environment (GOFLAGS) from the file it names",
    ),
    ("GIT_PAGER", "git runs it as a pager"),
    ("TAR_OPTIONS", "tar reads options (--to-command) from it"),
    ("GREP_OPTIONS", "grep reads options from it"),
    ("FIGNORE", "it changes how shells complete"),
    ("ZSHENV", "zsh runs the file it names"),
    ("KSH_ENV", "ksh runs the file it names"),
    (
        "LESSKEY",
        "less reads key bindings (that run commands) from it",
    ),
    (
        "LESSKEYIN",
        "less reads key bindings (that run commands) from it",
    ),
    ("RIPGREPRC", "rg reads options from it"),
    ("FZF_DEFAULT_COMMAND", "fzf runs it"),
];

/// Name prefixes (compared ignoring case) refused for the same reasons.
const REFUSED_PREFIXES: &[(&str, &str)] = &[
    (
        "LD_",
        "the dynamic loader loads or audits code because of it",
    ),
    ("DYLD_", "the dynamic loader loads code because of it"),
    (
        "GIT_",
        "git runs programs (ssh, pager, external diff) or reads configuration because of it",
    ),
    ("BASH_FUNC_", "bash defines functions from it"),
    (
        "NPM_CONFIG_",
        "npm reads configuration (scripts, registries) from it",
    ),
    (
        "PYTHON",
        "python runs start-up files and imports modules because of it",
    ),
    ("YARN_", "yarn reads configuration (plugins, paths) from it"),
];

/// Name suffixes (after a prefix, compared ignoring case) refused the same
/// way: `CARGO_TARGET_<triple>_RUNNER`, `CARGO_TARGET_<triple>_LINKER`.
const REFUSED_PATTERNS: &[(&str, &str, &str)] = &[
    ("CARGO_", "_RUNNER", "cargo runs the program it names"),
    ("CARGO_", "_LINKER", "cargo runs the linker it names"),
];

/// Variables a host's own `environment` may not set either: they make a
/// child run or load code that nobody judged (a host may still choose
/// `PAGER`, `EDITOR`, `PATH` and the like).
const HOST_REFUSED_NAMES: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "GCONV_PATH",
    "NODE_OPTIONS",
    "PERL5OPT",
    "RUBYOPT",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONUSERBASE",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "CARGO_BUILD_RUSTC_WRAPPER",
    "CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER",
    "LESSOPEN",
    "LESSCLOSE",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_ASKPASS",
    "GIT_EXEC_PATH",
    "GIT_PROXY_COMMAND",
    "GIT_TEMPLATE_DIR",
    "GIT_CONFIG",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS",
];

/// Prefixes a host's `environment` may not set.
const HOST_REFUSED_PREFIXES: &[&str] = &["LD_", "DYLD_", "GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"];

/// Check a variable the agent asks to set.
///
/// # Errors
///
/// [`ShellError::EnvVar`] for a name that is empty or holds `=` or NUL, a
/// value with NUL, or a name that makes a child load or run code.
pub(crate) fn check_agent_variable(name: &str, value: &str) -> Result<(), ShellError> {
    check_name(name)?;
    if value.contains('\0') {
        return Err(refused(name, "its value contains a NUL character"));
    }
    let upper = name.to_ascii_uppercase();
    if let Some((_, why)) = REFUSED_NAMES.iter().find(|(n, _)| *n == upper) {
        return Err(refused(name, why));
    }
    if let Some((_, why)) = REFUSED_PREFIXES.iter().find(|(p, _)| upper.starts_with(p)) {
        return Err(refused(name, why));
    }
    if upper.ends_with("_PROXY") {
        return Err(refused(
            name,
            "it sends network traffic through another host",
        ));
    }
    if let Some((_, _, why)) = REFUSED_PATTERNS.iter().find(|(p, s, _)| {
        upper.len() > p.len() + s.len() && upper.starts_with(p) && upper.ends_with(s)
    }) {
        return Err(refused(name, why));
    }
    Ok(())
}

/// Check a variable the host's policy sets for every command
/// (`[shell.environment]`).
///
/// # Errors
///
/// [`ShellError::Config`] for a bad name, and for a variable that makes a
/// child run or load code nobody judged (`LD_PRELOAD`, `RUSTC_WRAPPER`,
/// `GIT_SSH_COMMAND`, `GOFLAGS` with `-toolexec`, …).
pub(crate) fn check_host_variable(name: &str, value: &str) -> Result<(), ShellError> {
    check_name(name)?;
    let upper = name.to_ascii_uppercase();
    let code = HOST_REFUSED_NAMES.contains(&upper.as_str())
        || HOST_REFUSED_PREFIXES.iter().any(|p| upper.starts_with(p))
        || REFUSED_PATTERNS.iter().any(|(p, s, _)| {
            upper.len() > p.len() + s.len() && upper.starts_with(p) && upper.ends_with(s)
        })
        || (upper == "GOFLAGS" && (value.contains("toolexec") || value.contains("-exec")));
    if !code {
        return Ok(());
    }
    let why = REFUSED_NAMES
        .iter()
        .find(|(n, _)| *n == upper)
        .map(|(_, why)| *why)
        .or_else(|| {
            REFUSED_PREFIXES
                .iter()
                .find(|(p, _)| upper.starts_with(p))
                .map(|(_, why)| *why)
        })
        .unwrap_or("a program runs or loads code because of it");
    Err(ShellError::Config {
        message: format!(
            "`[shell.environment]` sets `{name}`: {why}, code that no check judges; remove it \
             from the policy file"
        ),
    })
}

/// Check a variable name given by the host or the agent.
pub(crate) fn check_name(name: &str) -> Result<(), ShellError> {
    if name.is_empty() || name.contains(['=', '\0']) {
        return Err(refused(
            name,
            "a variable name must be non-empty and hold no `=` or NUL",
        ));
    }
    Ok(())
}

fn refused(name: &str, why: &str) -> ShellError {
    ShellError::EnvVar {
        name: name.to_owned(),
        reason: format!(
            "{why}; the command runs with the host's chosen environment, which already holds \
             what it needs"
        ),
    }
}

/// Which of the parent's variables a command inherits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Inherit {
    /// Only these names, whichever exist.
    Named(Vec<String>),
    /// Everything (the `development` preset; not a sandbox).
    All,
}

/// The host variables a command may inherit: only the listed names are read
/// (not the whole environment), except for [`Inherit::All`].
pub(crate) fn inheritable(inherit: &Inherit) -> Vec<(OsString, OsString)> {
    match inherit {
        Inherit::All => std::env::vars_os().collect(),
        Inherit::Named(names) if cfg!(windows) => std::env::vars_os()
            .filter(|(name, _)| names.iter().any(|n| name.eq_ignore_ascii_case(n)))
            .collect(),
        Inherit::Named(names) => names
            .iter()
            .filter_map(|name| std::env::var_os(name).map(|value| (name.into(), value)))
            .collect(),
    }
}

/// Build the child's environment from the parent's variables, the host's
/// `environment`, and the agent's checked variables (applied in that order).
pub(crate) fn child_environment<I>(
    parent: I,
    inherit: &Inherit,
    host: &BTreeMap<String, String>,
    agent: &BTreeMap<String, String>,
    case_insensitive_names: bool,
) -> Vec<(OsString, OsString)>
where
    I: IntoIterator<Item = (OsString, OsString)>,
{
    let mut env: Vec<(OsString, OsString)> = parent
        .into_iter()
        .filter(|(name, _)| match inherit {
            Inherit::All => true,
            Inherit::Named(names) => names
                .iter()
                .any(|wanted| same_name(name, wanted.as_ref(), case_insensitive_names)),
        })
        .collect();
    for (name, value) in host.iter().chain(agent) {
        env.retain(|(existing, _)| !same_name(existing, name.as_ref(), case_insensitive_names));
        env.push((name.into(), value.into()));
    }
    env
}

/// git configuration every command gets (see the module docs).
const GIT_SAFETY: &[(&str, &str)] = &[("safe.bareRepository", "explicit")];

/// Drops the empty and relative entries of every `PATH` in `env` (see the
/// module docs). A `PATH` left with no entry is removed, not left empty (an
/// empty `PATH` is read as the working directory), and so is one that
/// cannot be joined again (an entry holding the separator).
pub(crate) fn absolute_path_entries(env: &mut Vec<(OsString, OsString)>, case_insensitive: bool) {
    env.retain_mut(|(name, value)| {
        if !same_name(name, OsStr::new("PATH"), case_insensitive) {
            return true;
        }
        let kept: Vec<std::path::PathBuf> = std::env::split_paths(value)
            .filter(|dir| dir.is_absolute())
            .collect();
        match std::env::join_paths(&kept) {
            Ok(_) if kept.is_empty() => false,
            Ok(joined) => {
                *value = joined;
                true
            }
            Err(_) => false,
        }
    });
}

/// Append [`GIT_SAFETY`] to `env` as `GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`
/// entries after those `GIT_CONFIG_COUNT` already counts.
pub(crate) fn append_git_safety(env: &mut Vec<(OsString, OsString)>, case_insensitive: bool) {
    let count = OsStr::new("GIT_CONFIG_COUNT");
    let existing = env
        .iter()
        .rev()
        .find(|(name, _)| same_name(name, count, case_insensitive))
        .map(|(_, value)| value.to_str().and_then(plain_number));
    // No count: start at 0. A count git might read differently from us
    // (` 1`, `1k`, not UTF-8) or too large to extend: start again at 0, so
    // that our entries are read whatever git makes of the old ones.
    let first = match existing {
        Some(Some(n)) if n.checked_add(GIT_SAFETY.len()).is_some() => n,
        _ => 0,
    };
    let mut set = |name: String, value: &str| {
        env.retain(|(existing, _)| !same_name(existing, name.as_ref(), case_insensitive));
        env.push((name.into(), value.into()));
    };
    for (i, (key, value)) in GIT_SAFETY.iter().enumerate() {
        set(format!("GIT_CONFIG_KEY_{}", first + i), key);
        set(format!("GIT_CONFIG_VALUE_{}", first + i), value);
    }
    set(
        "GIT_CONFIG_COUNT".to_owned(),
        &(first + GIT_SAFETY.len()).to_string(),
    );
}

/// A count written only with ASCII digits (git would read the same number).
fn plain_number(text: &str) -> Option<usize> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn same_name(a: &OsStr, b: &OsStr, case_insensitive: bool) -> bool {
    if case_insensitive {
        a.eq_ignore_ascii_case(b)
    } else {
        a == b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    fn git_config(env: &[(OsString, OsString)]) -> Vec<(String, String)> {
        let get = |name: &str| {
            env.iter()
                .rev()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.to_string_lossy().into_owned())
        };
        let count: usize = get("GIT_CONFIG_COUNT").unwrap().parse().unwrap();
        (0..count)
            .map(|i| {
                (
                    get(&format!("GIT_CONFIG_KEY_{i}")).unwrap_or_default(),
                    get(&format!("GIT_CONFIG_VALUE_{i}")).unwrap_or_default(),
                )
            })
            .collect()
    }

    #[test]
    fn git_safety_is_set_on_an_empty_environment() {
        let mut env = vars(&[("PATH", "/usr/bin")]);
        append_git_safety(&mut env, false);
        assert_eq!(
            git_config(&env),
            [("safe.bareRepository".to_owned(), "explicit".to_owned())]
        );
        assert_eq!(env.len(), 4);
    }

    #[test]
    fn git_safety_comes_after_the_hosts_entries() {
        let mut env = vars(&[
            ("GIT_CONFIG_COUNT", "2"),
            ("GIT_CONFIG_KEY_0", "user.name"),
            ("GIT_CONFIG_VALUE_0", "a"),
            ("GIT_CONFIG_KEY_1", "safe.bareRepository"),
            ("GIT_CONFIG_VALUE_1", "all"),
            // Beyond the count: git never reads it, and it is replaced.
            ("GIT_CONFIG_KEY_2", "core.pager"),
        ]);
        append_git_safety(&mut env, false);
        let config = git_config(&env);
        assert_eq!(config.len(), 3);
        assert_eq!(config[0], ("user.name".to_owned(), "a".to_owned()));
        // Ours is last, so it wins over the host's `all`.
        assert_eq!(
            config[2],
            ("safe.bareRepository".to_owned(), "explicit".to_owned())
        );
        assert!(!env.iter().any(|(_, v)| v == "core.pager"));
    }

    #[test]
    fn a_count_git_could_read_differently_starts_again() {
        for bad in [" 1", "1k", "+1", "", "x", "99999999999999999999999"] {
            let mut env = vars(&[
                ("GIT_CONFIG_COUNT", bad),
                ("GIT_CONFIG_KEY_0", "safe.bareRepository"),
                ("GIT_CONFIG_VALUE_0", "all"),
            ]);
            append_git_safety(&mut env, false);
            assert_eq!(
                git_config(&env),
                [("safe.bareRepository".to_owned(), "explicit".to_owned())],
                "{bad:?}"
            );
        }
        let mut env = vars(&[("GIT_CONFIG_COUNT", &usize::MAX.to_string())]);
        append_git_safety(&mut env, false);
        assert_eq!(git_config(&env).len(), 1);
    }

    #[test]
    fn git_safety_names_fold_case_where_asked() {
        let mut env = vars(&[("git_config_count", "1"), ("Git_Config_Key_0", "a.b")]);
        append_git_safety(&mut env, true);
        assert_eq!(
            env.iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case("GIT_CONFIG_COUNT"))
                .count(),
            1
        );
        assert!(env.iter().any(|(n, v)| n == "GIT_CONFIG_COUNT" && v == "2"));
        assert!(
            env.iter()
                .any(|(n, v)| n == "GIT_CONFIG_KEY_1" && v == "safe.bareRepository")
        );
    }

    #[test]
    fn only_absolute_path_entries_are_kept() {
        let abs = if cfg!(windows) { r"C:\bin" } else { "/usr/bin" };
        let sep = if cfg!(windows) { ";" } else { ":" };
        for (spelling, kept) in [
            (abs.to_owned(), abs.to_owned()),
            (format!("{sep}{abs}"), abs.to_owned()),
            (format!("{abs}{sep}"), abs.to_owned()),
            (format!("{abs}{sep}{sep}{abs}"), format!("{abs}{sep}{abs}")),
            (format!(".{sep}{abs}"), abs.to_owned()),
            (format!("bin{sep}{abs}{sep}../x"), abs.to_owned()),
            (format!("node_modules/.bin{sep}{abs}"), abs.to_owned()),
        ] {
            let mut env = vars(&[("PATH", &spelling), ("OTHER", ".")]);
            absolute_path_entries(&mut env, false);
            assert_eq!(
                env,
                vars(&[("PATH", &kept), ("OTHER", ".")]),
                "{spelling:?}"
            );
        }
        // Nothing absolute left: no PATH at all (an empty one means `.`).
        for spelling in [".", "", "bin", sep] {
            let mut env = vars(&[("PATH", spelling), ("OTHER", ".")]);
            absolute_path_entries(&mut env, false);
            assert_eq!(env, vars(&[("OTHER", ".")]), "{spelling:?}");
        }
        // Case folds only where names do.
        let mut env = vars(&[("Path", ".")]);
        absolute_path_entries(&mut env, true);
        assert_eq!(env, vars(&[]));
        let mut env = vars(&[("Path", ".")]);
        absolute_path_entries(&mut env, false);
        assert_eq!(env, vars(&[("Path", ".")]));
    }

    #[test]
    fn only_named_variables_are_inherited() {
        let parent = vars(&[
            ("PATH", "/usr/bin"),
            ("OPENAI_API_KEY", "sk-x"),
            ("LANG", "C"),
        ]);
        let inherit = Inherit::Named(DEFAULT_INHERITED.iter().map(|s| (*s).to_owned()).collect());
        let env = child_environment(parent, &inherit, &BTreeMap::new(), &BTreeMap::new(), false);
        assert_eq!(env, vars(&[("PATH", "/usr/bin"), ("LANG", "C")]));
    }

    #[test]
    fn names_fold_case_only_where_asked() {
        let parent = vars(&[("Path", "C:\\Windows")]);
        let inherit = Inherit::Named(vec!["PATH".to_owned()]);
        let none = BTreeMap::new();
        assert!(child_environment(parent.clone(), &inherit, &none, &none, false).is_empty());
        assert_eq!(
            child_environment(parent, &inherit, &none, &none, true).len(),
            1
        );
    }

    #[test]
    fn host_values_replace_inherited_ones() {
        let parent = vars(&[("PAGER", "less")]);
        let inherit = Inherit::All;
        let host = BTreeMap::from([("PAGER".to_owned(), "cat".to_owned())]);
        let env = child_environment(parent, &inherit, &host, &BTreeMap::new(), false);
        assert_eq!(env, vars(&[("PAGER", "cat")]));
    }

    #[test]
    fn dangerous_agent_variables_are_refused() {
        for name in [
            "LD_PRELOAD",
            "ld_preload",
            "DYLD_INSERT_LIBRARIES",
            "GIT_SSH_COMMAND",
            "PATH",
            "https_proxy",
            "BASH_FUNC_x%%",
        ] {
            assert!(check_agent_variable(name, "x").is_err(), "{name}");
        }
        assert!(check_agent_variable("RUST_LOG", "debug").is_ok());
        assert!(check_agent_variable("A=B", "x").is_err());
    }

    #[test]
    fn code_running_variables_of_the_second_list_are_refused() {
        for name in [
            "GCONV_PATH",
            "RUSTC_WRAPPER",
            "cargo_build_rustc_wrapper",
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER",
            "CARGO_TARGET_AARCH64_APPLE_DARWIN_LINKER",
            "GOFLAGS",
            "PYTHONWARNINGS",
            "PYTHONSTARTUP",
            "RUSTFLAGS",
            "LESSOPEN",
        ] {
            assert!(check_agent_variable(name, "x").is_err(), "{name}");
        }
        assert!(check_agent_variable("CARGO_TARGET_DIR", "t").is_ok());
        assert!(check_agent_variable("CARGO_RUNNER_X", "t").is_ok());
    }

    #[test]
    fn variables_that_choose_makefiles_toolchains_and_repositories_are_refused() {
        for name in [
            "MAKEFILES",
            "makefiles",
            "RUSTUP_TOOLCHAIN",
            "RUSTUP_HOME",
            "CARGO_HOME",
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER",
            "GIT_DIR",
            "GIT_WORK_TREE",
        ] {
            let err = check_agent_variable(name, "x").unwrap_err();
            assert_eq!(err.rule(), "env-var", "{name}");
        }
        assert!(check_agent_variable("RUSTUP_LOG", "debug").is_ok());
    }

    #[test]
    fn host_variables_that_run_code_are_a_config_error() {
        for (name, value) in [
            ("LD_PRELOAD", "/x.so"),
            ("DYLD_INSERT_LIBRARIES", "x"),
            ("GCONV_PATH", "."),
            ("BASH_ENV", "x"),
            ("ENV", "x"),
            ("PYTHONSTARTUP", "x"),
            ("PYTHONPATH", "x"),
            ("NODE_OPTIONS", "--require x"),
            ("PERL5OPT", "-Mx"),
            ("RUBYOPT", "-rx"),
            ("GIT_SSH_COMMAND", "sh"),
            ("GIT_CONFIG_KEY_0", "core.pager"),
            ("GIT_CONFIG_GLOBAL", "x"),
            ("RUSTC_WRAPPER", "sh"),
            ("CARGO_BUILD_RUSTC_WRAPPER", "sh"),
            ("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER", "sh"),
            ("GOFLAGS", "-toolexec=sh"),
            ("GOFLAGS", "-exec=sh"),
            ("LESSOPEN", "|sh %s"),
        ] {
            let err = check_host_variable(name, value).unwrap_err();
            assert_eq!(err.rule(), "config", "{name}");
            assert!(err.to_string().contains("[shell.environment]"), "{err}");
        }
        for (name, value) in [
            ("PAGER", "cat"),
            ("EDITOR", "true"),
            ("PATH", "/usr/bin"),
            ("GOFLAGS", "-mod=vendor"),
            ("GIT_AUTHOR_NAME", "a"),
            ("GIT_TERMINAL_PROMPT", "0"),
            ("CARGO_TARGET_DIR", "target"),
        ] {
            assert!(check_host_variable(name, value).is_ok(), "{name}");
        }
    }
}
