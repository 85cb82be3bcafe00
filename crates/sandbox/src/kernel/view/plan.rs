//! Planning one command's view: the runtime it needs (read-only), the
//! private `/dev`, `/proc` and `/tmp`, every root of the path policy (its
//! blocked entries masked, a writable one over a staging layer), the tool
//! installations (the credential files in them and in the runtime
//! hidden), and the Landlock grants inside.

use std::fs::Permissions;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use agentcaps_paths::{Access, PathPolicy};

use super::credentials::{Held, Hidden, to_hide};
use super::spec::{Mount, ProxyPort, ViewSpec};
use super::staging::Staging;
use crate::kernel::program::program_dirs;
use crate::kernel::rules::{RUNTIME_DEVICES_READ, RUNTIME_DEVICES_RW, RUNTIME_DIRS, RUNTIME_ETC};
use crate::network::PROXY_PORT;

/// More entries than this in the roots and the view is not built (the
/// masking walk would cost too much): the run falls back, and says so.
pub(crate) const MAX_WALKED_ENTRIES: usize = 1_000_000;

/// `/etc` entries the view holds besides the runtime list.
const EXTRA_ETC: &[&str] = &["/etc/alternatives"];

/// A writable root and its staging layer.
#[derive(Debug, Clone)]
pub(crate) struct Layer {
    /// The root.
    pub(crate) root: PathBuf,
    /// Its staging (upper) directory, where the command's changes are.
    pub(crate) upper: PathBuf,
}

/// Everything one command's view needs.
pub(crate) struct Planned {
    /// What the helper is given.
    pub(crate) spec: ViewSpec,
    /// The writable roots' staging layers, for the write-back.
    pub(crate) layers: Vec<Layer>,
}

/// What the command is.
pub(crate) struct Request<'a> {
    pub(crate) program: &'a Path,
    pub(crate) argv: &'a [String],
    pub(crate) cwd: &'a Path,
    pub(crate) env: &'a [(std::ffi::OsString, std::ffi::OsString)],
    pub(crate) private_network: bool,
    pub(crate) max_abi: Option<u8>,
    /// The network proxy's UNIX socket on the host, handed the listener of
    /// `127.0.0.1:PROXY_PORT` in the view.
    pub(crate) proxy_socket: Option<&'a Path>,
    /// Cache directories: overlaid, their writes discarded.
    pub(crate) cache_dirs: &'a [PathBuf],
}

/// Plans the view of `request` under `policy` in `staging`.
///
/// # Errors
///
/// Why no view can be built for it (a root that is `/`, a path an overlay
/// cannot name, the staging directory inside a root, too many entries to
/// judge, I/O): the runner then falls back, and says so.
pub(crate) fn plan(
    policy: &PathPolicy,
    request: &Request<'_>,
    staging: &Staging,
) -> Result<Planned, String> {
    let dir = staging.path();
    let mut mounts = Vec::new();
    for runtime in RUNTIME_DIRS {
        let path = Path::new(runtime);
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let points_to = std::fs::read_link(path).map_err(|e| e.to_string())?;
                mounts.push(Mount::Symlink {
                    target: path.to_path_buf(),
                    points_to,
                });
            }
            Ok(meta) if meta.is_dir() => mounts.push(bind(path, false)),
            _ => {}
        }
    }
    for etc in RUNTIME_ETC.iter().chain(EXTRA_ETC) {
        if std::fs::metadata(etc).is_ok() {
            mounts.push(bind(Path::new(etc), false));
        }
    }
    mounts.push(Mount::Tmpfs {
        target: "/dev".into(),
        mode: 0o755,
    });
    for device in RUNTIME_DEVICES_READ
        .iter()
        .chain(RUNTIME_DEVICES_RW)
        .chain(&["/dev/tty"])
    {
        if std::fs::metadata(device).is_ok() {
            mounts.push(bind(Path::new(device), true));
        }
    }
    mounts.push(Mount::Devpts {
        target: "/dev/pts".into(),
    });
    mounts.push(Mount::Tmpfs {
        target: "/dev/shm".into(),
        mode: 0o1777,
    });
    for (link, to) in [
        ("/dev/fd", "/proc/self/fd"),
        ("/dev/stdin", "/proc/self/fd/0"),
        ("/dev/stdout", "/proc/self/fd/1"),
        ("/dev/stderr", "/proc/self/fd/2"),
    ] {
        mounts.push(Mount::Symlink {
            target: link.into(),
            points_to: to.into(),
        });
    }
    mounts.push(Mount::Proc {
        target: "/proc".into(),
    });
    mounts.push(Mount::Tmpfs {
        target: "/tmp".into(),
        mode: 0o1777,
    });

    let mut roots: Vec<(PathBuf, bool)> = policy
        .roots()
        .map(|(root, access)| (root.to_path_buf(), access.permits(Access::Write)))
        .collect();
    roots.sort_by_key(|(root, _)| root.components().count());
    // The homes: private and empty, mounted before what the view puts
    // beneath them (roots, caches, tool installations).
    let homes = private_homes(request.env, &roots, request.cache_dirs);
    for home in &homes {
        mounts.push(Mount::Tmpfs {
            target: home.path.clone(),
            mode: 0o700,
        });
    }
    let mut layers = Vec::new();
    let mut landlock_read = vec![PathBuf::from("/proc")];
    landlock_read.extend(EXTRA_ETC.iter().map(PathBuf::from));
    let mut landlock_write: Vec<PathBuf> = ["/tmp", "/dev/shm", "/dev/pts"]
        .iter()
        .map(PathBuf::from)
        .collect();
    for home in &homes {
        if home.writable {
            landlock_write.push(home.path.clone());
        } else {
            landlock_read.push(home.path.clone());
        }
    }
    let mut walked = 0usize;
    // The caches and tool installations the view holds whole.
    let mut whole: Vec<PathBuf> = Vec::new();
    for (index, (root, writable)) in roots.iter().enumerate() {
        check_root(root, dir)?;
        let masks_dir = dir.join("masks").join(index.to_string());
        let masked = build_masks(policy, root, &masks_dir, &mut walked)
            .map_err(|e| format!("masking the blocked entries of {}: {e}", root.display()))?;
        // The view shows the upper-most layer's directory: it keeps the
        // real root's permissions.
        let permissions = std::fs::metadata(root)
            .map_err(|e| format!("the root {}: {e}", root.display()))?
            .permissions();
        let upper = if *writable {
            let upper = dir.join("upper").join(index.to_string());
            let work = dir.join("work").join(index.to_string());
            for d in [&upper, &work] {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(d)
                    .map_err(|e| e.to_string())?;
            }
            std::fs::set_permissions(&upper, permissions.clone()).map_err(|e| e.to_string())?;
            layers.push(Layer {
                root: root.clone(),
                upper: upper.clone(),
            });
            landlock_write.push(root.clone());
            Some((upper, work))
        } else {
            landlock_read.push(root.clone());
            None
        };
        if masked {
            std::fs::set_permissions(&masks_dir, permissions).map_err(|e| e.to_string())?;
        }
        mounts.push(Mount::Overlay {
            target: root.clone(),
            masks: masked.then_some(masks_dir),
            upper,
        });
    }
    for (index, cache) in request.cache_dirs.iter().enumerate() {
        if !cache.is_dir()
            || roots
                .iter()
                .any(|(root, _)| cache.starts_with(root) || root.starts_with(cache))
        {
            continue;
        }
        check_root(cache, dir)?;
        let upper = dir.join("cache-upper").join(index.to_string());
        let work = dir.join("cache-work").join(index.to_string());
        for d in [&upper, &work] {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(d)
                .map_err(|e| e.to_string())?;
        }
        if let Ok(meta) = std::fs::metadata(cache) {
            std::fs::set_permissions(&upper, meta.permissions()).map_err(|e| e.to_string())?;
        }
        landlock_write.push(cache.clone());
        whole.push(cache.clone());
        // Not a layer: nothing written here is ever judged or committed.
        mounts.push(Mount::Overlay {
            target: cache.clone(),
            masks: None,
            upper: Some((upper, work)),
        });
    }
    for install in install_dirs(request.program) {
        if !roots.iter().any(|(root, _)| install.starts_with(root))
            && !RUNTIME_DIRS.iter().any(|d| install.starts_with(d))
        {
            landlock_read.push(install.clone());
            mounts.push(bind(&install, false));
            whole.push(install);
        }
    }
    hide_credentials(policy, &whole, &roots, request.env, dir, &mut mounts)?;
    let proxy = request.proxy_socket.map(|socket| ProxyPort {
        port: PROXY_PORT,
        socket: socket.to_path_buf(),
    });
    let new_root = dir.join("root");
    std::fs::create_dir(&new_root).map_err(|e| e.to_string())?;
    Ok(Planned {
        spec: ViewSpec {
            new_root,
            mounts,
            private_network: request.private_network,
            program: request.program.to_path_buf(),
            argv: request.argv.to_vec(),
            cwd: request.cwd.to_path_buf(),
            env: request.env.to_vec(),
            landlock_read,
            landlock_write,
            max_abi: request.max_abi,
            proxy,
        },
        layers,
    })
}

/// Hides the credential files in what the view holds read-only outside
/// the roots (see [`credentials`](super::credentials)): each under an
/// empty, read-only file or directory of the staging directory `dir`,
/// mounted after what holds it.
fn hide_credentials(
    policy: &PathPolicy,
    whole: &[PathBuf],
    roots: &[(PathBuf, bool)],
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    dir: &Path,
    mounts: &mut Vec<Mount>,
) -> Result<(), String> {
    let held = Held { whole, roots, env };
    let hidden = to_hide(policy, &held);
    if hidden.is_empty() {
        return Ok(());
    }
    let empty_file = dir.join("hidden-file");
    let empty_dir = dir.join("hidden-dir");
    let made = std::fs::write(&empty_file, b"")
        .and_then(|()| std::fs::set_permissions(&empty_file, Permissions::from_mode(0o444)))
        .and_then(|()| std::fs::DirBuilder::new().mode(0o555).create(&empty_dir));
    made.map_err(|e| format!("the empty stand-ins for credential files: {e}"))?;
    for Hidden { at, dir: is_dir } in hidden {
        mounts.push(Mount::Bind {
            source: if is_dir { &empty_dir } else { &empty_file }.clone(),
            target: at,
            writable: false,
        });
    }
    Ok(())
}

/// A home directory the view replaces with a private, empty one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PrivateHome {
    /// Where it is (the host's path: `HOME`, the user's entry in
    /// `/etc/passwd`).
    pub(crate) path: PathBuf,
    /// Whether the second wall lets the command write in it: not when a
    /// read-only root lies beneath it (Landlock grants whole trees, and
    /// that root must stay read-only for both walls).
    pub(crate) writable: bool,
}

/// The home directories the view replaces with private, empty ones: the
/// command's `HOME` and the user's home in `/etc/passwd` (where programs
/// look when `HOME` is unset). Nothing of the host's home is visible
/// there — no configuration, no credentials — but the roots, caches and
/// tool installations the view puts beneath it. Skipped: a home that is
/// or lies beneath a root or cache (the root's own rules apply), and one
/// in a directory the view builds itself or holds read-only.
pub(crate) fn private_homes(
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    roots: &[(PathBuf, bool)],
    caches: &[PathBuf],
) -> Vec<PrivateHome> {
    let from_env = env
        .iter()
        .rev()
        .find(|(name, _)| name == "HOME")
        .map(|(_, value)| PathBuf::from(value));
    let mut homes: Vec<PrivateHome> = Vec::new();
    for path in from_env.into_iter().chain(passwd_home()) {
        let Some(path) = plain_absolute(&path) else {
            continue;
        };
        let system = ["/", "/tmp", "/proc", "/sys", "/dev", "/etc", "/run"];
        let runtime = RUNTIME_DIRS.iter().chain(&system[2..]);
        if system.iter().any(|s| path == Path::new(s))
            || runtime.into_iter().any(|d| path.starts_with(d))
            || roots.iter().any(|(root, _)| path.starts_with(root))
            || caches.iter().any(|cache| path.starts_with(cache))
            || homes.iter().any(|h| h.path == path)
        {
            continue;
        }
        let writable = !roots
            .iter()
            .any(|(root, writable)| !writable && root.starts_with(&path));
        homes.push(PrivateHome { path, writable });
    }
    // A home beneath another one is inside its tmpfs already.
    let all = homes.clone();
    homes.retain(|h| {
        !all.iter()
            .any(|o| o.path != h.path && h.path.starts_with(&o.path))
    });
    homes
}

/// `path` if it is absolute, UTF-8 and without `.` or `..` (a path the
/// overlay options and the mount steps take as it is).
fn plain_absolute(path: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let text = path.to_str()?;
    if !path.is_absolute() || text.contains([',', ':', '\\', '=', '\n']) {
        return None;
    }
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::RootDir => {}
            Component::Normal(name) => out.push(name),
            _ => return None,
        }
    }
    Some(out)
}

/// This user's home directory as `/etc/passwd` gives it.
fn passwd_home() -> Option<PathBuf> {
    let uid = rustix::process::geteuid().as_raw().to_string();
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    text.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.get(2) == Some(&uid.as_str()))
            .then(|| fields.get(5).map(PathBuf::from))
            .flatten()
    })
}

fn bind(path: &Path, writable: bool) -> Mount {
    Mount::Bind {
        source: path.to_path_buf(),
        target: path.to_path_buf(),
        writable,
    }
}

/// A root the view can hold: not `/` nor a system directory it builds
/// itself, nameable in overlay options, and not holding the staging dir.
fn check_root(root: &Path, staging: &Path) -> Result<(), String> {
    let text = root.to_str().ok_or("a root whose path is not UTF-8")?;
    if text.contains([',', ':', '\\', '=', '\n']) {
        return Err(format!(
            "the root {text} holds a character overlay options cannot carry (`,` `:` `\\` `=`)"
        ));
    }
    for system in ["/", "/proc", "/dev", "/sys", "/tmp"] {
        if root == Path::new(system) {
            return Err(format!(
                "the root {text} is a directory the view builds itself"
            ));
        }
    }
    if root.starts_with("/proc") || root.starts_with("/sys") || root.starts_with("/dev") {
        return Err(format!("the root {text} lies in a kernel file system"));
    }
    if staging.starts_with(root) || root.starts_with(staging) {
        return Err(format!(
            "the staging directory {} and the root {text} overlap; choose a staging directory outside the roots",
            staging.display()
        ));
    }
    Ok(())
}

/// Builds the mask layer of `root` in `masks`: a whiteout (character
/// device 0:0, which needs no privilege) for each blocked file and an
/// opaque directory for each blocked directory. `.git` stays visible: git
/// must read it (what a command writes there is judged at write-back).
/// Returns whether anything was masked.
fn build_masks(
    policy: &PathPolicy,
    root: &Path,
    masks: &Path,
    walked: &mut usize,
) -> io::Result<bool> {
    let mut masked = false;
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let dir = root.join(&rel);
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in read {
            let entry = entry?;
            *walked += 1;
            if *walked > MAX_WALKED_ENTRIES {
                return Err(io::Error::other(format!(
                    "the roots hold more than {MAX_WALKED_ENTRIES} entries to judge"
                )));
            }
            let name = entry.file_name();
            let child = rel.join(&name);
            let location = root.join(&child);
            let kind = entry.file_type()?;
            let blocked = matches!(
                policy.judge_location(&location, Access::Read),
                Err(ref e) if e.rule() == "blocked"
            );
            if name == ".git" {
                // Visible to commands; its contents are git's.
                continue;
            }
            if blocked {
                mask(root, masks, &child, kind.is_dir())?;
                masked = true;
            } else if kind.is_dir() {
                stack.push(child);
            }
        }
    }
    Ok(masked)
}

fn mask(root: &Path, masks: &Path, rel: &Path, dir: bool) -> io::Result<()> {
    // The directories leading to it keep the real ones' permissions (the
    // upper-most layer's directory is the one the view shows).
    let mut prefix = PathBuf::new();
    if let Some(parent) = rel.parent() {
        for component in parent.components() {
            prefix.push(component);
            let at = masks.join(&prefix);
            if std::fs::symlink_metadata(&at).is_err() {
                std::fs::create_dir_all(&at)?;
                if let Ok(meta) = std::fs::metadata(root.join(&prefix)) {
                    std::fs::set_permissions(&at, meta.permissions())?;
                }
            }
        }
    }
    let at = masks.join(rel);
    if dir {
        std::fs::create_dir_all(&at)?;
        rustix::fs::setxattr(
            &at,
            "user.overlay.opaque",
            b"y",
            rustix::fs::XattrFlags::empty(),
        )?;
    } else {
        if let Some(parent) = at.parent() {
            std::fs::create_dir_all(parent)?;
        }
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &at,
            rustix::fs::FileType::CharacterDevice,
            rustix::fs::Mode::empty(),
            0,
        )?;
    }
    Ok(())
}

/// The installation a program resolves into, read-only in the view: for a
/// program under a per-user tool directory (`~/.pyenv`, `~/.nvm`), that
/// directory (for `~/.cargo`, only `~/.cargo/bin` — the rest holds
/// credentials — and the `~/.rustup` beside it); for one in a `bin`
/// directory outside the system's, the directory above it (`/opt/node`;
/// never `/tmp`, `/home`, `/var` and the like, nor a home);
/// and the program's, loader's and interpreter's directories.
pub(crate) fn install_dirs(program: &Path) -> Vec<PathBuf> {
    let mut dirs = program_dirs(program);
    let mut found = Vec::new();
    let canonical = std::fs::canonicalize(program).ok();
    for path in std::iter::once(program.to_path_buf()).chain(canonical) {
        if let Some(dir) = tool_dir(&path) {
            found.extend(dir);
        }
    }
    for dir in found {
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs.retain(|d| d.is_absolute() && d != Path::new("/") && !is_home(d));
    dirs
}

fn is_home(dir: &Path) -> bool {
    dir == Path::new("/root") || dir.parent() == Some(Path::new("/home"))
}

fn tool_dir(program: &Path) -> Option<Vec<PathBuf>> {
    for ancestor in program.ancestors().skip(1) {
        let (Some(name), Some(parent)) = (ancestor.file_name(), ancestor.parent()) else {
            // `/`: no home's tool directory holds the program.
            break;
        };
        let name = name.to_str()?;
        if name.starts_with('.') && is_home(parent) {
            if name == ".cargo" {
                let mut dirs = vec![ancestor.join("bin")];
                let rustup = parent.join(".rustup");
                if rustup.is_dir() {
                    dirs.push(rustup);
                }
                return Some(dirs);
            }
            return Some(vec![ancestor.to_path_buf()]);
        }
    }
    let dir = program.parent()?;
    if dir.file_name()? == "bin" {
        let above = dir.parent()?;
        let system = ["/usr", "/bin", "/sbin", "/lib", "/usr/local"];
        // Directories the view builds or hides whole are never bound from
        // the host (`/tmp/bin/x` must not bring the host's `/tmp`).
        let shared = [
            "/", "/tmp", "/home", "/root", "/proc", "/dev", "/sys", "/etc", "/run", "/var",
        ];
        if !shared.iter().any(|s| above == Path::new(s))
            && !is_home(above)
            && !system.iter().any(|s| above.starts_with(s))
        {
            return Some(vec![above.to_path_buf()]);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_dir_is_the_home_tool_directory_or_the_one_above_bin() {
        let cases: [(&str, Option<Vec<&str>>); 9] = [
            ("/opt/node/bin/node", Some(vec!["/opt/node"])),
            ("/tmp/bin/prog", None),
            ("/home/bin/prog", None),
            ("/var/bin/prog", None),
            ("/srv/x/opt/tool/bin/prog", Some(vec!["/srv/x/opt/tool"])),
            (
                "/home/u/.nvm/versions/node/bin/node",
                Some(vec!["/home/u/.nvm"]),
            ),
            ("/usr/local/bin/node", None),
            ("/bin/prog", None),
            ("/home/u/bin/prog", None),
        ];
        for (program, expected) in cases {
            let expected = expected.map(|v| v.into_iter().map(PathBuf::from).collect::<Vec<_>>());
            assert_eq!(tool_dir(Path::new(program)), expected, "{program}");
        }
    }
}
