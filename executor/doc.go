// Package executor holds the verb registry and everything that turns text into
// a typed verb call and back: envelope decoding (YAML normalised to JSON,
// strict), Execute, schema derivation into the IDL and a structured form, and
// the chat command grammar shared by every surface. RenderText turns an
// outcome into the text chat shows: result types render themselves
// (Renderer), from their typed fields and the call's typed arguments.
//
// It never touches the filesystem or spawns processes; verbs do that.
package executor
