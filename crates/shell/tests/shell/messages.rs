//! Refusal messages are an interface to models: pinned with insta.

use agentcaps_shell::CommandRequest;

use crate::fixture::Tree;

fn refusal(tree: &Tree, policy: &str, req: CommandRequest) -> String {
    let err = tree.policy(policy).validate(&req).expect_err("refused");
    let text = format!("[{}] {err}", err.rule());
    let base = tree.root.parent().unwrap().to_string_lossy().into_owned();
    text.replace(&base, "<tmp>")
}

#[test]
fn refusal_messages() {
    let tree = Tree::new();
    let cases: Vec<(&str, &str, CommandRequest)> = vec![
        (
            "shell_operator",
            "files",
            CommandRequest::line("cat notes.txt | sh"),
        ),
        (
            "unterminated_quote",
            "files",
            CommandRequest::line("cat 'notes.txt"),
        ),
        ("empty_command", "files", CommandRequest::line("")),
        (
            "env_assignment",
            "files",
            CommandRequest::line("PAGER=sh git log"),
        ),
        (
            "not_allowed_program",
            "files",
            CommandRequest::argv(["python3"]),
        ),
        (
            "program_path",
            "files",
            CommandRequest::argv(["./cat", "notes.txt"]),
        ),
        (
            "refused_option_cluster",
            "files",
            CommandRequest::argv(["file", "-bC"]),
        ),
        (
            "refused_option_abbreviation",
            "files",
            CommandRequest::argv(["date", "--fil"]),
        ),
        (
            "refused_option_word",
            "files",
            CommandRequest::argv(["find", ".", "-exec", "id", ";"]),
        ),
        (
            "refused_script",
            "files",
            CommandRequest::argv(["sed", "s/a/b/w out", "notes.txt"]),
        ),
        (
            "unknown_option",
            "files",
            CommandRequest::argv(["tree", "-W", "sub"]),
        ),
        (
            "unknown_subcommand",
            "files",
            CommandRequest::argv(["git", "lol", "-x", "id"]),
        ),
        (
            "refused_subcommand",
            "files",
            CommandRequest::argv(["git", "difftool", "-x", "id"]),
        ),
        (
            "git_subcommand_option",
            "files",
            CommandRequest::argv(["git", "rebase", "--exe=id", "HEAD~1"]),
        ),
        (
            "git_unknown_option",
            "files",
            CommandRequest::argv(["git", "status", "--porcelian"]),
        ),
        (
            "git_repository_in_git_dir",
            "files",
            CommandRequest::argv(["git", "clone", "sub", ".git/x"]),
        ),
        (
            "git_pathspec_pattern",
            "files",
            CommandRequest::argv(["git", "checkout", "main", "--", "*.yml"]),
        ),
        (
            "git_clone_write",
            "files",
            CommandRequest::argv(["git", "clone", "sub", ".github/workflows"]),
        ),
        (
            "copy_contents",
            "files",
            CommandRequest::argv(["rsync", "-a", "sub/", "./"]),
        ),
        (
            "remote_operand",
            "files",
            CommandRequest::argv(["rsync", "-a", "sub", "user@host:backup"]),
        ),
        (
            "refused_operand",
            "files",
            CommandRequest::argv(["git", "config", "core.hooksPath", "sub"]),
        ),
        (
            "launcher",
            "files",
            CommandRequest::argv(["env", "cat", "notes.txt"]),
        ),
        (
            "launcher_shell",
            "files",
            CommandRequest::argv(["sh", "-c", "id"]),
        ),
        (
            "shell_unknown_option",
            "files",
            CommandRequest::argv(["dash", "-O", "extglob", "notes.txt"]),
        ),
        (
            "shell_start_up_file",
            "files",
            CommandRequest::argv(["bash", "--rcfile", "notes.txt", "-i"]),
        ),
        (
            "shell_reads_stdin",
            "stdin",
            CommandRequest::argv(["bash"]).with_stdin("id"),
        ),
        (
            "shell_string_glob",
            "unwrap",
            CommandRequest::argv(["bash", "-c", "cat *.txt"]),
        ),
        (
            "make_assignment",
            "files",
            CommandRequest::argv(["make", "SHELL=/tmp/x"]),
        ),
        (
            "path_tail",
            "files",
            CommandRequest::argv(["cat", "-iflout"]),
        ),
        ("path_whole", "files", CommandRequest::argv(["cat", ".env"])),
        (
            "working_directory",
            "files",
            CommandRequest::argv(["ls"]).with_cwd("../outside"),
        ),
        (
            "argument_too_long",
            "files",
            CommandRequest::argv(["cat".to_owned(), "a".repeat(5000)]),
        ),
        (
            "env_var_not_allowed",
            "files",
            CommandRequest::argv(["cat"]).with_env("X", "1"),
        ),
        (
            "env_var_refused",
            "agent-env",
            CommandRequest::argv(["cat"]).with_env("LD_PRELOAD", "x"),
        ),
        (
            "sed_label_then_command",
            "files",
            CommandRequest::argv(["sed", ":x e touch PWNED", "notes.txt"]),
        ),
        (
            "sed_ambiguous_bracket",
            "files",
            CommandRequest::argv(["sed", "s/[[:alpha:]/]/X/", "notes.txt"]),
        ),
        (
            "awk_file_list",
            "files",
            CommandRequest::argv(["awk", "BEGIN { ARGV[1] = \"x\" }"]),
        ),
        (
            "awk_pieces",
            "files",
            CommandRequest::argv(["gawk", "-e", "BEGIN {", "-e", "}"]),
        ),
        (
            "awk_unreadable",
            "files",
            CommandRequest::argv(["awk", "{ x = `id` }"]),
        ),
        (
            "make_shell_assignment",
            "files",
            CommandRequest::argv(["make", "V!=id"]),
        ),
        (
            "env_var_makefiles",
            "agent-env",
            CommandRequest::argv(["make"]).with_env("MAKEFILES", "evil.mk"),
        ),
        (
            "env_var_rustup_toolchain",
            "agent-env",
            CommandRequest::argv(["cat"]).with_env("RUSTUP_TOOLCHAIN", "/tmp/t"),
        ),
        (
            "git_bare",
            "files",
            CommandRequest::argv(["git", "--bare", "fetch"]),
        ),
        (
            "git_object_name_blocked",
            "files",
            CommandRequest::argv(["git", "show", "HEAD:.env"]),
        ),
        (
            "curl_config",
            "files",
            CommandRequest::argv(["curl", "-K", "notes.txt", "http://127.0.0.1:9/"]),
        ),
        (
            "curl_upload_pattern",
            "files",
            CommandRequest::argv(["curl", "-T", "{a,b}", "http://127.0.0.1:9/"]),
        ),
        (
            "curl_data_file_blocked",
            "files",
            CommandRequest::argv(["curl", "-d", "@.env", "http://127.0.0.1:9/"]),
        ),
        (
            "curl_remote_name",
            "files",
            CommandRequest::argv(["curl", "-O", "http://127.0.0.1:9/x"]),
        ),
    ];
    for (name, policy, req) in cases {
        insta::assert_snapshot!(name, refusal(&tree, policy, req));
    }
}

#[test]
fn too_costly_message() {
    let tree = Tree::new();
    let mut argv = vec!["cat".to_owned()];
    argv.extend((0..25_000).map(|i| format!("f{i}")));
    insta::assert_snapshot!(
        "too_costly",
        refusal(&tree, "files", CommandRequest::argv(argv))
    );
}
