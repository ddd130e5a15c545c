// Package web is the web surface of the hub: the chat panel (static files
// embedded in the binary), the HTTP API that agents use (POST /api/execute),
// chat messages from the panel (POST /api/messages), a Server-Sent Events
// stream of the web conversation (GET /api/events), and the admin endpoints
// of the admin API (package admin) behind the same authentication.
//
// Every /api/ route but /api/login needs the bearer token or the login
// cookie; state-changing requests must come from the listener's own origin.
// Replies reach the panel through Server.Sender, the outbox.Sender of the
// "web" target: a delivered chunk is an event in a bounded ring that clients
// resume from with Last-Event-ID. The progress of long calls from the panel
// (Server.ProgressView) is a progress event updated in place, and POST
// /api/cancel stops a running call.
package web
