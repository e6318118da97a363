package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
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
// stored form only. ev must not be modified while Append runs, nor after it
// if OnCommit hands it to someone.
func (s *Store) Append(ctx context.Context, ev *gym.Event) error {
	if ev == nil {
		return errors.New("store: Append of a nil event")
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
	req := &request{ev: stored, body: string(body), done: make(chan error, 1)}

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
	defer close(s.done)
	batch := make([]*request, 0, min(s.opts.MaxBatch, 4096))
	for {
		req, ok := <-s.queue
		if !ok {
			return
		}
		batch = append(batch[:0], req)
	fill:
		for len(batch) < s.opts.MaxBatch {
			select {
			case r, ok := <-s.queue:
				if !ok {
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		s.commit(batch)
		clear(batch) // drop references for the collector
	}
}

// commit writes batch in one transaction and reports to each waiting Append.
// If the transaction fails and holds several events, each is retried in a
// transaction of its own, so one bad event fails only its own Append.
func (s *Store) commit(batch []*request) {
	err := s.insert(batch)
	if err != nil && len(batch) > 1 {
		for _, r := range batch {
			s.commit([]*request{r})
		}
		return
	}
	if err == nil {
		s.lastSeq.Store(batch[len(batch)-1].ev.Seq)
		if s.opts.OnCommit != nil {
			evs := make([]*gym.Event, len(batch))
			for i, r := range batch {
				evs[i] = r.ev
			}
			s.opts.OnCommit(evs)
		}
	} else {
		err = fmt.Errorf("store: write %s event of session %s: %w", batch[0].ev.Type, batch[0].ev.Session, err)
	}
	for _, r := range batch {
		r.done <- err
	}
}

// insert runs one transaction and, only if it commits, sets each event's Seq.
func (s *Store) insert(batch []*request) error {
	ctx := context.Background() // bounded by busy_timeout; nothing to cancel
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	stmt := tx.StmtContext(ctx, s.ins)
	seqs := make([]int64, len(batch))
	for i, r := range batch {
		ev := r.ev
		res, err := stmt.ExecContext(ctx, string(ev.Type), ev.Session, ev.Run, ev.Env, ev.Task, ev.StepID,
			ev.Time.UnixNano(), r.body)
		if err != nil {
			tx.Rollback() //nolint:errcheck // the insert's error is the one to report
			return err
		}
		if seqs[i], err = res.LastInsertId(); err != nil {
			tx.Rollback() //nolint:errcheck
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	for i, r := range batch {
		r.ev.Seq = seqs[i]
	}
	return nil
}
