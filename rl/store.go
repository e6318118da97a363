package rl

import (
	"context"
	"io"

	"github.com/nextstate-rl/nextstate/gym"
)

// Store is what a Follower needs of the trajectory store. Package store's
// *Store satisfies it; rl imports gym only, so the methods speak gym's and
// the standard library's types.
type Store interface {
	// Append records an event (the judges' reward events); gym.Recorder.
	gym.Recorder
	// ScanAfter calls fn with each committed event after seq whose type is
	// one of types, in seq order: the follower reads back what its intake
	// dropped.
	ScanAfter(ctx context.Context, seq int64, types []gym.EventType, fn func(*gym.Event) error) error
	// Blob opens a stored blob by its reference (the screens shown to the
	// judge).
	Blob(ref string) (io.ReadCloser, error)
	// AppendSamples gives trajectory t its group (by run and task) and its
	// index, has encode write the samples' JSON objects, and stores them
	// together; it returns the offsets of the first and the last.
	AppendSamples(ctx context.Context, t SampleTrajectory, encode func(group, index int) ([][]byte, error)) (first, last int64, err error)
}

// SampleTrajectory names the trajectory whose samples Store.AppendSamples
// writes. It is an alias of an unnamed struct type, as store.Trajectory
// is, so that the two are the same type.
type SampleTrajectory = struct {
	Run, Env, Task, Session string
	Episode                 int
}
