package terminal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/sandbox"
	"github.com/nextstate-rl/nextstate/sandbox/docker"
	"github.com/nextstate-rl/nextstate/sandbox/image"
)

// engines is what the docker backend tells about its engines: a task's
// image must be on every engine a sandbox may be placed on.
type engines interface{ Engines() []docker.Engine }

// builtImage is one task image, built once per kind configuration.
type builtImage struct {
	once sync.Once
	ref  string
	err  error
}

// image returns the docker image of a task, built from its Dockerfile
// (sandbox/image.BuildTask: the legacy builder, a FROM image missing from
// the engine replaced by base) on every engine of the backend. Builds are
// cached by content on the engines, and by task here.
func (k *Kind) image(ctx context.Context, b sandbox.Backend, task *gym.Task, files fs.FS, base string) (string, error) {
	eb, ok := b.(engines)
	if !ok {
		return "", fmt.Errorf("the %s backend cannot build images", b.Name())
	}
	key := task.Dir
	if key == "" {
		key = "builtin:" + task.ID
	}
	v, _ := k.images.LoadOrStore(key, &builtImage{})
	bi := v.(*builtImage)
	bi.once.Do(func() {
		dir := task.Dir
		if dir == "" {
			// An embedded task: the builder reads a directory.
			d, err := os.MkdirTemp("", "nextstate-task-")
			if err != nil {
				bi.err = err
				return
			}
			defer os.RemoveAll(d)
			if err := os.CopyFS(d, files); err != nil {
				bi.err = err
				return
			}
			dir = d
		}
		name := filepath.Base(task.Dir)
		if task.Dir == "" {
			name = task.ID
		}
		var errs []error
		for _, e := range eb.Engines() {
			ref, err := image.BuildTask(ctx, e.Client, dir, image.TaskOptions{Name: name, BaseImage: base, Exclude: hiddenPaths})
			if err != nil {
				errs = append(errs, fmt.Errorf("engine %s: %w", e.Host, err))
				continue
			}
			bi.ref = ref // the same on every engine: it hashes the content
		}
		bi.err = errors.Join(errs...)
	})
	if bi.err != nil {
		k.images.Delete(key) // try again at the next reset
		return "", bi.err
	}
	return bi.ref, nil
}
