package docker

import (
	"context"
	"errors"
	"fmt"

	"github.com/nextstate-rl/nextstate/sandbox"
	"github.com/nextstate-rl/nextstate/sandbox/image"
)

var _ sandbox.ImageBuilder = (*Backend)(nil)

// BuildImage implements sandbox.ImageBuilder: it builds b's Dockerfile
// (image.BuildTask: the legacy builder, a FROM image missing from the
// engine replaced by b.BaseImage) on every engine of the backend, since a
// sandbox may be placed on any of them. The reference is the same on every
// engine (it hashes the content), and a present one is reused. An engine's
// failure is an error naming the engine, after the others were tried.
func (b *Backend) BuildImage(ctx context.Context, ib sandbox.ImageBuild) (string, error) {
	var ref string
	var errs []error
	for _, e := range b.engines {
		r, err := image.BuildTask(ctx, e.cli, ib.Dir, image.TaskOptions{Name: ib.Name, BaseImage: ib.BaseImage,
			BaseWorkdir: ib.BaseWorkdir, Exclude: ib.Exclude, Dockerfile: ib.Dockerfile})
		if err != nil {
			errs = append(errs, fmt.Errorf("engine %s: %w", e.host, err))
			continue
		}
		ref = r
	}
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	return ref, nil
}
