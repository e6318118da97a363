package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nextstate-rl/nextstate/gym"
)

// Filter selects events. Empty fields match everything; the fields set must
// all match.
type Filter struct {
	Session string
	Run     string
	Env     string
	Task    string
	// Types keeps only events of these types.
	Types []gym.EventType
	// AfterSeq keeps only events with a larger Seq: a subscriber or resuming
	// client passes the last Seq it saw.
	AfterSeq int64
	// Limit is the most events returned (episodes, for a trajectory export);
	// 0 means no limit.
	Limit int
	// ReadBlobs puts blob data back inline in the events returned (see
	// Store.Inline).
	ReadBlobs bool
}

// scanPage is how many rows one read transaction fetches; Scan keeps no read
// transaction open while its callback runs.
const scanPage = 256

// where returns the WHERE clause (without the keyword) and its arguments for
// f, restricted to seq in (f.AfterSeq, upto]. withTypes false ignores Types.
func (f Filter) where(upto int64, withTypes bool) (string, []any) {
	conds := []string{"seq > ?", "seq <= ?"}
	args := []any{f.AfterSeq, upto}
	for _, c := range []struct{ col, val string }{
		{"session", f.Session}, {"run", f.Run}, {"env", f.Env}, {"task", f.Task},
	} {
		if c.val != "" {
			conds = append(conds, c.col+" = ?")
			args = append(args, c.val)
		}
	}
	if withTypes && len(f.Types) > 0 {
		conds = append(conds, "type IN (?"+strings.Repeat(", ?", len(f.Types)-1)+")")
		for _, t := range f.Types {
			args = append(args, string(t))
		}
	}
	return strings.Join(conds, " AND "), args
}

// Scan calls fn for each event matching f, in seq order, reading them a page
// at a time so the whole result is never held in memory; no read
// transaction stays open while fn runs. It sees the events up to LastSeq at
// its start. An error from fn stops the scan and is returned as is. fn may
// keep the event; each call gets a fresh one.
func (s *Store) Scan(ctx context.Context, f Filter, fn func(*gym.Event) error) error {
	if s.isClosing() {
		return ErrClosed
	}
	upto, err := s.upperBound(ctx)
	if err != nil {
		return err
	}
	return s.scanUpTo(ctx, f, upto, fn)
}

// scanUpTo is Scan with the upper seq bound given, so that the several scans
// of one export all stop at the same point.
func (s *Store) scanUpTo(ctx context.Context, f Filter, upto int64, fn func(*gym.Event) error) error {
	left := f.Limit
	var page []*gym.Event
	for {
		n := scanPage
		if f.Limit > 0 {
			if left <= 0 {
				return nil
			}
			n = min(n, left)
		}
		var err error
		if page, err = s.readPage(ctx, f, upto, n, page[:0]); err != nil {
			return err
		}
		for _, ev := range page {
			if f.ReadBlobs {
				if err := s.Inline(ev); err != nil {
					return err
				}
			}
			if err := fn(ev); err != nil {
				return err
			}
		}
		if len(page) < n {
			return nil
		}
		f.AfterSeq = page[len(page)-1].Seq
		left -= len(page)
		clear(page)
	}
}

func (s *Store) readPage(ctx context.Context, f Filter, upto int64, n int, out []*gym.Event) ([]*gym.Event, error) {
	where, args := f.where(upto, true)
	rows, err := s.rdb.QueryContext(ctx, "SELECT seq, body FROM events WHERE "+where+" ORDER BY seq LIMIT ?",
		append(args, n)...)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		ev, err := scanEvent(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr(err)
	}
	return out, nil
}

func scanEvent(rows interface{ Scan(...any) error }) (*gym.Event, error) {
	var seq int64
	var body sql.RawBytes
	if err := rows.Scan(&seq, &body); err != nil {
		return nil, fmt.Errorf("store: read: %w", err)
	}
	ev := new(gym.Event)
	if err := json.Unmarshal(body, ev); err != nil {
		return nil, fmt.Errorf("store: decode event %d: %w", seq, err)
	}
	ev.Seq = seq
	return ev, nil
}

// readErr reports a read that failed because the store closed as ErrClosed.
func (s *Store) readErr(err error) error {
	if s.isClosing() && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (%v)", ErrClosed, err)
	}
	return fmt.Errorf("store: read: %w", err)
}

// Events returns the events matching f in seq order. Set f.Limit, or use
// Scan, where the result could be large.
func (s *Store) Events(ctx context.Context, f Filter) ([]gym.Event, error) {
	var out []gym.Event
	err := s.Scan(ctx, f, func(ev *gym.Event) error {
		out = append(out, *ev)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StepEvent returns the step event recorded in session for stepID (the
// latest, should there be several), and whether there is one. A session uses
// it to answer a retried step id from the record.
func (s *Store) StepEvent(ctx context.Context, session, stepID string) (*gym.Event, bool, error) {
	if s.isClosing() {
		return nil, false, ErrClosed
	}
	if stepID == "" {
		return nil, false, nil
	}
	rows, err := s.rdb.QueryContext(ctx,
		// Newest first: a retried step is almost always a recent one.
		"SELECT seq, body FROM events WHERE session = ? AND step_id = ? AND type = ? ORDER BY seq DESC LIMIT 1",
		session, stepID, string(gym.EventStep))
	if err != nil {
		return nil, false, s.readErr(err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, false, s.readErr(err)
		}
		return nil, false, nil
	}
	ev, err := scanEvent(rows)
	if err != nil {
		return nil, false, err
	}
	return ev, true, nil
}
