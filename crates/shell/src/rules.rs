//! Option rules as data: one table per program.
//!
//! The default tables live in `default_rules.toml` and `git_rules.toml`
//! beside this file (read them: every rule carries the reason shown to the
//! model); each is parsed when a command first names its program. A host adds tables, or rules to an existing program's table, with
//! [`ProgramRules`] values.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::error::ShellError;
use crate::identity::identity;

mod shipped;

/// The default tables, as shipped: most programs, then git's (its grammar
/// has a table per subcommand, so it has a file of its own).
const DEFAULT_RULES: [&str; 2] = [
    include_str!("default_rules.toml"),
    include_str!("git_rules.toml"),
];

/// The option rules of one program.
///
/// `option` spellings: `"-C"` (a short option, refused anywhere in a
/// cluster), `"--compile"` (a long option, refused on any prefix of at least
/// one letter, with or without `=value`), `"--dereference*"` (a long option
/// and everything that starts with it), `"-exec"` (a single-dash word, refused
/// when the argument is exactly it), `"/O*"` (a Windows switch prefix, any
/// case).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProgramRules {
    /// The program's name; matched by file name, ignoring case and a Windows
    /// executable suffix.
    pub name: String,
    /// Other names the same program ships under (`gawk`, `mawk`, `nawk`
    /// for `awk`): the same table applies to each.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Refused options.
    #[serde(default)]
    pub refuse: Vec<OptionRule>,
    /// Whether the arguments are paths (the default) or text.
    #[serde(default)]
    pub arguments: Arguments,
    /// The access its path arguments are judged for.
    #[serde(default)]
    pub access: ArgumentAccess,
    /// Short options whose attached value is text: never read as options,
    /// never judged as paths (`sort -t`), unless a rule refuses the option.
    #[serde(default)]
    pub text_value: Vec<char>,
    /// The first argument is an option cluster even without a dash (`tar xf`).
    #[serde(default)]
    pub bundled_first: bool,
    /// A script language whose commands are scanned (`sed`, `awk`).
    #[serde(default)]
    pub script: Option<ScriptLanguage>,
    /// The options the program accepts. With a grammar, an option it does
    /// not list is refused (`unknown-option`), and operands (the script of
    /// `sed`/`awk`, the target of a copy) are found where the options put
    /// them.
    #[serde(default)]
    pub grammar: Option<Grammar>,
    /// The program copies its operands into a directory: the last operand,
    /// or the value of a `target` option of its grammar (`cp`, `mv`, `ln`,
    /// `install`, `rsync`). Each `DIR/<name of a source>` is judged for
    /// writing too.
    #[serde(default)]
    pub copy: bool,
    /// The program reads an operand with a `:` before its first `/` as
    /// another machine (`host:path`, `host::module`, `rsync://host/…`, as
    /// `rsync` and `scp` do) and reaches it through a remote shell: such
    /// operands are refused (`remote-operand`). A host can set it, never
    /// clear it.
    #[serde(default)]
    pub refuse_remote: bool,
    /// The program reads paths inside its arguments as git does: the
    /// `PATH` of an object name (`REV:PATH`, `:PATH`, `:N:PATH`, `-L
    /// …:PATH`) and the path of a `file://` URL are judged too (`git show
    /// HEAD:.env` is refused as `blocked`).
    #[serde(default)]
    pub object_names: bool,
    /// The program opens `file://` URLs (curl): the path of each is judged,
    /// for writing (it may upload to it).
    #[serde(default)]
    pub file_urls: bool,
    /// Whether the program may start other programs. `false` says it runs
    /// nothing by itself (`cat`, `grep`, `sed`, `find` without `-exec`):
    /// [`ValidatedCommand::runs_programs`](crate::ValidatedCommand::runs_programs)
    /// is then `false` unless an option of `starts_programs` was given, and
    /// the kernel layer may deny it every execution but its own. A host
    /// can clear it (a table added for the same program), never set it.
    #[serde(default = "yes")]
    pub runs_programs: bool,
    /// Options that make a program whose table says `runs_programs =
    /// false` start programs after all (`find -exec`, `rg -z`, which runs
    /// decompressors, `install -s`, which runs `strip`), in the spellings
    /// of `refuse` rules: found anywhere in a cluster, on any prefix, after
    /// `--` too.
    #[serde(default)]
    pub starts_programs: Vec<String>,
}

fn yes() -> bool {
    true
}

impl ProgramRules {
    /// An empty table for `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            aliases: Vec::new(),
            refuse: Vec::new(),
            arguments: Arguments::Paths,
            access: ArgumentAccess::Read,
            text_value: Vec::new(),
            bundled_first: false,
            script: None,
            grammar: None,
            copy: false,
            refuse_remote: false,
            object_names: false,
            file_urls: false,
            runs_programs: true,
            starts_programs: Vec::new(),
        }
    }

    /// Give the program an allow-list grammar (see [`Grammar`]).
    pub fn grammar(mut self, grammar: Grammar) -> Self {
        self.grammar = Some(grammar);
        self
    }

    /// Add a refused option (see the type's docs for spellings).
    pub fn refuse(mut self, option: impl Into<String>, reason: impl Into<String>) -> Self {
        self.refuse.push(OptionRule::new(option, reason));
        self
    }
}

/// One refused option and the reason shown when it is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OptionRule {
    /// The option's spelling (see [`ProgramRules`]).
    pub option: String,
    /// Why it is refused, completing "option X …" (e.g. "runs a program").
    pub reason: String,
    /// When the rule applies.
    #[serde(default)]
    pub when: When,
    /// Which arguments it judges, for a program with subcommands.
    #[serde(default)]
    pub scope: Scope,
}

impl OptionRule {
    /// A rule that always applies, to every argument.
    pub fn new(option: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            option: option.into(),
            reason: reason.into(),
            when: When::Always,
            scope: Scope::Anywhere,
        }
    }
}

/// Which arguments an [`OptionRule`] of a program table judges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Scope {
    /// Every argument (after a subcommand too, and after `--`).
    #[default]
    Anywhere,
    /// Only the program's own options, before its subcommand (`git -c`,
    /// which is not `git diff -c`). Without subcommands, every argument.
    BeforeSubcommand,
}

/// When an [`OptionRule`] applies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum When {
    /// Always.
    #[default]
    Always,
    /// Only when the shell policy holds a path policy.
    PathPolicy,
    /// Only where Windows rules apply (Windows hosts, or when asked).
    Windows,
}

/// Whether a program's arguments are file names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Arguments {
    /// Every argument is judged as a path.
    #[default]
    Paths,
    /// Arguments are text (`echo`, `date`, …); options are still checked.
    Text,
}

/// The access a program's path arguments are judged for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ArgumentAccess {
    /// Reading.
    #[default]
    Read,
    /// Listing directories (and reading).
    List,
    /// Writing (the program creates, changes or removes what it names).
    Write,
}

/// A script language scanned for commands that run programs or write files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ScriptLanguage {
    /// `sed` scripts (`e`, `w`, `W`, `r`, `R` commands, `s///e` and `s///w`).
    Sed,
    /// `awk` programs (`system()`, pipes, redirection to files).
    Awk,
}

/// An allow-list grammar: every option a program accepts, and how.
///
/// Entries are spelled like rules: `"-x"` (a short option, which may be
/// clustered: `-xy`), `"--long"` (a long option; its value, if it takes one,
/// follows `=` or comes as the next argument) or `"-word"` (a single-dash
/// word, as `find` reads them). An option that appears in no list — and no
/// abbreviation of one, where `abbreviations` is set — is refused with the
/// rule `unknown-option`. Refused options (the table's `refuse` rules) are
/// checked first, so a grammar never lets a refused option through.
///
/// A host adds a program with its own grammar in the policy file's
/// `[[shell.rules]]` (here the `[shell]` section alone):
///
/// ```
/// use agentcaps_shell::{CommandRequest, ShellPolicyConfig};
/// # #[cfg(unix)] {
/// let config: ShellPolicyConfig = toml::from_str(r#"
///     allowed_commands = ["true"]
///     working_directory = "/tmp"
///     path_policy = false
///
///     [[rules]]
///     name = "true"
///     refuse = [{ option = "--exec", reason = "runs a program" }]
///     [rules.grammar]
///     flags = ["-v", "--verbose"]
///     values = ["-o", "--format"]
///     abbreviations = true
/// "#)?;
/// let policy = config.build(None)?;
/// // Allowed: options the grammar lists, an abbreviation, a value.
/// policy.validate(&CommandRequest::argv(["true", "--verb", "-o", "json", "x"]))?;
/// // Refused: an option the grammar does not list...
/// let err = policy.validate(&CommandRequest::argv(["true", "-z"])).unwrap_err();
/// assert_eq!(err.rule(), "unknown-option");
/// // ...and a refused one, abbreviated.
/// let err = policy.validate(&CommandRequest::argv(["true", "--ex=id"])).unwrap_err();
/// assert_eq!(err.rule(), "refused-option");
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct Grammar {
    /// Options that take no value.
    pub flags: Vec<String>,
    /// Options that take a value: attached (`-ovalue`, `--opt=value`) or the
    /// next argument.
    pub values: Vec<String>,
    /// Options whose value is optional and can only be attached
    /// (`-d[file]`, `--backup[=CONTROL]`).
    pub optional: Vec<String>,
    /// Options that take a value in some variants of the program and none
    /// in others (BSD `sed -l` vs GNU `sed -l N`): operands are located
    /// under both readings and each is judged.
    pub either: Vec<String>,
    /// Long options are also accepted on an unambiguous prefix (GNU
    /// `getopt_long`); an ambiguous prefix is refused.
    pub abbreviations: bool,
    /// A cluster of digits is an option (`head -5`, `grep -3`).
    pub digits: bool,
    /// Options whose value is the program's script (`sed -e`, `awk
    /// --source`). When one is present, operands are data; otherwise the
    /// first operand is the script.
    pub scripts: Vec<String>,
    /// Options that give the script another way (`grep -f FILE`), or say
    /// there is none (`rg --files`): with one of them, or one of
    /// `scripts`, present, the first operand is data. Otherwise, in a
    /// grammar with `scripts`, the first operand is the script (a `sed`
    /// script, an `awk` program, a `grep` pattern): text, never judged as
    /// a path.
    pub script_elsewhere: Vec<String>,
    /// Options whose value is a directory the operands are copied into
    /// (`cp -t DIR`).
    pub target: Vec<String>,
    /// Options whose value is text the program never opens as a file
    /// (`touch -d DATE`, `rsync --chmod=u+x:g-w`, `tar --transform=s:a:b:`):
    /// an argument the grammar reads as such a value, or as an option
    /// carrying one attached, is not judged as a path. Every other value
    /// is, as are operands.
    pub text: Vec<String>,
    /// Set when the program reads an operand holding `=` as a variable it
    /// expands (`make CC=cc`, `make 'V!=cmd'`): the names that may be set.
    /// Only `NAME=value` with a listed name and a value of letters, digits
    /// and `._,+/-` is accepted: another variable can choose the program
    /// the makefile runs (`SHELL=`, `CC=`) or run one (`$(shell …)`, `!=`).
    pub assignments: Option<Vec<String>>,
    /// Options whose value the program reads as another machine when it
    /// holds a `:` before its first `/` (`tar -f host:archive` runs a
    /// remote shell): such values are refused (`remote-operand`).
    pub remote: Vec<String>,
    /// Options whose value names a file to read after its first `@`
    /// (curl `-d @F`, `--data-urlencode name@F`, `-H @F`): that file is
    /// judged too, in every spelling of the option.
    pub at_files: Vec<String>,
    /// Options whose value names files after `=@` or `=<` (curl `-F
    /// name=@F;type=text/plain`, `name=<F`): the name, whole and each piece
    /// of its `;`/`,` list without quotes, is judged.
    pub form_files: Vec<String>,
    /// Options whose value is a file the program writes (curl `-o`, `-c`):
    /// judged for writing.
    pub written: Vec<String>,
    /// Options whose value the program expands as a pattern of file names
    /// (curl `-T '{a,b}'`, `-T 'f[1-3]'`): a value holding `{` or `[` names
    /// files nobody can judge, and is refused.
    pub patterns: Vec<String>,
    /// A short option whose value names a long option (`awk -W version`,
    /// `-W exec file`).
    pub long_via: Option<char>,
    /// The options end at the first operand, which names a subcommand
    /// (`git`); everything after it belongs to the subcommand.
    #[serde(rename = "subcommands")]
    pub subcommands: Vec<Subcommand>,
    /// The options indexed for lookups, built on the first one.
    #[serde(skip)]
    pub(crate) index: crate::option_index::LazyIndex,
}

/// A subcommand a program accepts (`git log`), with the options it refuses.
///
/// A subcommand that is not listed is refused (`unknown-subcommand`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct Subcommand {
    /// Its name.
    pub name: String,
    /// The subcommand itself is refused, with why (`git apply` writes the
    /// files a patch names).
    pub refused: Option<String>,
    /// Options refused after it (short anywhere in a cluster, long on any
    /// prefix).
    pub refuse: Vec<OptionRule>,
    /// An allow-list of its own options, when it has one.
    pub grammar: Option<Box<Grammar>>,
    /// The most operands it may have (`git config NAME` reads, `git config
    /// NAME VALUE` writes), unless one of `more_operands_with` is present.
    pub max_operands: Option<usize>,
    /// Options that lift `max_operands` (`git config --get NAME REGEX`).
    pub more_operands_with: Vec<String>,
    /// Why more operands are refused.
    pub operands_reason: Option<String>,
    /// First operands refused, with why (`git config edit`).
    pub refuse_operands: Vec<OperandRule>,
    /// Operands from this position on (0 is the first) name what the
    /// subcommand writes, and are judged for writing (`git clone URL DIR`:
    /// 1; `git restore FILE…`: 0).
    pub writes_from: Option<usize>,
    /// What it writes when no operand is at `writes_from` (`git init` writes
    /// the working directory; `git clone URL` a directory named after the
    /// repository).
    pub writes_default: Option<DefaultWrite>,
    /// What it writes is a directory it fills with a repository or a work
    /// tree (`git clone`, `git init`, `git worktree add`): names the command
    /// line does not show. Such a directory inside a `.git` directory is
    /// refused, as git reads names there as its own configuration and hooks.
    pub writes_repository: bool,
    /// It writes its remote (`git push`): the first operand and the value
    /// of `--repo`, when they name a local directory (a path or a
    /// `file://` URL), are judged for writing.
    pub writes_remote: bool,
}

/// What a subcommand writes when the command line does not name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum DefaultWrite {
    /// The working directory (`git init`).
    WorkingDirectory,
    /// A directory named after the first operand, as `git clone` names it:
    /// its last component without a trailing `/`, `.git` or `.bundle`.
    SourceName,
}

impl Subcommand {
    /// Add a host's rules for the same subcommand: its refusals add to
    /// these, never replace them.
    fn extend(&mut self, other: Subcommand) {
        if other.refused.is_some() {
            self.refused = other.refused;
        }
        self.refuse.extend(other.refuse);
        self.refuse_operands.extend(other.refuse_operands);
        match (&mut self.grammar, other.grammar) {
            (Some(mine), Some(theirs)) => mine.extend(*theirs),
            (mine @ None, theirs) => *mine = theirs,
            (Some(_), None) => {}
        }
        self.max_operands = match (self.max_operands, other.max_operands) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.more_operands_with.extend(other.more_operands_with);
        if other.operands_reason.is_some() {
            self.operands_reason = other.operands_reason;
        }
        self.writes_from = match (self.writes_from, other.writes_from) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if other.writes_default.is_some() {
            self.writes_default = other.writes_default;
        }
        self.writes_repository |= other.writes_repository;
        self.writes_remote |= other.writes_remote;
    }
}

/// An operand refused in a given place, with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OperandRule {
    /// The operand, exactly.
    pub operand: String,
    /// Why it is refused.
    pub reason: String,
}

/// The compiled rule tables, keyed by program identity.
///
/// The shipped tables are parsed when a command first names their program
/// (see [`shipped`]); a host's tables are added as they come.
#[derive(Debug, Clone, Default)]
pub(crate) struct RuleSet {
    programs: BTreeMap<String, Entry>,
    /// Other names of a program (an alias's identity → the table's key).
    aliases: BTreeMap<String, String>,
}

/// One program's table: the shipped texts it comes from (parsed on first
/// use, in order, each one extending the one before), or a table given.
#[derive(Debug, Clone, Default)]
struct Entry {
    shipped: Vec<shipped::Shipped>,
    table: OnceLock<Result<ProgramRules, String>>,
}

impl Entry {
    fn given(table: ProgramRules) -> Self {
        Entry {
            shipped: Vec::new(),
            table: OnceLock::from(Ok(table)),
        }
    }

    /// The table, parsed now if it was not yet.
    fn table(&self) -> Result<&ProgramRules, ShellError> {
        self.table
            .get_or_init(|| {
                let mut parts = self.shipped.iter();
                let first = parts.next().ok_or("a program without a table")?;
                let mut table = shipped::parse(first)?;
                check(&table).map_err(|e| e.to_string())?;
                for part in parts {
                    let more = shipped::parse(part)?;
                    check(&more).map_err(|e| e.to_string())?;
                    merge(&mut table, more);
                }
                Ok(table)
            })
            .as_ref()
            .map_err(|message| ShellError::Config {
                message: format!("the default rule tables do not parse: {message}"),
            })
    }

    fn table_mut(&mut self) -> Result<&mut ProgramRules, ShellError> {
        self.table()?;
        match self.table.get_mut() {
            Some(Ok(table)) => Ok(table),
            _ => Err(ShellError::Config {
                message: "the default rule tables do not parse".to_owned(),
            }),
        }
    }
}

impl RuleSet {
    /// The shipped default tables (each parsed when first used).
    pub(crate) fn defaults() -> Result<Self, ShellError> {
        static INDEX: OnceLock<Result<Vec<shipped::Shipped>, String>> = OnceLock::new();
        let index = INDEX.get_or_init(|| shipped::index(&DEFAULT_RULES));
        let tables = index.as_ref().map_err(|message| ShellError::Config {
            message: format!("the default rule tables do not parse: {message}"),
        })?;
        let mut set = Self::default();
        for table in tables {
            let key = set.key_for(&table.name, &table.aliases)?;
            set.programs
                .entry(key)
                .or_default()
                .shipped
                .push(table.clone());
        }
        Ok(set)
    }

    /// The key of a table named `name` with `aliases`, the aliases
    /// recorded: an alias of a program already present names that
    /// program's table.
    fn key_for(&mut self, name: &str, aliases: &[String]) -> Result<String, ShellError> {
        let mut key = identity(name);
        if let Some(primary) = self.aliases.get(&key) {
            key = primary.clone();
        }
        for alias in aliases {
            let alias = identity(alias);
            if !alias.is_empty() && alias != key && !self.programs.contains_key(&alias) {
                self.aliases.insert(alias, key.clone());
            }
        }
        if key.is_empty() {
            return Err(ShellError::Config {
                message: "a rule table has an empty program name".to_owned(),
            });
        }
        Ok(key)
    }

    /// Add a table; rules for a program already present are appended to its
    /// table (a host extends, it never silently replaces).
    pub(crate) fn add(&mut self, table: ProgramRules) -> Result<(), ShellError> {
        check(&table)?;
        let key = self.key_for(&table.name, &table.aliases)?;
        match self.programs.get_mut(&key) {
            Some(existing) => merge(existing.table_mut()?, table),
            None => {
                self.programs.insert(key, Entry::given(table));
            }
        }
        Ok(())
    }

    /// Parses the table of a program identity now, if it has one: a
    /// shipped table that does not parse is an error here, before a command
    /// naming it is judged. ([`RuleSet::get`] then finds it parsed.)
    pub(crate) fn load(&self, identity: &str) -> Result<(), ShellError> {
        match self.entry(identity) {
            Some(entry) => entry.table().map(|_| ()),
            None => Ok(()),
        }
    }

    /// The table for a program identity, if any (see [`RuleSet::load`]).
    pub(crate) fn get(&self, identity: &str) -> Option<&ProgramRules> {
        self.entry(identity)?.table().ok()
    }

    fn entry(&self, identity: &str) -> Option<&Entry> {
        match self.aliases.get(identity) {
            Some(primary) => self.programs.get(primary),
            None => self.programs.get(identity),
        }
    }

    /// Every table (all parsed; one that does not parse is left out, and
    /// refuses every command that names its program).
    pub(crate) fn tables(&self) -> impl Iterator<Item = &ProgramRules> {
        self.programs
            .values()
            .filter_map(|entry| entry.table().ok())
    }
}

/// Whether a table's spellings and grammar are well formed.
fn check(table: &ProgramRules) -> Result<(), ShellError> {
    for rule in &table.refuse {
        validate_spelling(&table.name, &rule.option)?;
    }
    if let Some(grammar) = &table.grammar {
        validate_grammar(&table.name, grammar)?;
    }
    Ok(())
}

/// Adds `table`'s rules to `existing`'s (a second table for the same
/// program): refusals add up, and a setting can only be made stricter or
/// given where it was not.
fn merge(existing: &mut ProgramRules, table: ProgramRules) {
    existing.refuse.extend(table.refuse);
    existing.text_value.extend(table.text_value);
    existing.bundled_first |= table.bundled_first;
    if table.arguments != Arguments::Paths {
        existing.arguments = table.arguments;
    }
    if table.access != ArgumentAccess::Read {
        existing.access = table.access;
    }
    if table.script.is_some() {
        existing.script = table.script;
    }
    existing.copy |= table.copy;
    existing.refuse_remote |= table.refuse_remote;
    existing.object_names |= table.object_names;
    existing.file_urls |= table.file_urls;
    existing.runs_programs &= table.runs_programs;
    existing.starts_programs.extend(table.starts_programs);
    existing.aliases.extend(table.aliases);
    match (&mut existing.grammar, table.grammar) {
        (Some(mine), Some(theirs)) => mine.extend(theirs),
        (mine @ None, theirs) => *mine = theirs,
        (Some(_), None) => {}
    }
}

impl Grammar {
    /// Add another grammar's entries to this one (a host extending a
    /// shipped table).
    fn extend(&mut self, other: Grammar) {
        self.flags.extend(other.flags);
        self.values.extend(other.values);
        self.optional.extend(other.optional);
        self.either.extend(other.either);
        self.scripts.extend(other.scripts);
        self.script_elsewhere.extend(other.script_elsewhere);
        self.target.extend(other.target);
        self.text.extend(other.text);
        self.remote.extend(other.remote);
        self.at_files.extend(other.at_files);
        self.form_files.extend(other.form_files);
        self.written.extend(other.written);
        self.patterns.extend(other.patterns);
        match (&mut self.assignments, other.assignments) {
            (Some(mine), Some(theirs)) => mine.extend(theirs),
            (mine @ None, theirs) => *mine = theirs,
            (Some(_), None) => {}
        }
        self.abbreviations |= other.abbreviations;
        self.digits |= other.digits;
        self.index = crate::option_index::LazyIndex::default();
        if other.long_via.is_some() {
            self.long_via = other.long_via;
        }
        for theirs in other.subcommands {
            match self.subcommands.iter_mut().find(|s| s.name == theirs.name) {
                Some(mine) => mine.extend(theirs),
                None => self.subcommands.push(theirs),
            }
        }
    }

    /// The options indexed (built on the first call).
    pub(crate) fn index(&self) -> &crate::option_index::OptionIndex {
        self.index.get(self)
    }

    /// Every entry, with its kind.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&str, Kind)> {
        self.flags
            .iter()
            .map(|e| (e.as_str(), Kind::Flag))
            .chain(self.values.iter().map(|e| (e.as_str(), Kind::Value)))
            .chain(self.optional.iter().map(|e| (e.as_str(), Kind::Optional)))
            .chain(self.either.iter().map(|e| (e.as_str(), Kind::Either)))
    }
}

/// How an option of a grammar takes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// No value.
    Flag,
    /// A value, attached or the next argument.
    Value,
    /// An optional value, attached only.
    Optional,
    /// A value in some variants, none in others.
    Either,
}

fn validate_grammar(program: &str, grammar: &Grammar) -> Result<(), ShellError> {
    let lists = grammar
        .entries()
        .map(|(e, _)| e)
        .chain(grammar.scripts.iter().map(String::as_str))
        .chain(grammar.script_elsewhere.iter().map(String::as_str))
        .chain(grammar.target.iter().map(String::as_str))
        .chain(grammar.text.iter().map(String::as_str))
        .chain(grammar.remote.iter().map(String::as_str))
        .chain(grammar.at_files.iter().map(String::as_str))
        .chain(grammar.form_files.iter().map(String::as_str))
        .chain(grammar.written.iter().map(String::as_str))
        .chain(grammar.patterns.iter().map(String::as_str));
    for entry in lists {
        let ok = matches!(
            Spelling::parse(entry),
            Some(
                Spelling::Short(_)
                    | Spelling::Word(_)
                    | Spelling::Long {
                        any_suffix: false,
                        ..
                    }
            )
        ) && !entry.ends_with('*')
            && entry != "--";
        if !ok {
            return Err(ShellError::Config {
                message: format!(
                    "grammar entry `{entry}` for `{program}` is not an option spelling \
                     (\"-x\", \"--long\" or \"-word\")"
                ),
            });
        }
    }
    for (i, sub) in grammar.subcommands.iter().enumerate() {
        if grammar
            .subcommands
            .get(..i)
            .unwrap_or_default()
            .iter()
            .any(|s| s.name == sub.name)
        {
            return Err(ShellError::Config {
                message: format!(
                    "subcommand `{}` of `{program}` is listed twice; give it one table",
                    sub.name
                ),
            });
        }
        for rule in &sub.refuse {
            validate_spelling(program, &rule.option)?;
        }
        if let Some(inner) = &sub.grammar {
            validate_grammar(program, inner)?;
        }
    }
    Ok(())
}

fn validate_spelling(program: &str, option: &str) -> Result<(), ShellError> {
    let ok = match Spelling::parse(option) {
        Some(Spelling::Short(c)) => c != '-',
        Some(Spelling::Long { name, .. }) => !name.is_empty(),
        Some(Spelling::Word(_)) | Some(Spelling::Switch(_)) => true,
        None => false,
    };
    if ok {
        Ok(())
    } else {
        Err(ShellError::Config {
            message: format!(
                "rule `{option}` for `{program}` is not an option spelling \
                 (\"-C\", \"--long\", \"--long*\", \"-word\" or \"/S*\")"
            ),
        })
    }
}

/// A rule's option spelling, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spelling<'a> {
    /// `-C`
    Short(char),
    /// `--name` or `--name*`
    Long { name: &'a str, any_suffix: bool },
    /// `-exec`
    Word(&'a str),
    /// `/O*`: a Windows switch prefix (the text after `/`, without `*`).
    Switch(&'a str),
}

impl<'a> Spelling<'a> {
    pub(crate) fn parse(option: &'a str) -> Option<Self> {
        if let Some(long) = option.strip_prefix("--") {
            return Some(match long.strip_suffix('*') {
                Some(name) => Spelling::Long {
                    name,
                    any_suffix: true,
                },
                None => Spelling::Long {
                    name: long,
                    any_suffix: false,
                },
            });
        }
        if let Some(short) = option.strip_prefix('-') {
            let mut chars = short.chars();
            return match (chars.next(), chars.next()) {
                (Some(c), None) => Some(Spelling::Short(c)),
                (Some(_), Some(_)) => Some(Spelling::Word(option)),
                (None, _) => None,
            };
        }
        if let Some(switch) = option.strip_prefix('/') {
            let prefix = switch.strip_suffix('*').unwrap_or(switch);
            if !prefix.is_empty() {
                return Some(Spelling::Switch(prefix));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_tables_parse_and_every_spelling_is_valid() {
        let set = RuleSet::defaults().unwrap();
        assert!(set.get("file").is_some());
        assert!(set.get("sort").is_some());
        assert!(
            set.tables()
                .all(|t| t.refuse.iter().all(|r| !r.reason.is_empty()))
        );
    }

    /// The whole files, parsed at once and added table by table.
    fn parsed_whole() -> RuleSet {
        #[derive(Deserialize)]
        struct RuleFile {
            program: Vec<ProgramRules>,
        }
        let mut set = RuleSet::default();
        for text in DEFAULT_RULES {
            for table in toml::from_str::<RuleFile>(text).unwrap().program {
                set.add(table).unwrap();
            }
        }
        set
    }

    #[test]
    fn each_table_read_alone_is_the_table_the_whole_file_gives() {
        let whole = parsed_whole();
        let lazy = RuleSet::defaults().unwrap();
        assert_eq!(lazy.aliases, whole.aliases);
        assert_eq!(
            lazy.programs.keys().collect::<Vec<_>>(),
            whole.programs.keys().collect::<Vec<_>>()
        );
        assert!(whole.programs.len() > 30, "{}", whole.programs.len());
        for key in whole.programs.keys() {
            assert!(lazy.load(key).is_ok(), "{key}");
            assert_eq!(lazy.get(key), whole.get(key), "{key}");
        }
        // Nothing is parsed before a command names its program.
        let fresh = RuleSet::defaults().unwrap();
        assert!(fresh.programs.values().all(|e| e.table.get().is_none()));
        assert!(fresh.get("gawk").is_some_and(|t| t.name == "awk"));
        let parsed = fresh.programs.values().filter(|e| e.table.get().is_some());
        assert_eq!(parsed.count(), 1);
    }

    #[test]
    fn a_shipped_table_that_does_not_parse_refuses_its_program() {
        let files = [
            "# rules\n[[program]]\nname = \"ok\"\n",
            "[[program]]\nname = \"broken\"\nrefuse = [ { option = \"C\", reason = \"no dash\" } ]\n[[program]]\nname = \"typo\"\ncopy = \"yes\"\n",
        ];
        let mut set = RuleSet::default();
        for table in shipped::index(&files).unwrap() {
            let key = set.key_for(&table.name, &table.aliases).unwrap();
            set.programs.entry(key).or_default().shipped.push(table);
        }
        assert!(set.load("ok").is_ok());
        for name in ["broken", "typo"] {
            let err = set.load(name).unwrap_err();
            assert_eq!(err.rule(), "config", "{err}");
            assert!(set.get(name).is_none());
        }
        assert!(shipped::index(&["name = \"loose\"\n[[program]]\nname = \"x\"\n"]).is_err());
        assert!(
            shipped::index(&["[[program]]\naliases = [\n  \"y\",\n]\nname = \"x\"\n"]).is_err()
        );
    }

    #[test]
    fn host_rules_extend_an_existing_table() {
        let mut set = RuleSet::defaults().unwrap();
        let before = set.get("wc").unwrap().refuse.len();
        set.add(ProgramRules::new("WC.EXE").refuse("-L", "test"))
            .unwrap();
        assert_eq!(set.get("wc").unwrap().refuse.len(), before + 1);
    }

    #[test]
    fn a_bad_spelling_is_a_config_error() {
        let mut set = RuleSet::default();
        let err = set
            .add(ProgramRules::new("x").refuse("C", "no dash"))
            .unwrap_err();
        assert_eq!(err.rule(), "config");
        let err = set
            .add(ProgramRules::new("x").refuse("--", "no name"))
            .unwrap_err();
        assert_eq!(err.rule(), "config");
    }
}
