//! A link the tree holds at a guarded name (`.cargo -> cfg`) makes an
//! ordinary name a protected one: every write through `Beneath` — write,
//! directory creation, rename into, removal — is judged at that other name
//! too, and a rename never puts a link at such a name.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use agentcaps_paths::{Beneath, GuardedLinks, LinkJudging, PathError, PathPolicy, WriteMode};

struct Tree {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Tree {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap().join("r");
        std::fs::create_dir_all(root.join("cfg")).unwrap();
        Tree { _tmp: tmp, root }
    }

    fn at(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn link(&self, target: &str, rel: &str) -> &Self {
        if let Some(parent) = self.at(rel).parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        symlink(target, self.at(rel)).unwrap();
        self
    }

    fn file(&self, rel: &str, text: &str) -> &Self {
        if let Some(parent) = self.at(rel).parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(self.at(rel), text).unwrap();
        self
    }

    fn policy(&self) -> PathPolicy {
        PathPolicy::builder().allow(&self.root).build().unwrap()
    }

    fn beneath(&self) -> Beneath {
        self.policy().open_beneath().unwrap()
    }

    /// The error's text with this tree's root spelled `/r`.
    fn shown(&self, error: &PathError) -> String {
        error
            .to_string()
            .replace(&self.root.display().to_string(), "/r")
    }
}

fn write(files: &Beneath, tree: &Tree, rel: &str) -> Result<(), PathError> {
    files.write(
        &tree.root,
        rel,
        b"[build]\nrustc-wrapper = \"/tmp/x\"\n",
        WriteMode::Overwrite,
    )
}

#[test]
fn a_write_that_a_link_makes_cargos_config_is_refused_and_nothing_lands() {
    let tree = Tree::new();
    tree.link("cfg", ".cargo");
    let files = tree.beneath();
    let error = write(&files, &tree, "cfg/config.toml").unwrap_err();
    assert_eq!(error.rule(), "write-protected", "{error}");
    assert!(
        matches!(error, PathError::ThroughLink { blocked: false, .. }),
        "{error:?}"
    );
    assert!(!tree.at("cfg/config.toml").exists());
    // Through the link's own name it was refused already.
    assert_eq!(
        write(&files, &tree, ".cargo/config.toml")
            .unwrap_err()
            .rule(),
        "write-protected"
    );
    // Other files in the directory are ordinary.
    files
        .write(&tree.root, "cfg/notes.txt", b"ok", WriteMode::CreateNew)
        .unwrap();
    insta::assert_snapshot!("through_link_write_protected", tree.shown(&error));
}

#[test]
fn every_kind_of_link_way_to_a_protected_entry_is_followed() {
    // (links to make, the ordinary name written, what it really is)
    let cases: &[(&[(&str, &str)], &str)] = &[
        (&[("gh", ".github")], "gh/workflows/ci.yml"),
        (&[("../cfg", "sub/.cargo")], "cfg/config.toml"),
        // A chain of links, and `..` after a link.
        (
            &[("b", "a"), ("cfg", "b"), ("a", ".cargo")],
            "cfg/config.toml",
        ),
        (&[("sub/../cfg", ".cargo")], "cfg/config.toml"),
        (&[("cfg", "plain")], "cfg/x"), // not guarded: no refusal
        // An absolute target.
        (&[("@/cfg", ".cargo")], "cfg/config.toml"),
        // A dangling link: the directory does not exist yet.
        (&[("later", ".cargo")], "later/config.toml"),
        // The link is the protected file itself.
        (&[("../cargo.toml", ".cargo/config.toml")], "cargo.toml"),
        // A hook directory.
        (&[("../scripts", ".git/hooks")], "scripts/pre-commit"),
    ];
    for (links, written) in cases {
        let tree = Tree::new();
        std::fs::create_dir_all(tree.at("sub")).unwrap();
        for (target, at) in *links {
            let target = target.replace('@', &tree.root.display().to_string());
            tree.link(&target, at);
        }
        if let Some(parent) = Path::new(written).parent() {
            std::fs::create_dir_all(tree.at(&parent.display().to_string())).unwrap();
        }
        let files = tree.beneath();
        let result = write(&files, &tree, written);
        if *written == "cfg/x" {
            result.unwrap_or_else(|e| panic!("{written} was refused: {e}"));
        } else {
            let error = result.expect_err(written);
            assert!(
                matches!(error, PathError::ThroughLink { .. }),
                "{written} with {links:?}: {error}"
            );
            assert!(!tree.at(written).exists(), "{written} landed");
        }
    }
}

#[test]
fn a_link_that_makes_a_name_blocked_refuses_it_as_blocked() {
    let tree = Tree::new();
    tree.file("notes.txt", "x").link("notes.txt", ".env");
    let files = tree.beneath();
    let error = write(&files, &tree, "notes.txt").unwrap_err();
    assert_eq!(error.rule(), "blocked", "{error}");
    insta::assert_snapshot!("through_link_blocked", tree.shown(&error));
}

#[test]
fn removing_or_renaming_into_a_name_a_link_guards_is_refused() {
    let tree = Tree::new();
    tree.link("cfg", ".cargo")
        .file("cfg/config.toml", "host's own")
        .file("x.toml", "[build]")
        .file("pkg/config.toml", "[build]");
    let files = tree.beneath();
    let removed = files
        .remove_file(&tree.root, "cfg/config.toml")
        .unwrap_err();
    assert_eq!(removed.rule(), "write-protected", "{removed}");
    assert_eq!(
        std::fs::read_to_string(tree.at("cfg/config.toml")).unwrap(),
        "host's own"
    );

    std::fs::remove_file(tree.at("cfg/config.toml")).unwrap();
    let renamed = files
        .rename(&tree.root, "x.toml", "cfg/config.toml")
        .unwrap_err();
    assert_eq!(renamed.rule(), "write-protected", "{renamed}");
    assert!(tree.at("x.toml").exists() && !tree.at("cfg/config.toml").exists());

    // A directory whose entries would land at the guarded names.
    std::fs::remove_dir(tree.at("cfg")).unwrap();
    let moved = files.rename(&tree.root, "pkg", "cfg").unwrap_err();
    assert!(matches!(moved, PathError::ThroughLink { .. }), "{moved}");
    assert!(tree.at("pkg/config.toml").exists() && !tree.at("cfg").exists());
}

#[test]
fn a_rename_never_puts_a_link_at_a_guarded_name() {
    let tree = Tree::new();
    tree.link("cfg", "cfglink").link("../cfg", "pkg/.cargo");
    let files = tree.beneath();
    let error = files.rename(&tree.root, "cfglink", ".cargo").unwrap_err();
    assert!(
        matches!(error, PathError::LinkAtGuardedName { .. }),
        "{error}"
    );
    assert_eq!(error.rule(), "write-protected");
    assert!(tree.at("cfglink").is_symlink() && !tree.at(".cargo").is_symlink());
    insta::assert_snapshot!("link_at_guarded_name", tree.shown(&error));
    // Also when the link moves inside a directory, and below any name.
    let error = files.rename(&tree.root, "pkg", "other").unwrap_err();
    assert!(
        matches!(error, PathError::LinkAtGuardedName { .. }),
        "{error}"
    );
    assert!(tree.at("pkg/.cargo").is_symlink() && !tree.at("other").exists());
    std::fs::create_dir_all(tree.at("x")).unwrap();
    let error = files
        .rename(&tree.root, "cfglink", "x/.github")
        .unwrap_err();
    assert!(
        matches!(error, PathError::LinkAtGuardedName { .. }),
        "{error}"
    );
    // In every letter case.
    let error = files.rename(&tree.root, "cfglink", ".CARGO").unwrap_err();
    assert_eq!(error.rule(), "write-protected", "{error}");
    // Any other name is fine.
    files.rename(&tree.root, "cfglink", "cfg2").unwrap();
    assert!(tree.at("cfg2").is_symlink());
}

#[test]
fn a_link_made_after_the_handles_opened_is_seen_by_the_next_write() {
    let tree = Tree::new();
    let files = tree.beneath();
    write(&files, &tree, "cfg/a.toml").unwrap();
    tree.link("cfg", ".cargo");
    assert_eq!(
        write(&files, &tree, "cfg/config.toml").unwrap_err().rule(),
        "write-protected"
    );
    // And one removed no longer refuses.
    std::fs::remove_file(tree.at(".cargo")).unwrap();
    write(&files, &tree, "cfg/config.toml").unwrap();
}

#[test]
fn kept_links_are_looked_for_again_when_refreshed_and_after_a_rename() {
    let tree = Tree::new();
    tree.file("y.txt", "y");
    let mut files = tree.beneath();
    files.set_link_judging(LinkJudging::UntilRefreshed);
    write(&files, &tree, "cfg/a.toml").unwrap();
    tree.link("cfg", ".cargo");
    // Kept from before the link was made, as documented...
    write(&files, &tree, "cfg/config.toml").unwrap();
    std::fs::remove_file(tree.at("cfg/config.toml")).unwrap();
    // ...until refreshed.
    files.refresh_guarded_links();
    assert!(matches!(
        write(&files, &tree, "cfg/config.toml"),
        Err(PathError::ThroughLink { .. })
    ));
    // A rename these handles make refreshes them too.
    std::fs::remove_file(tree.at(".cargo")).unwrap();
    files.rename(&tree.root, "y.txt", "z.txt").unwrap();
    write(&files, &tree, "cfg/config.toml").unwrap();
}

#[test]
fn a_caller_that_judges_links_itself_can_turn_the_walk_off() {
    let tree = Tree::new();
    tree.link("cfg", ".cargo");
    let mut files = tree.beneath();
    files.set_link_judging(LinkJudging::ByCaller);
    write(&files, &tree, "cfg/config.toml").unwrap();
    assert!(
        files
            .judge_guarded_links("cfg/config.toml", &tree.at("cfg/config.toml"))
            .is_ok()
    );
}

#[test]
fn the_map_names_every_other_name_and_drops_links_that_go() {
    let tree = Tree::new();
    tree.link("cfg", ".cargo")
        .link("../cfg", "sub/.cargo")
        .link("cfg", "plain");
    let policy = tree.policy();
    let links = GuardedLinks::of_roots(&policy, &[&tree.root]);
    let mut aliases: Vec<PathBuf> = links
        .aliases_of(&tree.at("cfg/config.toml"))
        .into_iter()
        .map(|(alias, _)| alias)
        .collect();
    aliases.sort();
    // `plain` is no guarded name, so not kept.
    assert_eq!(
        aliases,
        vec![
            tree.at(".cargo/config.toml"),
            tree.at("sub/.cargo/config.toml")
        ]
    );
    assert!(links.has_link_at_or_beneath(&tree.at("sub")));
    let fewer = links.without(&[tree.at("sub")]).expect("one goes");
    assert_eq!(fewer.aliases_of(&tree.at("cfg/config.toml")).len(), 1);
    assert!(links.without(&[tree.at("cfg")]).is_none());
    assert_eq!(policy.guarded_links(), links);
}

#[test]
fn a_link_loop_or_a_deep_tree_neither_hangs_nor_misses() {
    let tree = Tree::new();
    tree.link("loop2", "loop1")
        .link("loop1", "loop2")
        .link("loop1", ".cargo");
    // A tree deeper than one path could spell: the walk goes by handle.
    let mut deep = tree.root.clone();
    let name = "d".repeat(200);
    for _ in 0..25 {
        deep.push(&name);
    }
    // Made relative to each directory, as one path would be too long.
    let at = crate::mkdir_chain(&tree.root, &name, 25);
    rustix::fs::symlinkat(tree.root.join("cfg").as_path(), &at, ".cargo").unwrap();
    let links = tree.policy().guarded_links();
    let found = links.aliases_of(&tree.at("cfg/config.toml"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].1.ends_with(".cargo") && found[0].1.starts_with(&deep));
}
