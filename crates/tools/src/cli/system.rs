//! `agentcaps check system`: which confinement this machine gives a
//! command, and where the private view is unavailable, why and how to
//! enable it (the commands to run, ready to paste).

use std::path::{Path, PathBuf};

use agentcaps::paths::PathPolicy;
use agentcaps::shell::kernel::{self, Enforcement};
use agentcaps_sandbox::{Sandbox, ViewAvailability};
use serde_json::{Value, json};

use super::{Outcome, SystemArgs, current_dir};

/// What the system says about user namespaces, read from `/proc`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Facts {
    /// `kernel.unprivileged_userns_clone` (Debian and older Ubuntu
    /// kernels): `0` forbids unprivileged user namespaces.
    pub(crate) unprivileged_userns_clone: Option<u64>,
    /// `user.max_user_namespaces`: `0` forbids every new one.
    pub(crate) max_user_namespaces: Option<u64>,
    /// `kernel.apparmor_restrict_unprivileged_userns` (Ubuntu 23.10 and
    /// later): `1` lets only programs with an AppArmor profile granting
    /// `userns` create them.
    pub(crate) apparmor_restrict: Option<u64>,
    /// The `Seccomp:` mode of this process (`2`: a filter is installed).
    pub(crate) seccomp: Option<u64>,
    /// Signs of a container (`/.dockerenv`, `/run/.containerenv`, the
    /// `container` variable).
    pub(crate) container: bool,
}

impl Facts {
    /// Reads them on this machine.
    pub(crate) fn read() -> Self {
        let number = |path: &str| {
            std::fs::read_to_string(path)
                .ok()
                .and_then(|text| text.trim().parse().ok())
        };
        let seccomp = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|status| {
                status.lines().find_map(|line| {
                    line.strip_prefix("Seccomp:")
                        .and_then(|v| v.trim().parse().ok())
                })
            });
        Self {
            unprivileged_userns_clone: number("/proc/sys/kernel/unprivileged_userns_clone"),
            max_user_namespaces: number("/proc/sys/user/max_user_namespaces"),
            apparmor_restrict: number("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
            seccomp,
            container: Path::new("/.dockerenv").exists()
                || Path::new("/run/.containerenv").exists()
                || std::env::var_os("container").is_some(),
        }
    }
}

/// One reason the view is unavailable, and the steps that lift it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cause {
    /// What stops it, in one sentence.
    pub(crate) why: String,
    /// Commands (or file contents) to run or install, in order.
    pub(crate) enable: Vec<String>,
}

/// The AppArmor profile that lets `binary` create user namespaces.
pub(crate) fn apparmor_profile(binary: &Path) -> String {
    format!(
        "abi <abi/4.0>,\ninclude <tunables/global>\n\nprofile agentcaps {} flags=(unconfined) {{\n  userns,\n\n  include if exists <local/agentcaps>\n}}\n",
        binary.display()
    )
}

fn sysctl_steps(key: &str, value: &str) -> Vec<String> {
    vec![
        format!("sudo sysctl -w {key}={value}"),
        format!("echo '{key} = {value}' | sudo tee /etc/sysctl.d/60-agentcaps-userns.conf"),
    ]
}

/// Why user namespaces are refused here, from `facts`, for the
/// `agentcaps` binary at `binary`. Empty when nothing known explains it.
pub(crate) fn causes(facts: &Facts, binary: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    if facts.unprivileged_userns_clone == Some(0) {
        out.push(Cause {
            why: "the sysctl kernel.unprivileged_userns_clone is 0: only root may create user namespaces".to_owned(),
            enable: sysctl_steps("kernel.unprivileged_userns_clone", "1"),
        });
    }
    if facts.max_user_namespaces == Some(0) {
        out.push(Cause {
            why: "the sysctl user.max_user_namespaces is 0: no user namespace can be created"
                .to_owned(),
            enable: sysctl_steps("user.max_user_namespaces", "15000"),
        });
    }
    if facts.apparmor_restrict == Some(1) {
        let file = "/etc/apparmor.d/agentcaps";
        out.push(Cause {
            why: format!(
                "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1, Ubuntu 23.10 and later) and no profile grants `userns` to {}",
                binary.display()
            ),
            enable: vec![
                format!(
                    "sudo tee {file} <<'EOF'\n{}EOF",
                    apparmor_profile(binary)
                ),
                format!("sudo apparmor_parser -r {file}"),
            ],
        });
    }
    if facts.seccomp == Some(2) && facts.container && out.is_empty() {
        out.push(Cause {
            why: "this process runs under a seccomp filter in a container, whose default profile refuses unshare(CLONE_NEWUSER)".to_owned(),
            enable: vec![
                "docker run --security-opt seccomp=unconfined --security-opt apparmor=unconfined ...   (or a seccomp profile that allows unshare and clone with CLONE_NEWUSER)".to_owned(),
                "podman run --security-opt seccomp=unconfined ...".to_owned(),
            ],
        });
    }
    out
}

/// `check system`.
pub(crate) fn system(_args: &SystemArgs) -> Outcome {
    let binary = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .unwrap_or_else(|_| PathBuf::from("/usr/local/bin/agentcaps"));
    let root = current_dir().unwrap_or_else(|_| std::env::temp_dir());
    let sandbox = match PathPolicy::builder().allow(&root).build() {
        Ok(paths) => Sandbox::builder().path_policy(Some(paths)).build(),
        Err(e) => return Outcome::failed("io", e.to_string()),
    };
    let (enforced, reason) = sandbox.planned_enforcement(Path::new("/bin/sh"));
    let available = sandbox.view_availability() == ViewAvailability::Available;
    report(
        &enforced,
        reason.as_deref(),
        available,
        &Facts::read(),
        &binary,
    )
}

/// The report for what `planned_enforcement` and the probe said here.
pub(crate) fn report(
    enforced: &Enforcement,
    reason: Option<&str>,
    view_available: bool,
    facts: &Facts,
    binary: &Path,
) -> Outcome {
    let abi = kernel::kernel_abi();
    let unavailable = !view_available;
    let causes = if unavailable && cfg!(target_os = "linux") {
        causes(facts, binary)
    } else {
        Vec::new()
    };
    let seatbelt = cfg!(target_os = "macos") && Path::new(kernel::seatbelt::SANDBOX_EXEC).exists();
    let mut lines = vec![format!(
        "confinement here: {enforced}{}",
        reason.map(|r| format!(" ({r})")).unwrap_or_default()
    )];
    if cfg!(target_os = "linux") {
        lines.push(if unavailable {
            "private view: unavailable".to_owned()
        } else {
            "private view: available (own namespaces, judged write-back)".to_owned()
        });
        lines.push(match abi {
            0 => "Landlock: not offered by this kernel (enable the `landlock` LSM: add it to `lsm=` on the kernel command line)".to_owned(),
            abi => format!(
                "Landlock: ABI {abi} (full confinement needs ABI {} or later)",
                kernel::FULL_ABI
            ),
        });
    } else {
        lines.push("private view: Linux only".to_owned());
    }
    lines.push(if seatbelt {
        "Seatbelt: yes (sandbox-exec)".to_owned()
    } else {
        "Seatbelt: no (macOS only)".to_owned()
    });
    lines.push(if cfg!(windows) {
        "Job object: yes (the command's whole tree is killed together; nothing else is enforced)"
            .to_owned()
    } else {
        "Job object: no (Windows only)".to_owned()
    });
    if unavailable && cfg!(target_os = "linux") {
        if causes.is_empty() {
            lines.push(
                "why: none of the known switches (user.max_user_namespaces, kernel.unprivileged_userns_clone, AppArmor's userns restriction, a container's seccomp filter) explains it; the reason above is what the view helper's probe met".to_owned(),
            );
        }
        for cause in &causes {
            lines.push(format!("why: {}", cause.why));
            lines.push("to enable it:".to_owned());
            for step in &cause.enable {
                for line in step.lines() {
                    lines.push(format!("  {line}"));
                }
            }
        }
    }
    let causes_json: Vec<Value> = causes
        .iter()
        .map(|c| json!({"why": c.why, "enable": c.enable}))
        .collect();
    let summary = lines.first().cloned().unwrap_or_default();
    Outcome::allowed(summary)
        .text(lines.join("\n"))
        .with("enforced", json!(enforced.to_string()))
        .with("enforced_reason", json!(reason))
        .with(
            "view",
            json!({
                "available": !unavailable,
                "causes": causes_json,
            }),
        )
        .with(
            "landlock",
            json!({"abi": abi, "full_abi": kernel::FULL_ABI}),
        )
        .with("seatbelt", json!({"available": seatbelt}))
        .with("job_object", json!({"available": cfg!(windows)}))
        .with(
            "facts",
            json!({
                "kernel.unprivileged_userns_clone": facts.unprivileged_userns_clone,
                "user.max_user_namespaces": facts.max_user_namespaces,
                "kernel.apparmor_restrict_unprivileged_userns": facts.apparmor_restrict,
                "seccomp": facts.seccomp,
                "container": facts.container,
            }),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    const BIN: &str = "/usr/local/bin/agentcaps";

    #[test]
    fn nothing_known_gives_no_cause() {
        assert!(causes(&Facts::default(), Path::new(BIN)).is_empty());
        let open = Facts {
            unprivileged_userns_clone: Some(1),
            max_user_namespaces: Some(63_000),
            apparmor_restrict: Some(0),
            seccomp: Some(0),
            container: false,
        };
        assert!(causes(&open, Path::new(BIN)).is_empty());
    }

    #[test]
    fn each_switch_is_named_with_its_fix() {
        let facts = Facts {
            unprivileged_userns_clone: Some(0),
            max_user_namespaces: Some(0),
            ..Facts::default()
        };
        let found = causes(&facts, Path::new(BIN));
        assert_eq!(found.len(), 2);
        assert!(found[0].why.contains("kernel.unprivileged_userns_clone"));
        assert_eq!(
            found[0].enable[0],
            "sudo sysctl -w kernel.unprivileged_userns_clone=1"
        );
        assert!(found[1].why.contains("user.max_user_namespaces"));
        assert_eq!(
            found[1].enable[0],
            "sudo sysctl -w user.max_user_namespaces=15000"
        );
    }

    #[test]
    fn ubuntu_apparmor_gets_a_profile_for_the_installed_binary() {
        let facts = Facts {
            apparmor_restrict: Some(1),
            ..Facts::default()
        };
        let found = causes(&facts, Path::new(BIN));
        assert_eq!(found.len(), 1);
        assert!(found[0].why.contains(BIN), "{}", found[0].why);
        let install = &found[0].enable[0];
        assert!(install.starts_with("sudo tee /etc/apparmor.d/agentcaps <<'EOF'\n"));
        assert!(install.contains(&format!("profile agentcaps {BIN} flags=(unconfined) {{")));
        assert!(install.contains("\n  userns,\n"));
        assert!(install.ends_with("}\nEOF"));
        assert_eq!(
            found[0].enable[1],
            "sudo apparmor_parser -r /etc/apparmor.d/agentcaps"
        );
    }

    #[test]
    fn a_container_seccomp_filter_is_named_only_when_nothing_else_explains_it() {
        let facts = Facts {
            seccomp: Some(2),
            container: true,
            ..Facts::default()
        };
        let found = causes(&facts, Path::new(BIN));
        assert_eq!(found.len(), 1);
        assert!(found[0].why.contains("seccomp"));
        assert!(found[0].enable[0].contains("seccomp=unconfined"));
        let outside = Facts {
            seccomp: Some(2),
            ..Facts::default()
        };
        assert!(causes(&outside, Path::new(BIN)).is_empty());
        let both = Facts {
            max_user_namespaces: Some(0),
            ..facts
        };
        assert_eq!(causes(&both, Path::new(BIN)).len(), 1);
    }
}
