//! The `Beneath` suites (what each operation does, and the races) through
//! `openat2`, where the kernel has it.

/// Whether the suites force the component walk.
const COMPONENT_WALK: bool = false;

#[path = "beneath.rs"]
mod beneath;
#[path = "race.rs"]
mod race;
