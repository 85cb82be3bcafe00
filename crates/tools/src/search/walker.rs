//! The parallel walk: directories to read and files to search are shared
//! out to the search threads as work (a thread that runs dry takes the
//! next waiting piece), so one large directory keeps every thread busy.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use agentcaps::paths::{Access, EntryKind};

use super::dirs::{self, Dir, Entry};
use super::matcher::Matcher;
use super::skip::{self, Glob, IgnoreFiles, MAX_IGNORE_FILE_BYTES};
use super::{MAX_FILES, MAX_LINE_CHARS, Match};
use crate::files::FileTools;
use crate::stop::Stop;

/// A directory waiting to be read: opened from its parent's handle when a
/// thread takes it, so waiting directories hold no handle of their own.
pub(super) struct Job {
    /// The open directory, or its parent and its name.
    pub(super) dir: Pending,
    /// Its real location.
    pub(super) location: PathBuf,
    /// Its path relative to the searched directory, with a trailing `/`
    /// (empty for the searched directory itself).
    pub(super) prefix: String,
    /// The ignore files in force above it.
    pub(super) ignores: Arc<IgnoreFiles>,
}

/// A few files of one directory, judged and waiting to be searched.
struct Files {
    dir: Arc<Dir>,
    location: Arc<Path>,
    prefix: Arc<str>,
    /// (the entry's name, its UTF-8 spelling)
    names: Vec<(std::ffi::OsString, String)>,
}

/// The files searched as one piece of work.
const FILES_PER_PIECE: usize = 8;

/// One piece of work.
enum Work {
    Dir(Job),
    Files(Files),
}

/// How a [`Job`]'s directory is reached.
pub(super) enum Pending {
    Open(Dir),
    Child(Arc<Dir>, std::ffi::OsString),
}

/// One search, as every thread sees it.
pub(super) struct Walk<'a> {
    pub(super) files: &'a FileTools,
    pub(super) matcher: &'a Matcher,
    pub(super) glob: Option<&'a Glob>,
    pub(super) max: usize,
    pub(super) stop: &'a Stop,
    pub(super) found: Found,
    queue: Queue,
}

/// What the threads found.
#[derive(Default)]
pub(super) struct Found {
    pub(super) matches: Mutex<Vec<Match>>,
    pub(super) count: AtomicUsize,
    pub(super) seen: AtomicUsize,
    pub(super) searched: AtomicU64,
    pub(super) skipped: AtomicU64,
    pub(super) truncated: AtomicBool,
}

/// The directories waiting, and how many threads are reading one.
struct Queue {
    state: Mutex<QueueState>,
    wake: Condvar,
}

struct QueueState {
    jobs: Vec<Work>,
    /// Threads working on a piece.
    busy: usize,
    /// Threads waiting for one.
    waiting: usize,
    quit: bool,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Queue {
    fn push(&self, job: Work) {
        let mut state = lock(&self.state);
        state.jobs.push(job);
        // Waking costs a system call: only when a thread waits.
        if state.waiting > 0 {
            self.wake.notify_one();
        }
    }

    /// The next directory to read, waiting while another thread may still
    /// find some; `None` when the walk is over.
    fn next(&self) -> Option<Work> {
        let mut state = lock(&self.state);
        loop {
            if state.quit {
                return None;
            }
            if let Some(job) = state.jobs.pop() {
                state.busy += 1;
                return Some(job);
            }
            if state.busy == 0 {
                state.quit = true;
                self.wake.notify_all();
                return None;
            }
            state.waiting += 1;
            state = self
                .wake
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
            state.waiting -= 1;
        }
    }

    fn done(&self) {
        let mut state = lock(&self.state);
        state.busy -= 1;
        if state.busy == 0 && state.jobs.is_empty() {
            self.wake.notify_all();
        }
    }

    fn quit(&self) {
        let mut state = lock(&self.state);
        state.quit = true;
        state.jobs.clear();
        self.wake.notify_all();
    }
}

/// A thread's own buffers.
#[derive(Default)]
struct Scratch {
    /// Ignore files' text.
    text: Vec<u8>,
    /// A file's text, a chunk at a time.
    chunk: Vec<u8>,
    entries: Vec<Entry>,
}

/// How much of a file is read (and searched) at a time.
const CHUNK: usize = 256 * 1024;

impl<'a> Walk<'a> {
    pub(super) fn new(
        files: &'a FileTools,
        matcher: &'a Matcher,
        glob: Option<&'a Glob>,
        max: usize,
        stop: &'a Stop,
        first: Job,
    ) -> Self {
        Self {
            files,
            matcher,
            glob,
            max,
            stop,
            found: Found::default(),
            queue: Queue {
                state: Mutex::new(QueueState {
                    jobs: vec![Work::Dir(first)],
                    busy: 0,
                    waiting: 0,
                    quit: false,
                }),
                wake: Condvar::new(),
            },
        }
    }

    /// Walks with `threads` threads (this one included) until every
    /// directory is read or the search stops.
    pub(super) fn run(&self, threads: usize) {
        std::thread::scope(|scope| {
            for _ in 1..threads {
                // A thread that cannot start leaves the work to the others.
                let _ = std::thread::Builder::new().spawn_scoped(scope, || self.work());
            }
            self.work();
        });
    }

    fn work(&self) {
        let mut scratch = Scratch::default();
        while let Some(work) = self.queue.next() {
            match work {
                Work::Dir(job) => self.directory(job, &mut scratch),
                Work::Files(files) => self.files(files, &mut scratch),
            }
            self.queue.done();
        }
    }

    /// Stops every thread, marking the result truncated.
    fn quit(&self) {
        self.found.truncated.store(true, Ordering::Relaxed);
        self.queue.quit();
    }

    fn directory(&self, job: Job, scratch: &mut Scratch) {
        let Job {
            dir,
            location,
            prefix,
            ignores,
        } = job;
        if self.stop.reached() {
            return self.quit();
        }
        let files = self.files;
        let dir = match dir {
            Pending::Open(dir) => dir,
            Pending::Child(parent, name) => {
                match dirs::open_child(files, &parent, &name, &location) {
                    Ok(dir) => dir,
                    // Out of handles: what is left is not searched.
                    Err(e) if is_out_of_handles(&e) => return self.quit(),
                    // Replaced meanwhile (say by a link): not entered.
                    Err(_) => return,
                }
            }
        };
        let mut entries = std::mem::take(&mut scratch.entries);
        if dirs::read(files, &dir, &location, &mut entries).is_ok() {
            let ignores = self.ignore_files(&dir, &location, &ignores, &entries, &mut scratch.text);
            self.entries(Arc::new(dir), &location, &prefix, &ignores, &mut entries);
        }
        entries.clear();
        scratch.entries = entries;
    }

    /// Judges `entries` (of `dir`, at `location`): queues the
    /// subdirectories to read and the files to search.
    fn entries(
        &self,
        dir: Arc<Dir>,
        location: &Path,
        prefix: &str,
        ignores: &Arc<IgnoreFiles>,
        entries: &mut Vec<Entry>,
    ) {
        let files = self.files;
        let shared_location: Arc<Path> = Arc::from(location);
        let shared_prefix: Arc<str> = Arc::from(prefix);
        let mut names = Vec::new();
        for entry in entries.drain(..) {
            if self.found.truncated.load(Ordering::Relaxed) {
                return; // the search stopped
            }
            if !matches!(entry.kind, EntryKind::File | EntryKind::Dir) {
                continue; // links are never followed; devices never read
            }
            let Some(name) = entry.name.to_str() else {
                // A name that is not UTF-8 cannot be judged as spelled.
                if entry.kind == EntryKind::File {
                    self.found.skipped.fetch_add(1, Ordering::Relaxed);
                }
                continue;
            };
            let path = location.join(name);
            let is_dir = entry.kind == EntryKind::Dir;
            if skip::skipped(self.glob, ignores, &path, name.as_bytes(), is_dir) {
                continue;
            }
            if is_dir {
                if dirs::allowed(files, location, name, &path, EntryKind::Dir, Access::List) {
                    let prefix = format!("{prefix}{name}/");
                    self.queue.push(Work::Dir(Job {
                        dir: Pending::Child(Arc::clone(&dir), entry.name),
                        location: path,
                        prefix,
                        ignores: Arc::clone(ignores),
                    }));
                }
                continue;
            }
            if self.found.seen.fetch_add(1, Ordering::Relaxed) >= MAX_FILES {
                return self.quit();
            }
            if !dirs::allowed(files, location, name, &path, EntryKind::File, Access::Read) {
                self.found.skipped.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let name = name.to_owned();
            names.push((entry.name, name));
            if names.len() == FILES_PER_PIECE {
                self.queue.push(Work::Files(Files {
                    dir: Arc::clone(&dir),
                    location: Arc::clone(&shared_location),
                    prefix: Arc::clone(&shared_prefix),
                    names: std::mem::take(&mut names),
                }));
            }
        }
        if !names.is_empty() {
            self.queue.push(Work::Files(Files {
                dir,
                location: shared_location,
                prefix: shared_prefix,
                names,
            }));
        }
    }

    /// Searches a few files of one directory.
    fn files(&self, files: Files, scratch: &mut Scratch) {
        for (name, spelled) in &files.names {
            if self.found.truncated.load(Ordering::Relaxed) {
                return; // the search stopped
            }
            if self.stop.reached() {
                return self.quit();
            }
            let path = files.location.join(spelled);
            let Some(found) =
                self.search_file(&files.dir, name, &path, &files.prefix, spelled, scratch)
            else {
                self.found.skipped.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            self.found.searched.fetch_add(1, Ordering::Relaxed);
            if self.keep(found) {
                return self.quit();
            }
        }
    }

    /// The ignore files in force in the directory `dir` at `location`
    /// (whose entries are `entries`), below those of its parent, `above`.
    fn ignore_files(
        &self,
        dir: &Dir,
        location: &Path,
        above: &Arc<IgnoreFiles>,
        entries: &[Entry],
        text: &mut Vec<u8>,
    ) -> Arc<IgnoreFiles> {
        let mut read = |name: &str| -> Option<Vec<u8>> {
            let entry = entries
                .iter()
                .find(|e| e.name == OsStr::new(name) && e.kind == EntryKind::File)?;
            let path = location.join(name);
            (dirs::allowed(
                self.files,
                location,
                name,
                &path,
                EntryKind::File,
                Access::Read,
            ) && self.read_up_to(dir, &entry.name, &path, MAX_IGNORE_FILE_BYTES, text))
            .then(|| text.clone())
        };
        let dot_ignore = read(".ignore");
        let gitignore = read(".gitignore");
        let has_git = entries.iter().any(|e| e.name == OsStr::new(".git"));
        IgnoreFiles::child(
            above,
            location,
            dot_ignore.as_deref(),
            gitignore.as_deref(),
            has_git,
        )
    }

    /// Searches the file `name` of `dir` a chunk at a time (each chunk
    /// searched while it is in the cache): its matching lines, at most one
    /// more than `max`; `None` when it is not searched (it cannot be
    /// opened, it is larger than the read limit, or it holds a NUL byte).
    fn search_file(
        &self,
        dir: &Dir,
        name: &OsStr,
        path: &Path,
        prefix: &str,
        file_name: &str,
        scratch: &mut Scratch,
    ) -> Option<Vec<Match>> {
        let limit = self.files.max_read_bytes();
        let (mut file, size) = dirs::open_file(self.files, dir, name, path).ok()?;
        if size > limit {
            return None;
        }
        let buffer = &mut scratch.chunk;
        if buffer.len() < CHUNK {
            buffer.resize(CHUNK, 0);
        }
        let mut found = Vec::new();
        // `buffer[..filled]` holds what is read and not yet searched: the
        // start of a line whose end has not been read yet.
        let (mut filled, mut total, mut line_number) = (0, 0u64, 1u64);
        loop {
            if filled == buffer.len() {
                // One line longer than the buffer.
                buffer.resize(buffer.len().saturating_mul(2), 0);
            }
            let read = match file.read(&mut buffer[filled..]) {
                Ok(read) => read,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return None,
            };
            total = total.saturating_add(read as u64);
            if total > limit || memchr::memchr(0, &buffer[filled..filled + read]).is_some() {
                return None;
            }
            let end = if read == 0 {
                filled
            } else {
                match memchr::memrchr(b'\n', &buffer[filled..filled + read]) {
                    Some(at) => filled + at + 1,
                    None => {
                        filled += read;
                        continue;
                    }
                }
            };
            let lines = &buffer[..end];
            if found.len() <= self.max {
                self.matcher.each_match(lines, line_number, |number, line| {
                    found.push(Match {
                        path: format!("{prefix}{file_name}"),
                        line_number: number,
                        line: crate::error::clip(&String::from_utf8_lossy(line), MAX_LINE_CHARS),
                    });
                    found.len() <= self.max
                });
            }
            if read == 0 {
                return Some(found);
            }
            line_number += memchr::memchr_iter(b'\n', lines).count() as u64;
            buffer.copy_within(end..filled + read, 0);
            filled = filled + read - end;
        }
    }

    /// Adds one file's matches; `true` when the search must stop (more
    /// matches than `max`).
    fn keep(&self, mut found: Vec<Match>) -> bool {
        if found.is_empty() {
            return false;
        }
        let before = self.found.count.fetch_add(found.len(), Ordering::Relaxed);
        let room = self.max.saturating_sub(before);
        let over = found.len() > room;
        found.truncate(room);
        lock(&self.found.matches).extend(found);
        over
    }

    fn read_up_to(
        &self,
        dir: &Dir,
        name: &OsStr,
        path: &Path,
        limit: u64,
        text: &mut Vec<u8>,
    ) -> bool {
        text.clear();
        let Ok((file, size)) = dirs::open_file(self.files, dir, name, path) else {
            return false;
        };
        if size > limit {
            return false;
        }
        text.reserve(usize::try_from(size).unwrap_or(0).saturating_add(1));
        file.take(limit.saturating_add(1)).read_to_end(text).is_ok()
            && u64::try_from(text.len()).unwrap_or(u64::MAX) <= limit
    }
}

fn is_out_of_handles(error: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        error.raw_os_error() == Some(rustix::io::Errno::MFILE.raw_os_error())
    }
    #[cfg(not(unix))]
    {
        let _ = error;
        false
    }
}
