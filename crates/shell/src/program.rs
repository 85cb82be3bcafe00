//! Finding the program that actually runs: the allowed name looked up in the
//! command's own `PATH`, skipping empty and relative entries, so a binary
//! planted in the working directory is never run.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::ShellError;

/// Programs already found, per name and `PATH` value, shared by clones of a
/// policy. A hit is used only while it is still an executable file; a
/// program installed later in an *earlier* `PATH` entry is not picked up
/// until the process restarts (the first one found keeps running).
#[derive(Debug, Clone, Default)]
pub(crate) struct Found(Arc<Mutex<HashMap<(String, OsString), PathBuf>>>);

impl Found {
    /// [`find_in_path`], remembered.
    pub(crate) fn find(&self, name: &str, path: Option<&OsStr>) -> Result<PathBuf, ShellError> {
        let key = (
            name.to_owned(),
            path.map(OsStr::to_os_string).unwrap_or_default(),
        );
        let hit = self
            .0
            .lock()
            .ok()
            .and_then(|found| found.get(&key).cloned());
        if let Some(program) = hit.filter(|p| is_executable(p)) {
            return Ok(program);
        }
        let program = find_in_path(name, path)?;
        if let Ok(mut found) = self.0.lock() {
            found.insert(key, program.clone());
        }
        Ok(program)
    }
}

/// Find `name` in `path` (a `PATH` value).
///
/// # Errors
///
/// [`ShellError::ProgramNotFound`] when no absolute entry holds an
/// executable file of that name.
pub(crate) fn find_in_path(name: &str, path: Option<&OsStr>) -> Result<PathBuf, ShellError> {
    let searched = path.map(OsStr::to_os_string).unwrap_or_default();
    for dir in std::env::split_paths(&searched) {
        if dir.as_os_str().is_empty() || !dir.is_absolute() {
            continue;
        }
        for candidate in candidates(&dir, name) {
            if is_executable(&candidate) {
                return Ok(candidate);
            }
        }
    }
    Err(ShellError::ProgramNotFound {
        program: name.to_owned(),
        path: searched.to_string_lossy().into_owned(),
    })
}

fn candidates(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut out = vec![dir.join(name)];
    if cfg!(windows) {
        let pathext = std::env::var("PATHEXT").ok();
        for ext in executable_extensions(pathext.as_deref()) {
            let mut file = OsString::from(name);
            file.push(ext);
            out.push(dir.join(file));
        }
    }
    out
}

/// The extensions tried after the bare name on Windows: those of `PATHEXT`
/// (`;`-separated), in its order and once each, that name real executables
/// — `.COM` and `.EXE`. `.BAT` and `.CMD` are never tried: they would run
/// through `cmd.exe`, which reads the arguments again as a command line;
/// script extensions (`.VBS`, `.JS`, `.PS1`, ...) name no program either.
/// Without `PATHEXT`, Windows' default order: `.COM`, then `.EXE`.
fn executable_extensions(pathext: Option<&str>) -> Vec<String> {
    let Some(pathext) = pathext else {
        return vec![".COM".to_owned(), ".EXE".to_owned()];
    };
    let mut out: Vec<String> = Vec::new();
    for ext in pathext.split(';').map(str::trim) {
        let executable = [".COM", ".EXE"]
            .iter()
            .any(|known| known.eq_ignore_ascii_case(ext));
        if executable && !out.iter().any(|seen| seen.eq_ignore_ascii_case(ext)) {
            out.push(ext.to_owned());
        }
    }
    out
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pathext_orders_the_executable_extensions_and_never_adds_scripts() {
        assert_eq!(executable_extensions(None), [".COM", ".EXE"]);
        assert_eq!(
            executable_extensions(Some(".CMD;.EXE;.BAT;.COM;.VBS;.PS1")),
            [".EXE", ".COM"]
        );
        assert_eq!(executable_extensions(Some(";; .exe ;.EXE;.Exe")), [".exe"]);
        assert!(executable_extensions(Some(".BAT;.CMD;.JS")).is_empty());
        assert!(executable_extensions(Some("")).is_empty());
    }

    #[test]
    #[cfg(windows)]
    fn a_program_is_found_by_its_exe_never_by_a_batch_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tool.bat"), "@echo off\r\n").unwrap();
        let path = std::env::join_paths([dir.path()]).unwrap();
        assert!(find_in_path("tool", Some(&path)).is_err());
        std::fs::write(dir.path().join("tool.exe"), "MZ").unwrap();
        assert_eq!(
            find_in_path("tool", Some(&path)).unwrap(),
            dir.path().join("tool.exe")
        );
    }

    #[test]
    #[cfg_attr(
        windows,
        ignore = "builds its relative PATH entry from a Unix path; under Wine the temporary \
                  directory (C:) is not even on the working directory's drive (Z:)"
    )]
    fn relative_and_empty_entries_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let planted = dir.path().join("cat");
        std::fs::write(&planted, "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        // A relative entry that leads to the planted `cat` from the current
        // directory: it would be found if relative entries were searched.
        let here = std::env::current_dir().unwrap();
        let mut relative = PathBuf::new();
        for _ in here.components().skip(1) {
            relative.push("..");
        }
        relative.push(dir.path().strip_prefix("/").unwrap());
        assert!(relative.join("cat").exists());
        let path = std::env::join_paths([PathBuf::new(), relative]).unwrap();
        assert!(find_in_path("cat", Some(&path)).is_err());
        let abs = std::env::join_paths([dir.path()]).unwrap();
        assert_eq!(find_in_path("cat", Some(&abs)).unwrap(), planted);
    }

    #[test]
    fn a_remembered_program_that_is_gone_is_looked_up_again() {
        let dir = tempfile::tempdir().unwrap();
        let first = dir.path().join("a");
        let second = dir.path().join("b");
        for d in [&first, &second] {
            std::fs::create_dir(d).unwrap();
        }
        let make = |d: &Path| {
            let p = d.join("tool");
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
            p
        };
        let in_first = make(&first);
        let in_second = make(&second);
        let path = std::env::join_paths([&first, &second]).unwrap();
        let found = Found::default();
        assert_eq!(found.find("tool", Some(&path)).unwrap(), in_first);
        std::fs::remove_file(&in_first).unwrap();
        assert_eq!(found.find("tool", Some(&path)).unwrap(), in_second);
    }

    #[test]
    fn no_path_finds_nothing() {
        assert_eq!(
            find_in_path("cat", None).unwrap_err().rule(),
            "program-not-found"
        );
    }
}
