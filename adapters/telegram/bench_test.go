package telegram

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// BenchmarkTelegramTurns measures whole turns against the fake Bot API with
// every rate limit off: a user's /fs_listdir arrives by getUpdates, the hub
// runs it and records it, the reply goes out through the outbox and the
// sender. Eight chats each send their next command once the previous one
// is answered. Reported: turns/s and the latency from the update being
// available to the reply reaching the fake, p50 and p99.
func BenchmarkTelegramTurns(b *testing.B) {
	f := newFakeBot(b)
	h := startHarness(b, f, hopts{})
	h.waitRunning()
	const chats = 8
	replies := make([]chan telegramtest.Message, chats)
	for i := range replies {
		replies[i] = make(chan telegramtest.Message, 16)
	}
	f.OnSend(func(m telegramtest.Message) {
		c, err := strconv.Atoi(m.ChatID)
		if err == nil && c >= 1 && c <= chats {
			replies[c-1] <- m
		}
	})

	var mu sync.Mutex
	var lat []time.Duration
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range chats {
		n := b.N / chats
		if c < b.N%chats {
			n++
		}
		wg.Go(func() {
			for i := range n {
				msgID := 10 + i
				t0 := time.Now()
				f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), int64(c+1), 1, msgID, "/fs_listdir ."))
				for m := range replies[c] {
					if m.ReplyTo == strconv.Itoa(msgID) {
						break
					}
				}
				d := time.Since(t0)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "turns/s")
	b.ReportMetric(ms(percentile(lat, 0.50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 0.99)), "p99-ms")
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// rateBenchDuration is how long BenchmarkTelegramRateLimits runs: 5 s by
// default, TELEGRAM_RATE_BENCH (a duration such as 60s) for the full run.
func rateBenchDuration(b *testing.B) time.Duration {
	v := os.Getenv("TELEGRAM_RATE_BENCH")
	if v == "" {
		return 5 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("TELEGRAM_RATE_BENCH=%q is not a positive duration such as 60s", v)
	}
	return d
}

// BenchmarkTelegramRateLimits sends to 100 chats through the outbox and the
// sender, with the sender's pacing at Telegram's limits (1 message a second
// per chat, 30 a second in all), against the fake enforcing the same limits
// to the millisecond (it answers 429 to a chat's second message within a
// second, or to the 31st message within a second). There is always more
// queued than the limits allow. Reported: the 429s the fake answered
// (target 0) and the share of the allowed 30/s used (target at least 90%).
//
// The default run lasts 5 s; TELEGRAM_RATE_BENCH=60s gives the full minute.
func BenchmarkTelegramRateLimits(b *testing.B) {
	dur := rateBenchDuration(b)
	const chats, global = 100, 30
	for range b.N {
		f := newFakeBot(b)
		f.SetStrict(0)
		// Telegram's limits without a burst, which the fake does not allow.
		h := startHarness(b, f, hopts{noStart: true, limitsOn: true, rate: &Limits{PerChat: 1, PerChatBurst: 1, PerGroupPerMinute: 20, GlobalPerSecond: global}})

		perChat := int(dur.Seconds()*global/chats*1.5) + 3
		var entries []outbox.Entry
		for i := range perChat {
			for c := range chats {
				key := chat.ChatKey(chat.Telegram, strconv.Itoa(c+1), "")
				split := chat.Split{Chunks: []string{fmt.Sprintf("message %d to chat %d", i, c+1)}}
				entries = append(entries, outbox.NewEntries(outbox.KindNotice, fmt.Sprintf("bench.%d.%d", c+1, i), key, split, nil)...)
			}
		}
		start := time.Now()
		if _, err := h.rt.Outbox.Enqueue(context.Background(), entries); err != nil {
			b.Fatal(err)
		}
		time.Sleep(dur)
		end := start.Add(dur)
		delivered := 0
		for _, m := range f.Messages() {
			if !m.At.After(end) {
				delivered++
			}
		}
		rejected := f.Rejections()
		for _, why := range f.RejectLog() {
			b.Logf("429: %s", why)
		}
		h.stop()
		b.ReportMetric(float64(rejected), "429s")
		b.ReportMetric(100*float64(delivered)/(dur.Seconds()*global), "%-of-allowed")
		b.ReportMetric(float64(delivered)/dur.Seconds(), "msgs/s")
	}
}
