//! Nothing outlives the command; nothing of the host is reachable.
