//! The safe defaults of SPEC §1: what every policy blocks unless the host
//! opts out with `without_defaults()` / `defaults = false`.
//!
//! Each entry says what it prevents.

/// Blocked for every access (read, write, list).
pub(crate) const BLOCKED: &[(&str, &str)] = &[
    (
        "/proc",
        "process internals and magic links (/proc/self/root, /proc/self/fd/N, /proc/self/environ) that reach any file and the host's environment",
    ),
    ("/sys", "kernel and device state, some of it writable"),
    ("/dev", "devices: disks, memory, terminals"),
    (
        "**/.env*",
        "dotenv files, where API keys and passwords live",
    ),
    ("**/*.pem", "private keys and certificates"),
    ("**/id_rsa*", "SSH private keys"),
    (
        "**/.ssh/**",
        "SSH keys, and ssh config that can run commands",
    ),
    ("**/.aws/**", "AWS credentials"),
];

/// Blocked for writing only, inside allowed roots too, whether or not they
/// exist yet: a write there becomes code that runs later.
pub(crate) const WRITE_PROTECTED: &[(&str, &str)] = &[
    (
        "**/.git/config",
        "git runs commands named there (core.fsmonitor, core.pager, aliases, filters)",
    ),
    (
        "**/.git/hooks/**",
        "git runs hooks on commit, checkout, merge",
    ),
    (
        "**/.gitmodules",
        "submodule URLs and update commands that git fetches and runs",
    ),
    ("**/.bashrc", "run by every interactive bash"),
    ("**/.profile", "run by every login shell"),
    ("**/.zshrc", "run by every interactive zsh"),
    ("**/.envrc", "run by direnv on entering the directory"),
    (
        "**/.npmrc",
        "npm settings: registries, tokens, scripts npm runs",
    ),
    ("**/.pypirc", "package-upload registries and credentials"),
    ("**/.mcp.json", "MCP servers an agent client starts"),
    ("**/.vscode/**", "tasks and settings VS Code runs"),
    ("**/.idea/**", "JetBrains run configurations"),
    ("**/.ripgreprc", "ripgrep options (`--pre` runs a program)"),
];
