package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/internal/netlimit"
	"github.com/a6afc2ce/hermes-hub/metrics"
)

// metricsMaxConns caps the connections of a separate metrics listener: a
// scraper or two.
const metricsMaxConns = 16

// serveMetrics serves GET /metrics of m on addr, without authentication,
// until ctx is done (metrics.listen). It returns once listening; stop waits
// for the server to end.
func serveMetrics(ctx context.Context, addr string, m *metrics.Metrics, logger *slog.Logger) (stop func(), err error) {
	tcp, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	ln := netlimit.NewListener(tcp, netlimit.Limits{MaxConns: metricsMaxConns, MaxPerClient: metricsMaxConns})
	logger.Info("metrics listening (no authentication)", "addr", ln.Addr().String())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics listener stopped", "err", err)
		}
	}()
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-stopped:
		}
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return func() {
		select {
		case <-stopped:
		default:
			close(stopped)
		}
		<-done
	}, nil
}

// webMetrics is the handler of /metrics on the web listener: m's, unless
// metrics.listen serves them elsewhere.
func webMetrics(cfg *config.Config, m *metrics.Metrics) http.Handler {
	if cfg.Metrics.Listen != "" {
		return nil
	}
	return m.Handler()
}
