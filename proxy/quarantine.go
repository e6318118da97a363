package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/store"
)

// QuarantineDir is the quarantine's directory inside the proxy's data dir.
const QuarantineDir = "quarantine"

// Entry is a quarantined turn: kept, not trained on, until released.
type Entry struct {
	ID        string     `json:"id"`
	Time      time.Time  `json:"time"`
	Reason    string     `json:"reason"`
	Turn      Turn       `json:"turn"`
	NextState rl.Message `json:"next_state"`
	Judgement Judgement  `json:"judgement"`
}

// Quarantine keeps flagged turns, one JSON file per turn (ID.json) in its
// directory, so that the proxy and `nextstate proxy quarantine` may use
// it at the same time.
type Quarantine struct{ dir string }

var idPattern = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}-[0-9a-f]{8}$`)

// OpenQuarantine opens (creating) the quarantine in dataDir/quarantine.
func OpenQuarantine(dataDir string) (*Quarantine, error) {
	dir := filepath.Join(dataDir, QuarantineDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("quarantine: %w", err)
	}
	return &Quarantine{dir: dir}, nil
}

// Add keeps e under a new ID and returns it.
func (q *Quarantine) Add(e Entry) (string, error) {
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	e.ID = e.Time.UTC().Format("20060102T150405") + "-" + hex.EncodeToString(rnd[:])
	b, err := json.MarshalIndent(&e, "", "  ")
	if err != nil {
		return "", fmt.Errorf("quarantine: %w", err)
	}
	tmp := filepath.Join(q.dir, "."+e.ID+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return "", fmt.Errorf("quarantine: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(q.dir, e.ID+".json")); err != nil {
		return "", fmt.Errorf("quarantine: %w", err)
	}
	return e.ID, nil
}

// List returns the quarantined turns, oldest first.
func (q *Quarantine) List() ([]Entry, error) {
	des, err := os.ReadDir(q.dir)
	if err != nil {
		return nil, fmt.Errorf("quarantine: %w", err)
	}
	var out []Entry
	for _, de := range des {
		id, ok := strings.CutSuffix(de.Name(), ".json")
		if !ok || !idPattern.MatchString(id) {
			continue
		}
		e, err := q.Get(id)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Get reads one quarantined turn.
func (q *Quarantine) Get(id string) (Entry, error) {
	if !idPattern.MatchString(id) {
		return Entry{}, fmt.Errorf("quarantine id %q: want an id as `nextstate proxy quarantine list` prints it (20260102T150405-0a1b2c3d)", id)
	}
	b, err := os.ReadFile(filepath.Join(q.dir, id+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return Entry{}, fmt.Errorf("quarantine: no turn %s", id)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("quarantine: %w", err)
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return Entry{}, fmt.Errorf("quarantine %s: %w", id, err)
	}
	return e, nil
}

// Drop deletes a quarantined turn for good.
func (q *Quarantine) Drop(id string) error {
	if _, err := q.Get(id); err != nil {
		return err
	}
	return os.Remove(filepath.Join(q.dir, id+".json"))
}

// Release stores a quarantined turn as a sample (with its judge's vote and
// hint) and removes it from the quarantine; it returns the sample's offset.
func (q *Quarantine) Release(ctx context.Context, st *store.Store, id string) (int64, error) {
	e, err := q.Get(id)
	if err != nil {
		return 0, err
	}
	off, err := AppendSample(ctx, st, e.Turn, e.Judgement)
	if err != nil {
		return 0, err
	}
	return off, os.Remove(filepath.Join(q.dir, id+".json"))
}
