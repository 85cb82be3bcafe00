//! A shell's own options, read as an allow-list.
//!
//! A shell runs code by nature: a command string (`-c` or `+c`, anywhere
//! in a cluster), the script file its first operand names, its standard
//! input when no script is named (or with `-s`, `-i`), and start-up files
//! some options name (`bash --rcfile FILE`). The arguments are read the way
//! the shells read them: options up to the first operand, `-` or `--`
//! (everything after the script belongs to the script); clusters with
//! either sign (`-ex`, `+ex`); `-o NAME` and bash's `-O NAME` take the next
//! argument, with either sign and from anywhere in a cluster (`-xo posix`).
//! Each family (bash and `sh`; dash and busybox `ash`; the Korn shells;
//! zsh) has its own letters, long options and option names; anything else
//! is unknown and refused, so a spelling nobody modelled fails closed.
//! Other shells (`fish`, `csh`, …) are not modelled: any option of theirs
//! is unknown.

use crate::cluster::{Shape, shape};

/// What a shell command line does, once read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ShellArgs {
    /// The shell reads its commands from standard input: no script operand,
    /// or `-s`, `-i`, `-o stdin`, `-o interactive`.
    pub(crate) reads_stdin: bool,
}

/// Why a shell's arguments are refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ShellProblem<'a> {
    /// A command string (`-c`, `+c`, `--command`).
    CommandString,
    /// An option that runs a file the command line does not show as a
    /// script, or runs a program: its spelling and why.
    Refused {
        /// The option as the shell reads it.
        option: String,
        /// What it does.
        reason: &'static str,
    },
    /// An option (or option name) this table does not know.
    Unknown {
        /// The argument that holds it.
        argument: &'a str,
        /// The option as read.
        option: String,
        /// What the table knows, for the message.
        allowed: Vec<String>,
    },
}

/// One family of shells.
struct Family {
    /// Letters that take no value, with either sign.
    letters: &'static str,
    /// Long options that take no value (exact spellings: bash does not
    /// accept abbreviations).
    long_flags: &'static [&'static str],
    /// Long options that take a value (the next argument, or after `=`).
    long_values: &'static [&'static str],
    /// `-O NAME` (bash's `shopt` names).
    shopt: bool,
    /// `--NAME` for every `-o` name (zsh).
    long_option_names: bool,
    /// Letters refused, with why.
    refused_letters: &'static [(char, &'static str)],
}

/// Refused long options: any prefix of at least one letter of these, in
/// every family, so no abbreviation passes as unknown-but-accepted.
const REFUSED_LONG: &[(&str, &str)] = &[
    ("rcfile", "runs a start-up file in place of ~/.bashrc"),
    ("init-file", "runs a start-up file in place of ~/.bashrc"),
    (
        "debugger",
        "runs the debugger's start-up profile, a file the command line does not show",
    ),
    ("init-command", "runs a command string at start-up (fish)"),
];

const BASH: Family = Family {
    letters: "abefhkmnptuvxBCEHPTilrsD",
    long_flags: &[
        "debug",
        "dump-po-strings",
        "dump-strings",
        "help",
        "login",
        "noediting",
        "noprofile",
        "norc",
        "posix",
        "pretty-print",
        "restricted",
        "verbose",
        "version",
    ],
    long_values: &[],
    shopt: true,
    long_option_names: false,
    refused_letters: &[],
};

/// `sh` is bash, dash or busybox `ash` depending on the system: the union
/// of their letters (each refused spelling is refused in all).
const SH: Family = Family {
    letters: "abefhkmnptuvxBCEHPTilrsDIV",
    ..BASH
};

const DASH: Family = Family {
    letters: "aCefnuvxIimVEbpsl",
    long_flags: &[],
    long_values: &[],
    shopt: false,
    long_option_names: false,
    refused_letters: &[],
};

const KSH: Family = Family {
    letters: "abCefhkmnpruvxsilEDB",
    long_flags: &[],
    long_values: &[],
    shopt: false,
    long_option_names: false,
    refused_letters: &[(
        'R',
        "writes a cross-reference database to a file that is not judged (ksh93)",
    )],
};

const ZSH: Family = Family {
    letters: "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZaefghiklmnprstuvwxyb",
    long_flags: &["version", "help"],
    long_values: &["emulate"],
    shopt: false,
    long_option_names: true,
    refused_letters: &[],
};

/// The family that reads `shell`'s options, if it is modelled.
fn family(shell: &str) -> Option<&'static Family> {
    match shell {
        "bash" | "rbash" => Some(&BASH),
        "sh" => Some(&SH),
        "dash" | "ash" | "posh" => Some(&DASH),
        "ksh" | "ksh93" | "mksh" | "pdksh" | "oksh" | "loksh" => Some(&KSH),
        "zsh" => Some(&ZSH),
        _ => None,
    }
}

/// `-o` names: the POSIX set, bash's, dash's, the Korn shells' and zsh's
/// common ones. Compared without case and `_` (zsh's spelling rules).
const OPTION_NAMES: &[&str] = &[
    "allexport",
    "braceexpand",
    "emacs",
    "errexit",
    "errtrace",
    "functrace",
    "hashall",
    "histexpand",
    "history",
    "ignoreeof",
    "interactivecomments",
    "keyword",
    "monitor",
    "noclobber",
    "noexec",
    "noglob",
    "nolog",
    "notify",
    "nounset",
    "onecmd",
    "physical",
    "pipefail",
    "posix",
    "privileged",
    "verbose",
    "vi",
    "xtrace",
    "stdin",
    "interactive",
    "debug",
    "bgnice",
    "gmacs",
    "markdirs",
    "trackall",
    "viraw",
    "globstar",
    "login",
    "norcs",
    "rcs",
    "globalrcs",
    "noglobalrcs",
    "shwordsplit",
    "ksharrays",
    "nomatch",
    "nonomatch",
    "extendedglob",
    "nullglob",
    "globdots",
    "shoptionletters",
    "kshoptionprint",
    "errreturn",
];

/// `-O` names: bash's `shopt` options, less `extdebug` (refused).
const SHOPT_NAMES: &[&str] = &[
    "autocd",
    "assoc_expand_once",
    "cdable_vars",
    "cdspell",
    "checkhash",
    "checkjobs",
    "checkwinsize",
    "cmdhist",
    "compat31",
    "compat32",
    "compat40",
    "compat41",
    "compat42",
    "compat43",
    "compat44",
    "complete_fullquote",
    "direxpand",
    "dirspell",
    "dotglob",
    "execfail",
    "expand_aliases",
    "extglob",
    "extquote",
    "failglob",
    "force_fignore",
    "globasciiranges",
    "globskipdots",
    "globstar",
    "gnu_errfmt",
    "histappend",
    "histreedit",
    "histverify",
    "hostcomplete",
    "huponexit",
    "inherit_errexit",
    "interactive_comments",
    "lastpipe",
    "lithist",
    "localvar_inherit",
    "localvar_unset",
    "login_shell",
    "mailwarn",
    "no_empty_cmd_completion",
    "nocaseglob",
    "nocasematch",
    "noexpand_translation",
    "nullglob",
    "patsub_replacement",
    "progcomp",
    "progcomp_alias",
    "promptvars",
    "restricted_shell",
    "shift_verbose",
    "sourcepath",
    "varredir_close",
    "xpg_echo",
];

/// Whether `argument` asks a shell for a command string by any spelling:
/// `-c`/`+c` anywhere in a cluster (`-lc`, `+xc`; fish's `-C` too),
/// `--command`, `--init-command`, on any prefix. Checked for every shell, modelled or
/// not, before its table.
fn runs_string(arg: &str) -> bool {
    if let Some(body) = arg.strip_prefix('+') {
        return body.contains(['c', 'C']);
    }
    match shape(arg, false) {
        Shape::Cluster(body) => body.contains(['c', 'C']),
        Shape::Long { name, .. } => {
            !name.is_empty()
                && ["command", "init-command"]
                    .iter()
                    .any(|o| o.starts_with(name))
        }
        Shape::Operand => false,
    }
}

/// Read a shell's arguments (`args`, without `argv[0]`).
pub(crate) fn read<'a>(shell: &str, args: &'a [String]) -> Result<ShellArgs, ShellProblem<'a>> {
    let family = family(shell);
    let mut reads_stdin = false;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += 1;
        if arg == "--" || arg == "-" {
            // The next argument, if any, is the script.
            return Ok(ShellArgs {
                reads_stdin: reads_stdin || args.get(i).is_none(),
            });
        }
        let (sign, body) = match arg.strip_prefix('-').or_else(|| arg.strip_prefix('+')) {
            Some(body) if !body.is_empty() => (arg.as_bytes().first().copied(), body),
            _ => {
                // The first operand: the script; the rest are its arguments.
                return Ok(ShellArgs { reads_stdin });
            }
        };
        if runs_string(arg) {
            return Err(ShellProblem::CommandString);
        }
        let Some(family) = family else {
            return Err(unknown(arg, arg.to_owned(), None));
        };
        if let Some(long) = body.strip_prefix('-').filter(|_| sign == Some(b'-')) {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            if family.long_flags.contains(&name) && value.is_none() {
                continue;
            }
            if let Some((full, reason)) = REFUSED_LONG.iter().find(|(o, _)| o.starts_with(name)) {
                return Err(ShellProblem::Refused {
                    option: format!("--{full}"),
                    reason,
                });
            }
            if family.long_values.contains(&name) {
                if value.is_none() {
                    i += 1;
                }
                continue;
            }
            if family.long_option_names && value.is_none() && known_name(name) {
                reads_stdin |= stdin_name(name);
                continue;
            }
            return Err(unknown(arg, format!("--{name}"), Some(family)));
        }
        let signed = |c: char| format!("{}{c}", if sign == Some(b'+') { '+' } else { '-' });
        for c in body.chars() {
            if let Some((_, reason)) = family.refused_letters.iter().find(|(l, _)| *l == c) {
                return Err(ShellProblem::Refused {
                    option: signed(c),
                    reason,
                });
            }
            match c {
                'o' | 'O' if c == 'o' || family.shopt => {
                    // The name is the next argument (`-o` alone lists them).
                    let Some(name) = args.get(i) else { break };
                    i += 1;
                    if c == 'O' {
                        if name == "extdebug" {
                            return Err(ShellProblem::Refused {
                                option: format!("{} extdebug", signed(c)),
                                reason: "runs the debugger's start-up profile, a file the \
                                         command line does not show",
                            });
                        }
                        if !SHOPT_NAMES.contains(&name.as_str()) {
                            return Err(unknown_name(name, signed(c), SHOPT_NAMES));
                        }
                    } else if !known_name(name) {
                        return Err(unknown_name(name, signed(c), OPTION_NAMES));
                    } else if sign == Some(b'-') {
                        reads_stdin |= stdin_name(name);
                    }
                }
                c if family.letters.contains(c) => {
                    reads_stdin |= sign == Some(b'-') && (c == 's' || c == 'i');
                }
                c => return Err(unknown(arg, signed(c), Some(family))),
            }
        }
    }
    // No script operand: the commands come from standard input.
    Ok(ShellArgs { reads_stdin: true })
}

/// An option name `-o` accepts, compared without case and `_`, with or
/// without zsh's `no` prefix.
fn known_name(name: &str) -> bool {
    let plain: String = name
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let bare = plain.strip_prefix("no").unwrap_or(&plain);
    OPTION_NAMES.iter().any(|n| *n == plain || *n == bare)
}

/// An option name that makes the shell read its commands from standard
/// input.
fn stdin_name(name: &str) -> bool {
    let plain: String = name
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .map(|c| c.to_ascii_lowercase())
        .collect();
    plain == "stdin" || plain == "interactive" || plain == "shinstdin"
}

/// An option name `-o`/`-O` does not know, with the names it knows.
fn unknown_name<'a>(name: &'a str, option: String, names: &[&str]) -> ShellProblem<'a> {
    ShellProblem::Unknown {
        argument: name,
        option: format!("{option} {name}"),
        allowed: names.iter().map(|n| format!("{option} {n}")).collect(),
    }
}

fn unknown<'a>(argument: &'a str, option: String, family: Option<&Family>) -> ShellProblem<'a> {
    let allowed = match family {
        Some(f) => f
            .letters
            .chars()
            .map(|c| format!("-{c}"))
            .chain(["-o NAME".to_owned()])
            .chain(f.shopt.then(|| "-O NAME".to_owned()))
            .chain(f.long_flags.iter().map(|l| format!("--{l}")))
            .chain(f.long_values.iter().map(|l| format!("--{l}")))
            .collect(),
        None => Vec::new(),
    };
    ShellProblem::Unknown {
        argument,
        option,
        allowed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    fn read_words(shell: &str, words: &[&str]) -> Result<ShellArgs, String> {
        let args = argv(words);
        read(shell, &args).map_err(|p| format!("{p:?}"))
    }

    #[test]
    fn command_strings_in_every_spelling() {
        for (shell, words) in [
            ("sh", &["-c", "id"][..]),
            ("sh", &["+c", "id"][..]),
            ("bash", &["-xc", "id"][..]),
            ("bash", &["+ec", "id"][..]),
            ("bash", &["-o", "posix", "-c", "id"][..]),
            ("bash", &["-oc", "posix", "id"][..]),
            ("dash", &["-ec", "id"][..]),
            ("zsh", &["-fc", "id"][..]),
            ("ksh", &["-x", "-c", "id"][..]),
            ("fish", &["--comm=id"][..]),
            ("fish", &["-C", "id"][..]),
        ] {
            assert_eq!(
                read_words(shell, words),
                Err("CommandString".to_owned()),
                "{shell} {words:?}"
            );
        }
    }

    #[test]
    fn start_up_files_are_refused_on_any_prefix() {
        for words in [
            &["--rcfile", "x", "-i"][..],
            &["--rc=x"][..],
            &["--init-file", "x"][..],
            &["--debugger", "s.sh"][..],
            &["-O", "extdebug", "s.sh"][..],
        ] {
            let got = read_words("bash", words);
            assert!(got.is_err_and(|e| e.starts_with("Refused")), "{words:?}");
        }
        assert!(read_words("ksh", &["-R", "db", "s.sh"]).is_err_and(|e| e.starts_with("Refused")));
    }

    #[test]
    fn scripts_and_their_arguments() {
        let script = Ok(ShellArgs { reads_stdin: false });
        assert_eq!(read_words("bash", &["s.sh", "-c", "x"]), script);
        assert_eq!(read_words("bash", &["-ex", "+o", "posix", "s.sh"]), script);
        assert_eq!(
            read_words("bash", &["--norc", "-O", "extglob", "s.sh"]),
            script
        );
        assert_eq!(read_words("bash", &["--", "-c"]), script);
        assert_eq!(read_words("dash", &["-", "s.sh"]), script);
        assert_eq!(
            read_words("zsh", &["-f", "--emulate", "sh", "s.sh"]),
            script
        );
        assert_eq!(
            read_words("zsh", &["--no-rcs", "-o", "NO_RCS", "s.sh"]),
            script
        );
        assert_eq!(read_words("bash", &["--debug", "s.sh"]), script);
    }

    #[test]
    fn standard_input_is_a_command_string_source() {
        let stdin = Ok(ShellArgs { reads_stdin: true });
        assert_eq!(read_words("bash", &[]), stdin);
        assert_eq!(read_words("bash", &["-s", "a", "b"]), stdin);
        assert_eq!(read_words("bash", &["-i", "s.sh"]), stdin);
        assert_eq!(read_words("dash", &["-o", "stdin", "s.sh"]), stdin);
        assert_eq!(read_words("zsh", &["-x"]), stdin);
    }

    #[test]
    fn unknown_options_and_names_fail_closed() {
        for (shell, words) in [
            ("bash", &["--logi", "s.sh"][..]),
            ("bash", &["-Z", "s.sh"][..]),
            ("bash", &["-o", "nosuch", "s.sh"][..]),
            ("bash", &["-O", "nosuch", "s.sh"][..]),
            ("dash", &["-O", "extglob", "s.sh"][..]),
            ("dash", &["--posix", "s.sh"][..]),
            ("ksh", &["-T", "tty", "s.sh"][..]),
            ("fish", &["-n", "s.fish"][..]),
            ("csh", &["-f", "s.csh"][..]),
        ] {
            let got = read_words(shell, words);
            assert!(
                got.is_err_and(|e| e.starts_with("Unknown")),
                "{shell} {words:?}"
            );
        }
    }
}
