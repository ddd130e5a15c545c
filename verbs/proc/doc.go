// Package proc runs proc.run's programs on the host: one program per Run,
// without a shell, in a process tree of its own that nothing it starts can
// leave, within limits, as the user the configuration names.
//
// On Linux every program starts through a supervisor: the hub's own
// executable started again in a hidden mode (MaybeRunSupervisor, called
// first thing in main, serves it). The supervisor is the tree's subreaper,
// so it owns every process the program starts, even one that calls setsid
// or double-forks; it counts them against Limits.MaxProcs, and it kills
// them all when the program exits, when the hub asks (the call's timeout
// or cancellation, hub stop) and when the hub dies (the parent-death
// signal). Between the supervisor and the program an exec stage lowers the
// memory and CPU limits, which every process inherits, and changes to the
// program's user last. Neither the supervisor nor the exec stage keeps
// anything of the hub's environment the program does not get.
//
// Elsewhere, and in a binary that never calls MaybeRunSupervisor (other
// packages' tests), the program runs directly as a plain process group
// (macOS) or job object (Windows), killed as a whole.
//
// ChooseUser decides whom programs run as: a hub running as root never
// runs them as root unless the configuration says so. docs/security.md
// ("Child processes") states what holds for operators.
package proc
