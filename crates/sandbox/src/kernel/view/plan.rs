//! Planning one command's view: the runtime it needs (read-only), the
//! private `/dev`, `/proc` and `/tmp`, every root of the path policy (its
//! blocked entries masked, a writable one over a staging layer), the tool
//! installations (the credential files in them and in the runtime
//! hidden), and the Landlock grants inside.

use std::fs::Permissions;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use agentcaps_paths::{Access, PathPolicy};

use super::credentials::{Held, Hidden, to_hide};
use super::spec::{Mount, NamesMount, ProxyPort, RunSettings, ViewSpec};
use super::staging::Staging;
use crate::kernel::program::program_files;
use crate::kernel::rules::{RUNTIME_DEVICES_READ, RUNTIME_DEVICES_RW, RUNTIME_DIRS, RUNTIME_ETC};
use crate::network::PROXY_PORT;

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
    /// The roots in the order the names layer numbers them.
    pub(crate) names_roots: Vec<PathBuf>,
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
    // No `/dev/tty`: the command must not reach the terminal the runner
    // may have (the second wall lets it list `/dev`, and read beneath it).
    for device in RUNTIME_DEVICES_READ.iter().chain(RUNTIME_DEVICES_RW) {
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
    // `/dev` holds only what the view put there: it can be listed.
    let mut landlock_read = vec![PathBuf::from("/proc"), PathBuf::from("/dev")];
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
    // The tool installations, before the roots: a root beneath one is
    // mounted over it, and so keeps its own masks and layers.
    let home_paths: Vec<PathBuf> = homes.iter().map(|h| h.path.clone()).collect();
    let mut installs = install_dirs(request.program, &home_paths);
    installs.sort_by_key(|install| install.components().count());
    for (index, install) in installs.into_iter().enumerate() {
        if roots.iter().any(|(root, _)| install.starts_with(root))
            || RUNTIME_DIRS.iter().any(|d| install.starts_with(d))
        {
            continue;
        }
        landlock_read.push(install.clone());
        if install.is_dir() {
            // An overlay, read-only, like a read-only root (its empty top
            // layer keeps the installation's mode).
            check_root(&install, dir)?;
            let top = dir.join("install").join(index.to_string());
            make_private_dir(&top)?;
            if let Ok(meta) = std::fs::metadata(&install) {
                std::fs::set_permissions(&top, meta.permissions()).map_err(|e| e.to_string())?;
            }
            mounts.push(Mount::Overlay {
                target: install.clone(),
                masks: Some(top),
                upper: None,
                names: None,
            });
            whole.push(install);
        } else {
            // A program file of its own (`~/.local/bin/tool`), read-only.
            mounts.push(bind(&install, false));
        }
    }
    for (index, (root, writable)) in roots.iter().enumerate() {
        check_root(root, dir)?;
        // Every root is an overlay, a read-only one too: the view's inode
        // of a host socket or FIFO is not the host's (nothing reaches the
        // host's listener or reader through it), and devices do not open.
        let masks_dir = dir.join("masks").join(index.to_string());
        make_private_dir(&masks_dir)?;
        super::masks::build(policy, root, &masks_dir, &mut walked)
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
                make_private_dir(d)?;
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
        std::fs::set_permissions(&masks_dir, permissions).map_err(|e| e.to_string())?;
        mounts.push(Mount::Overlay {
            target: root.clone(),
            masks: Some(masks_dir),
            upper,
            names: Some(index),
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
            make_private_dir(d)?;
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
            names: None,
        });
    }
    hide_credentials(policy, &whole, &roots, request.env, dir, &mut mounts)?;
    let proxy = request.proxy_socket.map(|socket| ProxyPort {
        port: PROXY_PORT,
        socket: socket.to_path_buf(),
    });
    let new_root = dir.join("root");
    std::fs::create_dir(&new_root).map_err(|e| e.to_string())?;
    // The names layer's mount point: the roots by index beneath it.
    let names = NamesMount {
        mount_point: dir.join("names"),
        socket: dir.join("names.sock"),
    };
    make_private_dir(&names.mount_point)?;
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
            host_files: false,
            names: Some(names),
            run: RunSettings::default(),
        },
        layers,
        names_roots: roots.into_iter().map(|(root, _)| root).collect(),
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

/// Makes `dir` (and what leads to it) in the staging directory, private.
fn make_private_dir(dir: &Path) -> Result<(), String> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("the staging directory {}: {e}", dir.display()))
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

/// What the view holds of the installation a program resolves into,
/// read-only: the program's, loader's and interpreter's directories, and
/// for a program in a `bin` directory outside the system's, the directory
/// above it (`/opt/node`; never `/tmp`, `/home`, `/var` and the like).
///
/// Under a home (`homes`, `/root`, `/home/*`) only the installation
/// itself, never a whole `~/.local`, `~/.config` or other dot-directory
/// (see [`in_home`]): what is returned there can be a single file.
pub(crate) fn install_dirs(program: &Path, homes: &[PathBuf]) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    let mut add = |path: PathBuf| {
        if !found.contains(&path) {
            found.push(path);
        }
    };
    let files = std::iter::once(program.to_path_buf()).chain(program_files(program));
    for (at, file) in files.enumerate() {
        let Some(dir) = file.parent().filter(|d| d.is_absolute()) else {
            continue;
        };
        if let Some(home) = home_of(&file, homes) {
            match in_home(dir, &home) {
                Some(installed) => installed.into_iter().for_each(&mut add),
                None => {
                    // A program file of its own; a Python script there
                    // (`pip install --user`) brings its package directory.
                    if at == 0 && runs_python(&file) {
                        user_site_packages(&home).into_iter().for_each(&mut add);
                    }
                    add(file.clone());
                }
            }
        } else {
            // The spelled program's own directory is the real one's.
            if at > 0 {
                add(dir.to_path_buf());
            }
            tool_dir(&file).into_iter().for_each(&mut add);
        }
    }
    found.retain(|d| {
        d.is_absolute() && d != Path::new("/") && home_of(d, homes).is_none_or(|h| *d != h)
    });
    found
}

/// The home `path` lies beneath, if any.
fn home_of(path: &Path, homes: &[PathBuf]) -> Option<PathBuf> {
    let mut ancestors = path.ancestors();
    ancestors
        .find(|a| is_home(a) || homes.iter().any(|h| h == a))
        .map(Path::to_path_buf)
}

fn is_home(dir: &Path) -> bool {
    dir == Path::new("/root") || dir.parent() == Some(Path::new("/home"))
}

/// The installation the directory `dir` of a program under `home` belongs
/// to, when it is one the view can name: a virtual environment (an
/// ancestor with `pyvenv.cfg`: pipx, `uv tool`, poetry); `~/.cargo/bin`
/// and `~/.rustup`; a version of `~/.pyenv` or `~/.nvm` (the directory
/// above its `bin`; pyenv's own `shims` and `bin` need all of `~/.pyenv`);
/// another `bin` directory's parent that is not a top-level directory of
/// the home. `None`: only the program file itself (`~/.local/bin/tool`,
/// `~/bin/tool`).
fn in_home(dir: &Path, home: &Path) -> Option<Vec<PathBuf>> {
    let rel = dir.strip_prefix(home).ok()?;
    if let Some(venv) = dir
        .ancestors()
        .take_while(|a| *a != home)
        .find(|a| a.join("pyvenv.cfg").is_file())
    {
        return Some(vec![venv.to_path_buf()]);
    }
    let top = rel.components().next()?.as_os_str().to_str()?;
    let top_dir = home.join(top);
    match top {
        ".cargo" if rel.starts_with(".cargo/bin") => {
            let mut dirs = vec![top_dir.join("bin")];
            let rustup = home.join(".rustup");
            if rustup.is_dir() {
                dirs.push(rustup);
            }
            return Some(dirs);
        }
        ".rustup" => return Some(vec![top_dir]),
        ".pyenv" if rel == Path::new(".pyenv/shims") || rel == Path::new(".pyenv/bin") => {
            return Some(vec![top_dir]);
        }
        _ => {}
    }
    let above = dir.parent()?;
    (dir.file_name()? == "bin" && above != home && above != top_dir)
        .then(|| vec![above.to_path_buf()])
}

/// Whether the script `file` names a Python interpreter on its `#!` line
/// (directly or through `env`).
fn runs_python(file: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 256];
    let Ok(read) = std::fs::File::open(file).and_then(|mut f| f.read(&mut head)) else {
        return false;
    };
    let line = head[..read]
        .split(|&b| b == b'\n')
        .next()
        .unwrap_or_default();
    line.starts_with(b"#!") && line.windows(6).any(|w| w == b"python")
}

/// The package directories `pip install --user` fills under `home`
/// (`~/.local/lib/pythonX.Y/site-packages`).
fn user_site_packages(home: &Path) -> Vec<PathBuf> {
    let lib = home.join(".local/lib");
    let Ok(entries) = std::fs::read_dir(&lib) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with("python"))
        })
        .map(|e| e.path().join("site-packages"))
        .filter(|d| d.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// For a program outside the homes in a `bin` directory outside the
/// system's, the directory above it (`/opt/node`).
fn tool_dir(program: &Path) -> Option<PathBuf> {
    let dir = program.parent()?;
    if dir.file_name()? != "bin" {
        return None;
    }
    let above = dir.parent()?;
    let system = ["/usr", "/bin", "/sbin", "/lib", "/usr/local"];
    // Directories the view builds or hides whole are never bound from
    // the host (`/tmp/bin/x` must not bring the host's `/tmp`).
    let shared = [
        "/", "/tmp", "/home", "/root", "/proc", "/dev", "/sys", "/etc", "/run", "/var",
    ];
    (!shared.iter().any(|s| above == Path::new(s))
        && !is_home(above)
        && !system.iter().any(|s| above.starts_with(s)))
    .then(|| above.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_dir_is_the_one_above_bin_outside_the_system_and_the_homes() {
        let cases: [(&str, Option<&str>); 8] = [
            ("/opt/node/bin/node", Some("/opt/node")),
            ("/tmp/bin/prog", None),
            ("/home/bin/prog", None),
            ("/var/bin/prog", None),
            ("/srv/x/opt/tool/bin/prog", Some("/srv/x/opt/tool")),
            ("/usr/local/bin/node", None),
            ("/bin/prog", None),
            ("/opt/node/lib/prog", None),
        ];
        for (program, expected) in cases {
            assert_eq!(
                tool_dir(Path::new(program)),
                expected.map(PathBuf::from),
                "{program}"
            );
        }
    }

    #[test]
    fn under_a_home_only_the_installation_itself_is_held() {
        let home = Path::new("/home/u");
        let cases: [(&str, Option<Vec<&str>>); 9] = [
            (
                "/home/u/.nvm/versions/node/v20.1.0/bin",
                Some(vec!["/home/u/.nvm/versions/node/v20.1.0"]),
            ),
            (
                "/home/u/.pyenv/versions/3.12.1/bin",
                Some(vec!["/home/u/.pyenv/versions/3.12.1"]),
            ),
            ("/home/u/.pyenv/shims", Some(vec!["/home/u/.pyenv"])),
            ("/home/u/.cargo/bin", Some(vec!["/home/u/.cargo/bin"])),
            ("/home/u/opt/node/bin", Some(vec!["/home/u/opt/node"])),
            ("/home/u/.local/bin", None),
            ("/home/u/bin", None),
            ("/home/u/.local/share/tool", None),
            ("/home/u", None),
        ];
        for (dir, expected) in cases {
            let expected = expected.map(|v| v.into_iter().map(PathBuf::from).collect::<Vec<_>>());
            assert_eq!(in_home(Path::new(dir), home), expected, "{dir}");
        }
    }

    #[test]
    fn a_virtual_environment_under_a_home_is_held_whole_and_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().canonicalize().expect("canonical");
        let venv = home.join(".local/share/pipx/venvs/tool");
        std::fs::create_dir_all(venv.join("bin")).expect("mkdir");
        std::fs::write(venv.join("pyvenv.cfg"), "home = /usr/bin\n").expect("cfg");
        std::fs::write(venv.join("bin/tool"), "#!/bin/sh\n").expect("tool");
        let link = home.join(".local/bin/tool");
        std::fs::create_dir_all(link.parent().expect("parent")).expect("mkdir");
        std::os::unix::fs::symlink(venv.join("bin/tool"), &link).expect("link");
        let held = install_dirs(&link, std::slice::from_ref(&home));
        let under_home: Vec<&PathBuf> = held.iter().filter(|d| d.starts_with(&home)).collect();
        assert_eq!(under_home, [&link, &venv], "{held:?}");
    }
}
