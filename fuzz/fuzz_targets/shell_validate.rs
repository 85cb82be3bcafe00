//! The validator never panics on any argv or command string, and a refusal
//! is stable: the same request gets the same answer twice.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use agentcaps_paths::{PathPolicy, SimFs};
use agentcaps_shell::{CommandRequest, ShellPolicy};
use libfuzzer_sys::fuzz_target;

struct Setup {
    policy: ShellPolicy,
    fs: SimFs,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let root: PathBuf = std::env::temp_dir().canonicalize().expect("temp dir");
        let policy = ShellPolicy::read_only(&root)
            .allow_command("sort")
            .allow_command("grep")
            .allow_command("find")
            .allow_command("env")
            .allow_command("sed")
            .allow_command("awk")
            .allow_command("tar")
            .unwrap_launchers(true)
            .path_policy(PathPolicy::builder().allow(&root).build().expect("paths"))
            .build()
            .expect("policy");
        let mut fs = SimFs::new();
        fs.add_dir(&root)
            .add_file(root.join("notes.txt"))
            .add_symlink(root.join("out"), "/etc")
            .add_symlink(root.join("loop"), root.join("loop"))
            .add_dir("/etc")
            .add_file("/etc/passwd");
        Setup { policy, fs }
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let s = setup();
    let request = match text.strip_prefix('!') {
        Some(line) => CommandRequest::line(line),
        None => CommandRequest::argv(text.split('\0')),
    };
    let first = s.policy.validate_on(&s.fs, &request);
    let second = s.policy.validate_on(&s.fs, &request);
    match (&first, &second) {
        (Ok(a), Ok(b)) => assert_eq!(a.argv(), b.argv()),
        (Err(a), Err(b)) => {
            assert_eq!(a.rule(), b.rule());
            assert_eq!(a.to_string(), b.to_string());
        }
        _ => panic!("the decision changed between two identical requests"),
    }
});
