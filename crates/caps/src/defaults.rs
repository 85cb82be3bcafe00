//! Where the built-in default policy must not be used: directories whose
//! whole tree is not a project.

use std::path::{Path, PathBuf};

/// Directories refused themselves.
const REFUSED: [&str; 22] = [
    "/", "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/dev",
    "/proc", "/sys", "/var", "/root", "/home", "/opt", "/srv", "/run", "/tmp", "/mnt", "/media",
];

/// Directories refused with everything beneath them (system software and
/// kernel interfaces, never a project).
const REFUSED_BENEATH: [&str; 13] = [
    "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/dev",
    "/proc", "/sys", "/run",
];

/// macOS system directories (refused with everything beneath them).
const REFUSED_BENEATH_MACOS: [&str; 3] = ["/System", "/Library", "/Applications"];

/// Whether the built-in default must refuse to open up `dir`.
pub(crate) fn unsafe_for_default(dir: &Path) -> bool {
    let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    // The user's home: `HOME`, and on Windows `USERPROFILE` (Windows sets
    // no `HOME`).
    let homes: Vec<PathBuf> = ["HOME", "USERPROFILE"]
        .iter()
        .filter_map(std::env::var_os)
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .map(|h| std::fs::canonicalize(&h).unwrap_or(h))
        .collect();
    [dir, real.as_path()].iter().any(|candidate| {
        // A file system's root: `/`, and on Windows a drive's (`C:\`,
        // `\\?\C:\`) or a share's.
        candidate.is_absolute() && candidate.parent().is_none()
            || REFUSED.iter().any(|r| *candidate == Path::new(r))
            || REFUSED_BENEATH
                .iter()
                .chain(REFUSED_BENEATH_MACOS.iter())
                .any(|r| candidate.starts_with(r))
            || homes.iter().any(|home| windows::same(home, candidate))
            || windows::system_directory(candidate)
    })
}

/// Windows' own directories. Paths are compared as Windows does: letters
/// in any case, `/` or `\`, with or without the verbatim prefix `\\?\`
/// that canonicalizing adds.
mod windows {
    use std::path::Path;

    /// Whether `a` and `b` name the same directory (on Windows, in any
    /// case and spelling; elsewhere, exactly).
    pub(super) fn same(a: &Path, b: &Path) -> bool {
        if cfg!(windows) {
            comparable(a) == comparable(b)
        } else {
            a == b
        }
    }

    /// On Windows: whether `dir` is the Windows directory, a program
    /// directory or `ProgramData` (each with everything beneath it), the
    /// directory holding the users' homes, or the temporary directory
    /// itself (as `/tmp` is on Unix). Elsewhere: never.
    pub(super) fn system_directory(dir: &Path) -> bool {
        if !cfg!(windows) {
            return false;
        }
        let dir = comparable(dir);
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(|v| comparable(Path::new(&v)))
        };
        let drive = var("SystemDrive").unwrap_or_else(|| "c:".to_owned());
        let beneath = [
            "SystemRoot",
            "windir",
            "ProgramFiles",
            "ProgramFiles(x86)",
            "ProgramW6432",
            "ProgramData",
        ]
        .iter()
        .filter_map(|name| var(name))
        .chain([format!("{drive}\\windows")]);
        let users = var("USERPROFILE")
            .and_then(|home| home.rsplit_once('\\').map(|(up, _)| up.to_owned()))
            .unwrap_or_else(|| format!("{drive}\\users"));
        let temporary = ["TEMP", "TMP"].iter().filter_map(|name| var(name));
        dir == users
            || temporary.into_iter().any(|temp| dir == temp)
            || beneath
                .into_iter()
                .any(|system| dir == system || dir.starts_with(&format!("{system}\\")))
    }

    /// `path` as Windows compares it: lower case, `\` separators, no
    /// verbatim prefix, no trailing separator.
    fn comparable(path: &Path) -> String {
        let text = path.to_string_lossy().replace('/', "\\").to_lowercase();
        let text = text.strip_prefix("\\\\?\\").unwrap_or(&text);
        text.trim_end_matches('\\').to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_directories_and_the_root_are_refused() {
        for dir in [
            "/",
            "/etc",
            "/etc/ssh",
            "/usr/local/bin",
            "/var",
            "/root",
            "/proc/self",
        ] {
            assert!(unsafe_for_default(Path::new(dir)), "{dir}");
        }
    }

    #[test]
    #[cfg(windows)]
    fn windows_drive_roots_and_system_directories_are_refused() {
        let system = std::env::var("SystemRoot").expect("SystemRoot is set on Windows");
        let home = std::env::var("USERPROFILE").expect("USERPROFILE is set on Windows");
        let users = Path::new(&home).parent().expect("the users' directory");
        let system32 = Path::new(&system).join("System32");
        let temp = std::env::temp_dir();
        let verbatim_system = format!("\\\\?\\{}", system.to_uppercase());
        let slashed_home = home.replace('\\', "/").to_lowercase();
        for dir in [
            Path::new("C:\\"),
            Path::new("c:/"),
            Path::new("Z:\\"),
            Path::new("\\\\?\\C:\\"),
            Path::new(&system),
            Path::new(&verbatim_system),
            system32.as_path(),
            Path::new(&home),
            Path::new(&slashed_home),
            users,
            temp.as_path(),
        ] {
            assert!(unsafe_for_default(dir), "{}", dir.display());
        }
        if let Ok(programs) = std::env::var("ProgramFiles") {
            assert!(unsafe_for_default(&Path::new(&programs).join("Tool")));
        }
    }

    #[test]
    fn a_project_directory_is_not_refused() {
        let project = std::env::temp_dir().join("agentcaps-default-project");
        assert!(!unsafe_for_default(&project));
        assert!(!unsafe_for_default(Path::new("/var/tmp/project")));
        assert!(!unsafe_for_default(Path::new("/root/project")));
    }
}
