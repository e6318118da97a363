package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"time"
)

// Checkpoints. The writer's commits append pages to the write-ahead log; a
// checkpoint copies them back into events.db (and syncs both files) so the
// log can start over. SQLite's own automatic checkpoint would run inside the
// writer's commit, so every Append in that batch would wait for it. Instead
// a checkpointer goroutine with its own connection runs a PASSIVE checkpoint
// (which never blocks the writer) when the writer has committed since the
// last one, at most every ckptInterval. The writer connection keeps SQLite's
// automatic checkpoint at backstopPages: when the checkpointer cannot keep
// up, the log is still bounded, and most of its pages have been copied
// already by then.
const (
	ckptInterval  = 50 * time.Millisecond
	backstopPages = 8192 // 32 MiB of 4 KiB pages
)

func (s *Store) openCheckpointer(path, busyMS string) error {
	var err error
	s.cdb, err = sql.Open("sqlite", dsn(path, url.Values{"_busy_timeout": {busyMS}}))
	if err != nil {
		return fmt.Errorf("store: open %s for checkpoints: %w", path, err)
	}
	s.cdb.SetMaxOpenConns(1)
	s.cdb.SetMaxIdleConns(1)
	s.cdb.SetConnMaxLifetime(0)
	s.cdb.SetConnMaxIdleTime(0)
	if err := s.cdb.PingContext(context.Background()); err != nil {
		return fmt.Errorf("store: open %s for checkpoints: %w", path, err)
	}
	return nil
}

// kickCheckpoint tells the checkpointer there is something to copy; it
// never blocks.
func (s *Store) kickCheckpoint() {
	select {
	case s.ckptKick <- struct{}{}:
	default:
	}
}

// checkpointLoop is the checkpointer goroutine; it returns when ckptQuit is
// closed.
func (s *Store) checkpointLoop() {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-s.ckptKick:
		case <-s.ckptQuit:
			return
		}
		// A failed passive checkpoint leaves the log longer; the backstop
		// and the next kick deal with it.
		s.cdb.Exec("PRAGMA wal_checkpoint(PASSIVE)") //nolint:errcheck
		timer.Reset(ckptInterval)
		select {
		case <-timer.C:
		case <-s.ckptQuit:
			return
		}
	}
}
