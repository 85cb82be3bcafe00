//! `SimFs` against the real file system, where this host can play the
//! part: Linux for the POSIX mode; Windows (or Wine) for the Windows mode.
//! The same tree is built in both, and every spelling must be found in
//! both or in neither.

use std::path::Path;

use agentcaps_paths::{FileSystem, SimFs, SimMode};

/// The names created in both trees.
const NAMES: [&str; 6] = [".env", "Été.txt", "straße", "Привет", "dir/Sub/f", "ΣΟΦΊΑ"];

/// Spellings looked up in both: the names, other cases, trailing dots and
/// spaces, letters beyond ASCII. (No `:stream` spellings: Wine does not
/// emulate alternate data streams.)
const SPELLINGS: [&str; 22] = [
    ".env",
    ".ENV",
    ".env.",
    ".env. .",
    ".env ",
    "env",
    "Été.txt",
    "été.TXT",
    "ÉTÉ.txt.",
    "STRAßE",
    "straße",
    "STRASSE",
    "привет",
    "ПРИВЕТ",
    "dir/Sub/f",
    "DIR/sub/F",
    "dir./Sub/f",
    "dir/Sub/f/",
    "σοφία",
    "ΣΟΦΊΑ",
    "ςοφία",
    "dir/Sub/g",
];

#[cfg(unix)]
const MODE: SimMode = SimMode::Posix;
#[cfg(windows)]
const MODE: SimMode = SimMode::Windows;

#[test]
fn the_model_finds_what_the_host_finds() {
    let tmp = tempfile::tempdir().unwrap();
    // Not canonicalized on Windows: that gives a `\\?\` path, which turns
    // off the very name rules compared here (trailing dots stay).
    #[cfg(unix)]
    let root = tmp.path().canonicalize().unwrap();
    #[cfg(windows)]
    let root = tmp.path().to_path_buf();
    let mut sim = SimFs::with_mode(MODE);
    for name in NAMES {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"").unwrap();
        sim.add_file(&path);
    }
    let mut disagreements = Vec::new();
    for spelling in SPELLINGS {
        let path = root.join(spelling);
        let host = found_on_host(&path);
        let model = sim.entry(&path).unwrap().is_some();
        if host != model {
            disagreements.push(format!("{spelling}: host {host}, model {model}"));
        }
    }
    assert!(disagreements.is_empty(), "{MODE:?}: {disagreements:#?}");
}

fn found_on_host(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}
