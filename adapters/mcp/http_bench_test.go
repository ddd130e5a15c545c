package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
)

// bearer adds an agent's token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// BenchmarkHTTPToolCall is /mcp over HTTP as `hub serve` mounts it: 1, 8
// and 64 sessions of the official Go client, each calling fs_exists one
// call at a time, all at once; it reports the calls' p50 and p99.
// go test -run '^$' -bench HTTPToolCall -benchtime 2000x ./adapters/mcp/
func BenchmarkHTTPToolCall(b *testing.B) {
	url, env := webHub(b, clock.Real{}, func(c *config.Config) {
		c.MCP.MaxSessions, c.MCP.MaxSessionsPerAgent, c.MCP.MaxStreamsPerAgent = 256, 128, 256
	})
	env.WriteFile(b, "small.txt", "x")
	ctx := context.Background()
	for _, n := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			var sessions []*mcp.ClientSession
			for range n {
				c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil)
				cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{adminToken}}, DisableStandaloneSSE: true}, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer cs.Close()
				sessions = append(sessions, cs)
			}
			calls := make(chan struct{})
			var mu sync.Mutex
			lat := make([]time.Duration, 0, b.N)
			var wg sync.WaitGroup
			for _, cs := range sessions {
				wg.Go(func() {
					for range calls {
						t0 := time.Now()
						r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs_exists", Arguments: map[string]any{"path": "small.txt"}})
						d := time.Since(t0)
						if err != nil || r.IsError {
							b.Errorf("fs_exists: %v %+v", err, r)
						}
						mu.Lock()
						lat = append(lat, d)
						mu.Unlock()
					}
				})
			}
			b.ResetTimer()
			t0 := time.Now()
			for range b.N {
				calls <- struct{}{}
			}
			close(calls)
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "calls/s")
			slices.Sort(lat)
			ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))]) / 1e6 }
			b.ReportMetric(ms(0.5), "p50-ms")
			b.ReportMetric(ms(0.99), "p99-ms")
		})
	}
}
