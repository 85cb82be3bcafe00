//! Gives the crate the identity of the sources it is built from
//! (`AGENTCAPS_SANDBOX_SOURCES`, a hash of `src/`, `Cargo.toml`, this file
//! and the workspace's lock file where there is one). A runner and the view
//! helper it starts must carry the same one: a helper built from other
//! sources would build views with other code. It reads files and writes
//! one variable; it runs nothing.
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let mut files = Vec::new();
    collect(&manifest.join("src"), &mut files);
    files.sort();
    for extra in ["Cargo.toml", "build.rs", "../../Cargo.lock"] {
        let path = manifest.join(extra);
        if path.is_file() {
            files.push(path);
        }
    }
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    for file in &files {
        let name = file.strip_prefix(&manifest).unwrap_or(file);
        feed(&mut hash, name.to_string_lossy().as_bytes());
        feed(&mut hash, &std::fs::read(file).unwrap_or_default());
    }
    // A directory is watched whole (a file added to it counts).
    println!("cargo::rerun-if-changed={}", manifest.join("src").display());
    for extra in ["Cargo.toml", "build.rs", "../../Cargo.lock"] {
        println!("cargo::rerun-if-changed={}", manifest.join(extra).display());
    }
    println!("cargo::rustc-env=AGENTCAPS_SANDBOX_SOURCES={hash:016x}");
}

/// Every file beneath `dir`.
fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, files);
        } else {
            files.push(path);
        }
    }
}

/// 64-bit FNV-1a over `bytes`, then a separator.
fn feed(hash: &mut u64, bytes: &[u8]) {
    for byte in bytes.iter().chain([0xff_u8].iter()) {
        *hash = (*hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
    }
}
