//! The environment a command gets (SPEC §2.2).
//!
//! Nothing is inherited but the names the host lists (by default `PATH`,
//! `LANG`, `LC_ALL`, `TERM`, `SystemRoot`, whichever exist), plus the
//! host's own `environment`. Variables the agent asks to set — only where
//! the host lets it — are refused when they would make a child load or run
//! code.

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
];

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
    Ok(())
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
}
