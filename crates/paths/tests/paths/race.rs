//! A directory swapped for a link to outside, and back, while reads and
//! writes go through `Beneath`: nothing outside the root is ever read or
//! written.

use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use std::path::{Path, PathBuf};

use agentcaps_paths::{EntryKind, FileSystem, PathPolicy, RealFs, WriteMode};

/// Reads every round, every other operation every 8th round.
const ROUNDS: u64 = 20_000;
const TIME_LIMIT: Duration = Duration::from_secs(20);

#[test]
fn swapping_a_directory_for_a_link_out_never_leaks_or_writes_outside() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("d/f"), b"inside").unwrap();
    std::fs::write(outside.join("f"), b"SECRET").unwrap();
    std::fs::write(outside.join("secret_marker"), b"").unwrap();
    let files = PathPolicy::builder()
        .allow(&root)
        .build()
        .unwrap()
        .open_beneath()
        .map(mechanism)
        .unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (stop, swaps, root, outside) =
            (stop.clone(), swaps.clone(), root.clone(), outside.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = std::fs::rename(root.join("d"), root.join("d.saved"));
                let _ = symlink(&outside, root.join("d"));
                std::thread::yield_now();
                let _ = std::fs::remove_file(root.join("d"));
                let _ = std::fs::rename(root.join("d.saved"), root.join("d"));
                swaps.fetch_add(1, Ordering::Relaxed);
                // Leave each state in place about as long as the other.
                std::thread::yield_now();
            }
        })
    };

    let started = Instant::now();
    let (mut succeeded, mut refused) = (0u64, 0u64);
    let mut tally = |ok: bool| if ok { succeeded += 1 } else { refused += 1 };
    let mut rounds = 0;
    while rounds < ROUNDS && started.elapsed() < TIME_LIMIT {
        rounds += 1;
        match files.read(&root, "d/f", 100) {
            Ok(bytes) => {
                assert_eq!(bytes, b"inside", "read outside the root in round {rounds}");
                tally(true);
            }
            Err(_) => tally(false),
        }
        if rounds % 8 != 0 {
            continue;
        }
        tally(
            files
                .write(&root, "d/w", b"w", WriteMode::Overwrite)
                .is_ok(),
        );
        match files.list(&root, "d") {
            Ok(entries) => {
                assert!(
                    !entries.iter().any(|e| e.name == "secret_marker"),
                    "listed outside the root in round {rounds}"
                );
                tally(true);
            }
            Err(_) => tally(false),
        }
        tally(files.create_dir_all(&root, "d/newdir").is_ok());
        match files.stage(&root, "d/s", b"s") {
            Ok(staged) => tally(files.commit(staged).is_ok()),
            Err(_) => tally(false),
        }
        tally(files.metadata(&root, "d/f").is_ok());
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();

    let mut names: Vec<String> = std::fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["f", "secret_marker"],
        "something was created outside the root"
    );
    assert_eq!(std::fs::read(outside.join("f")).unwrap(), b"SECRET");
    assert!(swaps.load(Ordering::Relaxed) > 0, "the swapper never ran");
    assert!(
        succeeded > 0,
        "no operation ever succeeded ({refused} refused)"
    );
    eprintln!(
        "race: {rounds} rounds, {} swaps, {succeeded} operations succeeded, {refused} refused or failed",
        swaps.load(Ordering::Relaxed)
    );
}

/// A view of the real file system that swaps `d` for a link out right after
/// the check looked at `d/f`: the gap between check and use, made certain.
struct SwapAfterCheck {
    root: PathBuf,
    outside: PathBuf,
    swapped: AtomicBool,
}

impl FileSystem for SwapAfterCheck {
    fn entry(&self, path: &Path) -> std::io::Result<Option<EntryKind>> {
        let answer = RealFs.entry(path);
        if path.parent() == Some(self.root.join("d").as_path())
            && !self.swapped.swap(true, Ordering::SeqCst)
        {
            std::fs::rename(self.root.join("d"), self.root.join("d.saved"))?;
            symlink(&self.outside, self.root.join("d"))?;
        }
        answer
    }

    fn read_link(&self, path: &Path) -> std::io::Result<PathBuf> {
        RealFs.read_link(path)
    }
}

#[test]
fn a_link_swapped_in_between_check_and_use_makes_the_operation_fail() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    let policy = PathPolicy::builder().allow(&root).build().unwrap();
    type Op = fn(&agentcaps_paths::Beneath, &Path) -> Result<(), agentcaps_paths::PathError>;
    let ops: [(&str, Op); 6] = [
        ("read", |b, r| {
            b.read(r, "d/f", 100)
                .map(|bytes| assert_eq!(bytes, b"inside"))
        }),
        ("write", |b, r| {
            b.write(r, "d/f", b"w", WriteMode::Overwrite)
        }),
        ("create", |b, r| {
            b.write(r, "d/new", b"w", WriteMode::CreateNew)
        }),
        ("list", |b, r| b.list(r, "d/f").map(|_| ())),
        ("mkdir", |b, r| b.create_dir_all(r, "d/newdir")),
        ("remove", |b, r| b.remove_file(r, "d/f")),
    ];
    for (name, op) in ops {
        let _ = std::fs::remove_dir_all(&root);
        let _ = std::fs::remove_dir_all(&outside);
        std::fs::create_dir_all(root.join("d")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("d/f"), b"inside").unwrap();
        std::fs::write(outside.join("f"), b"SECRET").unwrap();
        let view = SwapAfterCheck {
            root: root.clone(),
            outside: outside.clone(),
            swapped: AtomicBool::new(false),
        };
        let files = mechanism(policy.open_beneath_judging_on(Arc::new(view)).unwrap());
        let err = op(&files, &root).expect_err(name);
        assert_eq!(err.rule(), "changed", "{name}: {err}");
        assert!(
            root.join("d")
                .symlink_metadata()
                .unwrap()
                .file_type()
                .is_symlink(),
            "{name}: no swap"
        );
        let mut names: Vec<String> = std::fs::read_dir(&outside)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["f"], "{name}: something was created outside");
        assert_eq!(
            std::fs::read(outside.join("f")).unwrap(),
            b"SECRET",
            "{name}"
        );
    }
}

/// `files` opening paths by the mechanism this copy of the suite tests
/// (`openat2`, or the component walk).
fn mechanism(mut files: agentcaps_paths::Beneath) -> agentcaps_paths::Beneath {
    files.simulate_missing_openat2(super::COMPONENT_WALK);
    files
}
