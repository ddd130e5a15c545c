package mcp

// DirectCalls is the number of tools/call the direct path of s has taken
// (fastcall.go), for the tests that tell which path answered.
func DirectCalls(s *Server) uint64 { return s.directCalls.Load() }
