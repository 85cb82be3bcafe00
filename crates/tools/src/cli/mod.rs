//! The `agentcaps` command line: argument parsing, policy
//! loading, and dispatch to one module per subcommand.

mod ask;
mod check;
mod fetch;
mod patch;
mod report;
mod run;
mod system;

use std::path::{Path, PathBuf};

use agentcaps::Policy;
use clap::{Args, Parser, Subcommand};

pub(crate) use report::{Exit, Outcome};

const AFTER_HELP: &str = "\
Exit codes: 0 allowed (for `run`: the command ran; its own exit code is in the result),
            3 refused by the policy, 2 usage or policy-file error, 1 anything else.

Without --policy, the built-in default applies: the current directory readable and
writable (.git and **/.env* blocked, plus built-in secrets), the read-only shell preset
with file arguments held to that, web requests to public addresses with GET/HEAD,
and patches under the current directory. `agentcaps check policy` prints it.

Confinement (Linux): `run` and the shell_command tool start every command in a private
view: its own user, mount, PID, IPC and network namespaces (only its own loopback, unless
the shell allows network); only the runtime (read-only), the [files] roots (read-only
ones read-only, writable ones as an overlay), a private /tmp, a private empty home (HOME
and the passwd home: none of your files there), a minimal /dev and its own /proc;
[shell] cache_dirs (development: ~/.cargo/registry, ~/.cargo/git, ~/.cache/pip,
~/.npm/_cacache) are writable there and their writes discarded. Blocked entries inside the roots (.env, keys, blocked dirs) are absent; .git stays
visible to commands. Landlock inside, no_new_privs, no capabilities. When the command
ends, every process it started is killed, and each change it made is judged like a
write_file (.git/hooks, .git/config, .envrc, blocked names in any case, links leaving the
roots, FIFOs/devices, set-id bits, hard links to others' files are refused; hard links
among its own new files land as links) and the allowed ones are committed all-or-none. Results carry `changes.applied` and
`changes.refused` (path, action, rule, reason); `run` lists refused ones on stderr and
exits 0. `enforced` is `full` only when the view, the write-back and Landlock all held;
where user namespaces are unavailable it is `partial` with `enforced_reason` (then only
Landlock and the argument checks hold: a program can read blocked entries inside a root
and write protected ones by itself), and `require_kernel_enforcement = true` in [shell]
refuses to run instead. `check shell` says which mode would apply (it tries: the view
helper creates the namespaces and an overlay once). Known limits: renaming a directory
that existed before fails inside the view (EXDEV; mv copies it: a delete and a create);
a moved file is reported as `rename` (with `from`) only while its bytes and mtime are
unchanged; permission changes of existing directories are refused.

Examples:
  agentcaps check path ../etc/passwd src/main.rs
  agentcaps check shell -- cat ../secret.txt
  agentcaps check system                     # the confinement here; how to get the view
  agentcaps run --command 'ls -la src'
  agentcaps fetch https://docs.rs/
  git diff | agentcaps patch --dry-run -
  agentcaps mcp --policy agentcaps.toml      # MCP server on stdio
  agentcaps mcp --http 127.0.0.1:8765        # MCP server at http://127.0.0.1:8765/mcp";

/// agentcaps: let an LLM agent use files, a shell, the web and patches
/// without reaching what it must not.
#[derive(Debug, Parser)]
#[command(name = "agentcaps", version, after_help = AFTER_HELP)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Ask the policy about a path, a command or a URL, without acting.
    #[command(subcommand)]
    Check(CheckCommand),
    /// Validate a command and run it (no shell), as `shell_command` would.
    Run(RunArgs),
    /// Fetch a URL through the egress policy, as `http_request` would.
    Fetch(FetchArgs),
    /// Apply a unified diff or `*** Begin Patch` envelope atomically.
    Patch(PatchArgs),
    /// Serve the tools over MCP on stdin/stdout, or over HTTP with --http (`agentcaps check policy` shows what they may do).
    Mcp(McpArgs),
}

#[derive(Debug, Subcommand)]
enum CheckCommand {
    /// Would these paths be allowed? (judged where they really lead)
    Path(CheckPathArgs),
    /// Would this command be allowed to run?
    Shell(ShellArgs),
    /// Would this URL be fetched? Resolves the name and judges every address.
    Url(UrlArgs),
    /// Print the effective policy file and its warnings.
    Policy(CommonArgs),
    /// Which confinement this machine gives commands, and how to get the
    /// private view where it is unavailable.
    System(SystemArgs),
}

#[derive(Debug, Args)]
pub(crate) struct SystemArgs {
    /// Print one JSON object instead of text (`view.available`,
    /// `view.causes` with `why` and `enable`, `landlock.abi`, ...).
    #[arg(long)]
    json: bool,
}

/// Options every subcommand takes.
#[derive(Debug, Args)]
pub(crate) struct CommonArgs {
    /// Policy file (TOML). Without it, the built-in default applies.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Print one JSON object instead of text: `decision` is `allow`, `deny`
    /// (refused by the policy, exit 3) or `error` (could not decide or
    /// failed: exit 1, or 2 for usage and policy-file errors), with `rule`
    /// and `reason`.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CheckPathArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Directory relative paths are relative to (default: current directory).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Judge for writing (create or modify) instead of reading.
    #[arg(long)]
    write: bool,
    /// Paths as an agent would write them.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct ShellArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Working directory (default: the policy's working directory).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// The command as one string (POSIX quoting, no expansion, no operators).
    #[arg(long, value_name = "STRING", conflicts_with = "argv")]
    command: Option<String>,
    /// The command as argv, after `--`.
    #[arg(last = true, value_name = "ARGV")]
    argv: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    shell: ShellArgs,
    /// When the policy's `[approvals] ask` lists the refusal's rule, ask on
    /// the terminal (standard input and standard error must both be one;
    /// otherwise the command is refused at once, exit 3).
    #[arg(long)]
    ask: bool,
}

#[derive(Debug, Args)]
pub(crate) struct UrlArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// HTTP method.
    #[arg(long, short = 'X', default_value = "GET", value_name = "M")]
    method: String,
    /// The URL.
    url: String,
}

#[derive(Debug, Args)]
pub(crate) struct FetchArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// HTTP method.
    #[arg(long, short = 'X', default_value = "GET", value_name = "M")]
    method: String,
    /// A request header, `Name: value` (repeatable).
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// Request body.
    #[arg(long, value_name = "STRING")]
    data: Option<String>,
    /// The URL.
    url: String,
}

#[derive(Debug, Args)]
pub(crate) struct PatchArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Directory the patch's paths are relative to (default: current directory).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Report what would change without writing.
    #[arg(long)]
    dry_run: bool,
    /// Strip N leading components from names (default: git's a/ and b/ only).
    #[arg(short = 'p', value_name = "N")]
    strip: Option<usize>,
    /// The patch file, or `-` for standard input (the default).
    #[arg(value_name = "FILE|-", default_value = "-")]
    file: String,
}

#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// Policy file (TOML). Without it, the built-in default applies.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Append the per-call log (JSON lines) to FILE instead of stderr.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Serve MCP over Streamable HTTP at http://ADDR:PORT/mcp instead of
    /// stdio (port 0: any free port; the address is printed on stderr).
    /// A non-loopback address needs --token-file.
    #[arg(long, value_name = "ADDR:PORT")]
    http: Option<std::net::SocketAddr>,
    /// With --http: every request must carry `Authorization: Bearer <token>`,
    /// the token being this file's content (surrounding whitespace ignored).
    #[arg(long, value_name = "FILE", requires = "http")]
    token_file: Option<PathBuf>,
    /// With --http: also accept requests from this browser origin
    /// (`https://app.example.com:443`, `:*` for any port; repeatable).
    /// Loopback origins are always accepted, others get 403.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    allow_origin: Vec<String>,
    /// With --http: also accept this `Host` name (repeatable). Loopback names
    /// and the bound address are always accepted, others get 403.
    #[arg(long, value_name = "HOST", requires = "http")]
    allow_host: Vec<String>,
}

/// Runs the command line; returns the process exit code.
pub(crate) fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                Exit::Usage
            } else {
                Exit::Allowed
            };
            let _ = e.print();
            return code as i32;
        }
    };
    let (json, outcome) = match cli.command {
        Command::Check(CheckCommand::Path(args)) => (args.common.json, check::path(&args)),
        Command::Check(CheckCommand::Shell(args)) => (args.common.json, check::shell(&args)),
        Command::Check(CheckCommand::Url(args)) => (args.common.json, check::url(&args)),
        Command::Check(CheckCommand::Policy(args)) => (args.json, check::policy(&args)),
        Command::Check(CheckCommand::System(args)) => (args.json, system::system(&args)),
        Command::Run(args) => (args.shell.common.json, run::run(&args)),
        Command::Fetch(args) => (args.common.json, fetch::fetch(&args)),
        Command::Patch(args) => (args.common.json, patch::patch(&args)),
        Command::Mcp(args) => (false, mcp(&args)),
    };
    outcome.print(json)
}

/// The process's current directory, made absolute.
fn current_dir() -> Result<PathBuf, Outcome> {
    std::env::current_dir()
        .map_err(|e| Outcome::failed("io", format!("cannot read the current directory: {e}")))
}

/// `dir` made absolute against the current directory (default: it).
fn dir_arg(dir: Option<&Path>) -> Result<PathBuf, Outcome> {
    let cwd = current_dir()?;
    Ok(match dir {
        Some(dir) => cwd.join(dir),
        None => cwd,
    })
}

/// Loads `--policy`, or the built-in default for the current directory.
fn load_policy(policy: Option<&Path>) -> Result<Policy, Outcome> {
    let result = match policy {
        Some(file) => Policy::load(file),
        None => Policy::default_for(&current_dir()?),
    };
    let policy = result.map_err(|e| Outcome::usage("policy", e.to_string()))?;
    for notice in policy.notices() {
        eprintln!("{notice}");
    }
    Ok(policy)
}

/// A current-thread tokio runtime for the async subcommands.
fn runtime() -> Result<tokio::runtime::Runtime, Outcome> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Outcome::failed("io", format!("cannot start the async runtime: {e}")))
}

fn mcp(args: &McpArgs) -> Outcome {
    match mcp_inner(args) {
        Ok(()) => Outcome::quiet(Exit::Allowed),
        Err(outcome) => outcome,
    }
}

fn mcp_inner(args: &McpArgs) -> Result<(), Outcome> {
    let policy = load_policy(args.policy.as_deref())?;
    let base = current_dir()?;
    let log = match &args.log {
        Some(file) => agentcaps_tools::CallLog::file(file).map_err(|e| {
            Outcome::usage(
                "log",
                format!("cannot open log file {}: {e}", file.display()),
            )
        })?,
        None => agentcaps_tools::CallLog::stderr(),
    };
    // Several worker threads: calls run concurrently, and file work goes
    // to the blocking pool, so a slow call never holds another.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Outcome::failed("io", format!("cannot start the async runtime: {e}")))?;
    let http = match args.http {
        Some(addr) => Some((addr, http_options(args)?)),
        None => None,
    };
    rt.block_on(async {
        let toolbox = agentcaps_tools::Toolbox::new(&policy, &base)
            .map_err(|e| Outcome::usage(e.rule(), e.to_string()))?;
        if let Some((addr, options)) = http {
            return serve_http(addr, options, toolbox, log, &policy).await;
        }
        // stderr only: stdout belongs to the protocol.
        eprintln!(
            "agentcaps mcp: serving {} tools over MCP on stdin/stdout, {} (see `agentcaps check policy`); waiting for a client, Ctrl-D to stop",
            toolbox.tools().len(),
            policy.origin()
        );
        agentcaps_tools::McpServer::new(toolbox, log)
            .serve_stdio()
            .await
            .map_err(|e| Outcome::failed("mcp", e.to_string()))
    })
}

/// The HTTP options from the flags (the token read from its file).
fn http_options(args: &McpArgs) -> Result<agentcaps_tools::HttpOptions, Outcome> {
    let mut options = agentcaps_tools::HttpOptions::new();
    if let Some(file) = &args.token_file {
        let token = std::fs::read_to_string(file).map_err(|e| {
            Outcome::usage(
                "token-file",
                format!("cannot read the token file {}: {e}", file.display()),
            )
        })?;
        options = options.token(token.trim());
    }
    for origin in &args.allow_origin {
        options = options.allow_origin(origin);
    }
    for host in &args.allow_host {
        options = options.allow_host(host);
    }
    Ok(options)
}

async fn serve_http(
    addr: std::net::SocketAddr,
    options: agentcaps_tools::HttpOptions,
    toolbox: agentcaps_tools::Toolbox,
    log: agentcaps_tools::CallLog,
    policy: &Policy,
) -> Result<(), Outcome> {
    // Refused before binding: nothing listens on an address it may not.
    options
        .check(addr)
        .map_err(|e| Outcome::usage("http-token", e.to_string()))?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Outcome::usage("http", format!("cannot listen on {addr}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| Outcome::failed("http", e.to_string()))?;
    eprintln!(
        "agentcaps mcp: serving {} tools over MCP at http://{bound}{}, {} (see `agentcaps check policy`){}",
        toolbox.tools().len(),
        agentcaps_tools::MCP_PATH,
        policy.origin(),
        if options.token.is_some() {
            "; requests need the bearer token"
        } else {
            ""
        }
    );
    agentcaps_tools::McpServer::new(toolbox, log)
        .serve_http(listener, options)
        .await
        .map_err(|e| Outcome::failed("mcp", e.to_string()))
}
