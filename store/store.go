// Package store is the embedded trajectory store of nextstate: the durable
// record of every event a session produces (resets, steps with their action
// and next state, late rewards, session closes), kept in one directory with
// no daemon to run. A *Store is the gym.Recorder the server hands to its
// sessions, and the source that live subscribers, resuming clients and
// exports read from. Reads return events as stored, the verifier's details
// included; with Filter.Public they return what an agent may see
// (gym.Event.Public), as every read that answers an agent must. Unclosed
// finds the sessions a dead server left open, for the next one to close.
//
// # Layout on disk
//
// A store directory holds
//
//	events.db                  SQLite (WAL mode): one table, events, keyed by seq
//	events.db-wal, -shm        its write-ahead log and index (folded back by Close)
//	samples.db (-wal, -shm)    training samples, keyed by offset (samples.go)
//	blobs/sha256/ab/abcdef...  content-addressed binary payloads
//	LOCK                       locked by the process that has the store open
//
// Each row of events carries the columns a query filters on (type, session,
// run, env, task, step_id, time in unix nanoseconds) and the event itself as
// JSON (body; its "seq" is 0, the column is the truth). Indexes serve reads
// by session, run or env in seq order, and by (session, step_id). The seq
// column is the event's gym.Event.Seq: assigned by the store, strictly
// increasing from 1 across the whole store, never reused.
// The schema version is SQLite's user_version; Open creates or migrates the
// schema and refuses a database written by a newer version of this package.
//
// Images and files in an event's Observation or Action whose inline Data is
// larger than Options.InlineMax are written to the blob directory (a temp
// file, synced, then renamed to the hex SHA-256 of the content, so equal
// payloads are stored once) and recorded as gym.Blob{Ref: "sha256:<hex>",
// Size: n} without Data. Blob opens one; Inline, or Filter.ReadBlobs on a
// read or export, puts the data back. The store never deletes a blob: one
// written for an Append that then failed stays, unreferenced.
//
// # Durability
//
// Append returns nil only after the transaction holding the event has
// committed. The database runs with synchronous=NORMAL in WAL mode: a
// committed event survives a crash of the process (kill -9, a panic, the OOM
// killer); an operating-system crash or power loss may lose the last
// transactions committed before it, but never corrupts the database. Blob
// files are synced before they are renamed into place, and written before
// the event that refers to them is queued.
//
// # Concurrency
//
// All methods are safe for concurrent use. Append is called by many sessions
// at once: each caller marshals its own event (and writes its own blobs) in
// its goroutine, then queues it for the single writer goroutine, which takes
// everything queued (up to Options.MaxBatch events), inserts it in one
// transaction, commits, and then releases the waiting callers (group commit).
// The queue holds at most Options.QueueLen events; when it is full Append
// waits, as long as its context allows. Reads (Events, Scan, StepEvent,
// Export) use their own pool of read-only connections and never wait for the
// writer; each sees the events up to LastSeq at its start. A checkpointer
// goroutine copies the write-ahead log back into the database in the
// background, so commits rarely pay for that.
//
// # OnCommit
//
// Options.OnCommit, if set, is called by the writer goroutine after each
// commit with that transaction's events in seq order, Seq filled in, and
// each one's body (its JSON, as stored), before any of their Appends
// return. AppendJSON makes an event's JSON from its body, so that a hook
// that sends events on (a server's live subscribers) need not encode them
// again on the writer goroutine. Calls are serialized and their seqs strictly
// increase from one call to the next, so a server can feed live subscribers
// from it in order with no gap between what is stored and what is sent.
// The events are the stored form (large blobs already replaced by refs) and
// must not be modified. OnCommit must not block and must not call Append or
// Close: every Append in the store waits for it. Copy what you need into a
// bounded buffer and return.
//
// AppendSamples writes a trajectory's training samples to samples.db in a
// transaction of its own, on its own connection, so it never waits for
// the events' writer, nor it for them; calls are serialized among
// themselves. ScanSamples and Samples read with a pool of their own.
//
// Only one Store may have a directory open for writing at a time; Open fails
// with a clear error when another holds it. OpenReadOnly reads a store that
// another Store, in this process or another, has open.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nextstate-rl/nextstate/gym"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go
)

// Defaults for the zero values of Options.
const (
	DefaultInlineMax   = 16 << 10
	DefaultMaxBatch    = 1024
	DefaultQueueLen    = 65536
	DefaultBusyTimeout = 10 * time.Second
)

// SchemaVersion is the schema version this package writes (SQLite's
// user_version of events.db).
const SchemaVersion = 1

const (
	dbFile   = "events.db"
	lockFile = "LOCK"
	blobRoot = "blobs"
)

// ErrClosed is returned by Append and the reads after Close.
var ErrClosed = errors.New("store: closed")

// ErrReadOnly is returned by Append and PutBlob on a store opened with
// OpenReadOnly.
var ErrReadOnly = errors.New("store: opened read-only")

// Options tune a Store. The zero value of each field means the stated default.
type Options struct {
	// InlineMax is the largest Data an image or file part keeps inline; larger
	// payloads go to the blob directory. 0 means DefaultInlineMax (16 KiB); a
	// negative value keeps everything inline.
	InlineMax int
	// MaxBatch is the most events one transaction commits. 0 means
	// DefaultMaxBatch (1024).
	MaxBatch int
	// QueueLen bounds the events waiting for the writer; a full queue makes
	// Append wait. 0 means DefaultQueueLen (65536).
	QueueLen int
	// BusyTimeout is SQLite's busy_timeout for every connection. 0 means
	// DefaultBusyTimeout (10s).
	BusyTimeout time.Duration
	// ReadConns bounds the read-only connection pool. 0 means the number of
	// CPUs, at least 4.
	ReadConns int
	// OnCommit is called by the writer goroutine after each commit with the
	// committed events in seq order and their bodies (bodies[i] is evs[i]'s
	// JSON as stored, for AppendJSON); see the package doc for its
	// contract. It must not block.
	OnCommit func(evs []*gym.Event, bodies []string)
}

func (o Options) withDefaults() Options {
	if o.InlineMax == 0 {
		o.InlineMax = DefaultInlineMax
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.QueueLen <= 0 {
		o.QueueLen = DefaultQueueLen
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	if o.ReadConns <= 0 {
		o.ReadConns = max(4, runtime.NumCPU())
	}
	return o
}

// Store is an open trajectory store. It implements gym.Recorder.
type Store struct {
	dir   string
	opts  Options
	wdb   *sql.DB   // one connection, used only by the writer goroutine
	rdb   *sql.DB   // read-only pool
	ins   *sql.Stmt // the insert, prepared on wdb
	lock  *os.File
	blobs string // dir/blobs/sha256

	lastSeq  atomic.Int64 // highest committed seq (as of the latest read, when read-only)
	readOnly bool         // opened by OpenReadOnly: no writer, no lock

	smp *samplesDB // samples.db (samples.go); nil for a read-only store without one

	// mu orders Append's enqueue against Close: Append holds it for reading
	// while it sends, Close takes it for writing before closing queue.
	mu      sync.RWMutex
	closed  bool
	closing chan struct{} // closed when Close starts
	queue   chan *request
	written chan struct{} // closed when the writer goroutine has drained the queue

	cdb      *sql.DB       // the checkpointer's connection
	ckptKick chan struct{} // cap 1: the writer committed something
	ckptQuit chan struct{} // closed by Close to stop the checkpointer

	wg sync.WaitGroup // the writer and the checkpointer

	closeOnce sync.Once
	closeErr  error
}

var _ gym.Recorder = (*Store)(nil)

// Open opens the store in dir, creating the directory, the database and the
// schema if they are absent, and starts its writer and checkpointer
// goroutines. Close releases it all.
func Open(dir string, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	s := &Store{
		dir:     abs,
		opts:    opts,
		blobs:   filepath.Join(abs, blobRoot, "sha256"),
		closing: make(chan struct{}),
		queue:   make(chan *request, opts.QueueLen),
		written: make(chan struct{}),

		ckptKick: make(chan struct{}, 1),
		ckptQuit: make(chan struct{}),
	}
	if err := os.MkdirAll(s.blobs, 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if s.lock, err = lockDir(filepath.Join(abs, lockFile)); err != nil {
		return nil, fmt.Errorf("store: %s: %w", abs, err)
	}
	if err := s.openDB(); err != nil {
		s.closeDB()
		return nil, err
	}
	if err := s.openSamples(); err != nil {
		s.closeDB()
		return nil, err
	}
	s.wg.Go(s.writeLoop)
	s.wg.Go(s.checkpointLoop)
	return s, nil
}

// OpenReadOnly opens the store in dir for reading only, for example to
// export while a server has it open. It takes no lock and starts no
// goroutine; Append and PutBlob return ErrReadOnly. Each read sees what was
// committed when it started, including what the other process has added
// since OpenReadOnly.
func OpenReadOnly(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	s := &Store{
		dir:      abs,
		opts:     Options{}.withDefaults(),
		blobs:    filepath.Join(abs, blobRoot, "sha256"),
		closing:  make(chan struct{}),
		readOnly: true,
	}
	path := filepath.Join(abs, dbFile)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("store: no store in %s: %w", abs, err)
	}
	if err := s.openReader(path); err != nil {
		s.closeDB()
		return nil, err
	}
	ctx := context.Background()
	var v int
	if err := s.rdb.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		s.closeDB()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if v != SchemaVersion {
		s.closeDB()
		if v > SchemaVersion {
			return nil, fmt.Errorf("store: %s has schema version %d, newer than the %d this nextstate supports; use a newer nextstate", path, v, SchemaVersion)
		}
		return nil, fmt.Errorf("store: %s has schema version %d, not %d: open it for writing once to create or migrate it", path, v, SchemaVersion)
	}
	if _, err := s.upperBound(ctx); err != nil {
		s.closeDB()
		return nil, err
	}
	if err := s.openSamplesReadOnly(); err != nil {
		s.closeDB()
		return nil, err
	}
	return s, nil
}

// upperBound returns the seq a read stops at: the last committed one. A
// read-only store asks the database, since another process is writing.
func (s *Store) upperBound(ctx context.Context) (int64, error) {
	if !s.readOnly {
		return s.lastSeq.Load(), nil
	}
	var last int64
	if err := s.rdb.QueryRowContext(ctx, "SELECT coalesce(max(seq), 0) FROM events").Scan(&last); err != nil {
		return 0, s.readErr(err)
	}
	s.lastSeq.Store(last)
	return last, nil
}

func (s *Store) openDB() error {
	path := filepath.Join(s.dir, dbFile)
	ms := strconv.FormatInt(s.opts.BusyTimeout.Milliseconds(), 10)
	var err error
	s.wdb, err = sql.Open("sqlite", dsn(path, url.Values{
		"_busy_timeout": {ms},
		"_journal_mode": {"WAL"},
		"_synchronous":  {"NORMAL"},
		"_txlock":       {"immediate"},
		"_pragma":       {fmt.Sprintf("wal_autocheckpoint(%d)", backstopPages)},
	}))
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetMaxIdleConns(1)
	s.wdb.SetConnMaxLifetime(0)
	s.wdb.SetConnMaxIdleTime(0)

	ctx := context.Background()
	var mode string
	if err := s.wdb.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	if mode != "wal" {
		return fmt.Errorf("store: open %s: journal_mode is %q, want wal", path, mode)
	}
	if err := migrate(ctx, s.wdb, path); err != nil {
		return err
	}
	var last int64
	if err := s.wdb.QueryRowContext(ctx, "SELECT coalesce(max(seq), 0) FROM events").Scan(&last); err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	s.lastSeq.Store(last)
	s.ins, err = s.wdb.PrepareContext(ctx,
		"INSERT INTO events(seq, type, session, run, env, task, step_id, time, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
	if err != nil {
		return fmt.Errorf("store: prepare insert: %w", err)
	}

	if err := s.openReader(path); err != nil {
		return err
	}
	return s.openCheckpointer(path, ms)
}

// openReader opens the read-only pool.
func (s *Store) openReader(path string) error {
	var err error
	s.rdb, err = sql.Open("sqlite", dsn(path, url.Values{
		"_busy_timeout": {strconv.FormatInt(s.opts.BusyTimeout.Milliseconds(), 10)},
		"_query_only":   {"1"},
	}))
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	s.rdb.SetMaxOpenConns(s.opts.ReadConns)
	s.rdb.SetMaxIdleConns(s.opts.ReadConns)
	if err := s.rdb.PingContext(context.Background()); err != nil {
		return fmt.Errorf("store: open %s for reading: %w", path, err)
	}
	return nil
}

// dsn builds a "file:" URI for the modernc driver; the query keys starting
// with "_" are the driver's connection settings.
func dsn(path string, q url.Values) string {
	u := url.URL{Scheme: "file", OmitHost: true, Path: filepath.ToSlash(path), RawQuery: q.Encode()}
	return u.String()
}

// migrations[v] moves the schema from version v to v+1.
var migrations = [][]string{
	0: {
		`CREATE TABLE events (
			seq     INTEGER PRIMARY KEY,
			type    TEXT    NOT NULL,
			session TEXT    NOT NULL,
			run     TEXT    NOT NULL DEFAULT '',
			env     TEXT    NOT NULL DEFAULT '',
			task    TEXT    NOT NULL DEFAULT '',
			step_id TEXT    NOT NULL DEFAULT '',
			time    INTEGER NOT NULL,
			body    TEXT    NOT NULL
		)`,
		// events_session serves both the reads by session in seq order and
		// StepEvent's lookup by (session, step_id), which scans the
		// session's entries in the index alone. A separate (session,
		// step_id) index would add a second page at a random place to
		// every commit for each session in the batch: about a third of
		// the writer's work.
		`CREATE INDEX events_session ON events(session, seq, step_id)`,
		`CREATE INDEX events_run ON events(run, seq)`,
		`CREATE INDEX events_env ON events(env, seq)`,
	},
}

func migrate(ctx context.Context, db *sql.DB, path string) error {
	return migrateTo(ctx, db, path, SchemaVersion, migrations)
}

// migrateTo brings a database's schema (PRAGMA user_version) up to
// version by running the statements of each missing step in one
// transaction; a database newer than version is an error.
func migrateTo(ctx context.Context, db *sql.DB, path string, version int, steps [][]string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: migrate %s: %w", path, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("store: migrate %s: %w", path, err)
	}
	if v > version {
		return fmt.Errorf("store: %s has schema version %d, newer than the %d this nextstate supports; use a newer nextstate", path, v, version)
	}
	if v == version {
		return tx.Commit()
	}
	for ; v < version; v++ {
		for _, stmt := range steps[v] {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("store: migrate %s to version %d: %w", path, v+1, err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", version)); err != nil {
		return fmt.Errorf("store: migrate %s: %w", path, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: migrate %s: %w", path, err)
	}
	return nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// LastSeq returns the highest committed seq, 0 for an empty store. For a
// store opened read-only it is the one seen by the latest read.
func (s *Store) LastSeq() int64 { return s.lastSeq.Load() }

// Close stops accepting events, commits everything already queued, folds the
// write-ahead log back into the database and closes it. Appends waiting for
// queue space return ErrClosed, and so do reads that start after Close (a
// read still running delays the final checkpoint). Close is idempotent;
// later calls return the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		if !s.readOnly {
			s.mu.Lock() // waits for Appends in the middle of a send
			s.closed = true
			s.mu.Unlock()
			close(s.queue)
			<-s.written // the writer drains the queue, then returns
			close(s.ckptQuit)
			s.wg.Wait()
		}
		s.closeErr = s.closeDB()
	})
	return s.closeErr
}

func (s *Store) isClosing() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// closeDB closes what openDB and Open opened, in order; it tolerates a
// partial open.
func (s *Store) closeDB() error {
	var errs []error
	if s.smp != nil {
		errs = append(errs, s.smp.close())
	}
	if s.rdb != nil {
		errs = append(errs, s.rdb.Close())
	}
	if s.cdb != nil {
		errs = append(errs, s.cdb.Close())
	}
	if s.ins != nil {
		errs = append(errs, s.ins.Close())
	}
	if s.wdb != nil {
		if s.ins != nil { // opened fully: fold the WAL back
			if _, err := s.wdb.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
				errs = append(errs, fmt.Errorf("checkpoint: %w", err))
			}
		}
		errs = append(errs, s.wdb.Close())
	}
	if s.lock != nil {
		errs = append(errs, unlockDir(s.lock))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("store: close %s: %w", s.dir, err)
	}
	return nil
}
