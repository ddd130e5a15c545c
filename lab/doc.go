// Package lab is the hub's reliability lab: it runs a real `hub serve`
// process against the fake Telegram (telegramtest) and fake Discord
// (discordtest) and its own web client, plays a scenario of inbound turns
// and faults (duplicated updates and interactions, 429 schedules, 5xx
// bursts, slow and hung platform answers, a platform down then back, the hub
// killed with SIGKILL and restarted, a full mirror directory, corrupted
// state files), waits for the hub to settle, and checks invariants over
// what the fakes received, what the hub's outbox says and what the mirrors
// recorded.
//
// Scenarios are YAML files under scenarios/ (see Scenario for the format).
// `go test ./lab/` runs the short version of every scenario; the
// ten-minute soak runs only with LAB_SOAK=1 (`make soak`).
//
// The invariants, checked after every scenario (see Check):
//
//   - delivered: every chunk the hub enqueued was delivered or is a dead
//     letter (nothing is pending once the hub is quiet), and every chunk
//     the outbox marks delivered was received by its platform, with the
//     platform message id the outbox recorded;
//   - answered: every turn that reached the hub got exactly one answer (its
//     reply, or the notice that a restart cut it short);
//   - no duplicates: no chunk was received twice, except at most one per
//     target per SIGKILL (the send whose delivered mark the kill
//     prevented) and one per target per cut of its platform's connections
//     (a request the platform acted on whose answer was lost), counted and
//     reported; Discord channel messages repeated with the same nonce
//     create nothing and are only counted;
//   - order: per target, the chunks of a turn arrive in index order and
//     together, and the turns of an ordered source (a Telegram chat, the
//     messages of a Discord channel, the web panel's sequential client)
//     are answered in the order they were sent;
//   - mirrored: every turn that reached the hub is in the inbound mirror,
//     and every delivered or dead chunk is in the outbound mirror (as its
//     kind, or "dead"); the exceptions are counted: records lost while the
//     mirror directory was full (when the scenario allows it), and at most
//     one outbound record per target per SIGKILL (the outbox writes the
//     record before the delivered mark, so this stays 0 unless that
//     changes);
//   - at most once: a side-effecting turn's marker appears at most once in
//     the workspace, and exactly once when the turn's reply says it ran;
//   - uploads: a file saved from an upload turn holds exactly what it
//     sent, once, and no save cut short by a kill leaves a temporary file
//     once the next upload has run (files.go);
//   - alive: the hub answers a final turn on every platform and its admin
//     API, never panicked or reported a data race, and stops cleanly.
package lab
