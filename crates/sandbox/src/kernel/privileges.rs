//! Capabilities: Landlock does not take them away, so a host running with
//! privileges (as root) would hand them to every command — loading kernel
//! modules, raw sockets, `chown` of any file, BPF. The confining thread
//! empties its capability sets before it spawns, so the command runs
//! without any, and `no_new_privs` keeps it from regaining them.

use std::io;

use rustix::io::Errno;
use rustix::thread::{
    CapabilitySet, CapabilitySets, capabilities, clear_ambient_capability_set,
    remove_capability_from_bounding_set, set_capabilities,
};

/// Empties the calling thread's bounding, ambient, inheritable, permitted
/// and effective capability sets, if it has any capability at all: a
/// program it then runs, even as root, starts with none.
///
/// # Errors
///
/// The error of `capget`/`prctl`/`capset` (then nothing may be spawned).
pub(super) fn drop_all_capabilities() -> io::Result<()> {
    let current = capabilities(None)?;
    if current.permitted.is_empty() && current.effective.is_empty() {
        // Unprivileged: nothing to lose, and with `no_new_privs` nothing to
        // gain from set-user-ID programs or file capabilities either.
        return Ok(());
    }
    // Needs CAP_SETPCAP, so before the permitted set goes. Capabilities this
    // kernel does not know answer EINVAL.
    for capability in CapabilitySet::all().iter() {
        match remove_capability_from_bounding_set(capability) {
            Ok(()) | Err(Errno::INVAL) => {}
            Err(error) => return Err(error.into()),
        }
    }
    clear_ambient_capability_set()?;
    set_capabilities(
        None,
        CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        },
    )?;
    Ok(())
}
