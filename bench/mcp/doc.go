// Package mcp holds the side-by-side benchmark of `hub exec --stdio` and the
// MCP reference filesystem server (@modelcontextprotocol/server-filesystem,
// pinned in package.json): the same reads, range reads, listings and writes
// on the same files, one request at a time over each one's stdio protocol;
// and the same comparison with MCP on both sides (`hub mcp`); and fs.find
// against the server's search_files on the Go toolchain's source tree.
// The benchmark lives in mcp_test.go; `make bench-deps` installs the server.
package mcp
