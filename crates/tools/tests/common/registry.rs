//! Stand-ins of package registries, as files for a static server: a
//! sparse cargo registry holding `tiny 0.1.0` and an npm package document
//! for `leftpad 1.0.0`.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

const SCRIPT: &str = r#"
import gzip, hashlib, io, json, os, sys, tarfile
srv, base, auth = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
def put(rel, data):
    path = os.path.join(srv, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "wb").write(data if isinstance(data, bytes) else data.encode())
raw = io.BytesIO()
with tarfile.open(fileobj=raw, mode="w") as t:
    for name, text in {
        "tiny-0.1.0/Cargo.toml": '[package]\nname = "tiny"\nversion = "0.1.0"\nedition = "2021"\n',
        "tiny-0.1.0/src/lib.rs": "pub fn tiny() -> u8 { 1 }\n",
    }.items():
        info = tarfile.TarInfo(name); info.size = len(text); info.mode = 0o644
        t.addfile(info, io.BytesIO(text.encode()))
crate = gzip.compress(raw.getvalue())
put("dl/tiny-0.1.0.crate", crate)
config = {"dl": base + "/dl/{crate}-{version}.crate", "api": None}
if auth:
    config["auth-required"] = True
put("index/config.json", json.dumps(config))
put("index/ti/ny/tiny", json.dumps({"name": "tiny", "vers": "0.1.0", "deps": [],
    "cksum": hashlib.sha256(crate).hexdigest(), "features": {}, "yanked": False}) + "\n")
put("npm/leftpad", json.dumps({"_id": "leftpad", "name": "leftpad", "dist-tags": {"latest": "1.0.0"},
    "versions": {"1.0.0": {"name": "leftpad", "version": "1.0.0", "description": "pads on the left",
        "dist": {"tarball": base + "/npm/leftpad-1.0.0.tgz", "shasum": "0" * 40}}},
    "time": {"created": "2020-01-01T00:00:00.000Z", "modified": "2020-01-01T00:00:00.000Z",
        "1.0.0": "2020-01-01T00:00:00.000Z"}}))
"#;

/// Writes under `srv` the cargo registry (`index/`, `dl/`; with
/// `auth_required`, its `config.json` says so) and the npm document
/// (`npm/leftpad`), for a server at `base` (`scheme://host:port`).
pub fn cargo_and_npm(srv: &Path, base: &str, auth_required: bool) {
    let auth = if auth_required { "1" } else { "0" };
    python(SCRIPT, &[srv.as_os_str(), base.as_ref(), auth.as_ref()]);
}

/// Runs the Python `script` with `args`, which must succeed.
pub fn python(script: &str, args: &[&OsStr]) {
    let out = Command::new("python3")
        .args(["-c", script])
        .args(args)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
