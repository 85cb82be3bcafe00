//! Operands that name another machine.
//!
//! `rsync` (and `scp`) read an operand as remote when it holds a `:` before
//! its first `/`: `host:path` and `user@host:path` go through a remote shell
//! (`ssh`), `host::module` and `rsync://host/module` to an rsync daemon;
//! `[::1]:path` is the same shape, its `:`s all before the first `/`. A
//! local name that holds a `:` must be written with a `/` before it
//! (`./a:b`), which is exactly how the program tells the two apart, so the
//! test below is the program's own and no spelling of a remote passes it.

/// Whether the program reads `operand` as another machine.
pub(crate) fn names_remote(operand: &str) -> bool {
    operand
        .split('/')
        .next()
        .is_some_and(|head| head.contains(':'))
}

#[cfg(test)]
mod tests {
    use super::names_remote;

    #[test]
    fn remote_shapes_are_remote() {
        for operand in [
            "host:path",
            "user@host:path",
            "host:",
            ":path",
            "host::module",
            "host::module/dir",
            "rsync://host/module",
            "RSYNC://host/module",
            "[::1]:path",
            "user@[fe80::1]:/etc",
            "a:b/c",
            "C:/x",
        ] {
            assert!(names_remote(operand), "{operand}");
        }
    }

    #[test]
    fn local_shapes_are_local() {
        for operand in ["a", "./a:b", "/abs/a:b", "sub/a:b", "", "-", "a/b:c/d"] {
            assert!(!names_remote(operand), "{operand}");
        }
    }
}
