package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Training samples live in samples.db beside events.db, a database of
// their own so that writing them never holds up the events' writer. Each
// stored sample has an offset, strictly increasing from 1 in store order,
// and carries its JSON (package rl's Sample) as given. The samples of one
// trajectory are written in one transaction, so a reader sees all of them
// or none.
//
// Every trajectory gets an index, increasing in store order, and a group:
// the same for every trajectory of one (run, task) pair, for GRPO. The
// store assigns both when the trajectory is written and keeps the groups
// (table sample_groups) across restarts.

// SamplesSchemaVersion is the schema version of samples.db (its user_version).
const SamplesSchemaVersion = 1

const samplesFile = "samples.db"

var samplesMigrations = [][]string{
	0: {
		`CREATE TABLE samples (
			seq         INTEGER PRIMARY KEY,
			run         TEXT    NOT NULL DEFAULT '',
			env         TEXT    NOT NULL DEFAULT '',
			task        TEXT    NOT NULL DEFAULT '',
			session     TEXT    NOT NULL DEFAULT '',
			episode     INTEGER NOT NULL DEFAULT 0,
			group_index INTEGER NOT NULL,
			traj        INTEGER NOT NULL,
			time        INTEGER NOT NULL,
			body        TEXT    NOT NULL
		)`,
		`CREATE INDEX samples_run ON samples(run, seq)`,
		`CREATE INDEX samples_env ON samples(env, seq)`,
		`CREATE INDEX samples_session ON samples(session, seq)`,
		`CREATE TABLE sample_groups (
			run         TEXT    NOT NULL,
			task        TEXT    NOT NULL,
			group_index INTEGER NOT NULL,
			PRIMARY KEY (run, task)
		)`,
	},
}

// samplesDB is the open samples.db.
type samplesDB struct {
	wdb *sql.DB // one connection, for AppendSamples; nil when read-only
	rdb *sql.DB // read-only pool

	mu        sync.Mutex // serializes AppendSamples: the numbering and the insert
	groups    map[[2]string]int
	nextGroup int
	nextIndex int

	last atomic.Int64 // highest committed offset

	changedMu sync.Mutex
	changed   chan struct{} // closed and replaced when samples are committed
}

// openSamples opens samples.db for writing, creating or migrating it.
func (s *Store) openSamples() error {
	path := filepath.Join(s.dir, samplesFile)
	ms := strconv.FormatInt(s.opts.BusyTimeout.Milliseconds(), 10)
	db := &samplesDB{groups: map[[2]string]int{}, changed: make(chan struct{})}
	s.smp = db
	var err error
	db.wdb, err = sql.Open("sqlite", dsn(path, url.Values{
		"_busy_timeout": {ms},
		"_journal_mode": {"WAL"},
		"_synchronous":  {"NORMAL"},
		"_txlock":       {"immediate"},
	}))
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	db.wdb.SetMaxOpenConns(1)
	db.wdb.SetMaxIdleConns(1)
	db.wdb.SetConnMaxLifetime(0)
	db.wdb.SetConnMaxIdleTime(0)
	ctx := context.Background()
	if err := migrateSamples(ctx, db.wdb, path); err != nil {
		return err
	}
	if err := db.load(ctx, db.wdb, path); err != nil {
		return err
	}
	return db.openReader(path, ms)
}

// openSamplesReadOnly opens samples.db for reading, if the store has one.
func (s *Store) openSamplesReadOnly() error {
	path := filepath.Join(s.dir, samplesFile)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil // a store with no samples yet
	}
	db := &samplesDB{changed: make(chan struct{})}
	if err := db.openReader(path, strconv.FormatInt(s.opts.BusyTimeout.Milliseconds(), 10)); err != nil {
		return err
	}
	s.smp = db
	var v int
	if err := db.rdb.QueryRowContext(context.Background(), "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	if v > SamplesSchemaVersion {
		return fmt.Errorf("store: %s has schema version %d, newer than the %d this nextstate supports; use a newer nextstate", path, v, SamplesSchemaVersion)
	}
	if v < SamplesSchemaVersion {
		s.smp = nil // created but never migrated: no samples in it
		return db.rdb.Close()
	}
	return nil
}

func (db *samplesDB) openReader(path, busyMS string) error {
	var err error
	db.rdb, err = sql.Open("sqlite", dsn(path, url.Values{"_busy_timeout": {busyMS}, "_query_only": {"1"}}))
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	db.rdb.SetMaxOpenConns(4)
	db.rdb.SetMaxIdleConns(4)
	if err := db.rdb.PingContext(context.Background()); err != nil {
		return fmt.Errorf("store: open %s for reading: %w", path, err)
	}
	return nil
}

func migrateSamples(ctx context.Context, db *sql.DB, path string) error {
	return migrateTo(ctx, db, path, SamplesSchemaVersion, samplesMigrations)
}

// load reads the numbering state: the groups, the next trajectory index
// and the last offset.
func (db *samplesDB) load(ctx context.Context, q *sql.DB, path string) error {
	rows, err := q.QueryContext(ctx, "SELECT run, task, group_index FROM sample_groups")
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	defer rows.Close()
	db.nextGroup = 0
	for rows.Next() {
		var run, task string
		var g int
		if err := rows.Scan(&run, &task, &g); err != nil {
			return fmt.Errorf("store: open %s: %w", path, err)
		}
		db.groups[[2]string{run, task}] = g
		db.nextGroup = max(db.nextGroup, g+1)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	// Offsets and indexes increase together: the last row has the highest.
	var last, traj int64
	err = q.QueryRowContext(ctx, "SELECT seq, traj FROM samples ORDER BY seq DESC LIMIT 1").Scan(&last, &traj)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fmt.Errorf("store: open %s: %w", path, err)
	default:
		db.last.Store(last)
		db.nextIndex = int(traj) + 1
	}
	return nil
}

func (db *samplesDB) close() error {
	var errs []error
	if db.rdb != nil {
		errs = append(errs, db.rdb.Close())
	}
	if db.wdb != nil {
		if _, err := db.wdb.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			errs = append(errs, fmt.Errorf("checkpoint %s: %w", samplesFile, err))
		}
		errs = append(errs, db.wdb.Close())
	}
	return errors.Join(errs...)
}

// Trajectory names the trajectory whose samples AppendSamples writes. It
// and SampleEncoder are aliases of unnamed types, which package rl (which
// imports gym only) spells out too (rl.SampleTrajectory): so the Store
// satisfies rl.Store, the store rl's Follower writes its samples to.
type Trajectory = struct {
	Run, Env, Task, Session string
	Episode                 int
}

// SampleEncoder returns the JSON objects of a trajectory's samples, in
// order, once the store has given the trajectory its group and index.
type SampleEncoder = func(group, index int) ([][]byte, error)

// AppendSamples gives trajectory t its group (by run and task) and its
// index, has encode write the samples, and stores them in one transaction.
// It returns the offsets of the first and last sample once they are
// committed (what that survives is as for Append); none written (an
// encoder that returns no sample) is 0, 0. Calls are serialized. Once
// samples are committed, the channel SamplesChanged returned is closed.
func (s *Store) AppendSamples(ctx context.Context, t Trajectory, encode SampleEncoder) (first, last int64, err error) {
	if s.readOnly {
		return 0, 0, ErrReadOnly
	}
	if s.isClosing() {
		return 0, 0, ErrClosed
	}
	db := s.smp
	db.mu.Lock()
	defer db.mu.Unlock()
	key := [2]string{t.Run, t.Task}
	group, known := db.groups[key]
	if !known {
		group = db.nextGroup
	}
	bodies, err := encode(group, db.nextIndex)
	if err != nil || len(bodies) == 0 {
		return 0, 0, err
	}
	for i, b := range bodies {
		if !json.Valid(b) || len(b) < 2 || b[0] != '{' {
			return 0, 0, fmt.Errorf("store: sample %d of session %s episode %d is not a JSON object", i, t.Session, t.Episode)
		}
	}
	tx, err := db.wdb.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("store: write samples: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if !known {
		if _, err := tx.ExecContext(ctx, "INSERT INTO sample_groups(run, task, group_index) VALUES (?, ?, ?)", t.Run, t.Task, group); err != nil {
			return 0, 0, fmt.Errorf("store: write samples: %w", err)
		}
	}
	first = db.last.Load() + 1
	now := time.Now().UnixNano()
	stmt, err := tx.PrepareContext(ctx, "INSERT INTO samples(seq, run, env, task, session, episode, group_index, traj, time, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
	if err != nil {
		return 0, 0, fmt.Errorf("store: write samples: %w", err)
	}
	defer stmt.Close()
	for i, b := range bodies {
		if _, err := stmt.ExecContext(ctx, first+int64(i), t.Run, t.Env, t.Task, t.Session, t.Episode, group, db.nextIndex, now, string(b)); err != nil {
			return 0, 0, fmt.Errorf("store: write samples: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, fmt.Errorf("store: write samples: %w", err)
	}
	if !known {
		db.groups[key] = group
		db.nextGroup++
	}
	db.nextIndex++
	last = first + int64(len(bodies)) - 1
	db.last.Store(last)
	db.changedMu.Lock()
	close(db.changed)
	db.changed = make(chan struct{})
	db.changedMu.Unlock()
	return first, last, nil
}

// SamplesChanged returns a channel that is closed when AppendSamples next
// commits samples, whoever calls it (the signals follower, a mounted
// proxy): a reader of the samples takes the channel, reads up to
// LastSampleOffset, and waits on it for more. A read-only store's channel
// is never closed (another process writes).
func (s *Store) SamplesChanged() <-chan struct{} {
	if s.smp == nil {
		return nil
	}
	db := s.smp
	db.changedMu.Lock()
	defer db.changedMu.Unlock()
	return db.changed
}

// LastSampleOffset returns the highest committed sample offset, 0 when
// there is none. A read-only store asks the database each time.
func (s *Store) LastSampleOffset() int64 {
	if s.smp == nil {
		return 0
	}
	if s.readOnly {
		var last int64
		if err := s.smp.rdb.QueryRow("SELECT coalesce(max(seq), 0) FROM samples").Scan(&last); err == nil {
			s.smp.last.Store(last)
		}
	}
	return s.smp.last.Load()
}

// SampleFilter selects stored samples. Empty fields match everything.
type SampleFilter struct {
	Run, Env, Task, Session string
	// AfterOffset keeps the samples with a larger offset.
	AfterOffset int64
	// Limit is the most samples returned; 0 means no limit.
	Limit int
}

// StoredSample is one stored training sample.
type StoredSample struct {
	Offset                  int64
	Run, Env, Task, Session string
	Episode                 int
	Group, Index            int
	// Body is the sample's JSON object, as AppendSamples stored it.
	Body json.RawMessage
}

// ScanSamples calls fn for each sample matching f, in offset order, a page
// at a time, with no read transaction open while fn runs. It sees the
// samples committed when it starts. An error from fn stops the scan and is
// returned as is.
func (s *Store) ScanSamples(ctx context.Context, f SampleFilter, fn func(*StoredSample) error) error {
	if s.isClosing() {
		return ErrClosed
	}
	if s.smp == nil {
		return nil
	}
	upto := s.LastSampleOffset()
	left := f.Limit
	for {
		n := scanPage
		if f.Limit > 0 {
			if left <= 0 {
				return nil
			}
			n = min(n, left)
		}
		page, err := s.samplePage(ctx, f, upto, n)
		if err != nil {
			return err
		}
		for i := range page {
			if err := fn(&page[i]); err != nil {
				return err
			}
		}
		if len(page) < n {
			return nil
		}
		f.AfterOffset = page[len(page)-1].Offset
		left -= len(page)
	}
}

func (s *Store) samplePage(ctx context.Context, f SampleFilter, upto int64, n int) ([]StoredSample, error) {
	conds := []string{"seq > ?", "seq <= ?"}
	args := []any{f.AfterOffset, upto}
	for _, c := range []struct{ col, val string }{{"run", f.Run}, {"env", f.Env}, {"task", f.Task}, {"session", f.Session}} {
		if c.val != "" {
			conds = append(conds, c.col+" = ?")
			args = append(args, c.val)
		}
	}
	rows, err := s.smp.rdb.QueryContext(ctx, "SELECT seq, run, env, task, session, episode, group_index, traj, body FROM samples WHERE "+
		strings.Join(conds, " AND ")+" ORDER BY seq LIMIT ?", append(args, n)...)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	var out []StoredSample
	for rows.Next() {
		var x StoredSample
		var body []byte
		if err := rows.Scan(&x.Offset, &x.Run, &x.Env, &x.Task, &x.Session, &x.Episode, &x.Group, &x.Index, &body); err != nil {
			return nil, s.readErr(err)
		}
		x.Body = body
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr(err)
	}
	return out, nil
}

// Samples returns the samples matching f in offset order. Set f.Limit, or
// use ScanSamples, where the result could be large.
func (s *Store) Samples(ctx context.Context, f SampleFilter) ([]StoredSample, error) {
	var out []StoredSample
	err := s.ScanSamples(ctx, f, func(x *StoredSample) error {
		out = append(out, *x)
		return nil
	})
	return out, err
}

// exportSamples writes each sample matching f as one JSON line: the
// sample's object with its "offset" first.
func (s *Store) exportSamples(ctx context.Context, w interface{ Write([]byte) (int, error) }, f Filter) error {
	sf := SampleFilter{Run: f.Run, Env: f.Env, Task: f.Task, Session: f.Session, AfterOffset: f.AfterSeq, Limit: f.Limit}
	buf := make([]byte, 0, 4096)
	return s.ScanSamples(ctx, sf, func(x *StoredSample) error {
		buf = WithOffset(buf[:0], x.Offset, x.Body)
		buf = append(buf, '\n')
		if _, err := w.Write(buf); err != nil {
			return fmt.Errorf("store: export: %w", err)
		}
		return nil
	})
}

// WithOffset appends to dst the JSON object body with "offset": offset
// added as its first member.
func WithOffset(dst []byte, offset int64, body []byte) []byte {
	dst = append(dst, `{"offset":`...)
	dst = strconv.AppendInt(dst, offset, 10)
	rest := body[1:] // after the '{'
	for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\n' || rest[0] == '\t' || rest[0] == '\r') {
		rest = rest[1:]
	}
	if len(rest) > 0 && rest[0] != '}' {
		dst = append(dst, ',')
	}
	return append(dst, rest...)
}
