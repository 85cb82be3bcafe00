//! `Toolbox::call` with arbitrary JSON arguments: a result or a tool error
//! with a short text for the model — never a panic. The policy reaches
//! nothing outside a scratch directory (no network: only a name under
//! `.invalid`, which is never resolved).
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use agentcaps::Policy;
use agentcaps_tools::{MAX_ERROR_CHARS, TOOL_NAMES, Toolbox};
use libfuzzer_sys::fuzz_target;

struct Setup {
    toolbox: Toolbox,
    runtime: tokio::runtime::Runtime,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let dir: PathBuf = std::env::temp_dir().join("agentcaps-fuzz-tools");
        std::fs::create_dir_all(dir.join("src")).expect("scratch dir");
        std::fs::write(dir.join("src/notes.txt"), "alpha\nbeta\n").expect("file");
        let dir = dir.canonicalize().expect("canonical");
        let policy = Policy::from_toml(
            "[files]\nallowed = [\".\"]\n[shell]\nallowed_commands = [\"echo\"]\npath_policy = true\ntimeout_ms = 1000\n[egress]\nallowed_domains = [\"fuzz.invalid\"]\ntimeout_ms = 1000\n",
            &dir,
        )
        .expect("policy");
        let toolbox = Toolbox::new(&policy, &dir).expect("toolbox");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        Setup { toolbox, runtime }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let setup = setup();
    let name = TOOL_NAMES
        .get(usize::from(first) % (TOOL_NAMES.len() + 1))
        .copied()
        .unwrap_or("no_such_tool");
    let arguments = serde_json::from_slice(rest)
        .unwrap_or_else(|_| serde_json::Value::String(String::from_utf8_lossy(rest).into_owned()));
    match setup.runtime.block_on(setup.toolbox.call(name, arguments)) {
        Ok(output) => {
            assert!(
                output.structured.is_object(),
                "{name}: {}",
                output.structured
            );
        }
        Err(error) => {
            let text = error.to_model_text();
            assert!(!text.is_empty());
            assert!(text.chars().count() <= MAX_ERROR_CHARS + 1, "{text}");
        }
    }
});
