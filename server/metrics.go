package server

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/server/wire"
)

// metrics are the server's Prometheus series, all prefixed nextstate_.
type metrics struct {
	created   *prometheus.CounterVec   // sessions created, by env
	steps     *prometheus.CounterVec   // steps, by env and outcome
	reqTime   *prometheus.HistogramVec // request latency, by method and transport
	errors    *prometheus.CounterVec   // errors, by method, code and fault
	conns     prometheus.Gauge         // open WebSocket connections
	connClose *prometheus.CounterVec   // closed connections, by reason
}

func newMetrics(reg prometheus.Registerer, s *Server) *metrics {
	m := &metrics{
		created: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nextstate_sessions_created_total",
			Help: "Sessions created, by env kind."}, []string{"env"}),
		steps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nextstate_steps_total",
			Help: "Steps taken, by env kind and outcome (ok, terminated, truncated, agent_failure, infra_failure)."}, []string{"env", "outcome"}),
		reqTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "nextstate_request_seconds",
			Help:    "Request latency in the server, from decode to encoded answer, by method and transport.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 4, 12)}, []string{"method", "transport"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nextstate_errors_total",
			Help: "Errors answered, by method and JSON-RPC code."}, []string{"method", "code"}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{Name: "nextstate_ws_connections",
			Help: "Open WebSocket connections."}),
		connClose: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nextstate_ws_closed_total",
			Help: "Closed WebSocket connections, by reason."}, []string{"reason"}),
	}
	live := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nextstate_sessions_live",
		Help: "Live sessions."}, func() float64 { return float64(s.mgr.Len()) })
	last := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nextstate_store_last_seq",
		Help: "The highest event seq committed to the store."}, func() float64 { return float64(s.broker.last.Load()) })
	subs := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nextstate_subscriptions",
		Help: "Live event subscriptions."}, func() float64 { return float64(s.broker.count()) })
	for _, c := range []prometheus.Collector{m.created, m.steps, m.reqTime, m.errors, m.conns, m.connClose, live, last, subs} {
		if err := reg.Register(c); err != nil {
			// A second server in one process (tests) shares the series.
			if _, dup := err.(prometheus.AlreadyRegisteredError); !dup {
				panic(err)
			}
		}
	}
	return m
}

func (m *metrics) sessionCreated(env string) { m.created.WithLabelValues(env).Inc() }

func (m *metrics) stepped(env string, r gym.StepResult) {
	if r.Replayed {
		return
	}
	outcome := "ok"
	switch {
	case r.Failure != nil:
		outcome = string(r.Failure.Fault) + "_failure"
	case r.Terminated:
		outcome = "terminated"
	case r.Truncated:
		outcome = "truncated"
	}
	m.steps.WithLabelValues(env, outcome).Inc()
}

func (m *metrics) request(method, transport string, start time.Time, werr *wire.Error) {
	if method == "" {
		method = "invalid"
	}
	if !knownMethod(method) {
		method = "unknown"
	}
	m.reqTime.WithLabelValues(method, transport).Observe(time.Since(start).Seconds())
	if werr != nil {
		m.rpcError(method, werr.Code)
	}
}

func (m *metrics) rpcError(method string, code int) {
	if method == "" {
		method = "none"
	}
	m.errors.WithLabelValues(method, strconv.Itoa(code)).Inc()
}

func (m *metrics) connClosed(reason string) { m.connClose.WithLabelValues(reason).Inc() }

func knownMethod(name string) bool {
	for _, m := range methods {
		if m == name {
			return true
		}
	}
	return false
}
