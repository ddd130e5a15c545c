// Package metrics holds the hub's Prometheus registry and collectors: turns
// and verb calls (through hub.Observer), outbox deliveries, retries and rate
// limits (through outbox.Events), and, read when scraped, the outbox's
// counters and the adapters' states. It also answers the health and
// readiness probes. The hub knows nothing of it: cmd/hub wires it in.
// docs/metrics.md lists every metric.
package metrics
