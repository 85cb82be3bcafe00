//! macOS Seatbelt: a sandbox profile (SBPL, the S-expression language of
//! `sandbox-exec -p`) generated from the same policy as the Linux
//! confinement, so that a command on macOS is held by the kernel too.
//!
//! What the profile says, rule by rule (later rules win over earlier ones
//! in SBPL, so every deny comes after the allows it narrows):
//!
//! - everything is denied unless allowed (`(deny default)`);
//! - **reads** (and executing, and mapping code: `file-map-executable`)
//!   only beneath the runtime ([`RUNTIME`]: the system's programs and
//!   libraries, the shared-library cache, a few `/etc` files), the
//!   directories of the program about to run, and the policy's roots;
//!   **metadata** (`stat`, what `realpath` needs) of any path, its
//!   contents only there;
//! - **writes** only beneath the writable roots and the run's private
//!   temporary directory ([`PrivateTmp`]: made for the run, named in
//!   `TMPDIR`, removed after it), where compilers and interpreters put
//!   their temporary files;
//! - **blocked entries** of the path policy (`**/.env*`, keys, the host's
//!   list) are denied for reading and writing, at any depth; the
//!   **write-protected** ones (`.git/hooks/**`, `.envrc`, …) for writing;
//! - the devices a program opens by itself: `/dev/null`, `/dev/zero`, the
//!   random devices, the terminal, `/dev/fd/N`, `/dev/dtracehelper` (the
//!   dynamic loader opens it), and pseudo-terminals (`/dev/ptmx`,
//!   `/dev/ttysN`);
//! - **network** denied (loopback included) unless the policy allows it;
//!   where the network is the judging proxy, TCP to its port on loopback
//!   only, and the services TLS needs (certificate trust, revocation, the
//!   system's network configuration) but no name resolution (names are
//!   the proxy's to resolve); with the network allowed, name resolution
//!   too (`dnssd` and the `mDNSResponder` socket);
//! - processes may start processes, read `sysctl`s, look at
//!   (`process-info*`) and signal only processes of the same sandbox; use
//!   POSIX semaphores (Python's `multiprocessing`), read the preferences
//!   system's shared memory (`apple.cfprefs.*`) and preferences, and look
//!   up the few system services a C library needs ([`SERVICES`]: user and
//!   group names, preferences, the per-user temporary directory, logging,
//!   time zones).
//!
//! Every path is written in its `/private/...` form (`/tmp`, `/var` and
//! `/etc` are links there, and Seatbelt judges the resolved path), every
//! string stays under [`MAX_STRING`] bytes, and the profile holds one
//! filter per path: a few hundred, far below the tens of thousands that
//! make `sandbox_init` fail.
//!
//! Without a path policy, files are not restricted (as with Landlock) and
//! only the network rule and the process rules apply.
//!
//! # What this does not give, and how sure it is
//!
//! There is no private view on macOS: blocked entries are denied, not
//! absent, and a command's writes land directly, unjudged (no write-back).
//! The profile's text is tested here (snapshots, and a checker of its
//! syntax and of the operations and filters it uses), but this project's CI
//! has no Mac: the profile has not been run by a real `sandbox-exec` in
//! CI. A run on macOS therefore reports `partial` with that reason, and
//! `require_kernel_enforcement` refuses there. `sandbox-exec` fails closed:
//! it runs nothing when it rejects a profile, and the runner reports that
//! as a refusal. A host whose commands the profile stops from working
//! can turn it off with
//! [`SandboxBuilder::private_view(false)`](crate::SandboxBuilder::private_view)
//! (then `enforced` is `none`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::KernelRules;

/// The program that applies a profile to the command it then runs.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// What `sandbox-exec` exits with when it cannot apply the profile (it
/// then runs nothing, and says why on standard error after
/// `sandbox-exec: `).
pub const REJECTED_EXIT: i32 = 65;

/// Why a run under the profile is `partial`, in the run's
/// `enforced_reason`.
pub const PARTIAL_REASON: &str = "Seatbelt profile only (macOS): no private view, so blocked entries are denied rather than absent and a command's writes land unjudged; the profile is not run on a real Mac in this project's CI";

/// Whether a run under `sandbox-exec` ended because it rejected the
/// profile (and so ran nothing): its exit code and the reason it printed.
#[must_use]
pub fn rejection(exit: crate::Exit, stderr: &str) -> Option<String> {
    if exit != crate::Exit::Code(REJECTED_EXIT) {
        return None;
    }
    let line = stderr.lines().next()?;
    line.strip_prefix("sandbox-exec: ").map(str::to_owned)
}

/// Paths every command may read and execute beneath on macOS: programs,
/// libraries and frameworks, the shared-library cache (in `/System`, and
/// in `/private/var/db/dyld` before macOS 11), the developer tools'
/// directories, and the `/etc` files and devices the C library and common
/// tools read by themselves. Nothing here is writable.
pub const RUNTIME: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/System",
    "/Library/Apple",
    "/Library/Developer/CommandLineTools",
    "/Applications/Xcode.app/Contents/Developer",
    "/private/var/db/dyld",
    "/private/var/db/timezone",
    "/private/etc/passwd",
    "/private/etc/group",
    "/private/etc/hosts",
    "/private/etc/resolv.conf",
    "/private/etc/services",
    "/private/etc/protocols",
    "/private/etc/localtime",
    "/private/etc/ssl",
];

/// Devices every command may read: granted last, so that no blocked entry
/// (the built-in list blocks `/dev` for file arguments) takes them away.
pub const DEVICES_READ: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// Devices every command may also write to (and `ioctl`: a terminal).
pub const DEVICES_WRITE: &[&str] = &["/dev/null", "/dev/tty"];

/// Symbolic links at the top of the file system that paths go through
/// (`/etc` is `/private/etc`): readable themselves, not what is beneath
/// them (Seatbelt judges the resolved path).
const TOP_LINKS: &[&str] = &["/etc", "/var", "/tmp"];

/// System services every command may look up: user and group names
/// (`getpwuid`), preferences, the per-user temporary and cache
/// directories, the logging system every program connects to, time zones.
pub const SERVICES: &[&str] = &[
    "com.apple.system.opendirectoryd.libinfo",
    "com.apple.cfprefsd.daemon",
    "com.apple.cfprefsd.agent",
    "com.apple.bsd.dirhelper",
    "com.apple.system.logger",
    "com.apple.system.notification_center",
    "com.apple.logd",
    "com.apple.timezoned",
];

/// Services a command with a network may also look up: certificate trust
/// and revocation (TLS), the system's network configuration.
pub const NETWORK_SERVICES: &[&str] = &[
    "com.apple.SecurityServer",
    "com.apple.trustd.agent",
    "com.apple.ocspd",
    "com.apple.SystemConfiguration.configd",
    "com.apple.SystemConfiguration.DNSConfiguration",
];

/// Name resolution, for a command given the host's network only (behind
/// the judging proxy names are the proxy's to resolve: a lookup would be
/// a way out it does not judge).
pub const RESOLVER_SERVICES: &[&str] = &["com.apple.dnssd.service"];

/// The resolver's socket (name resolution without the service).
pub const RESOLVER_SOCKET: &str = "/private/var/run/mDNSResponder";

/// The longest string or regular expression a profile holds, in bytes
/// (`sandbox_init` mishandles strings of a kilobyte and more).
pub const MAX_STRING: usize = 1000;

/// A run's private temporary directory: made (owner-only) in the user's
/// temporary directory when the run starts, named in the command's
/// `TMPDIR` and writable by it under the profile, removed with everything
/// in it when this value is dropped.
#[derive(Debug)]
pub struct PrivateTmp {
    path: PathBuf,
}

impl PrivateTmp {
    /// Makes a fresh directory beneath `base` (its canonical form: on
    /// macOS the per-user `/private/var/folders/...`).
    ///
    /// # Errors
    ///
    /// Why the directory could not be made.
    pub fn create_in(base: &Path) -> std::io::Result<Self> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let base = std::fs::canonicalize(base)?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!(
                "agentcaps-tmp-{}-{nanos:x}-{n}",
                std::process::id()
            ));
            #[cfg_attr(not(unix), allow(unused_mut))]
            let mut builder = std::fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            match builder.create(&path) {
                Ok(()) => return Ok(Self { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Makes one in the user's temporary directory.
    ///
    /// # Errors
    ///
    /// Why the directory could not be made.
    pub fn create() -> std::io::Result<Self> {
        Self::create_in(&std::env::temp_dir())
    }

    /// Where it is (canonical).
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The environment variable that names it to the command.
    #[must_use]
    pub fn env(&self) -> (std::ffi::OsString, std::ffi::OsString) {
        ("TMPDIR".into(), self.path.as_os_str().to_owned())
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The Seatbelt profile for one command, without a private temporary
/// directory: [`profile_with_tmp`] with none.
#[must_use]
pub fn profile<'a>(
    rules: &KernelRules,
    blocked: impl IntoIterator<Item = &'a str>,
    write_protected: impl IntoIterator<Item = &'a str>,
) -> String {
    profile_with_tmp(rules, None, blocked, write_protected)
}

/// The Seatbelt profile for one command: `rules` as [`KernelRules`] give
/// them (the roots, the program, the network), the run's private
/// temporary directory `tmp` ([`PrivateTmp::path`]) writable, narrowed by
/// the path policy's blocked and write-protected entries (`blocked`,
/// `write_protected`: [`PathPolicy::blocked`] and
/// [`PathPolicy::write_protected`]).
///
/// A blocked entry whose regular expression would be longer than
/// [`MAX_STRING`] cannot be written: every root is then denied whole for
/// what that entry denies (nothing in them can be reached), never let
/// through.
///
/// [`PathPolicy::blocked`]: agentcaps_paths::PathPolicy::blocked
/// [`PathPolicy::write_protected`]: agentcaps_paths::PathPolicy::write_protected
#[must_use]
pub fn profile_with_tmp<'a>(
    rules: &KernelRules,
    tmp: Option<&Path>,
    blocked: impl IntoIterator<Item = &'a str>,
    write_protected: impl IntoIterator<Item = &'a str>,
) -> String {
    let mut out = String::from("(version 1)\n(deny default)\n");
    out.push_str("(allow process-fork)\n");
    out.push_str("(allow process-info* (target same-sandbox))\n");
    out.push_str("(allow signal (target same-sandbox))\n");
    out.push_str("(allow sysctl-read)\n(allow user-preference-read)\n");
    out.push_str("(allow ipc-posix-sem)\n");
    out.push_str("(allow ipc-posix-shm-read* (ipc-posix-name-prefix \"apple.cfprefs.\"))\n");
    out.push_str("(allow pseudo-tty)\n");
    let networked = rules.allow_network || !rules.connect_ports.is_empty();
    let mut services: Vec<&str> = SERVICES.to_vec();
    if networked {
        services.extend(NETWORK_SERVICES);
    }
    if rules.allow_network {
        services.extend(RESOLVER_SERVICES);
    }
    out.push_str("(allow mach-lookup");
    for service in services {
        let _ = write!(out, "\n  (global-name {})", string(service));
    }
    out.push_str(")\n");
    if rules.allow_network {
        out.push_str("(allow network*)\n(allow system-socket)\n");
    } else if !rules.connect_ports.is_empty() {
        // The judging proxy's port on loopback, and nothing else.
        out.push_str("(allow network-outbound");
        for port in &rules.connect_ports {
            let _ = write!(
                out,
                " (remote tcp {})",
                string(&format!("localhost:{port}"))
            );
        }
        out.push_str(")\n");
    }
    if !rules.restrict_files {
        out.push_str("(allow file* process-exec)\n");
        return out;
    }

    let mut readable: Vec<PathBuf> = RUNTIME.iter().map(PathBuf::from).collect();
    readable.extend(
        rules
            .program
            .iter()
            .filter_map(|p| p.parent().map(Path::to_path_buf)),
    );
    readable.extend(rules.read.iter().cloned());
    readable.extend(rules.write.iter().cloned());
    let mut readable = private_forms(readable);
    let mut writable = private_forms(rules.write.iter().cloned());
    writable.extend(tmp.map(private_form));
    sort_dedup(&mut writable);
    readable.extend(writable.iter().cloned());
    sort_dedup(&mut readable);

    // Metadata of any path: resolving a path (`realpath`, `getcwd`) looks
    // at every directory on the way; contents stay denied.
    out.push_str("(allow file-read-metadata)\n");
    let links: Vec<PathBuf> = TOP_LINKS.iter().map(PathBuf::from).collect();
    rule(&mut out, "allow", "file-read*", &links, "literal");
    rule(
        &mut out,
        "allow",
        "file-read* process-exec file-map-executable",
        &readable,
        "subpath",
    );
    rule(&mut out, "allow", "file-write*", &writable, "subpath");

    let blocked: Vec<String> = blocked.into_iter().map(private_entry).collect();
    let protected: Vec<String> = write_protected.into_iter().map(private_entry).collect();
    let blocked_ops = "file-read-data file-read-xattr file-write* process-exec file-map-executable";
    let mut roots = private_forms(rules.read.iter().chain(&rules.write).cloned());
    roots.extend(tmp.map(private_form));
    sort_dedup(&mut roots);
    deny_entries(&mut out, blocked_ops, &blocked, &roots);
    deny_entries(&mut out, "file-write*", &protected, &writable);

    let devices: Vec<PathBuf> = DEVICES_READ.iter().map(PathBuf::from).collect();
    rule(
        &mut out,
        "allow",
        "file-read-data file-read-metadata",
        &devices,
        "literal",
    );
    let devices: Vec<PathBuf> = DEVICES_WRITE.iter().map(PathBuf::from).collect();
    rule(
        &mut out,
        "allow",
        "file-write-data file-ioctl",
        &devices,
        "literal",
    );
    // What programs open by themselves: their own descriptors, the
    // loader's DTrace helper, pseudo-terminals.
    out.push_str(concat!(
        "(allow file-read-data file-write-data file-ioctl\n",
        "  (literal \"/dev/dtracehelper\")\n",
        "  (literal \"/dev/ptmx\")\n",
        "  (regex #\"^/dev/ttys[0-9]+$\")\n",
        "  (regex #\"^/dev/fd/[0-9]+$\"))\n",
        "(allow file-read-data (literal \"/dev/fd\"))\n",
    ));
    if rules.allow_network {
        let _ = writeln!(
            out,
            "(allow network-outbound (literal {}))",
            string(RESOLVER_SOCKET)
        );
    }
    out
}

/// `path` as Seatbelt sees it once resolved: beneath `/private` when it
/// goes through one of the top links (`/tmp/x` is `/private/tmp/x`).
fn private_form(path: &Path) -> PathBuf {
    for link in TOP_LINKS {
        if let Ok(rest) = path.strip_prefix(link) {
            return Path::new("/private")
                .join(link.trim_start_matches('/'))
                .join(rest);
        }
    }
    path.to_path_buf()
}

fn private_forms(paths: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    paths.into_iter().map(|p| private_form(&p)).collect()
}

/// A blocked or write-protected entry in its `/private/...` form (an
/// absolute path or an anchored glob through a top link).
fn private_entry(entry: &str) -> String {
    if entry.starts_with('/') {
        private_form(Path::new(entry))
            .to_string_lossy()
            .into_owned()
    } else {
        entry.to_owned()
    }
}

fn sort_dedup(paths: &mut Vec<PathBuf>) {
    paths.sort();
    paths.dedup();
}

/// `(KIND OPERATIONS (FILTER "path") ...)` on one line per path, or
/// nothing when there are no paths.
fn rule(out: &mut String, kind: &str, operations: &str, paths: &[PathBuf], filter: &str) {
    if paths.is_empty() {
        return;
    }
    let _ = writeln!(out, "({kind} {operations}");
    for path in paths {
        let _ = writeln!(out, "  ({filter} {})", string(&path.to_string_lossy()));
    }
    out.push_str(")\n");
}

/// Denies `operations` on each entry: a path (everything beneath it) or a
/// glob (everything it matches, and beneath). An entry too long to write
/// as a Seatbelt string denies everything beneath `granted` instead.
fn deny_entries(out: &mut String, operations: &str, entries: &[String], granted: &[PathBuf]) {
    if entries.is_empty() {
        return;
    }
    let _ = writeln!(out, "(deny {operations}");
    let mut too_long = false;
    for entry in entries {
        let filter = if is_glob(entry) {
            format!("(regex {})", regex_literal(&glob_regex(entry)))
        } else {
            format!("(subpath {})", string(entry))
        };
        if filter.len() > MAX_STRING {
            too_long = true;
        } else {
            let _ = writeln!(out, "  {filter}");
        }
    }
    if too_long {
        for path in granted {
            let _ = writeln!(out, "  (subpath {})", string(&path.to_string_lossy()));
        }
    }
    out.push_str(")\n");
}

/// A glob, as the path policy spells them: with a glob character, or
/// starting with `**`.
fn is_glob(entry: &str) -> bool {
    entry.starts_with("**") || entry.contains(['*', '?', '[', '{'])
}

/// An SBPL string: `"…"` with `\` and `"` escaped.
fn string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// An SBPL regular-expression literal: `#"…"`, where only `"` needs a
/// backslash (the regex's own backslashes stand as they are).
fn regex_literal(regex: &str) -> String {
    format!("#\"{}\"", regex.replace('"', "\\\""))
}

/// Characters with a meaning in a POSIX extended regular expression.
const ERE_META: &[char] = &[
    '\\', '.', '+', '*', '?', '(', ')', '|', '[', ']', '{', '}', '^', '$',
];

/// One character of a glob, as a regex: a letter in either case (the
/// default macOS file system ignores case, so `.ENVRC` is `.envrc`), a
/// special character escaped.
fn escape(out: &mut String, c: char) {
    if c.is_ascii_alphabetic() {
        out.push('[');
        out.push(c.to_ascii_lowercase());
        out.push(c.to_ascii_uppercase());
        out.push(']');
    } else if c == '"' {
        // Inside a class or not, `"` stands for itself; the literal's
        // own quoting is added by `regex_literal`.
        out.push('"');
    } else if ERE_META.contains(&c) {
        out.push('\\');
        out.push(c);
    } else {
        out.push(c);
    }
}

/// The POSIX extended regular expression (Seatbelt's dialect) that
/// matches the absolute paths a glob matches, in any letter case, and
/// everything beneath:
/// `*` any run of characters but `/`, `?` one, `[…]`/`[!…]` a class,
/// `{a,b}` alternatives, `**` as a component any number of components, `\x`
/// a literal `x`; a glob not starting with `/` matches at any depth.
fn glob_regex(glob: &str) -> String {
    let anchored = glob.starts_with('/');
    let segments: Vec<&str> = glob.split('/').filter(|s| !s.is_empty()).collect();
    let mut out = String::from("^");
    if !anchored && segments.first() != Some(&"**") {
        out.push_str("(/.*)?");
    }
    let last = segments.len().saturating_sub(1);
    for (i, segment) in segments.into_iter().enumerate() {
        if segment == "**" {
            // A last `**` is the "everything beneath" every glob ends with.
            if i != last {
                out.push_str("(/.*)?");
            }
        } else {
            out.push('/');
            segment_regex(segment, &mut out);
        }
    }
    out.push_str("(/.*)?$");
    out
}

fn segment_regex(segment: &str, out: &mut String) {
    let mut chars = segment.chars().peekable();
    let mut braces = 0usize;
    while let Some(c) = chars.next() {
        match c {
            '*' => {
                while chars.peek() == Some(&'*') {
                    chars.next();
                }
                out.push_str("[^/]*");
            }
            '?' => out.push_str("[^/]"),
            '\\' => {
                if let Some(next) = chars.next() {
                    escape(out, next);
                }
            }
            '{' => {
                braces += 1;
                out.push('(');
            }
            ',' if braces > 0 => out.push('|'),
            '}' if braces > 0 => {
                braces -= 1;
                out.push(')');
            }
            '[' => {
                // These regexes only deny: a class this dialect might read
                // otherwise (one holding `[`, `]` after the first place,
                // `^` or `\`) becomes any one character, which denies more.
                let mut class = String::from("[");
                if matches!(chars.peek(), Some('!' | '^')) {
                    chars.next();
                    class.push_str("^/");
                }
                let mut first = true;
                let mut plain = true;
                for c in chars.by_ref() {
                    match c {
                        ']' if !first => break,
                        '[' | '\\' | '^' | ']' => plain = false,
                        _ => class.push(c),
                    }
                    first = false;
                }
                class.push(']');
                out.push_str(if plain { &class } else { "[^/]" });
            }
            _ => escape(out, c),
        }
    }
    for _ in 0..braces {
        out.push(')');
    }
}

#[cfg(test)]
mod tests {
    use super::{glob_regex, regex_literal, string};

    #[test]
    fn globs_become_extended_regexes() {
        assert_eq!(
            glob_regex("**/.env*"),
            r"^(/.*)?/\.[eE][nN][vV][^/]*(/.*)?$"
        );
        assert_eq!(glob_regex("*.pem"), r"^(/.*)?/[^/]*\.[pP][eE][mM](/.*)?$");
        assert_eq!(
            glob_regex("**/.git/hooks/**"),
            r"^(/.*)?/\.[gG][iI][tT]/[hH][oO][oO][kK][sS](/.*)?$"
        );
        assert_eq!(
            glob_regex("/srv/a?/{x,y}"),
            r"^/[sS][rR][vV]/[aA][^/]/([xX]|[yY])(/.*)?$"
        );
        assert_eq!(glob_regex("**/[!.]1"), r"^(/.*)?/[^/.]1(/.*)?$");
        assert_eq!(glob_regex("**/1\\*2"), r"^(/.*)?/1\*2(/.*)?$");
        assert_eq!(glob_regex("**/[]^x]1"), r"^(/.*)?/[^/]1(/.*)?$");
        assert_eq!(glob_regex("**/1\"2"), "^(/.*)?/1\"2(/.*)?$");
    }

    #[test]
    fn strings_and_regex_literals_are_quoted() {
        assert_eq!(string(r#"/a "b" \c"#), r#""/a \"b\" \\c""#);
        assert_eq!(regex_literal(r#"^/a"b\.c$"#), r#"#"^/a\"b\.c$""#);
    }
}
