//! The safe defaults: what every policy blocks unless the host opts out
//! with `danger::without_defaults` / `defaults = false`.
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

/// The built-in blocked glob that templates are taken out of.
pub(crate) const DOTENV: &str = "**/.env*";

/// Names `**/.env*` matches that are committed by convention and hold no
/// secret (examples for the real file): the built-in default does not
/// block them (a host's own entries still do).
pub(crate) const DOTENV_TEMPLATES: &[&str] =
    &[".env.example", ".env.sample", ".env.template", ".env.dist"];

/// Blocked for writing only, inside allowed roots too, whether or not they
/// exist yet: a write there becomes code that runs later — at the next
/// shell, `cargo build`, commit, CI run, or agent session. For writes they
/// match in every case and every Windows alias (see `Rules`).
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
    (
        "**/.cargo/config",
        "cargo settings: `build.rustc-wrapper`, runners and aliases run at the next `cargo build`",
    ),
    (
        "**/.cargo/config.toml",
        "cargo settings: `build.rustc-wrapper`, runners and aliases run at the next `cargo build`",
    ),
    (
        "**/rust-toolchain",
        "the toolchain rustup runs for every cargo command here (a path toolchain is any program)",
    ),
    (
        "**/rust-toolchain.toml",
        "the toolchain rustup runs for every cargo command here (a path toolchain is any program)",
    ),
    (
        "**/.github/workflows/**",
        "GitHub Actions workflows: commands CI runs with the repository's secrets",
    ),
    (
        "**/.gitlab-ci.yml",
        "GitLab CI jobs: commands CI runs with the project's secrets",
    ),
    (
        "**/.pre-commit-config.yaml",
        "pre-commit hooks: programs run at the next commit",
    ),
    (
        "**/.husky/**",
        "husky git hooks: scripts run at the next commit",
    ),
    (
        "**/.devcontainer/**",
        "dev-container definitions: images and commands run when the project is opened",
    ),
    (
        "**/.claude/**",
        "Claude Code settings: hooks, allowed commands and MCP servers an agent runs",
    ),
    (
        "**/.codex/**",
        "Codex settings: commands and MCP servers an agent runs",
    ),
    (
        "**/.cursor/**",
        "Cursor settings: rules and MCP servers an agent runs",
    ),
    (
        "**/.gemini/**",
        "Gemini CLI settings: tools and MCP servers an agent runs",
    ),
    (
        "**/.git/info/**",
        "git's per-repository attributes (filters that run programs) and excludes",
    ),
    (
        "**/.gitconfig",
        "git settings that name programs git runs (core.pager, aliases, filters)",
    ),
    (
        "**/agentcaps.toml",
        "agentcaps policy files: a rewritten one (`allowed = [\"/\"]`) is used by the next run or server start",
    ),
    (
        "**/.yarnrc.yml",
        "Yarn settings: `yarnPath` and plugins are programs yarn runs",
    ),
    (
        "**/.yarnrc",
        "Yarn 1 settings: `yarn-path` is a program yarn runs",
    ),
    (
        "**/.pnpmfile.cjs",
        "pnpm hooks: code pnpm runs at every install",
    ),
    ("**/.zshenv", "run by every zsh, interactive or not"),
    ("**/.zprofile", "run by every login zsh"),
    ("**/.zlogin", "run by every login zsh"),
    ("**/.bash_profile", "run by every login bash"),
    ("**/.bash_login", "run by every login bash"),
    ("**/.bash_logout", "run when a login bash exits"),
    (
        "**/.circleci/**",
        "CircleCI jobs: commands CI runs with the project's secrets",
    ),
    (
        "**/.travis.yml",
        "Travis CI jobs: commands CI runs with the project's secrets",
    ),
    (
        "**/azure-pipelines.yml",
        "Azure Pipelines jobs: commands CI runs with the project's secrets",
    ),
    (
        "**/bitbucket-pipelines.yml",
        "Bitbucket Pipelines jobs: commands CI runs with the project's secrets",
    ),
    (
        "**/.buildkite/**",
        "Buildkite pipelines and hooks: commands CI runs with the project's secrets",
    ),
    (
        "**/.github/actions/**",
        "GitHub Actions of the repository: code its workflows run with the repository's secrets",
    ),
    (
        "**/.config/fish/**",
        "fish settings and functions: run by every fish",
    ),
    (
        "**/.config/autostart/**",
        "XDG autostart entries: programs started at the next login",
    ),
    (
        "**/.config/systemd/**",
        "systemd user units: services started at the next login or timer",
    ),
];
