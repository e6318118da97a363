package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	// Public passes every event read through gym.Event.Public, which takes
	// the verifier's details out: for reads whose events go to agents. The
	// zero value reads events as stored.
	Public bool
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

// ScanAfter is Scan of the events after seq whose type is one of types (of
// every type when there is none), the read of a follower of the record
// that missed some: package rl's Follower reads them so (rl.Store).
func (s *Store) ScanAfter(ctx context.Context, seq int64, types []gym.EventType, fn func(*gym.Event) error) error {
	return s.Scan(ctx, Filter{AfterSeq: seq, Types: types}, fn)
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
			if f.Public {
				*ev = ev.Public()
			}
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
	return s.readEvents(ctx, out, "SELECT seq, body FROM events WHERE "+where+" ORDER BY seq LIMIT ?", append(args, n)...)
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

// unclosedQuery is Unclosed's: a loose scan of the session index (each step
// finds the next session id), each session's last event by its seq, and,
// only when that one is not its close (CASE keeps the order), the session's
// events from the last back to its close, if any.
const unclosedQuery = `
	WITH RECURSIVE ids(session) AS (
		SELECT min(session) FROM events
		UNION ALL
		SELECT (SELECT min(session) FROM events WHERE session > ids.session) FROM ids WHERE ids.session IS NOT NULL
	)
	SELECT e.seq, e.body FROM ids
	JOIN events e ON e.seq = (SELECT max(seq) FROM events WHERE session = ids.session)
	WHERE ids.session IS NOT NULL AND CASE WHEN e.type = ?1 THEN 0
		ELSE (SELECT 1 FROM events c WHERE c.session = ids.session AND c.type = ?1 ORDER BY c.seq DESC LIMIT 1) IS NULL END`

// Unclosed returns the last event of every session that has events but no
// session.closed event, in the order of the sessions' ids: the last but
// late rewards (which may be for an earlier episode), unless it has only
// rewards. Only one Store writes a directory at a time, so when a server opens
// its store such sessions belong to a server that stopped without closing
// them (a crash, kill -9, power loss); the server records their close.
//
// It does not read the whole table: it walks the session index one
// session at a time, looks at each session's last event, and reads a
// session's other events only when the last is not its close (late rewards
// may follow a close).
func (s *Store) Unclosed(ctx context.Context) ([]gym.Event, error) {
	if s.isClosing() {
		return nil, ErrClosed
	}
	last, err := s.readEvents(ctx, nil, unclosedQuery, string(gym.EventSessionClosed))
	if err != nil {
		return nil, err
	}
	out := make([]gym.Event, len(last))
	for i, ev := range last {
		out[i] = *ev
	}
	for i := range out {
		if out[i].Type != gym.EventReward {
			continue
		}
		// A late reward may be for an earlier episode: the session's
		// state is its last own event.
		evs, err := s.readEvents(ctx, nil, "SELECT seq, body FROM events WHERE session = ? AND type != ? ORDER BY seq DESC LIMIT 1",
			out[i].Session, string(gym.EventReward))
		if err != nil {
			return nil, err
		}
		if len(evs) == 1 { // else rewards only: keep the last
			out[i] = *evs[0]
		}
	}
	slices.SortFunc(out, func(a, b gym.Event) int { return strings.Compare(a.Session, b.Session) })
	return out, nil
}

// readEvents runs a query of (seq, body) rows and appends its events to out.
func (s *Store) readEvents(ctx context.Context, out []*gym.Event, query string, args ...any) ([]*gym.Event, error) {
	rows, err := s.rdb.QueryContext(ctx, query, args...)
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
