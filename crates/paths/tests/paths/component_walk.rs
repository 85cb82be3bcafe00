//! The same `Beneath` suites through the component walk (one `O_NOFOLLOW`
//! open per name): the mechanism of macOS, and of Linux where `openat2` is
//! missing (old kernels, seccomp filters).

/// Whether the suites force the component walk.
const COMPONENT_WALK: bool = true;

#[path = "beneath.rs"]
mod beneath;
#[path = "race.rs"]
mod race;
