//! The three readings of a spelling: lexical, POSIX (links as met, `..` physical)
//! and Windows (`..` lexical first, then links), each paying its lookups
//! from a [`Budget`].

use std::borrow::Cow;

use crate::location::Location;
use crate::rules::Rules;
use crate::spelling::{Part, Spelled, split_posix, split_windows};
use crate::{Budget, EntryKind, FileSystem, PathError, PathPolicy, Probe, Reading};

/// Whether a link in the last component is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Follow {
    /// Follow it, as `open` does (the default for checks).
    Last,
    /// Stop at it, as `lstat`, `unlink` and `rename` do.
    NotLast,
}

/// Where a reading ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub(crate) location: Location,
    /// What is there (links followed), `None` when it does not exist.
    pub(crate) kind: Option<EntryKind>,
    /// Depth of the first component that does not exist yet (the first
    /// name a write would create), if any.
    pub(crate) missing_from: Option<usize>,
    /// Links followed on the way.
    pub(crate) links: usize,
}

/// The lexical reading: `base` joined with the spelling, `..` popped.
pub(crate) fn lexical(base: &Location, spelled: &Spelled<'_>) -> Location {
    let mut location = if spelled.absolute {
        Location::root()
    } else {
        base.clone()
    };
    for part in &spelled.parts {
        match part {
            Part::Up => location.pop(),
            Part::Name(name) => location.push(name),
        }
    }
    location
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Step<'a> {
    Up,
    Name(Cow<'a, [u8]>),
}

fn steps<'a>(parts: &[Part<'a>]) -> impl DoubleEndedIterator<Item = Step<'a>> {
    parts.iter().map(|part| match part {
        Part::Up => Step::Up,
        Part::Name(name) => Step::Name(Cow::Borrowed(*name)),
    })
}

fn owned_steps(parts: &[Part<'_>]) -> Vec<Step<'static>> {
    parts
        .iter()
        .map(|part| match part {
            Part::Up => Step::Up,
            Part::Name(name) => Step::Name(Cow::Owned(name.to_vec())),
        })
        .collect()
}

/// Answers already looked up within one check (the Windows reading walks
/// many of the POSIX reading's places). A small list: a check looks at few
/// places, and past the cap nothing more is remembered.
#[derive(Debug)]
struct Memo<T> {
    entries: Vec<(Vec<u8>, T)>,
}

impl<T> Default for Memo<T> {
    fn default() -> Self {
        Memo {
            entries: Vec::new(),
        }
    }
}

impl<T> Memo<T> {
    const CAP: usize = 256;

    fn get(&self, key: &[u8]) -> Option<&T> {
        self.entries
            .iter()
            .find(|(k, _)| k.as_slice() == key)
            .map(|(_, v)| v)
    }

    fn insert(&mut self, key: Vec<u8>, value: T) {
        if let Some(slot) = self.entries.iter_mut().find(|(k, _)| *k == key) {
            slot.1 = value;
        } else if self.entries.len() < Self::CAP {
            self.entries.push((key, value));
        }
    }
}

/// What an earlier lookup found at a place.
#[derive(Debug, Clone, Copy)]
enum Seen {
    /// An `lstat` answer.
    Known(Option<EntryKind>),
    /// A probe's "present, not a link" (the kind is not known).
    Present,
}

/// Walks readings for one check, counting and memoizing lookups.
pub(crate) struct Resolver<'a> {
    rules: &'a Rules,
    fs: &'a dyn FileSystem,
    budget: &'a mut Budget,
    spelling: &'a str,
    windows_rules: bool,
    memo: Option<Memo<Seen>>,
    links_memo: Option<Memo<Vec<u8>>>,
    /// A link's target that came with a probe, for the read that follows.
    probed_link: Option<(Vec<u8>, Vec<u8>)>,
    lookups: u64,
}

impl<'a> Resolver<'a> {
    pub(crate) fn new(
        rules: &'a Rules,
        fs: &'a dyn FileSystem,
        budget: &'a mut Budget,
        spelling: &'a str,
        windows_rules: bool,
        memoize: bool,
    ) -> Self {
        Resolver {
            rules,
            fs,
            budget,
            spelling,
            windows_rules,
            memo: memoize.then(Memo::default),
            links_memo: memoize.then(Memo::default),
            probed_link: None,
            lookups: 0,
        }
    }

    pub(crate) fn lookups(&self) -> u64 {
        self.lookups
    }

    /// Record a lookup made (and paid) before this resolver existed.
    pub(crate) fn already_seen(&mut self, location: Location, kind: EntryKind) {
        self.lookups += 1;
        if let Some(memo) = self.memo.as_mut() {
            memo.insert(location.as_bytes().to_vec(), Seen::Known(Some(kind)));
        }
    }

    fn pay(&mut self) -> Result<(), PathError> {
        if !self.budget.take() {
            return Err(PathError::TooCostly {
                spelling: self.spelling.to_owned(),
                budget: self.budget.limit(),
            });
        }
        self.lookups += 1;
        Ok(())
    }

    fn entry(&mut self, location: &Location) -> Result<Option<EntryKind>, PathError> {
        if let Some(Seen::Known(kind)) = self.memo.as_ref().and_then(|m| m.get(location.as_bytes()))
        {
            return Ok(*kind);
        }
        self.pay()?;
        let kind = self
            .fs
            .entry(location.as_path())
            .map_err(|e| PathError::io("lstat", location.as_path(), e))?;
        if let Some(memo) = self.memo.as_mut() {
            memo.insert(location.as_bytes().to_vec(), Seen::Known(kind));
        }
        Ok(kind)
    }

    /// What is at a name with more to resolve after it: one probe where the
    /// view answers in one lookup (a link's target comes with it), else an
    /// `lstat`. A present name is taken for a directory; if it is not one,
    /// the next lookup finds nothing beneath it.
    fn look(&mut self, location: &Location) -> Result<Option<EntryKind>, PathError> {
        if !self.fs.probes_in_one_lookup() {
            return self.entry(location);
        }
        match self.memo.as_ref().and_then(|m| m.get(location.as_bytes())) {
            Some(Seen::Known(kind)) => return Ok(*kind),
            Some(Seen::Present) => return Ok(Some(EntryKind::Dir)),
            None => {}
        }
        self.pay()?;
        let probe = self
            .fs
            .probe(location.as_path())
            .map_err(|e| PathError::io("readlink", location.as_path(), e))?;
        let (seen, kind) = match probe {
            Probe::Missing => (Seen::Known(None), None),
            Probe::Present => (Seen::Present, Some(EntryKind::Dir)),
            Probe::Link(target) => {
                self.probed_link = Some((
                    location.as_bytes().to_vec(),
                    crate::location::os_bytes(target.as_os_str()).to_vec(),
                ));
                (
                    Seen::Known(Some(EntryKind::Symlink)),
                    Some(EntryKind::Symlink),
                )
            }
        };
        if let Some(memo) = self.memo.as_mut() {
            memo.insert(location.as_bytes().to_vec(), seen);
        }
        Ok(kind)
    }

    fn read_link(&mut self, location: &Location) -> Result<Vec<u8>, PathError> {
        if let Some((link, target)) = self.probed_link.take()
            && link == location.as_bytes()
        {
            if let Some(memo) = self.links_memo.as_mut() {
                memo.insert(link, target.clone());
            }
            return Ok(target);
        }
        if let Some(target) = self
            .links_memo
            .as_ref()
            .and_then(|m| m.get(location.as_bytes()))
        {
            return Ok(target.clone());
        }
        self.pay()?;
        let target = self
            .fs
            .read_link(location.as_path())
            .map_err(|e| PathError::io("readlink", location.as_path(), e))?;
        let target = crate::location::os_bytes(target.as_os_str()).to_vec();
        if let Some(memo) = self.links_memo.as_mut() {
            memo.insert(location.as_bytes().to_vec(), target.clone());
        }
        Ok(target)
    }

    fn too_many(&self, reading: Reading, looped: Option<&Location>) -> PathError {
        match looped {
            Some(link) => PathError::LinkLoop {
                spelling: self.spelling.to_owned(),
                reading,
                link: link.as_path().to_path_buf(),
            },
            None => PathError::TooManyLinks {
                spelling: self.spelling.to_owned(),
                reading,
                limit: PathPolicy::MAX_LINKS,
            },
        }
    }

    /// The POSIX reading: follow each link as it is met (relative targets
    /// from the link's directory); `..` goes to the physical parent of
    /// where resolution stands. Beneath a missing name (or a file) the rest
    /// is applied lexically, until a `..` climbs back out of it.
    pub(crate) fn posix(
        &mut self,
        base: &Location,
        spelled: &Spelled<'_>,
        follow: Follow,
    ) -> Result<Outcome, PathError> {
        let mut current = if spelled.absolute {
            Location::root()
        } else {
            base.clone()
        };
        let mut stack: Vec<Step<'_>> = steps(&spelled.parts).rev().collect();
        let mut kind = Some(EntryKind::Dir);
        let mut missing_from: Option<usize> = None;
        let mut followed: Vec<(Location, Vec<Step<'_>>)> = Vec::new();
        while let Some(step) = stack.pop() {
            let name = match step {
                Step::Up => {
                    current.pop();
                    if missing_from.is_some_and(|depth| current.depth() < depth) {
                        missing_from = None;
                        kind = Some(EntryKind::Dir);
                    }
                    continue;
                }
                Step::Name(name) => name,
            };
            current.push(&name);
            if missing_from.is_some() {
                continue;
            }
            if kind != Some(EntryKind::Dir) {
                missing_from = Some(current.depth());
                kind = None;
                continue;
            }
            kind = if stack.is_empty() {
                self.entry(&current)?
            } else {
                self.look(&current)?
            };
            match kind {
                None => missing_from = Some(current.depth()),
                Some(EntryKind::Symlink) if follow == Follow::NotLast && stack.is_empty() => {}
                Some(EntryKind::Symlink) => {
                    self.rules
                        .judge_link(self.spelling, Reading::Posix, &current)?;
                    // A loop is the same link met with the same rest to
                    // resolve: refused before reading it again.
                    let looped = followed
                        .iter()
                        .any(|(link, rest)| *link == current && *rest == stack);
                    if looped || followed.len() >= PathPolicy::MAX_LINKS as usize {
                        return Err(self.too_many(Reading::Posix, looped.then_some(&current)));
                    }
                    followed.push((current.clone(), stack.clone()));
                    let target = self.read_link(&current)?;
                    if target.is_empty() {
                        missing_from = Some(current.depth());
                        kind = None;
                        continue;
                    }
                    let target = split_posix(&target);
                    current.pop();
                    if target.absolute {
                        current = Location::root();
                    }
                    stack.extend(owned_steps(&target.parts).into_iter().rev());
                    kind = Some(EntryKind::Dir);
                }
                Some(_) => {}
            }
        }
        Ok(Outcome {
            location: current,
            kind: if missing_from.is_some() { None } else { kind },
            missing_from,
            links: followed.len(),
        })
    }

    /// The Windows reading: apply `..` lexically first, then resolve the
    /// remaining links (each link's target joined to its directory and
    /// normalized lexically the same way).
    pub(crate) fn windows(
        &mut self,
        base: &Location,
        spelled: &Spelled<'_>,
        follow: Follow,
    ) -> Result<Outcome, PathError> {
        let mut names: Vec<Cow<'_, [u8]>> = if spelled.absolute {
            Vec::new()
        } else {
            base.names().map(Cow::Borrowed).collect()
        };
        // The base is a real location: its prefixes hold no links.
        let mut real = names.len();
        for part in &spelled.parts {
            match part {
                Part::Up => {
                    names.pop();
                    real = real.min(names.len());
                }
                Part::Name(name) => names.push(Cow::Borrowed(*name)),
            }
        }
        let mut kind = Some(EntryKind::Dir);
        let mut missing_from = None;
        let mut followed: Vec<(Vec<Cow<'_, [u8]>>, usize)> = Vec::new();
        let mut index = real;
        // `current` holds names[..index] (plus the name being looked at).
        let mut current = Location::root();
        for name in names.iter().take(index) {
            current.push(name);
        }
        while let Some(name) = names.get(index) {
            current.push(name);
            kind = if index + 1 < names.len() {
                self.look(&current)?
            } else {
                self.entry(&current)?
            };
            match kind {
                None => {
                    missing_from = Some(index + 1);
                    break;
                }
                Some(EntryKind::Symlink)
                    if follow == Follow::NotLast && index + 1 == names.len() =>
                {
                    index += 1;
                }
                Some(EntryKind::Symlink) => {
                    self.rules
                        .judge_link(self.spelling, Reading::Windows, &current)?;
                    let looped = followed
                        .iter()
                        .any(|(seen, at)| *at == index && *seen == names);
                    if looped || followed.len() >= PathPolicy::MAX_LINKS as usize {
                        return Err(self.too_many(Reading::Windows, looped.then_some(&current)));
                    }
                    followed.push((names.clone(), index));
                    let target = self.read_link(&current)?;
                    if target.is_empty() {
                        missing_from = Some(index + 1);
                        kind = None;
                        break;
                    }
                    let target = self.split_target(&target)?;
                    let mut joined: Vec<Cow<'_, [u8]>> = if target.absolute {
                        Vec::new()
                    } else {
                        names.iter().take(index).cloned().collect()
                    };
                    for part in &target.parts {
                        match part {
                            Part::Up => {
                                joined.pop();
                            }
                            Part::Name(name) => joined.push(Cow::Owned(name.to_vec())),
                        }
                    }
                    let still_real = joined
                        .iter()
                        .zip(names.iter().take(index))
                        .take_while(|(a, b)| a == b)
                        .count();
                    joined.extend(names.iter().skip(index + 1).cloned());
                    names = joined;
                    index = still_real;
                    current = Location::root();
                    for name in names.iter().take(index) {
                        current.push(name);
                    }
                    kind = Some(EntryKind::Dir);
                }
                Some(EntryKind::Dir) => index += 1,
                Some(_) => {
                    index += 1;
                    if index < names.len() {
                        missing_from = Some(index + 1);
                        kind = None;
                        break;
                    }
                }
            }
        }
        let mut location = Location::root();
        for name in &names {
            location.push(name);
        }
        Ok(Outcome {
            location,
            kind: if missing_from.is_some() { None } else { kind },
            missing_from,
            links: followed.len(),
        })
    }

    fn split_target<'t>(&self, target: &'t [u8]) -> Result<Spelled<'t>, PathError> {
        if self.windows_rules
            && let Ok(text) = std::str::from_utf8(target)
        {
            return split_windows(text).map_err(|why| PathError::Unjudgeable {
                spelling: format!(
                    "{} (through a link to {})",
                    self.spelling,
                    String::from_utf8_lossy(target)
                ),
                why,
            });
        }
        Ok(split_posix(target))
    }
}
