//! Programs that run another program.
//!
//! A launcher is refused by default. Where the host opts in, the launchers
//! whose own options can be read with confidence (`env`, `nice`, `nohup`,
//! `timeout`, `stdbuf`, `time`, `command`, `setsid`) are unwrapped: their
//! options are checked against a table of what they accept, and the inner
//! command is validated as if it had been given directly. Launchers that
//! gain privileges (`sudo`, `doas`), take their command from input
//! (`xargs`) or run a script string (a shell with `-c`) are always refused.

use crate::cluster::{Shape, shape};
use crate::shells::{self, ShellProblem};

/// What a launcher does with its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Launch<'a> {
    /// Not a launcher.
    NotALauncher,
    /// Refused, with the reason shown to the model.
    Refused(String),
    /// The launcher runs no command (`env` alone prints the environment).
    NoCommand {
        /// Variables it sets (`env NAME=value`).
        assignments: Vec<(&'a str, &'a str)>,
    },
    /// An option the program's table does not know (a shell's).
    Unknown {
        /// The argument that holds it.
        argument: String,
        /// The option as read.
        option: String,
        /// What the table knows.
        allowed: Vec<String>,
    },
    /// The launcher runs the command that starts at `argv[start]`.
    Inner {
        /// Index in argv of the inner program.
        start: usize,
        /// Variables it sets (`env NAME=value`).
        assignments: Vec<(&'a str, &'a str)>,
    },
}

/// The option grammar of an unwrappable launcher.
struct Grammar {
    /// Options without a value: short (`"i"`) or long (`"ignore-environment"`).
    flags: &'static [&'static str],
    /// Options with a value (attached, after `=`, or the next argument).
    valued: &'static [&'static str],
    /// Options refused, with why.
    refused: &'static [(&'static str, &'static str)],
    /// Positional arguments before the command (`timeout DURATION`).
    positionals: usize,
    /// `NAME=value` words before the command (`env`).
    assignments: bool,
    /// Digits are flags (`nice -10`).
    digits: bool,
}

const ENV: Grammar = Grammar {
    flags: &[
        "i",
        "0",
        "v",
        "ignore-environment",
        "null",
        "debug",
        "block-signal",
        "default-signal",
        "ignore-signal",
        "list-signal-handling",
    ],
    valued: &["u", "unset"],
    refused: &[
        ("C", "changes the working directory past the path checks"),
        (
            "chdir",
            "changes the working directory past the path checks",
        ),
        ("S", "splits a string into a command that cannot be judged"),
        (
            "split-string",
            "splits a string into a command that cannot be judged",
        ),
        ("P", "searches another PATH for the program"),
        ("a", "sets the program's argv[0]"),
        ("argv0", "sets the program's argv[0]"),
    ],
    positionals: 0,
    assignments: true,
    digits: false,
};

const NICE: Grammar = Grammar {
    flags: &[],
    valued: &["n", "adjustment"],
    refused: &[],
    positionals: 0,
    assignments: false,
    digits: true,
};

const NOHUP: Grammar = Grammar {
    flags: &[],
    valued: &[],
    refused: &[],
    positionals: 0,
    assignments: false,
    digits: false,
};

const TIMEOUT: Grammar = Grammar {
    flags: &["v", "verbose", "preserve-status", "foreground"],
    valued: &["s", "k", "signal", "kill-after"],
    refused: &[],
    positionals: 1,
    assignments: false,
    digits: false,
};

const STDBUF: Grammar = Grammar {
    flags: &[],
    valued: &["i", "o", "e", "input", "output", "error"],
    refused: &[],
    positionals: 0,
    assignments: false,
    digits: false,
};

const TIME: Grammar = Grammar {
    flags: &["p", "v", "q", "portability", "verbose", "quiet"],
    valued: &["f", "format"],
    refused: &[
        ("o", "writes its report to a file"),
        ("output", "writes its report to a file"),
        ("a", "appends its report to a file"),
        ("append", "appends its report to a file"),
    ],
    positionals: 0,
    assignments: false,
    digits: false,
};

const COMMAND: Grammar = Grammar {
    flags: &["p", "v", "V"],
    valued: &[],
    refused: &[],
    positionals: 0,
    assignments: false,
    digits: false,
};

const SETSID: Grammar = Grammar {
    flags: &["c", "f", "w", "ctty", "fork", "wait"],
    valued: &[],
    refused: &[],
    positionals: 0,
    assignments: false,
    digits: false,
};

/// Shells: refused when they would run a command string.
const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "ksh93", "mksh", "pdksh", "oksh", "loksh", "yash", "ash",
    "posh", "rbash", "fish", "csh", "tcsh", "elvish", "nu", "xonsh", "rc", "es",
];

/// Programs that run another program and are not modelled: refused, with
/// what each does.
const UNMODELLED: &[(&str, &str)] = &[
    (
        "busybox",
        "runs the applet named next, whose options this policy does not model; allow the applet \
         by its own name",
    ),
    (
        "toybox",
        "runs the applet named next, whose options this policy does not model",
    ),
    (
        "flock",
        "runs a command (or a shell command string) while holding a lock",
    ),
    ("taskset", "runs a command on chosen CPUs"),
    ("watch", "runs a shell command string again and again"),
    ("unshare", "runs a command in new namespaces"),
    ("chrt", "runs a command with a real-time priority"),
    ("ionice", "runs a command with an I/O priority"),
    ("nsenter", "runs a command in other namespaces"),
    ("chroot", "runs a command under another root directory"),
    (
        "script",
        "runs a shell or a command string and records its terminal",
    ),
    ("entr", "runs a command whenever files change"),
    ("strace", "runs a command under a tracer"),
    ("ltrace", "runs a command under a tracer"),
    (
        "gdb",
        "runs and controls other programs, and runs its own scripts",
    ),
    (
        "lldb",
        "runs and controls other programs, and runs its own scripts",
    ),
    ("valgrind", "runs a command under an instrumenting tool"),
    ("perf", "runs a command under a profiler"),
    ("firejail", "runs a command in a sandbox it configures"),
    ("bwrap", "runs a command in a sandbox it configures"),
    ("systemd-run", "runs a command as a system service"),
    ("setpriv", "runs a command with other privileges"),
    ("capsh", "runs a shell with other capabilities"),
    ("prlimit", "runs a command with other limits"),
    ("numactl", "runs a command with a memory policy"),
    ("cgexec", "runs a command in a control group"),
    ("sg", "runs a command as another group"),
    ("newgrp", "runs a shell as another group"),
    ("faketime", "runs a command with a preloaded library"),
    ("fakeroot", "runs a command with a preloaded library"),
    ("eatmydata", "runs a command with a preloaded library"),
    ("proot", "runs a command under another root directory"),
    ("torsocks", "runs a command with a preloaded library"),
    ("proxychains", "runs a command with a preloaded library"),
    ("proxychains4", "runs a command with a preloaded library"),
    ("unbuffer", "runs a command under expect"),
    ("expect", "runs scripts that run programs"),
    ("rlwrap", "runs a command under a line editor"),
    ("dbus-run-session", "runs a command in a session bus"),
    ("xvfb-run", "runs a command under a display server"),
    ("chpst", "runs a command with another state"),
    ("daemonize", "runs a command in the background"),
    ("start-stop-daemon", "runs a command as a daemon"),
    ("tmux", "runs shells and commands in a terminal multiplexer"),
    (
        "screen",
        "runs shells and commands in a terminal multiplexer",
    ),
    ("at", "runs a command later"),
    ("batch", "runs a command later"),
    ("ssh", "runs a command on another host"),
    ("sem", "runs a command (GNU parallel)"),
    ("catchsegv", "runs a command with a preloaded library"),
    ("env-update", "runs programs"),
    ("fakechroot", "runs a command with a preloaded library"),
];

/// Read `argv` (whose program has identity `program`) as a launcher.
pub(crate) fn launch<'a>(program: &str, argv: &'a [String], unwrap: bool) -> Launch<'a> {
    let grammar = match program {
        "env" => &ENV,
        "nice" => &NICE,
        "nohup" => &NOHUP,
        "timeout" => &TIMEOUT,
        "stdbuf" => &STDBUF,
        "time" => &TIME,
        "command" => &COMMAND,
        "setsid" => &SETSID,
        "sudo" | "doas" | "su" | "pkexec" | "runuser" | "run0" | "sudoedit" => {
            return Launch::Refused(format!(
                "`{program}` runs a program with other privileges; no unwrapping makes that safe"
            ));
        }
        "xargs" | "parallel" => {
            return Launch::Refused(format!(
                "`{program}` builds its command from input that cannot be judged; give the command \
                 with its arguments directly"
            ));
        }
        "exec" | "eval" | "source" | "cmd" | "pwsh" | "powershell" | "start" => {
            return Launch::Refused(format!(
                "`{program}` runs a command string in a shell; give the program and its arguments \
                 directly"
            ));
        }
        other if UNMODELLED.iter().any(|(name, _)| *name == other) => {
            let why = UNMODELLED
                .iter()
                .find(|(name, _)| *name == other)
                .map_or("runs another program", |(_, why)| *why);
            return Launch::Refused(format!(
                "`{other}` {why}; it is not modelled, so the command it runs cannot be judged; give \
                 that command directly"
            ));
        }
        shell if SHELLS.contains(&shell) => {
            let args = argv.get(1..).unwrap_or_default();
            return match shells::read(shell, args) {
                Ok(_) => Launch::NotALauncher,
                Err(ShellProblem::CommandString) => Launch::Refused(format!(
                    "`{shell} -c` runs a shell command string; give the program and its arguments \
                     directly, one program per command"
                )),
                Err(ShellProblem::Refused { option, reason }) => Launch::Refused(format!(
                    "`{shell} {option}` {reason}; name the script to run instead"
                )),
                Err(ShellProblem::Unknown {
                    argument,
                    option,
                    allowed,
                }) => Launch::Unknown {
                    argument: argument.to_owned(),
                    option,
                    allowed,
                },
            };
        }
        _ => return Launch::NotALauncher,
    };
    match parse(program, grammar, argv) {
        Launch::Inner { .. } if !unwrap => Launch::Refused(format!(
            "`{program}` runs another program, and this policy does not unwrap launchers; give the \
             inner command directly"
        )),
        parsed => parsed,
    }
}

/// Whether `program` (an identity) is a shell.
pub(crate) fn is_shell(program: &str) -> bool {
    SHELLS.contains(&program)
}

/// Whether `program` is a shell that, with these arguments (without
/// `argv[0]`), reads its commands from standard input (no script named,
/// or `-s`, `-i`): input given to it would run as a command string.
pub(crate) fn shell_reads_stdin(program: &str, args: &[String]) -> bool {
    SHELLS.contains(&program) && shells::read(program, args).is_ok_and(|a| a.reads_stdin)
}

fn parse<'a>(program: &str, grammar: &Grammar, argv: &'a [String]) -> Launch<'a> {
    let mut assignments = Vec::new();
    let mut positionals = 0;
    let mut options_done = false;
    let mut i = 1;
    while let Some(arg) = argv.get(i) {
        if !options_done && arg == "--" {
            options_done = true;
            i += 1;
            continue;
        }
        let as_option = if options_done {
            Shape::Operand
        } else {
            shape(arg, false)
        };
        match as_option {
            Shape::Operand => {
                let assignment = arg.split_once('=').filter(|(n, _)| !n.is_empty());
                if let Some((name, value)) =
                    assignment.filter(|_| grammar.assignments && positionals == 0)
                {
                    assignments.push((name, value));
                    i += 1;
                    continue;
                }
                if positionals < grammar.positionals {
                    positionals += 1;
                    i += 1;
                    continue;
                }
                return Launch::Inner {
                    start: i,
                    assignments,
                };
            }
            Shape::Long { name, value } => {
                let matches = |option: &&str| !name.is_empty() && option.starts_with(name);
                if let Some((option, why)) = grammar.refused.iter().find(|(o, _)| matches(o)) {
                    return refused_option(program, &format!("--{option}"), why);
                }
                if grammar.valued.iter().any(|o| o.len() > 1 && matches(o)) {
                    if value.is_none() {
                        i += 1;
                    }
                } else if !grammar.flags.iter().any(|o| o.len() > 1 && matches(o)) {
                    return unknown(program, arg);
                }
            }
            Shape::Cluster(body) => {
                for (at, c) in body.char_indices() {
                    let mut buf = [0u8; 4];
                    let short: &str = c.encode_utf8(&mut buf);
                    if let Some((_, why)) = grammar.refused.iter().find(|(o, _)| *o == short) {
                        return refused_option(program, &format!("-{c}"), why);
                    }
                    if grammar.valued.contains(&short) {
                        if body.len() == at + c.len_utf8() {
                            i += 1;
                        }
                        break;
                    }
                    let digit = grammar.digits && c.is_ascii_digit();
                    if !digit && !grammar.flags.contains(&short) {
                        return unknown(program, arg);
                    }
                }
            }
        }
        i += 1;
    }
    Launch::NoCommand { assignments }
}

fn refused_option<'a>(program: &str, option: &str, why: &str) -> Launch<'a> {
    Launch::Refused(format!(
        "`{program} {option}` {why}; run the inner command without it"
    ))
}

fn unknown<'a>(program: &str, arg: &str) -> Launch<'a> {
    Launch::Refused(format!(
        "`{program}` option `{arg}` is not one this policy understands, so the inner command \
         cannot be found with confidence; give the inner command directly"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn env_assignments_and_inner_command() {
        let a = argv(&["env", "-i", "-u", "X", "A=1", "cat", "f"]);
        assert_eq!(
            launch("env", &a, true),
            Launch::Inner {
                start: 5,
                assignments: vec![("A", "1")]
            }
        );
    }

    #[test]
    fn timeout_skips_its_duration() {
        let a = argv(&["timeout", "-s", "KILL", "5", "cat", "f"]);
        assert!(matches!(
            launch("timeout", &a, true),
            Launch::Inner { start: 4, .. }
        ));
    }

    #[test]
    fn nice_with_digits() {
        let a = argv(&["nice", "-10", "cat"]);
        assert!(matches!(
            launch("nice", &a, true),
            Launch::Inner { start: 2, .. }
        ));
        let a = argv(&["nice", "-n5", "cat"]);
        assert!(matches!(
            launch("nice", &a, true),
            Launch::Inner { start: 2, .. }
        ));
    }

    #[test]
    fn refusals() {
        for (program, words) in [
            ("env", &["env", "cat"][..]),
            ("sudo", &["sudo", "cat"][..]),
            ("bash", &["bash", "-lc", "id"][..]),
            ("xargs", &["xargs", "cat"][..]),
        ] {
            assert!(
                matches!(launch(program, &argv(words), false), Launch::Refused(_)),
                "{words:?}"
            );
        }
        assert!(matches!(
            launch("env", &argv(&["env", "-S", "cat x"]), true),
            Launch::Refused(_)
        ));
        assert!(matches!(
            launch("env", &argv(&["env", "--chd=/", "cat"]), true),
            Launch::Refused(_)
        ));
        assert!(matches!(
            launch("env", &argv(&["env", "-x", "cat"]), true),
            Launch::Refused(_)
        ));
        assert!(matches!(
            launch("bash", &argv(&["bash", "script.sh"]), false),
            Launch::NotALauncher
        ));
    }

    #[test]
    fn a_command_string_anywhere_in_a_cluster_either_sign() {
        for words in [
            &["sh", "+c", "id"][..],
            &["bash", "+xc", "id"][..],
            &["dash", "-ec", "id"][..],
            &["zsh", "-fc", "id"][..],
            &["ksh", "-x", "-c", "id"][..],
            &["bash", "--rcf", "x", "-i"][..],
            &["bash", "--init-file=x"][..],
            &["fish", "--comm=id"][..],
        ] {
            assert!(
                matches!(launch(words[0], &argv(words), true), Launch::Refused(_)),
                "{words:?}"
            );
        }
    }

    #[test]
    fn unmodelled_launchers_are_refused_even_when_unwrapping() {
        for name in [
            "busybox", "flock", "taskset", "watch", "unshare", "chrt", "ionice", "nsenter",
            "chroot", "script", "entr", "strace", "gdb", "parallel", "su", "sudo", "doas",
            "pkexec", "runuser",
        ] {
            let words = [name, "cat", "f"];
            assert!(
                matches!(launch(name, &argv(&words), true), Launch::Refused(_)),
                "{name}"
            );
        }
    }
}
