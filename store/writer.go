package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/nextstate-rl/nextstate/gym"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// request is one queued Append: the stored form of the event, its JSON, and
// where the writer reports the outcome.
type request struct {
	ev   *gym.Event
	body string
	done chan error // buffered: the writer never waits on a caller
}

// Append records ev durably and sets ev.Seq. It returns nil once the event is
// committed (see the package doc for what that survives), ErrClosed after
// Close, the context's error if ctx ends first, or the error that failed the
// write. A context that ends after the event was queued leaves the outcome
// open: the event may still be committed.
//
// Append changes nothing in ev but Seq: images and files it moves to blobs
// are replaced in a copy, and a zero Time is set to the current time in the
// stored form only. The stored form (what OnCommit sees) is a shallow copy
// of ev that shares its Action, Observation, Info and other pointers, so
// what ev points to must not be modified once Append is called.
func (s *Store) Append(ctx context.Context, ev *gym.Event) error {
	if ev == nil {
		return errors.New("store: Append of a nil event")
	}
	if s.readOnly {
		return ErrReadOnly
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.isClosing() {
		return ErrClosed
	}
	stored, err := s.storedForm(ev)
	if err != nil {
		return err
	}
	body, err := json.Marshal(stored)
	if err != nil {
		return fmt.Errorf("store: encode %s event of session %s: %w", ev.Type, ev.Session, err)
	}
	// body is never written again, so it can back a string without a copy.
	req := &request{ev: stored, body: unsafe.String(unsafe.SliceData(body), len(body)), done: make(chan error, 1)}

	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	select {
	case s.queue <- req:
	case <-ctx.Done():
		s.mu.RUnlock()
		return ctx.Err()
	case <-s.closing:
		s.mu.RUnlock()
		return ErrClosed
	}
	s.mu.RUnlock()

	select {
	case err := <-req.done:
		if err == nil {
			ev.Seq = stored.Seq
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// seqZero is how every stored body begins: gym.Event's first field is its
// seq, 0 in the body (the seq column holds it).
const seqZero = `{"seq":0,`

// AppendJSON appends to dst the JSON of a committed event, from the body
// OnCommit gave with it: json.Marshal's encoding of the event with its Seq,
// byte for byte, made without encoding it again.
func AppendJSON(dst []byte, body string, seq int64) []byte {
	if !strings.HasPrefix(body, seqZero) {
		panic("store: AppendJSON of a body OnCommit did not give")
	}
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, seq, 10)
	return append(dst, body[len(seqZero)-1:]...)
}

// storedForm returns the event as it is stored: a shallow copy with Seq
// cleared, Time set if zero, and large images and files moved to blobs.
func (s *Store) storedForm(ev *gym.Event) (*gym.Event, error) {
	cp := *ev
	cp.Seq = 0
	if cp.Time.IsZero() {
		cp.Time = time.Now()
	}
	if s.opts.InlineMax < 0 {
		return &cp, nil
	}
	out := func(b *gym.Blob) (*gym.Blob, error) {
		if b.Ref != "" || len(b.Data) <= s.opts.InlineMax {
			return nil, nil
		}
		ref, err := s.PutBlob(b.Data)
		if err != nil {
			return nil, err
		}
		nb := *b
		nb.Data, nb.Ref, nb.Size = nil, ref, int64(len(b.Data))
		return &nb, nil
	}
	if cp.Observation != nil {
		parts, err := rewriteBlobs(cp.Observation.Parts, out)
		if err != nil {
			return nil, fmt.Errorf("store: observation of session %s: %w", ev.Session, err)
		}
		if parts != nil {
			cp.Observation = &gym.Observation{Parts: parts}
		}
	}
	if cp.Action != nil {
		parts, err := rewriteBlobs(cp.Action.Parts, out)
		if err != nil {
			return nil, fmt.Errorf("store: action of session %s: %w", ev.Session, err)
		}
		if parts != nil {
			cp.Action = &gym.Action{Parts: parts}
		}
	}
	return &cp, nil
}

// writeLoop is the writer goroutine: it commits whatever is queued in
// batches until Close closes the queue and it is empty.
func (s *Store) writeLoop() {
	defer close(s.written)
	batch := make([]*request, 0, min(s.opts.MaxBatch, 4096))
	for {
		req, ok := <-s.queue
		if !ok {
			return
		}
		batch = append(batch[:0], req)
		// Take what is queued; while more keeps arriving, yield so that
		// appenders that are runnable (typically the ones the last commit
		// released) can join this batch rather than wait for the next.
		for yields := 0; ; yields++ {
			n := len(batch)
			batch = s.drain(batch)
			if len(batch) >= s.opts.MaxBatch || yields == maxYields || (yields > 0 && len(batch) == n) {
				break
			}
			runtime.Gosched()
		}
		s.commit(batch)
		clear(batch) // drop references for the collector
	}
}

// maxYields bounds how often the writer yields to let a batch grow.
const maxYields = 4

// drain appends to batch what is queued now, up to MaxBatch events.
func (s *Store) drain(batch []*request) []*request {
	for len(batch) < s.opts.MaxBatch {
		select {
		case r, ok := <-s.queue:
			if !ok {
				return batch
			}
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// commit writes batch in one transaction and reports to each waiting Append.
// If the transaction fails because of one of its events, each is retried in
// a transaction of its own, so a bad event fails only its own Append.
func (s *Store) commit(batch []*request) {
	err := s.insert(batch)
	if err != nil && len(batch) > 1 && eventsFault(err) {
		for _, r := range batch {
			s.commit([]*request{r})
		}
		return
	}
	if err == nil {
		s.lastSeq.Store(batch[len(batch)-1].ev.Seq)
		s.kickCheckpoint()
		if s.opts.OnCommit != nil {
			evs := make([]*gym.Event, len(batch))
			bodies := make([]string, len(batch))
			for i, r := range batch {
				evs[i], bodies[i] = r.ev, r.body
			}
			s.opts.OnCommit(evs, bodies)
		}
	} else {
		err = fmt.Errorf("store: write %s event of session %s: %w", batch[0].ev.Type, batch[0].ev.Session, err)
	}
	for _, r := range batch {
		r.done <- err
	}
}

// eventsFault reports whether err is SQLite's verdict on a row (too big, a
// constraint) rather than on the database (I/O, disk full), which would fail
// the retries alike.
func eventsFault(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_CONSTRAINT:
		return true
	}
	return false
}

// insert runs one transaction and, only if it commits, sets each event's
// Seq. The writer numbers the rows itself (it is the only writer: the LOCK
// file keeps other processes out), so seqs follow the batch's order.
//
// One single-row statement per event: a multi-row INSERT would need a
// statement journal large enough to spill to a temporary file.
func (s *Store) insert(batch []*request) error {
	ctx := context.Background() // bounded by busy_timeout; nothing to cancel
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	stmt := tx.StmtContext(ctx, s.ins)
	first := s.lastSeq.Load() + 1 // only this goroutine advances lastSeq
	for i, r := range batch {
		ev := r.ev
		if _, err := stmt.ExecContext(ctx, first+int64(i), string(ev.Type), ev.Session, ev.Run, ev.Env, ev.Task,
			ev.StepID, ev.Time.UnixNano(), r.body); err != nil {
			tx.Rollback() //nolint:errcheck // the insert's error is the one to report
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	for i, r := range batch {
		r.ev.Seq = first + int64(i)
	}
	return nil
}
