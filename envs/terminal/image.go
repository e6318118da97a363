package terminal

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/sandbox"
)

// builtImage is one task image, built once per instance of the kind.
type builtImage struct {
	once sync.Once
	ref  string
	err  error
}

// image returns the image of a task, built from its Dockerfile by the
// backend (sandbox.ImageBuilder; docker builds it on every engine, a FROM
// image missing there replaced by base, which then works in
// DefaultWorkdir as Terminal-Bench's images do), its hidden tests and solution
// left out of the build context. Builds are cached by content on the
// engines, and by task here.
func (i *instance) image(ctx context.Context, b sandbox.ImageBuilder, task *gym.Task, files fs.FS, bld taskBuild, base string) (string, error) {
	key := task.Dir
	if key == "" {
		key = "builtin:" + task.ID
	}
	v, _ := i.images.LoadOrStore(key, &builtImage{})
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
		ib := sandbox.ImageBuild{Dir: filepath.Join(dir, filepath.FromSlash(bld.Context)), Dockerfile: bld.dockerfileIn(), Name: name,
			BaseImage: base, BaseWorkdir: DefaultWorkdir}
		if bld.Context == "." {
			ib.Exclude = hiddenPaths // a subfolder's context holds none of the task's own files
		}
		bi.ref, bi.err = b.BuildImage(ctx, ib)
	})
	if bi.err != nil {
		i.images.Delete(key) // try again at the next reset
		return "", bi.err
	}
	return bi.ref, nil
}
