/* A stand-in for the macOS SDK's TargetConditionals.h, which is all of
 * Apple's SDK that ring's C asks for: the macros it reads, as macOS sets
 * them. Used only by `cargo clippy` for the Apple targets in .ci/platforms
 * (nothing is linked there). */
#ifndef AGENTCAPS_CI_TARGET_CONDITIONALS_H
#define AGENTCAPS_CI_TARGET_CONDITIONALS_H
#define TARGET_OS_MAC 1
#define TARGET_OS_OSX 1
#define TARGET_OS_IPHONE 0
#endif
