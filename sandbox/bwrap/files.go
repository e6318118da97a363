package bwrap

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// CopyIn implements sandbox.Sandbox. dir must lie in the workspace, /tmp or
// /root (the sandbox's writable places) or in a writable Spec mount; it is
// made if missing. Entries
// are confined to dir: names with "..", and symbolic links that lead out,
// are refused. Owners, modes and times are kept.
func (s *Sandbox) CopyIn(ctx context.Context, dir string, r io.Reader) error {
	if err := s.usable(); err != nil {
		return err
	}
	root, rel, err := s.resolve(dir, true)
	if err != nil {
		return err
	}
	defer root.Close()
	if rel != "." {
		if err := root.MkdirAll(rel, 0o755); err != nil {
			return fmt.Errorf("bwrap: copy in: %w", err)
		}
	}
	tr := tar.NewReader(r)
	type dirTime struct {
		name string
		t    time.Time
	}
	var dirTimes []dirTime
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("bwrap: copy in: %w", err)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "/"))
		if name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("bwrap: copy in: entry %q leaves %s", h.Name, dir)
		}
		p := path.Join(rel, name)
		mode := fs.FileMode(h.Mode).Perm() | fs.FileMode(h.Mode)&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(p, 0o755); err != nil {
				return fmt.Errorf("bwrap: copy in %s: %w", h.Name, err)
			}
			dirTimes = append(dirTimes, dirTime{p, h.ModTime})
		case tar.TypeReg, tar.TypeRegA:
			if d := path.Dir(p); d != "." {
				if err := root.MkdirAll(d, 0o755); err != nil {
					return fmt.Errorf("bwrap: copy in %s: %w", h.Name, err)
				}
			}
			_ = root.Remove(p) // a link or file there is replaced, not written through
			f, err := root.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				return fmt.Errorf("bwrap: copy in %s: %w", h.Name, err)
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("bwrap: copy in %s: %w", h.Name, err)
			}
		case tar.TypeSymlink:
			_ = root.Remove(p)
			if err := root.Symlink(h.Linkname, p); err != nil {
				return fmt.Errorf("bwrap: copy in %s: %w", h.Name, err)
			}
			_ = root.Lchown(p, h.Uid, h.Gid)
			continue
		case tar.TypeLink:
			target := path.Clean(strings.TrimPrefix(h.Linkname, "/"))
			if target == ".." || strings.HasPrefix(target, "../") {
				return fmt.Errorf("bwrap: copy in: link %q leaves %s", h.Name, dir)
			}
			_ = root.Remove(p)
			if err := root.Link(path.Join(rel, target), p); err != nil {
				return fmt.Errorf("bwrap: copy in %s: %w", h.Name, err)
			}
			continue
		default:
			continue // devices, fifos: not in a workspace
		}
		_ = root.Lchown(p, h.Uid, h.Gid)
		if err := root.Chmod(p, mode); err != nil {
			return fmt.Errorf("bwrap: copy in %s: %w", h.Name, err)
		}
		if h.Typeflag != tar.TypeDir {
			_ = root.Chtimes(p, h.ModTime, h.ModTime)
		}
	}
	for i := len(dirTimes) - 1; i >= 0; i-- {
		_ = root.Chtimes(dirTimes[i].name, dirTimes[i].t, dirTimes[i].t)
	}
	return nil
}

// CopyOut implements sandbox.Sandbox: a tar stream of path, whose entries
// are named from path's base name ("src", "src/main.go"), as docker cp
// does. path must lie in the workspace, /tmp, /root or a Spec mount. The stream is
// written as it is read; Close ends it early.
func (s *Sandbox) CopyOut(ctx context.Context, p string) (io.ReadCloser, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	root, rel, err := s.resolve(p, false)
	if err != nil {
		return nil, err
	}
	if _, err := root.Lstat(rel); err != nil {
		root.Close()
		return nil, fmt.Errorf("bwrap: copy out %s: %w", p, err)
	}
	pr, pw := io.Pipe()
	rc := &tarReader{PipeReader: pr, done: make(chan struct{})}
	go func() { // owned by rc: its Close waits for it
		defer close(rc.done)
		defer root.Close()
		pw.CloseWithError(writeTar(ctx, root, rel, path.Base(p), pw))
	}()
	return rc, nil
}

type tarReader struct {
	*io.PipeReader
	done chan struct{}
}

// Close stops the writer and waits for it.
func (r *tarReader) Close() error {
	r.PipeReader.CloseWithError(errors.New("bwrap: copy out: reader closed"))
	<-r.done
	return nil
}

// writeTar writes the tree at rel in root to w, named from base.
func writeTar(ctx context.Context, root *os.Root, rel, base string, w io.Writer) error {
	tw := tar.NewWriter(w)
	if base == "/" || base == "." {
		base = "."
	}
	err := fs.WalkDir(root.FS(), rel, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		fi, err := root.Lstat(p) // WalkDir's root entry follows links; Lstat never does
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = root.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return nil // a socket or device: skipped
		}
		name := base
		if p != rel {
			name = path.Join(base, strings.TrimPrefix(p, rel+"/"))
			if rel == "." {
				name = path.Join(base, p)
			}
		}
		if fi.IsDir() {
			name += "/"
		}
		h.Name = name
		h.Uname, h.Gname = "", ""
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := root.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("bwrap: copy out: %w", err)
	}
	return tw.Close()
}

// copyTree copies the contents of src into dst (which exists), keeping
// modes, owners, times and symbolic links; used for snapshots.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "." {
			return nil
		}
		to := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			if err := os.Mkdir(to, fi.Mode().Perm()); err != nil {
				return err
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.Symlink(t, to); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			if err := copyFile(p, to, fi.Mode().Perm()); err != nil {
				return err
			}
		default:
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			_ = os.Lchown(to, int(st.Uid), int(st.Gid))
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			_ = os.Chmod(to, fi.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
			if !fi.IsDir() {
				_ = os.Chtimes(to, fi.ModTime(), fi.ModTime())
			}
		}
		return nil
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm|0o200)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in) // copy_file_range where the kernel can
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// clearDir removes everything inside dir, keeping dir itself (it is a
// mount point in the sandbox).
func clearDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
