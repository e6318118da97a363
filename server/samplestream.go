package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/wire"
)

// sampleSub is one samples stream (events.subscribe with "stream":
// "samples") on one connection. Its pump goroutine reads stored samples
// after the last one sent and sends them in offset order, at most window
// of them unacknowledged; then it waits for samples.ack. It also waits
// while the connection's outbound queue is half full, so a slow reader
// holds up only its own stream: nothing is dropped, and neither the step
// path nor other subscriptions wait for it.
type sampleSub struct {
	id     string
	c      *conn
	filter store.SampleFilter
	window int

	mu       sync.Mutex
	acked    int64   // every sample up to here is acknowledged
	next     int64   // the store is read after max(next, acked)
	sent     int64   // the last offset sent
	inflight []int64 // offsets sent and not acknowledged, ascending
	ended    bool
	wake     chan struct{} // cap 1: an ack came
	quit     chan struct{} // closed when the stream ends
}

// subscribeSamples handles events.subscribe for the samples stream. Like
// subscribeReq it answers the request itself.
func (c *conn) subscribeSamples(req wire.Request, p wire.SubscribeParams) *wire.Error {
	if len(p.Types) > 0 {
		return wire.Errorf(wire.CodeInvalidParams, `"types" filters events; the samples stream takes "run", "env" and "session"`)
	}
	if p.AfterSeq < -1 {
		return wire.Errorf(wire.CodeInvalidParams, `"after_seq" must be -1 (new samples only), 0 (every sample) or an offset`)
	}
	if p.Window == 0 {
		p.Window = wire.DefaultSampleWindow
	}
	if p.Window < 1 || p.Window > wire.MaxSampleWindow {
		return wire.Errorf(wire.CodeInvalidParams, `"window" %d: want 1 to %d samples in flight (default %d)`,
			p.Window, wire.MaxSampleWindow, wire.DefaultSampleWindow)
	}
	last := c.s.store.LastSampleOffset()
	from := p.AfterSeq
	if from < 0 {
		from = last
	}
	ss := &sampleSub{c: c, window: p.Window, acked: from, next: from, sent: from,
		filter: store.SampleFilter{Run: p.Run, Env: p.Env, Session: p.Session},
		wake:   make(chan struct{}, 1), quit: make(chan struct{})}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return wire.Errorf(wire.CodeInternal, "connection closing")
	}
	c.nextSub++
	ss.id = "sub_" + strconv.Itoa(c.nextSub)
	c.samples[ss.id] = ss
	c.mu.Unlock()
	c.s.metrics.sampleSubs.Inc()
	if len(req.ID) > 0 {
		c.send(encodeResponse(req.ID, wire.SubscribeResult{Subscription: ss.id, LastSeq: last}, nil), false)
	}
	c.s.goTracked(ss.pump)
	return nil
}

// pump sends the stream's samples until it ends.
func (ss *sampleSub) pump() {
	defer ss.c.s.metrics.sampleSubs.Dec()
	st := ss.c.s.store
	for {
		changed := st.SamplesChanged() // before reading: no missed wake-up
		ss.mu.Lock()
		room, from, ended := ss.window-len(ss.inflight), max(ss.next, ss.acked), ss.ended
		ss.mu.Unlock()
		if ended {
			return
		}
		last := st.LastSampleOffset()
		if room > 0 && from < last {
			f := ss.filter
			f.AfterOffset, f.Limit = from, room
			page, err := st.Samples(context.Background(), f)
			if err != nil {
				ss.c.s.log.Warn("samples stream: reading the store", "subscription", ss.id, "err", err)
				ss.end("store_error", true)
				return
			}
			for i := range page {
				if !ss.send(&page[i]) {
					return
				}
			}
			if len(page) < room {
				// Nothing else matches up to last: skip the range.
				ss.mu.Lock()
				ss.next = max(ss.next, last)
				ss.mu.Unlock()
			}
			continue
		}
		select {
		case <-ss.wake:
		case <-changed:
		case <-ss.quit:
			return
		case <-ss.c.gone:
			return
		}
	}
}

// send sends one sample once the connection has room for it, and reports
// whether the stream goes on.
func (ss *sampleSub) send(x *store.StoredSample) bool {
	c := ss.c
	for c.queuedBytes() > c.s.cfg.OutboundBytes/2 {
		select {
		case <-c.space:
		case <-ss.quit:
			return false
		case <-c.gone:
			return false
		}
	}
	// The bookkeeping comes first, so that an ack or an unsubscribe that
	// follows the notification sees it.
	ss.mu.Lock()
	if ss.ended {
		ss.mu.Unlock()
		return false
	}
	if x.Offset <= ss.acked {
		ss.mu.Unlock()
		return true // acknowledged while we read it
	}
	ss.sent, ss.next = x.Offset, x.Offset
	ss.inflight = append(ss.inflight, x.Offset)
	ss.mu.Unlock()
	// Not under ss.mu: a send past the connection's cap closes it, and
	// the close ends this stream.
	if !c.send(sampleNotification(ss.id, x.Offset, x.Body), false) {
		return false // the connection closed
	}
	c.s.metrics.samplesStreamed.Inc()
	return true
}

func sampleNotification(sub string, offset int64, body []byte) []byte {
	b := make([]byte, 0, len(body)+128)
	b = append(b, `{"jsonrpc":"2.0","method":"`+wire.NotifySample+`","params":{"subscription":`...)
	b = strconv.AppendQuote(b, sub)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, offset, 10)
	b = append(b, `,"sample":`...)
	b = append(b, body...)
	return append(b, "}}"...)
}

// ack acknowledges every sample up to offset and returns the stream's
// acknowledged offset. An offset past the samples sent acknowledges those
// not sent yet too: the stream goes on after it.
func (ss *sampleSub) ack(offset int64) int64 {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if offset > ss.acked {
		ss.acked = offset
		i := 0
		for i < len(ss.inflight) && ss.inflight[i] <= offset {
			i++
		}
		ss.inflight = ss.inflight[i:]
		select {
		case ss.wake <- struct{}{}:
		default:
		}
	}
	return ss.acked
}

// end stops the stream; notify sends events.ended with the last offset
// sent.
func (ss *sampleSub) end(reason string, notify bool) {
	ss.mu.Lock()
	if ss.ended {
		ss.mu.Unlock()
		return
	}
	ss.ended = true
	close(ss.quit)
	sent := ss.sent
	ss.mu.Unlock()
	ss.c.mu.Lock()
	delete(ss.c.samples, ss.id)
	ss.c.mu.Unlock()
	if notify {
		msg, _ := json.Marshal(wire.Notification{JSONRPC: "2.0", Method: wire.NotifySubscriptionEnded,
			Params: wire.EndedNotification{Subscription: ss.id, Reason: reason, LastSeq: sent}})
		ss.c.send(msg, false)
	}
}

// ackSamples handles samples.ack on a connection.
func (c *conn) ackSamples(p wire.SamplesAckParams) (any, *wire.Error) {
	c.mu.Lock()
	ss, ok := c.samples[p.Subscription]
	c.mu.Unlock()
	if !ok {
		return nil, wire.Errorf(wire.CodeUnknownSub, "unknown samples subscription %q on this connection", p.Subscription)
	}
	if p.Offset < 0 {
		return nil, wire.Errorf(wire.CodeInvalidParams, `"offset" %d: want the offset of a sample received`, p.Offset)
	}
	if last := c.s.store.LastSampleOffset(); p.Offset > last {
		return nil, wire.Errorf(wire.CodeInvalidParams, `"offset" %d is past the last stored sample, %d`, p.Offset, last)
	}
	return wire.SamplesAckResult{Acked: ss.ack(p.Offset)}, nil
}

// samplesHTTP serves GET /v1/samples?after_seq=&limit=&run=&env=&session=&task=
func (s *Server) samplesHTTP(w http.ResponseWriter, r *http.Request) {
	after, limit, err := seqAndLimit(r)
	if err != nil {
		writeHTTPError(w, wire.FromError(err))
		return
	}
	if after < 0 {
		writeHTTPError(w, wire.Errorf(wire.CodeInvalidParams, "after_seq=%d: want 0 (from the first sample) or an offset", after))
		return
	}
	if limit == 0 {
		limit = wire.DefaultSamplesPage
	}
	limit = min(limit, wire.MaxSamplesPage)
	q := r.URL.Query()
	f := store.SampleFilter{Run: q.Get("run"), Env: q.Get("env"), Session: q.Get("session"), Task: q.Get("task"),
		AfterOffset: after, Limit: limit + 1}
	rows, err := s.store.Samples(r.Context(), f)
	if err != nil {
		writeHTTPError(w, wire.Errorf(wire.CodeInternal, "reading samples: %v", err))
		return
	}
	page := wire.SamplesPage{Samples: make([]wire.StoredSample, 0, min(len(rows), limit)), LastSeq: after}
	if len(rows) > limit {
		rows, page.More = rows[:limit], true
	}
	for _, x := range rows {
		page.Samples = append(page.Samples, wire.StoredSample{Offset: x.Offset, Sample: x.Body})
	}
	if n := len(rows); n > 0 {
		page.LastSeq = rows[n-1].Offset
	}
	s.metrics.samplesStreamed.Add(float64(len(rows)))
	writeJSON(w, http.StatusOK, page)
}
