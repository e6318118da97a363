package server

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/wire"
)

// metrics are the server's Prometheus series, all prefixed nextstate_.
type metrics struct {
	created   *prometheus.CounterVec   // sessions created, by env
	steps     *prometheus.CounterVec   // steps, by env and outcome
	reqTime   *prometheus.HistogramVec // request latency, by method and transport
	errors    *prometheus.CounterVec   // errors, by method, code and fault
	conns     prometheus.Gauge         // open WebSocket connections
	connClose *prometheus.CounterVec   // closed connections, by reason

	judgeTime       *prometheus.HistogramVec // judge latency, from submit to result, by result
	trajectories    *prometheus.CounterVec   // complete trajectories with samples, by status
	samplesStored   prometheus.Counter       // samples stored
	samplesStreamed prometheus.Counter       // samples sent to subscribers and HTTP pulls
	sampleSubs      prometheus.Gauge         // open samples streams
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
		judgeTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "nextstate_judge_seconds",
			Help:    "Judge latency, from a step's submission to its result (queue wait included), by result: judged, or the reason it was not (timeout, no_valid_vote, queue_full, bad_input, closed, panic).",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}, []string{"result"}),
		trajectories: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nextstate_trajectories_total",
			Help: "Complete trajectories turned into samples, by status (completed, truncated, aborted; error: building them failed)."}, []string{"status"}),
		samplesStored: prometheus.NewCounter(prometheus.CounterOpts{Name: "nextstate_samples_stored_total",
			Help: "Training samples stored."}),
		samplesStreamed: prometheus.NewCounter(prometheus.CounterOpts{Name: "nextstate_samples_streamed_total",
			Help: "Training samples sent on samples streams and GET /v1/samples."}),
		sampleSubs: prometheus.NewGauge(prometheus.GaugeOpts{Name: "nextstate_sample_subscriptions",
			Help: "Open samples streams."}),
	}
	live := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nextstate_sessions_live",
		Help: "Live sessions."}, func() float64 { return float64(s.mgr.Len()) })
	last := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nextstate_store_last_seq",
		Help: "The highest event seq committed to the store."}, func() float64 { return float64(s.broker.last.Load()) })
	subs := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nextstate_subscriptions",
		Help: "Live event subscriptions."}, func() float64 { return float64(s.broker.count()) })
	queue := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nextstate_judge_queue_depth",
		Help: "Steps waiting for the judge."}, func() float64 { return float64(s.sig.JudgeStats().Queued) })
	inFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nextstate_judge_in_flight",
		Help: "Steps being judged."}, func() float64 { return float64(s.sig.JudgeStats().InFlight) })
	backlog := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nextstate_signals_backlog",
		Help: "Committed events waiting for the signals pipeline."}, func() float64 { return float64(s.sig.Backlog()) })
	lastSample := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nextstate_samples_last_offset",
		Help: "The highest sample offset stored."}, func() float64 { return float64(s.store.LastSampleOffset()) })
	for _, c := range []prometheus.Collector{m.created, m.steps, m.reqTime, m.errors, m.conns, m.connClose, live, last, subs,
		m.judgeTime, m.trajectories, m.samplesStored, m.samplesStreamed, m.sampleSubs, queue, inFlight, backlog, lastSample} {
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

// judged counts a judge result.
func (m *metrics) judged(r rl.JudgeResult) {
	result := r.Reason
	if r.Judged() {
		result = "judged"
	} else if result == "" {
		result = rl.ReasonNoValidVote
	}
	m.judgeTime.WithLabelValues(result).Observe(r.Elapsed.Seconds())
}

// trajectory counts a complete trajectory and its samples.
func (m *metrics) trajectory(status string, samples int) {
	m.trajectories.WithLabelValues(status).Inc()
	m.samplesStored.Add(float64(samples))
}

func knownMethod(name string) bool {
	for _, m := range methods {
		if m == name {
			return true
		}
	}
	return false
}
