//! The directories a program needs to start: its own, its ELF interpreter's
//! (the dynamic loader) and, for a `#!` script, its interpreter's (and that
//! one's loader) — each after following links, since Landlock judges the
//! file a path resolves to, wherever the spelling's directory is.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How many bytes of a program are read to find its interpreter.
const HEAD_BYTES: u64 = 4096;
/// An interpreter path longer than this is ignored.
const MAX_INTERP: usize = 1024;
/// `PT_INTERP`: the program header naming the ELF interpreter.
const PT_INTERP: u32 = 3;

/// How many programs' directories are remembered.
const CACHED_PROGRAMS: usize = 256;

/// What identifies a program file's content: when any of it changes, its
/// interpreter may have changed too.
type Identity = (u64, u64, i64, i64, u64);

fn identity(program: &Path) -> Option<Identity> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(program).ok()?;
    Some((
        meta.dev(),
        meta.ino(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.size(),
    ))
}

/// Directories to grant read and execute for running `program`, remembered
/// per program while the file it resolves to stays the same (one `stat`
/// instead of reading headers and resolving links for every command).
/// Never fails: what cannot be read is simply not added (the kernel then
/// denies it, which is the safe side).
pub(super) fn program_dirs(program: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for real in remembered_program_files(program) {
        push_parent(&mut dirs, &real);
    }
    dirs
}

/// [`program_files`], remembered per program while the file it resolves to
/// stays the same.
pub(super) fn remembered_program_files(program: &Path) -> Vec<PathBuf> {
    static CACHE: Mutex<BTreeMap<PathBuf, (Identity, Vec<PathBuf>)>> = Mutex::new(BTreeMap::new());
    let Some(id) = identity(program) else {
        return Vec::new();
    };
    if let Ok(cache) = CACHE.lock()
        && let Some((cached, files)) = cache.get(program)
        && *cached == id
    {
        return files.clone();
    }
    let files = program_files(program);
    if let Ok(mut cache) = CACHE.lock() {
        if cache.len() >= CACHED_PROGRAMS {
            cache.clear();
        }
        cache.insert(program.to_path_buf(), (id, files.clone()));
    }
    files
}

/// Where the program, its interpreter and the interpreter's interpreter
/// really are (each file's canonical path, in that order).
pub(crate) fn program_files(program: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut next = Some(program.to_path_buf());
    for _ in 0..3 {
        let Some(file) = next.take() else { break };
        if let Ok(real) = std::fs::canonicalize(&file) {
            files.push(real);
        }
        next = interpreter(&file);
    }
    files
}

fn push_parent(dirs: &mut Vec<PathBuf>, file: &Path) {
    if let Some(parent) = file.parent().filter(|p| p.is_absolute())
        && !dirs.iter().any(|d| d == parent)
    {
        dirs.push(parent.to_path_buf());
    }
}

/// The interpreter `file` names: `PT_INTERP` of an ELF file, or the first
/// word of a `#!` line.
fn interpreter(file: &Path) -> Option<PathBuf> {
    let mut head = Vec::new();
    std::fs::File::open(file)
        .ok()?
        .take(HEAD_BYTES)
        .read_to_end(&mut head)
        .ok()?;
    if let Some(line) = head.strip_prefix(b"#!") {
        shebang(line)
    } else {
        elf_interp(file, &head)
    }
}

fn shebang(line: &[u8]) -> Option<PathBuf> {
    let line = line.split(|&b| b == b'\n').next()?;
    let word = line
        .split(|b| b.is_ascii_whitespace())
        .find(|w| !w.is_empty())?;
    let text = std::str::from_utf8(word).ok()?;
    Some(PathBuf::from(text)).filter(|p| p.is_absolute())
}

/// Reads `PT_INTERP` from an ELF header (32 or 64 bit, either byte order).
fn elf_interp(file: &Path, head: &[u8]) -> Option<PathBuf> {
    if head.get(..4)? != b"\x7fELF" {
        return None;
    }
    let wide = match head.get(4)? {
        1 => false,
        2 => true,
        _ => return None,
    };
    let little = match head.get(5)? {
        1 => true,
        2 => false,
        _ => return None,
    };
    let field = |at: usize, len: usize| -> Option<u64> {
        let bytes = head.get(at..at.checked_add(len)?)?;
        let mut value = 0u64;
        for i in 0..len {
            let byte = if little {
                bytes.get(len - 1 - i)?
            } else {
                bytes.get(i)?
            };
            value = (value << 8) | u64::from(*byte);
        }
        Some(value)
    };
    let (phoff, phentsize, phnum) = if wide {
        (field(32, 8)?, field(54, 2)?, field(56, 2)?)
    } else {
        (field(28, 4)?, field(42, 2)?, field(44, 2)?)
    };
    for index in 0..phnum {
        let at = usize::try_from(phoff.checked_add(index.checked_mul(phentsize)?)?).ok()?;
        if field(at, 4)? != u64::from(PT_INTERP) {
            continue;
        }
        let (offset, size) = if wide {
            (
                field(at.checked_add(8)?, 8)?,
                field(at.checked_add(32)?, 8)?,
            )
        } else {
            (
                field(at.checked_add(4)?, 4)?,
                field(at.checked_add(16)?, 4)?,
            )
        };
        let size = usize::try_from(size).ok().filter(|&s| s <= MAX_INTERP)?;
        let mut bytes = vec![0; size];
        let mut program = std::fs::File::open(file).ok()?;
        std::io::Seek::seek(&mut program, std::io::SeekFrom::Start(offset)).ok()?;
        program.read_exact(&mut bytes).ok()?;
        let text = bytes.split(|&b| b == 0).next()?;
        let text = std::str::from_utf8(text).ok()?;
        return Some(PathBuf::from(text)).filter(|p| p.is_absolute());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_loader_of_a_dynamic_program() {
        let interp = interpreter(Path::new("/bin/sh")).expect("/bin/sh has an interpreter");
        assert!(
            interp.to_string_lossy().contains("ld-"),
            "unexpected interpreter {interp:?}"
        );
        assert!(interp.exists());
    }

    #[test]
    fn reads_a_shebang_line() {
        assert_eq!(
            shebang(b"/usr/bin/env  python3 -u\nprint()"),
            Some(PathBuf::from("/usr/bin/env"))
        );
        assert_eq!(shebang(b"python3\n"), None);
        assert_eq!(shebang(b"\n"), None);
    }

    proptest::proptest! {
        #[test]
        fn any_elf_header_is_read_without_panicking(
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
            wide in 1u8..=2,
            little in 1u8..=2,
        ) {
            let mut header = vec![0x7f, b'E', b'L', b'F', wide, little];
            header.extend(body);
            // The file does not exist: a header that points at an
            // interpreter still yields nothing, and nothing panics.
            proptest::prop_assert_eq!(elf_interp(Path::new("/nonexistent/agentcaps"), &header), None);
        }

        #[test]
        fn any_shebang_line_is_read_without_panicking(line in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            if let Some(interp) = shebang(&line) {
                proptest::prop_assert!(interp.is_absolute());
            }
        }
    }

    #[test]
    fn garbage_headers_give_nothing_and_never_panic() {
        let mut header = b"\x7fELF\x02\x01".to_vec();
        for len in 0..80 {
            header.resize(len.max(6), 0xff);
            assert_eq!(elf_interp(Path::new("/nonexistent"), &header), None);
        }
        assert_eq!(elf_interp(Path::new("/nonexistent"), b"\x7fELF"), None);
        assert_eq!(elf_interp(Path::new("/nonexistent"), b"MZ"), None);
    }

    #[test]
    fn remembered_dirs_follow_a_replaced_program() {
        let dir = std::env::temp_dir().join(format!("agentcaps-program-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("a")).expect("dir");
        std::fs::create_dir_all(dir.join("b")).expect("dir");
        let script = dir.join("tool");
        let write = |interp: &str| {
            let _ = std::fs::remove_file(&script);
            std::fs::write(&script, format!("#!{interp}\n")).expect("script");
        };
        write(&dir.join("a/interp").display().to_string());
        std::fs::write(dir.join("a/interp"), "").expect("interp");
        std::fs::write(dir.join("b/interp-longer"), "").expect("interp");
        let first = program_dirs(&script);
        assert!(first.contains(&dir.join("a")), "{first:?}");
        write(&dir.join("b/interp-longer").display().to_string());
        let second = program_dirs(&script);
        assert!(second.contains(&dir.join("b")), "{second:?}");
        assert!(!second.contains(&dir.join("a")), "{second:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn program_dirs_include_the_program_and_loader_dirs() {
        let dirs = program_dirs(Path::new("/bin/sh"));
        let sh = std::fs::canonicalize("/bin/sh").expect("/bin/sh");
        let sh_dir = sh.parent().expect("sh dir");
        assert!(
            dirs.iter().any(|d| d == sh_dir),
            "{dirs:?} lacks {sh_dir:?}"
        );
        let loader = interpreter(Path::new("/bin/sh")).expect("loader");
        let loader_dir = std::fs::canonicalize(&loader)
            .ok()
            .and_then(|l| l.parent().map(Path::to_path_buf))
            .expect("loader dir");
        assert!(dirs.contains(&loader_dir), "{dirs:?} lacks {loader_dir:?}");
    }
}
