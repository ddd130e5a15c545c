// Package admin is the operator's admin API: the delivery targets, the
// channel directory, the outbox, the mirrors, hub-level delivery and the
// status. The web listener mounts it behind its authentication and the admin
// socket of a running hub serves it, as the CLI does in-process when no hub
// runs, so every surface shares one implementation. It also holds the JSON
// response helpers every /api endpoint answers with.
//
// The package knows the outbox and the store, never the router: whoever
// composes the hub hands it the runtime's parts as fields.
package admin
