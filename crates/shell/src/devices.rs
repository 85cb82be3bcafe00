//! The device files every argument check accepts: `/dev/null`,
//! `/dev/stdout` and `/dev/stderr`.
//!
//! Programs are told to write what is not wanted to `/dev/null`
//! (`curl -o /dev/null URL`) and output to `/dev/stdout`; neither holds
//! anything to protect, and what lands in the standard streams is the
//! command's captured output. Only those exact names are accepted, read
//! lexically: an absolute spelling whose components, without empty ones
//! and `.`, are `dev` and one of the three names. A `..` anywhere
//! (`/dev/null/../sda`), another name (`/dev/nullx`, `/dev/sda`), a
//! relative spelling (which a link on the way could send elsewhere) or a
//! backslash (which a Windows reading splits differently) is judged like
//! any other path. On Windows these names are ordinary paths.

/// The names under `/dev` accepted.
const ACCEPTED: &[&str] = &["null", "stdout", "stderr"];

/// Whether `spelling` names `/dev/null`, `/dev/stdout` or `/dev/stderr`
/// (see the module docs).
pub(crate) fn is_accepted_device(spelling: &str) -> bool {
    if cfg!(windows) || !spelling.starts_with('/') || spelling.contains('\\') {
        return false;
    }
    let mut components = spelling.split('/').filter(|c| !c.is_empty() && *c != ".");
    matches!(
        (components.next(), components.next(), components.next()),
        (Some("dev"), Some(name), None) if ACCEPTED.contains(&name)
    )
}

#[cfg(all(test, unix))]
mod tests {
    use super::is_accepted_device;

    #[test]
    fn exactly_the_null_device_and_the_standard_streams() {
        for spelling in [
            "/dev/null",
            "/dev/stdout",
            "/dev/stderr",
            "/dev//null",
            "/./dev/./null",
            "/dev/null/",
        ] {
            assert!(is_accepted_device(spelling), "{spelling}");
        }
        for spelling in [
            "/dev/sda",
            "/dev/nullx",
            "/dev/null/../sda",
            "/dev/../dev/null",
            "/dev/null/x",
            "dev/null",
            "../../dev/null",
            "/dev\\null",
            "/dev/stdin",
            "/dev/tty",
            "/dev/fd/1",
            "/proc/self/fd/1",
            "/dev",
            "/",
            "",
        ] {
            assert!(!is_accepted_device(spelling), "{spelling}");
        }
    }
}
