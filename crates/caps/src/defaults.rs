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
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .map(|h| std::fs::canonicalize(&h).unwrap_or(h));
    [dir, real.as_path()].iter().any(|candidate| {
        REFUSED.iter().any(|r| *candidate == Path::new(r))
            || REFUSED_BENEATH
                .iter()
                .chain(REFUSED_BENEATH_MACOS.iter())
                .any(|r| candidate.starts_with(r))
            || home.as_deref() == Some(*candidate)
    })
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
    fn a_project_directory_is_not_refused() {
        let project = std::env::temp_dir().join("agentcaps-default-project");
        assert!(!unsafe_for_default(&project));
        assert!(!unsafe_for_default(Path::new("/var/tmp/project")));
        assert!(!unsafe_for_default(Path::new("/root/project")));
    }
}
