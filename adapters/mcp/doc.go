// Package mcp offers the hub's verbs to Model Context Protocol clients:
// over stdio (`hub mcp`) and over streamable HTTP (/mcp on the web
// listener), through the official Go SDK.
//
// Every tool is a verb, named with '_' for '.' (fs_readFile), with JSON
// Schemas derived from the verb's Go types, a description from its summary
// and annotations from one table (annotations.go). A tools/call is a turn:
// it goes through the hub's Execute, so access is checked and the exchange
// is mirrored like any API call, under the turn id
// mcp.<session>.<request>. A tools/list shows the tools the caller's
// identity may run.
package mcp
