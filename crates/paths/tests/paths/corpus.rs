//! Table-driven attack corpora: each `tests/data/*.toml` holds a file-system
//! tree (simulated, or built for real in a temporary directory), named
//! policies, and cases (spelling, access, expected decision, what it
//! guards).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentcaps_paths::{
    Access, FileSystem, PathError, PathPolicy, PathPolicyConfig, RealFs, SimFs, SimMode,
};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Corpus {
    #[allow(dead_code)]
    pub(crate) guards: String,
    /// The base for cases that name none (default `/r`).
    pub(crate) base: Option<String>,
    pub(crate) fs: Tree,
    pub(crate) policies: BTreeMap<String, PathPolicyConfig>,
    #[serde(rename = "case")]
    pub(crate) cases: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Tree {
    /// `posix`, `case-insensitive`, `windows` (simulated) or `real`.
    pub(crate) mode: String,
    #[serde(default)]
    pub(crate) dirs: Vec<String>,
    #[serde(default)]
    pub(crate) files: Vec<String>,
    #[serde(default)]
    pub(crate) links: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Case {
    pub(crate) spelling: String,
    pub(crate) access: Access,
    /// `allow`, or the refusal's rule id.
    pub(crate) expect: String,
    /// For refusals: the reading that must be named.
    pub(crate) reading: Option<String>,
    /// For allowed cases: the POSIX real location.
    pub(crate) location: Option<String>,
    /// For allowed cases: the Windows-reading location.
    pub(crate) windows: Option<String>,
    pub(crate) base: Option<String>,
    #[serde(default = "default_policy")]
    pub(crate) policy: String,
    /// Only meaningful on the simulated tree (it spells `/proc`).
    #[serde(default)]
    pub(crate) sim_only: bool,
    pub(crate) guards: String,
}

impl Case {
    pub(crate) fn base<'c>(&'c self, corpus: &'c Corpus) -> &'c str {
        self.base
            .as_deref()
            .or(corpus.base.as_deref())
            .unwrap_or("/r")
    }
}

fn default_policy() -> String {
    "default".to_owned()
}

/// Load a corpus, replacing `{tmp}` with `tmp` (for real trees).
pub(crate) fn load(name: &str, tmp: Option<&Path>) -> Corpus {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    let mut text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    if let Some(tmp) = tmp {
        text = text.replace("{tmp}", &tmp.display().to_string());
    }
    toml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

pub(crate) fn sim_fs(tree: &Tree) -> SimFs {
    let mode = match tree.mode.as_str() {
        "posix" => SimMode::Posix,
        "case-insensitive" => SimMode::CaseInsensitive,
        "windows" => SimMode::Windows,
        other => panic!("unknown simulated mode {other}"),
    };
    let mut fs = SimFs::with_mode(mode);
    for dir in &tree.dirs {
        fs.add_dir(dir);
    }
    for file in &tree.files {
        fs.add_file(file);
    }
    for (link, target) in &tree.links {
        fs.add_symlink(link, target);
    }
    fs
}

pub(crate) fn real_tree(tree: &Tree) {
    for dir in &tree.dirs {
        std::fs::create_dir_all(dir).unwrap();
    }
    for file in &tree.files {
        if let Some(parent) = Path::new(file).parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(file, b"x").unwrap();
    }
    for (link, target) in &tree.links {
        if let Some(parent) = Path::new(link).parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::os::unix::fs::symlink(target, link).unwrap();
    }
}

pub(crate) fn policies(corpus: &Corpus) -> BTreeMap<String, PathPolicy> {
    corpus
        .policies
        .iter()
        .map(|(name, config)| {
            let policy = config
                .build()
                .unwrap_or_else(|e| panic!("policy {name}: {e}"));
            (name.clone(), policy)
        })
        .collect()
}

fn reading_name(error: &PathError) -> Option<String> {
    match error {
        PathError::OutsideRoots { reading, .. }
        | PathError::Blocked { reading, .. }
        | PathError::ReadOnly { reading, .. }
        | PathError::WriteProtected { reading, .. }
        | PathError::LinkLoop { reading, .. }
        | PathError::TooManyLinks { reading, .. } => Some(reading.to_string().to_lowercase()),
        _ => None,
    }
}

/// Run every case; return one line per failure.
pub(crate) fn run(corpus: &Corpus, fs: &dyn FileSystem, lookups: Option<&SimFs>) -> Vec<String> {
    let policies = policies(corpus);
    let mut failures = Vec::new();
    for case in &corpus.cases {
        let policy = &policies[&case.policy];
        if let Some(sim) = lookups {
            sim.reset_lookups();
        }
        let base = case.base(corpus);
        let result = policy.check_on(fs, Path::new(base), &case.spelling, case.access);
        let mut problem = None;
        match (&result, case.expect.as_str()) {
            (Ok(checked), "allow") => {
                if let Some(location) = &case.location
                    && checked.location() != Path::new(location)
                {
                    problem = Some(format!(
                        "location {:?}, expected {location}",
                        checked.location()
                    ));
                }
                if let Some(windows) = &case.windows
                    && checked.windows() != Path::new(windows)
                {
                    problem = Some(format!(
                        "windows {:?}, expected {windows}",
                        checked.windows()
                    ));
                }
            }
            (Ok(checked), expected) => {
                problem = Some(format!(
                    "allowed at {:?}, expected {expected}",
                    checked.location()
                ));
            }
            (Err(error), "allow") => problem = Some(format!("refused: {error}")),
            (Err(error), expected) => {
                if error.rule() != expected {
                    problem = Some(format!(
                        "rule {} ({error}), expected {expected}",
                        error.rule()
                    ));
                } else if let Some(reading) = &case.reading
                    && reading_name(error).as_deref() != Some(reading.as_str())
                {
                    problem = Some(format!(
                        "reading {:?} ({error}), expected {reading}",
                        reading_name(error)
                    ));
                }
                if !error.is_refusal() {
                    problem = Some(format!("not a refusal: {error}"));
                }
            }
        }
        if let Some(sim) = lookups {
            let bound = policy.cost_upper_bound(&case.spelling);
            if sim.lookups() > bound {
                problem = Some(format!("{} lookups > bound {bound}", sim.lookups()));
            }
            if let Ok(checked) = &result
                && checked.lookups() != sim.lookups()
            {
                problem = Some(format!(
                    "reported {} lookups, made {}",
                    checked.lookups(),
                    sim.lookups()
                ));
            }
        }
        if let Some(problem) = problem {
            failures.push(format!(
                "{:?} {:?} from {} [{}]: {problem}\n    guards: {}",
                case.spelling, case.access, base, case.policy, case.guards
            ));
        }
    }
    failures
}

/// Every data file in `tests/data`, each run by one test below.
const DATA_FILES: &[&str] = &[
    "case.toml",
    "posix.toml",
    "real.toml",
    "windows.toml",
    "windows_on_linux.toml",
    "write_names.toml",
];

fn assert_clean(name: &str, failures: &[String], cases: usize) {
    let file = name.split_whitespace().next().unwrap_or(name);
    assert!(
        DATA_FILES.contains(&file),
        "{file} is not listed in DATA_FILES"
    );
    assert!(cases > 0, "{name}: no cases ran");
    assert!(
        failures.is_empty(),
        "{name}: {} of {cases} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn sim_corpus(name: &str) {
    let corpus = load(name, None);
    let fs = sim_fs(&corpus.fs);
    let failures = run(&corpus, &fs, Some(&fs));
    assert_clean(name, &failures, corpus.cases.len());
}

#[test]
fn posix_attacks_on_simulated_tree() {
    sim_corpus("posix.toml");
}

#[test]
fn windows_spellings_on_simulated_ntfs() {
    sim_corpus("windows.toml");
}

#[test]
fn windows_spellings_through_always_on_linux_names() {
    sim_corpus("windows_on_linux.toml");
}

#[test]
fn case_folding_on_simulated_case_insensitive_tree() {
    sim_corpus("case.toml");
}

#[test]
fn writes_match_every_case_and_alias_on_a_case_sensitive_host() {
    sim_corpus("write_names.toml");
}

/// A data file nobody runs is a table of attacks that tests nothing.
#[test]
fn every_data_file_is_run() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    assert_eq!(found, DATA_FILES, "files in {}", dir.display());
}

#[test]
fn real_tree_attacks_including_proc_magic_links() {
    let tmp = tempfile::tempdir().unwrap();
    let tmp_path: PathBuf = tmp.path().canonicalize().unwrap();
    let corpus = load("real.toml", Some(&tmp_path));
    assert_eq!(corpus.fs.mode, "real");
    real_tree(&corpus.fs);
    let failures = run(&corpus, &RealFs, None);
    assert_clean("real.toml", &failures, corpus.cases.len());
}

/// Every corpus case, checked again on the real file system where the tree
/// is POSIX: the simulation and the kernel's view agree.
#[test]
fn posix_corpus_agrees_on_a_real_tree() {
    agrees_on_a_real_tree("posix.toml");
}

/// The write-name corpus on the host's (case-sensitive) file system.
#[test]
fn write_names_agree_on_a_real_tree() {
    agrees_on_a_real_tree("write_names.toml");
}

fn agrees_on_a_real_tree(name: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let tmp_path: PathBuf = tmp.path().canonicalize().unwrap();
    let corpus = load(name, None);
    assert_eq!(corpus.fs.mode, "posix", "{name}");
    let prefix = tmp_path.display().to_string();
    let moved = |p: &str| {
        if p.starts_with('/') {
            format!("{prefix}{p}")
        } else {
            p.to_owned()
        }
    };
    let tree = Tree {
        mode: "real".to_owned(),
        dirs: corpus.fs.dirs.iter().map(|d| moved(d)).collect(),
        files: corpus.fs.files.iter().map(|f| moved(f)).collect(),
        links: corpus
            .fs
            .links
            .iter()
            .map(|(l, t)| (moved(l), moved(t)))
            .collect(),
    };
    real_tree(&tree);
    let mut failures = Vec::new();
    let policies: BTreeMap<String, PathPolicy> = corpus
        .policies
        .iter()
        .map(|(name, config)| {
            let mut config = config.clone();
            for root in config.allowed.iter_mut().chain(config.read_only.iter_mut()) {
                *root = PathBuf::from(moved(&root.display().to_string()));
            }
            for entry in &mut config.blocked {
                if entry.starts_with('/') {
                    *entry = moved(entry);
                }
            }
            (name.clone(), config.build().unwrap())
        })
        .collect();
    for case in &corpus.cases {
        // Absolute spellings name places in the simulated tree; those that
        // only make sense there (a spelled `/proc`) are skipped by design.
        if case.sim_only || case.spelling.starts_with("/proc") {
            continue;
        }
        let spelling = if case.spelling.starts_with('/') {
            moved(&case.spelling)
        } else {
            case.spelling.clone()
        };
        let result = policies[&case.policy].check(
            Path::new(&moved(case.base(&corpus))),
            &spelling,
            case.access,
        );
        let outcome = match &result {
            Ok(_) => "allow",
            Err(e) => e.rule(),
        };
        if outcome != case.expect {
            failures.push(format!(
                "{spelling:?} {:?}: {outcome} ({result:?}), expected {} — {}",
                case.access, case.expect, case.guards
            ));
        }
        if let (Ok(checked), Some(location)) = (&result, &case.location)
            && checked.location() != Path::new(&moved(location))
        {
            failures.push(format!(
                "{spelling:?}: location {:?}, expected {}",
                checked.location(),
                moved(location)
            ));
        }
    }
    assert_clean(
        &format!("{name} on a real tree"),
        &failures,
        corpus.cases.len(),
    );
}
