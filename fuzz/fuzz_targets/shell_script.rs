//! The `awk`/`sed` script judge never panics, and fails closed under
//! extension: when it accepts a program, the same program followed on a new
//! line by a command that runs a program is refused. (A judge that lost
//! track of where it is — in a string, a regular expression, a comment, an
//! `s` command — would let the appended command through.)
//!
//! Inputs that start with `g` are choices for a generator of scripts in the
//! programs' own grammar (labels and `v` that end at whitespace or `;`,
//! regexes after `print`, `~`, `(` or a condition, divisions after
//! operands): the script with an attack command where the program reads a
//! command is refused, and the same script without it is accepted.
#![no_main]

#[path = "shared/script_gen.rs"]
mod script_gen;

use std::sync::OnceLock;

use agentcaps_shell::{CommandRequest, ShellPolicy};
use libfuzzer_sys::fuzz_target;

fn policy() -> &'static ShellPolicy {
    static POLICY: OnceLock<ShellPolicy> = OnceLock::new();
    POLICY.get_or_init(|| {
        let dir = std::env::temp_dir().canonicalize().expect("temp dir");
        ShellPolicy::builder(dir)
            .allow_command("awk")
            .allow_command("sed")
            .build()
            .expect("policy")
    })
}

/// The rule of the decision, `None` when accepted; a missing program is no
/// decision about the script.
fn decide(program: &str, script: &str) -> Option<Option<&'static str>> {
    match policy().validate(&CommandRequest::argv([program, "--", script])) {
        Ok(_) => Some(None),
        Err(e) if e.is_refusal() => Some(Some(e.rule())),
        Err(_) => None,
    }
}

fuzz_target!(|data: &[u8]| {
    if let Some(choices) = data.strip_prefix(b"g") {
        generated(choices);
        return;
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (program, script) = match text.split_first_char() {
        Some(('s', rest)) => ("sed", rest),
        Some((_, rest)) => ("awk", rest),
        None => return,
    };
    if script.contains('\0') || script.chars().count() > 4096 {
        return;
    }
    if decide(program, script) != Some(None) {
        return;
    }
    let (extended, why) = match program {
        // A trailing backslash continues `a`/`i`/`c` text onto the next
        // line, where `e id` is text, not a command.
        "sed" if script.ends_with('\\') => return,
        "sed" => (format!("{script}\ne id"), "sed `e`"),
        _ => (
            format!("{script}\nBEGIN {{ system(\"id\") }}"),
            "awk system()",
        ),
    };
    // Refused by any rule: usually `refused-script`, but an argument
    // that starts with `-` is read as options after `--` too.
    assert!(
        matches!(decide(program, &extended), Some(Some(_)) | None),
        "{program} accepted {script:?} and then {why} after it"
    );
});

trait SplitFirst {
    fn split_first_char(&self) -> Option<(char, &str)>;
}

impl SplitFirst for str {
    fn split_first_char(&self) -> Option<(char, &str)> {
        let mut chars = self.chars();
        let first = chars.next()?;
        Some((first, chars.as_str()))
    }
}

/// The generator's oracle (see the crate docs).
fn generated(choices: &[u8]) {
    let mut c = script_gen::Choices(choices);
    let Some((program, safe, attacked)) = script_gen::generate(&mut c) else {
        return;
    };
    let Some(decision) = decide(program, &safe) else {
        return;
    };
    assert_eq!(decision, None, "{program} refused the harmless {safe:?}");
    assert!(
        matches!(decide(program, &attacked), Some(Some(_))),
        "{program} accepted {attacked:?}, which runs a command or writes a file"
    );
}
