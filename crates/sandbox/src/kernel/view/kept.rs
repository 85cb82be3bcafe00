//! Positive probe verdicts kept across processes (see
//! [`keep_probe_verdicts`](super::keep_probe_verdicts)).
//!
//! A record says "a view was built here" for one key: this boot, this
//! user, the helper's identity (device, inode, size, modification time),
//! the staging file system and the kernel settings that decide user
//! namespaces. It is a file of this user's in a directory of this user's
//! that no one else may write; anything else found there is ignored.
//! Only a positive verdict is ever written: a record cannot make a run
//! weaker than probing would, since a run that trusts it and then cannot
//! build its view fails (`view-failed`) and never falls back.

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The kernel settings a verdict depends on, where this system has them.
const SETTINGS: [&str; 3] = [
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
];

/// The key a verdict for `helper` staging beneath `base` is kept under;
/// `None` when part of it cannot be read (nothing is then kept or
/// trusted).
pub(crate) fn key(helper: &Path, base: &Path) -> Option<String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let exe = std::fs::metadata(helper).ok()?;
    let staging = std::fs::metadata(base).ok()?;
    let mut key = format!(
        "agentcaps view probe: ok\nboot {}\nuser {}\nhelper {} {}:{} {} {}.{}\nstaging {}\n",
        boot.trim(),
        rustix::process::geteuid().as_raw(),
        helper.display(),
        exe.dev(),
        exe.ino(),
        exe.size(),
        exe.mtime(),
        exe.mtime_nsec(),
        staging.dev(),
    );
    for setting in SETTINGS {
        let value = std::fs::read_to_string(setting).unwrap_or_else(|_| "-".to_owned());
        key.push_str(&format!("{setting} {}\n", value.trim()));
    }
    Some(key)
}

/// The record's name for `key`: the same in every process (64-bit
/// FNV-1a; the content is compared whole, the name only spreads records).
fn name(key: &str) -> String {
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("view-ok-{hash:016x}")
}

/// Whether `dir` is a directory of this user's that no one else may
/// write in or read.
fn private(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|meta| {
        meta.is_dir()
            && meta.uid() == rustix::process::geteuid().as_raw()
            && meta.mode() & 0o077 == 0
    })
}

/// Whether `dir` holds the record of `key`.
pub(crate) fn holds(dir: &Path, key: &str) -> bool {
    if !private(dir) {
        return false;
    }
    let Ok(mut file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(dir.join(name(key)))
    else {
        return false;
    };
    let Ok(meta) = file.metadata() else {
        return false;
    };
    if !meta.is_file()
        || meta.uid() != rustix::process::geteuid().as_raw()
        || meta.mode() & 0o022 != 0
        || meta.len() > 4096
    {
        return false;
    }
    let mut text = String::new();
    file.read_to_string(&mut text).is_ok() && text == key
}

/// Writes the record of `key` in `dir` (made `0700` if missing); a `dir`
/// that is not this user's private directory is left alone.
pub(crate) fn keep(dir: &Path, key: &str) {
    let _ = std::fs::DirBuilder::new().mode(0o700).create(dir);
    if !private(dir) {
        return;
    }
    let target = dir.join(name(key));
    let temp: PathBuf = dir.join(format!(".{}-{}.tmp", name(key), std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temp)
        .and_then(|mut file| {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            file.write_all(key.as_bytes())
        });
    if written.is_err() || std::fs::rename(&temp, &target).is_err() {
        let _ = std::fs::remove_file(&temp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("verdicts");
        (tmp, dir)
    }

    #[test]
    fn a_kept_verdict_holds_for_its_key_only() {
        let (_tmp, dir) = dir();
        let helper = std::env::current_exe().expect("exe");
        let key = key(&helper, &std::env::temp_dir()).expect("a key on Linux");
        assert!(!holds(&dir, &key));
        keep(&dir, &key);
        assert!(holds(&dir, &key));
        let meta = std::fs::metadata(&dir).expect("dir");
        assert_eq!(meta.mode() & 0o777, 0o700);
        assert!(!holds(&dir, &key.replace("staging", "staging 1")));
        // The helper changed (a new build): another key.
        let other = tempfile::NamedTempFile::new().expect("file");
        let other_key = key_of(other.path());
        assert_ne!(other_key, key);
        assert!(!holds(&dir, &other_key));
    }

    fn key_of(helper: &Path) -> String {
        key(helper, &std::env::temp_dir()).expect("key")
    }

    #[test]
    fn a_record_anyone_else_could_have_written_is_not_trusted() {
        let (_tmp, dir) = dir();
        let key = key_of(&std::env::current_exe().expect("exe"));
        keep(&dir, &key);
        let record = dir.join(name(&key));
        // Writable by others.
        std::fs::set_permissions(&record, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        assert!(!holds(&dir, &key));
        std::fs::set_permissions(&record, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert!(holds(&dir, &key));
        // In a directory others may enter.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        assert!(!holds(&dir, &key));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        // A link in the record's place.
        let elsewhere = dir.with_file_name("elsewhere");
        std::fs::write(&elsewhere, &key).expect("write");
        std::fs::remove_file(&record).expect("rm");
        std::os::unix::fs::symlink(&elsewhere, &record).expect("link");
        assert!(!holds(&dir, &key));
        std::fs::remove_file(&record).expect("rm");
        // A record of other content under the right name.
        std::fs::write(&record, "agentcaps view probe: ok\n").expect("write");
        std::fs::set_permissions(&record, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert!(!holds(&dir, &key));
        // A directory in a place of another user's (as root: given away).
        if rustix::process::geteuid().is_root() {
            std::fs::remove_file(&record).expect("rm");
            keep(&dir, &key);
            std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).expect("chown");
            assert!(!holds(&dir, &key));
            // And nothing is written there.
            std::fs::remove_file(&record).expect("rm");
            keep(&dir, &key);
            assert!(!record.exists());
        }
    }
}
