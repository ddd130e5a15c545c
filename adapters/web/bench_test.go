package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkWebTurnLatency measures what a panel user waits for: from POST
// /api/messages to the reply event on the SSE stream, with turns offered
// open-loop at a fixed rate (each sent at its scheduled time, not waiting
// for replies: a late turn does not delay the next ones) and one SSE
// client. turns/s is the rate achieved; it falls below the offered rate
// when the hub (or the client) cannot keep up.
func BenchmarkWebTurnLatency(b *testing.B) {
	for _, rate := range []int{200, 1000} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) { benchTurnLatency(b, rate) })
	}
}

func benchTurnLatency(b *testing.B, rate int) {
	e := newEnv(b, envConfig{opts: func(o *Options) { o.Config.History = 4096 }})
	e.writeFile("probe.txt", "x\n")
	sse := e.openSSE("")
	client := e.ts.Client()
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = 256

	var mu sync.Mutex
	sent := make(map[string]time.Time, b.N)
	lat := make([]time.Duration, 0, b.N)
	allIn := make(chan struct{})
	go func() {
		for ev := range sse.events {
			if ev.Type != EventReply {
				continue
			}
			now := time.Now()
			mu.Lock()
			if t0, ok := sent[ev.TurnID]; ok {
				lat = append(lat, now.Sub(t0))
				delete(sent, ev.TurnID)
				if len(lat) == b.N {
					close(allIn)
				}
			}
			mu.Unlock()
		}
	}()

	body := func(i int) []byte {
		j, _ := json.Marshal(MessageRequest{Text: "/fs.exists probe.txt", ClientTurnID: fmt.Sprintf("bench-%d", i)})
		return j
	}
	var wg sync.WaitGroup
	interval := time.Second / time.Duration(rate)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		// Open loop: turn i is due at start + i×interval; the latency counts
		// from when it was due, so a client that falls behind shows in it.
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		turn := fmt.Sprintf("web.bench-%d", i)
		mu.Lock()
		sent[turn] = due
		mu.Unlock()
		wg.Add(1)
		go func(payload []byte) {
			defer wg.Done()
			req, _ := http.NewRequest("POST", e.ts.URL+"/api/messages", bytes.NewReader(payload))
			req.Header.Set("Authorization", "Bearer "+e.token)
			req.Header.Set("Content-Type", "application/json")
			res, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusAccepted {
				b.Errorf("status %d", res.StatusCode)
			}
		}(body(i))
	}
	wg.Wait()
	select {
	case <-allIn:
	case <-time.After(time.Minute):
		b.Fatalf("only %d of %d replies arrived", len(lat), b.N)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		i := int(p * float64(len(lat)-1))
		return float64(lat[i].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "turns/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkExecuteReadRange measures the agents' protocol: POST
// /api/execute of fs.readRange over real HTTP with keep-alive, from several
// concurrent clients.
func BenchmarkExecuteReadRange(b *testing.B) {
	e := newEnv(b, envConfig{})
	var sb strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&sb, "line %d of a moderately long source file, with some text to read\n", i)
	}
	e.writeFile("big.txt", sb.String())
	payload := []byte(`{"verb":"fs.readRange","arguments":{"path":"big.txt","startLine":1000,"endLine":1040}}`)
	client := e.ts.Client()
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
	b.SetParallelism(4) // 4 × GOMAXPROCS clients
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("POST", e.ts.URL+"/api/execute", bytes.NewReader(payload))
			req.Header.Set("Authorization", "Bearer "+e.token)
			req.Header.Set("Content-Type", "application/json")
			res, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			var r result
			err = json.NewDecoder(res.Body).Decode(&r)
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if err != nil || !r.Succeeded || !strings.HasPrefix(r.Content, "1000: line 1000 ") {
				b.Errorf("bad result: %v %+v", err, r)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}
