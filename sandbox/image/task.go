package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"
)

// TaskRepo is the repository of task images: TaskRepo/<name>:<hash>.
const TaskRepo = "nextstate-task"

// TaskOptions configure BuildTask.
type TaskOptions struct {
	// Name names the image; default the directory's base name.
	Name string
	// BaseImage replaces each FROM image that is not on the engine. Empty
	// means such a FROM is an error (nothing is pulled).
	BaseImage string
	// BaseWorkdir, when set, is the WORKDIR put right after each FROM that
	// BaseImage replaces: the working directory the replaced image would
	// have started the stage in (Terminal-Bench's base images: /app), so
	// the Dockerfile's relative COPY and RUN steps land where they would
	// have. Empty keeps BaseImage's own.
	BaseWorkdir string
	// Dockerfile is the file's name in the directory; default "Dockerfile".
	Dockerfile string
	// Force builds even when the tag is present.
	Force bool
	// Log receives the builder's output; nil discards it.
	Log io.Writer
	// Exclude lists more patterns to leave out of the build context, as
	// .dockerignore lines (a task's hidden tests and its solution).
	Exclude []string
}

// BuildTask builds the Dockerfile of the task directory dir on the engine
// with the legacy builder and returns the image's reference,
// TaskRepo/<name>:<hash>, where hash covers the directory's files (less
// those .dockerignore excludes), the Dockerfile as rewritten, and the IDs
// of its FROM images. A present tag is reused unless o.Force. FROM images
// missing from the engine are replaced by o.BaseImage (each followed by
// WORKDIR o.BaseWorkdir when that is set); RUN steps have the engine's
// default network.
func BuildTask(ctx context.Context, cli *client.Client, dir string, o TaskOptions) (string, error) {
	if o.Dockerfile == "" {
		o.Dockerfile = "Dockerfile"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if o.Name == "" {
		o.Name = filepath.Base(abs)
	}
	name := sanitizeName(o.Name)
	df, err := os.ReadFile(filepath.Join(abs, o.Dockerfile))
	if err != nil {
		return "", fmt.Errorf("image: task %s: %w", o.Name, err)
	}
	rewritten, bases, err := rewriteFROM(ctx, cli, df, o.BaseImage, o.BaseWorkdir)
	if err != nil {
		return "", fmt.Errorf("image: task %s: %w", o.Name, err)
	}
	files, err := contextFiles(abs, o.Dockerfile, o.Exclude)
	if err != nil {
		return "", fmt.Errorf("image: task %s: %w", o.Name, err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "dockerfile %d\n%s\n", len(rewritten), rewritten)
	for _, b := range bases {
		fmt.Fprintf(h, "from %s\n", b)
	}
	for _, f := range files {
		if err := hashFile(h, abs, f); err != nil {
			return "", err
		}
	}
	ref := fmt.Sprintf("%s/%s:%s", TaskRepo, name, hex.EncodeToString(h.Sum(nil))[:12])
	if !o.Force {
		if ok, err := Exists(ctx, cli, ref); err != nil {
			return "", err
		} else if ok {
			fmt.Fprintf(o.Log, "image: %s is present\n", ref)
			return ref, nil
		}
	}

	pr, pw := io.Pipe()
	packed := make(chan error, 1)
	go func() { // owned by BuildTask: it receives from packed on every path
		err := writeContext(pw, abs, files, o.Dockerfile, rewritten)
		pw.CloseWithError(err)
		packed <- err
	}()
	res, err := cli.ImageBuild(ctx, pr, client.ImageBuildOptions{
		Tags:        []string{ref},
		Dockerfile:  o.Dockerfile,
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
		Labels:      map[string]string{"nextstate.task": o.Name},
	})
	if err != nil {
		pr.CloseWithError(err)
		<-packed
		return "", fmt.Errorf("image: building task %s: %w", o.Name, err)
	}
	berr := readStream(res.Body, o.Log)
	res.Body.Close()
	pr.CloseWithError(io.ErrClosedPipe)
	perr := <-packed
	if berr != nil {
		return "", fmt.Errorf("image: building task %s: %w", o.Name, berr)
	}
	if perr != nil && !errors.Is(perr, io.ErrClosedPipe) {
		return "", fmt.Errorf("image: packing task %s: %w", o.Name, perr)
	}
	return ref, nil
}

var fromLine = regexp.MustCompile(`(?i)^(\s*FROM\s+)((?:--\S+\s+)*)(\S+)(.*)$`)

// rewriteFROM replaces FROM images missing from the engine by base,
// followed by WORKDIR baseWorkdir when that is set, and returns the new
// Dockerfile with the image IDs of its FROM images. Stage names, scratch
// and images named through ARGs are left alone.
func rewriteFROM(ctx context.Context, cli *client.Client, df []byte, base, baseWorkdir string) ([]byte, []string, error) {
	stages := map[string]bool{}
	var ids []string
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(df))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		m := fromLine.FindStringSubmatch(line)
		if m == nil {
			out.WriteString(line + "\n")
			continue
		}
		img, rest := m[3], m[4]
		alias := ""
		if f := strings.Fields(rest); len(f) == 2 && strings.EqualFold(f[0], "AS") {
			alias = strings.ToLower(f[1])
		}
		if stages[strings.ToLower(img)] || strings.EqualFold(img, "scratch") || strings.Contains(img, "$") {
			out.WriteString(line + "\n")
			if alias != "" {
				stages[alias] = true
			}
			continue
		}
		if alias != "" {
			stages[alias] = true
		}
		inspect, err := cli.ImageInspect(ctx, img)
		if err != nil {
			if base == "" {
				return nil, nil, fmt.Errorf("FROM %s: not on the engine, and no base image to put in its place (--base-image): %w", img, err)
			}
			if inspect, err = cli.ImageInspect(ctx, base); err != nil {
				return nil, nil, fmt.Errorf("base image %s: %w", base, err)
			}
			img = base
			ids = append(ids, inspect.ID)
			fmt.Fprintf(&out, "%s%s%s%s\n", m[1], m[2], img, rest)
			if baseWorkdir != "" {
				fmt.Fprintf(&out, "WORKDIR %s\n", baseWorkdir)
			}
			continue
		}
		ids = append(ids, inspect.ID)
		fmt.Fprintf(&out, "%s%s%s%s\n", m[1], m[2], img, rest)
	}
	return out.Bytes(), ids, sc.Err()
}

// contextFiles lists the directory's files, slash-separated and sorted,
// less what .dockerignore excludes; the Dockerfile is always in.
func contextFiles(dir, dockerfile string, exclude []string) ([]string, error) {
	ignore, err := readIgnore(filepath.Join(dir, ".dockerignore"))
	if err != nil {
		return nil, err
	}
	ignore = append(ignore, exclude...)
	var files []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if rel != dockerfile && ignored(ignore, rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		files = append(files, rel)
		return nil
	})
	return files, err
}

// readIgnore reads .dockerignore patterns (path.Match syntax; a pattern
// also excludes what is under a matching directory; "!" re-includes).
func readIgnore(p string) ([]string, error) {
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var pats []string
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		neg := strings.HasPrefix(l, "!")
		l = path.Clean(strings.TrimPrefix(strings.TrimPrefix(l, "!"), "/"))
		if neg {
			l = "!" + l
		}
		pats = append(pats, l)
	}
	return pats, nil
}

func ignored(pats []string, rel string) bool {
	out := false
	for _, p := range pats {
		neg := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(p, "!")
		if matchPrefix(p, rel) {
			out = !neg
		}
	}
	return out
}

// matchPrefix matches p against rel or one of its parent directories.
func matchPrefix(p, rel string) bool {
	for r := rel; r != "." && r != "/"; r = path.Dir(r) {
		if ok, _ := path.Match(p, r); ok {
			return true
		}
	}
	return false
}

func hashFile(h io.Writer, dir, rel string) error {
	p := filepath.Join(dir, filepath.FromSlash(rel))
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	fmt.Fprintf(h, "file %s %o\n", rel, fi.Mode())
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		t, err := os.Readlink(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "-> %s\n", t)
	case fi.Mode().IsRegular():
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(h, "%d\n", fi.Size())
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
	}
	return nil
}

// writeContext writes the build context as a tar stream, with the
// rewritten Dockerfile in place of the file.
func writeContext(w io.Writer, dir string, files []string, dockerfile string, rewritten []byte) error {
	tw := tar.NewWriter(w)
	for _, rel := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		hdr.Name = rel
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		if rel == dockerfile {
			hdr.Size = int64(len(rewritten))
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			if _, err := tw.Write(rewritten); err != nil {
				return err
			}
			continue
		}
		if fi.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			if err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

var nameBad = regexp.MustCompile(`[^a-z0-9._-]+`)

// sanitizeName makes a repository path component of s.
func sanitizeName(s string) string {
	s = nameBad.ReplaceAllString(strings.ToLower(s), "-")
	s = strings.Trim(s, "._-")
	if s == "" {
		s = "task"
	}
	return s
}
