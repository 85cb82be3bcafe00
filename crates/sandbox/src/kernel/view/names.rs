//! The names layer: a read-only file system (FUSE) between a root's mask
//! layer and the real tree, which judges every name when it is looked up,
//! not once when the view is built.
//!
//! The mask layer hides the blocked entries that exist when the view is
//! planned. An entry the host creates afterwards (a `.env` written by an
//! editor, a key dropped by another program while the command runs) would
//! show through the overlay from the real tree. This layer holds it: a
//! lookup of a blocked name (`.env`, `*.pem`, `.ssh`, ...) answers with a
//! whiteout, whether or not the real tree has the entry yet, and so the
//! overlay never looks further down; a real directory answers as a
//! directory (its mode, owner and times mirrored), so that the lookups
//! beneath it come here too; anything else answers "no such entry" and
//! the overlay finds it in the real tree. A listing holds only the
//! whiteouts of the blocked entries there now. The layer never serves a
//! byte of any file. `.git` is left to the real tree, as the mask layer
//! leaves it: git reads it, and what a command writes there is judged
//! when its changes are written back.
//!
//! It is served by the runner, outside the view: the view's first process
//! opens `/dev/fuse` in the view's user namespace, mounts the layer, and
//! hands the descriptor over on a UNIX socket in the run's private staging
//! directory (one `0` byte carrying it; the runner answers `+`), before
//! it mounts the overlays. The runner's thread answers the kernel's
//! requests until the view's mount namespace is gone. Where `/dev/fuse`
//! cannot be opened or mounted (no FUSE, a device only root may open), the
//! overlays are mounted without the layer and the run says `partial`:
//! what the host creates while the command runs is not hidden.
//!
//! The top directory lists the roots by their index in the plan (`0`,
//! `1`, ...); the overlay of root `i` has `names/i` between its masks and
//! the real tree.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{self, IoSliceMut, Write as _};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd as _, OwnedFd};
use std::os::unix::fs::MetadataExt as _;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use agentcaps_paths::{Access, PathPolicy};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, Generation, INodeNo, ReplyAttr,
    ReplyDirectory, ReplyEntry, ReplyXattr, Request,
};
use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};

use super::proxy_port::{HANDOFF, TAKEN};

/// How long either side waits for the other during the hand-over.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// The top directory (the roots by index).
const TOP: u64 = 1;
/// The one whiteout every blocked name is.
const WHITEOUT: u64 = 2;
/// The first inode number given to a directory.
const FIRST_DIR: u64 = 3;

/// How long the kernel may keep a directory's entry and attributes: short,
/// so that a mode the host changes shows soon.
const DIR_TTL: Duration = Duration::from_secs(1);
/// How long the kernel may keep a whiteout: a name's verdict never
/// changes while the policy does not.
const WHITEOUT_TTL: Duration = Duration::from_secs(3600);

/// `/dev/fuse` is character device 10:229.
const FUSE_MAJOR: u32 = 10;
const FUSE_MINOR: u32 = 229;

/// Whether this process can open `/dev/fuse`, as a view it starts must
/// (the view's user namespace maps this process's user, and the kernel
/// checks the device's mode against it): what `check shell` predicts.
pub(crate) fn available() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
        .is_ok()
}

/// The mount options of the layer, for the descriptor `fd`.
pub(crate) fn mount_options(fd: i32) -> String {
    format!("fd={fd},rootmode=40555,user_id=0,group_id=0,default_permissions,allow_other")
}

/// The view's side: hands the open `/dev/fuse` descriptor `fuse` to the
/// runner at `socket`, and waits for it to say it took it.
pub(crate) fn hand_over(fuse: &OwnedFd, socket: &Path) -> io::Result<()> {
    super::proxy_port::send_descriptor(fuse.as_fd(), socket).map(drop)
}

/// The runner's side: the thread that takes the hand-over and then serves
/// the layer. Dropping it before a hand-over came ends the thread; once
/// the layer is served, the thread ends with the view.
pub(crate) struct Server {
    stop: std::sync::Arc<AtomicBool>,
    socket: PathBuf,
}

impl Server {
    /// Listens on `socket` (in the run's private staging directory) and
    /// serves the names of `roots` (the plan's roots, in order) under
    /// `policy` once the view hands its descriptor over.
    ///
    /// # Errors
    ///
    /// The socket cannot be made (a path too long for one), or the thread
    /// cannot start.
    pub(crate) fn start(
        policy: PathPolicy,
        roots: Vec<PathBuf>,
        socket: &Path,
    ) -> io::Result<Self> {
        let listener = UnixListener::bind(socket)?;
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::Builder::new()
            .name("agentcaps-names".to_owned())
            .spawn(move || serve(&listener, &stopped, policy, roots))?;
        Ok(Server {
            stop,
            socket: socket.to_path_buf(),
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the thread if it still waits for a hand-over.
        let _ = UnixStream::connect(&self.socket);
    }
}

/// Takes one hand-over on `listener` and serves the layer on it.
fn serve(listener: &UnixListener, stop: &AtomicBool, policy: PathPolicy, roots: Vec<PathBuf>) {
    let Ok((mut stream, _)) = listener.accept() else {
        return;
    };
    if stop.load(Ordering::SeqCst) {
        return;
    }
    let Ok(fuse) = receive(&stream) else {
        return;
    };
    if stream.write_all(&[TAKEN]).is_err() {
        return;
    }
    drop(stream);
    // Two workers, each with its own clone of the descriptor: a command's
    // threads (git's index preload, a parallel build) look names up at the
    // same time, and each lookup waits for an answer (`git status` over
    // 10,000 files: from as fast to about a twentieth faster than with
    // one; a parallel build's many processes gain more).
    let mut config = fuser::Config::default();
    config.n_threads = Some(2);
    config.clone_fd = true;
    let names = Names::new(policy, roots);
    if let Ok(session) = fuser::Session::from_fd(names, fuse, fuser::SessionACL::All, config) {
        // Returns when the view's mount namespace, and so the mount, is gone.
        let _ = session.run();
    }
}

/// Receives the `0` byte and the one descriptor it carries, which must be
/// `/dev/fuse`.
fn receive(stream: &UnixStream) -> io::Result<OwnedFd> {
    stream.set_read_timeout(Some(ANSWER_WITHIN))?;
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let mut byte = [0u8; 1];
    let message = rustix::net::recvmsg(
        stream,
        &mut [IoSliceMut::new(&mut byte)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )?;
    let mut fds: Vec<OwnedFd> = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }
    if message.bytes != 1 || byte[0] != HANDOFF || fds.len() != 1 {
        return Err(io::Error::other(
            "a hand-over is one 0 byte carrying one descriptor",
        ));
    }
    let fd = fds.remove(0);
    let stat = rustix::fs::fstat(&fd)?;
    let is_char =
        rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::CharacterDevice;
    let rdev = stat.st_rdev;
    if !is_char || rustix::fs::major(rdev) != FUSE_MAJOR || rustix::fs::minor(rdev) != FUSE_MINOR {
        return Err(io::Error::other(
            "the descriptor handed over is not /dev/fuse",
        ));
    }
    Ok(fd)
}

/// One directory the kernel knows, by its real path.
struct Node {
    path: PathBuf,
    lookups: u64,
}

/// The directories the kernel knows.
#[derive(Default)]
struct Nodes {
    by_ino: HashMap<u64, Node>,
    by_path: HashMap<PathBuf, u64>,
    next: u64,
}

impl Nodes {
    /// The inode of the directory at `path`, one lookup more.
    fn looked_up(&mut self, path: PathBuf) -> u64 {
        if let Some(ino) = self.by_path.get(&path) {
            if let Some(node) = self.by_ino.get_mut(ino) {
                node.lookups += 1;
            }
            return *ino;
        }
        let ino = self.next.max(FIRST_DIR);
        self.next = ino + 1;
        self.by_path.insert(path.clone(), ino);
        self.by_ino.insert(ino, Node { path, lookups: 1 });
        ino
    }

    /// The kernel forgot `count` lookups of `ino`.
    fn forget(&mut self, ino: u64, count: u64) {
        let gone = match self.by_ino.get_mut(&ino) {
            Some(node) => {
                node.lookups = node.lookups.saturating_sub(count);
                node.lookups == 0
            }
            None => false,
        };
        if gone && let Some(node) = self.by_ino.remove(&ino) {
            self.by_path.remove(&node.path);
        }
    }

    fn path(&self, ino: u64) -> Option<PathBuf> {
        self.by_ino.get(&ino).map(|node| node.path.clone())
    }
}

/// The file system: the policy that judges names, the roots, and the
/// directories looked up so far.
struct Names {
    policy: PathPolicy,
    roots: Vec<PathBuf>,
    nodes: Mutex<Nodes>,
    uid: u32,
    gid: u32,
}

impl Names {
    fn new(policy: PathPolicy, roots: Vec<PathBuf>) -> Self {
        Names {
            policy,
            roots,
            nodes: Mutex::new(Nodes::default()),
            uid: rustix::process::geteuid().as_raw(),
            gid: rustix::process::getegid().as_raw(),
        }
    }

    fn nodes(&self) -> std::sync::MutexGuard<'_, Nodes> {
        self.nodes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The real path of the directory `ino` (`None`: the top, or unknown).
    fn dir_path(&self, ino: INodeNo) -> Option<PathBuf> {
        self.nodes().path(ino.0)
    }

    fn blocked(&self, path: &Path) -> bool {
        self.policy.judge_location(path, Access::Read).is_err()
    }

    /// The attributes of the real directory at `path`, as the view shows
    /// them (the runner's own ids are the view's root; others are nobody).
    fn dir_attr(&self, ino: u64, meta: &std::fs::Metadata) -> FileAttr {
        let time = |secs: i64, nanos: i64| {
            let nanos = u32::try_from(nanos).unwrap_or(0);
            match u64::try_from(secs) {
                Ok(secs) => SystemTime::UNIX_EPOCH + Duration::new(secs, nanos),
                Err(_) => SystemTime::UNIX_EPOCH,
            }
        };
        let mapped = |id: u32, own: u32| if id == own { 0 } else { NOBODY };
        FileAttr {
            ino: INodeNo(ino),
            size: meta.size(),
            blocks: meta.blocks(),
            atime: time(meta.atime(), meta.atime_nsec()),
            mtime: time(meta.mtime(), meta.mtime_nsec()),
            ctime: time(meta.ctime(), meta.ctime_nsec()),
            crtime: SystemTime::UNIX_EPOCH,
            kind: FileType::Directory,
            perm: u16::try_from(meta.mode() & 0o7777).unwrap_or(0),
            nlink: 2,
            uid: mapped(meta.uid(), self.uid),
            gid: mapped(meta.gid(), self.gid),
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }
}

/// The overflow id: what the view shows for ids it does not map.
const NOBODY: u32 = 65534;

/// The top directory's attributes.
fn top_attr() -> FileAttr {
    FileAttr {
        ino: INodeNo(TOP),
        size: 0,
        blocks: 0,
        atime: SystemTime::UNIX_EPOCH,
        mtime: SystemTime::UNIX_EPOCH,
        ctime: SystemTime::UNIX_EPOCH,
        crtime: SystemTime::UNIX_EPOCH,
        kind: FileType::Directory,
        perm: 0o555,
        nlink: 2,
        uid: 0,
        gid: 0,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

/// The whiteout's attributes: character device 0:0, which an overlay
/// reads as "this name is not here, whatever the layers below hold".
fn whiteout_attr() -> FileAttr {
    FileAttr {
        kind: FileType::CharDevice,
        ino: INodeNo(WHITEOUT),
        perm: 0,
        nlink: 1,
        ..top_attr()
    }
}

impl Filesystem for Names {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let path = if parent.0 == TOP {
            let root = name
                .to_str()
                .and_then(|index| index.parse::<usize>().ok())
                .and_then(|index| self.roots.get(index));
            match root {
                Some(root) => root.clone(),
                None => return reply.error(Errno::ENOENT),
            }
        } else {
            match self.dir_path(parent) {
                // `.git` is git's, as in the mask layer: visible, and what a
                // command writes there is judged at write-back.
                Some(_) if name.as_encoded_bytes() == b".git" => {
                    return reply.error(Errno::ENOENT);
                }
                Some(dir) => {
                    let path = dir.join(name);
                    if self.blocked(&path) {
                        return reply.entry(&WHITEOUT_TTL, &whiteout_attr(), Generation(0));
                    }
                    path
                }
                None => return reply.error(Errno::ENOENT),
            }
        };
        match agentcaps_paths::long_path::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => {
                let ino = self.nodes().looked_up(path);
                reply.entry(&DIR_TTL, &self.dir_attr(ino, &meta), Generation(0));
            }
            // Not a directory (or not there): the overlay finds it below.
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.nodes().forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match ino.0 {
            TOP => reply.attr(&WHITEOUT_TTL, &top_attr()),
            WHITEOUT => reply.attr(&WHITEOUT_TTL, &whiteout_attr()),
            other => match self.dir_path(ino) {
                Some(path) => match agentcaps_paths::long_path::symlink_metadata(&path) {
                    Ok(meta) if meta.is_dir() => reply.attr(&DIR_TTL, &self.dir_attr(other, &meta)),
                    _ => reply.error(Errno::ENOENT),
                },
                None => reply.error(Errno::ENOENT),
            },
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let mut entries: Vec<(u64, FileType, std::ffi::OsString)> = vec![
            (ino.0, FileType::Directory, ".".into()),
            (TOP, FileType::Directory, "..".into()),
        ];
        if ino.0 == TOP {
            for index in 0..self.roots.len() {
                // The kernel looks an entry up before it uses it: any
                // number that is not another's does here.
                entries.push((FIRST_DIR, FileType::Directory, index.to_string().into()));
            }
        } else {
            let Some(dir) = self.dir_path(ino) else {
                return reply.error(Errno::ENOENT);
            };
            // A directory the runner cannot list shows no whiteouts; the
            // command (the same user) cannot list it either, and a lookup
            // of a blocked name in it still meets one.
            let names = agentcaps_paths::long_path::read_dir_names(&dir).unwrap_or_default();
            for name in names {
                if name.as_encoded_bytes() != b".git" && self.blocked(&dir.join(&name)) {
                    entries.push((WHITEOUT, FileType::CharDevice, name));
                }
            }
        }
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        for (index, (ino, kind, name)) in entries.iter().enumerate().skip(start) {
            if reply.add(INodeNo(*ino), index as u64 + 1, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn getxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _size: u32,
        reply: ReplyXattr,
    ) {
        reply.error(Errno::ENODATA);
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, size: u32, reply: ReplyXattr) {
        if size == 0 {
            reply.size(0);
        } else {
            reply.data(&[]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};

    #[test]
    fn a_directory_is_forgotten_only_when_every_lookup_is() {
        let mut nodes = Nodes::default();
        let a = nodes.looked_up("/r/a".into());
        assert_eq!(nodes.looked_up("/r/a".into()), a);
        let b = nodes.looked_up("/r/b".into());
        assert_ne!(a, b);
        assert!(a >= FIRST_DIR && b >= FIRST_DIR);
        nodes.forget(a, 1);
        assert_eq!(nodes.path(a), Some(PathBuf::from("/r/a")));
        nodes.forget(a, 1);
        assert_eq!(nodes.path(a), None);
        // Looked up again, it is a new inode: the old one is gone for good.
        assert_ne!(nodes.looked_up("/r/a".into()), a);
    }

    #[test]
    fn a_descriptor_that_is_not_dev_fuse_is_refused() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let file = std::fs::File::open("/dev/null").unwrap();
        let fd: OwnedFd = file.into();
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        let fds = [fd.as_fd()];
        assert!(control.push(SendAncillaryMessage::ScmRights(&fds)));
        rustix::net::sendmsg(
            &theirs,
            &[io::IoSlice::new(&[HANDOFF])],
            &mut control,
            SendFlags::empty(),
        )
        .unwrap();
        let error = receive(&ours).unwrap_err();
        assert!(error.to_string().contains("not /dev/fuse"), "{error}");
    }
}
