// Package image makes the images sandboxes run, with no image registry: the
// base image from Debian packages, and a task's own image from its
// Dockerfile, both on a local or remote Docker engine.
//
// BuildBase makes the default sandbox image, Base ("nextstate/base:latest",
// also tagged with its recipe version, Repo:Version()): debootstrap
// (variant minbase) installs Packages from the host's apt mirror into a
// directory, which becomes a rootfs tarball in a cache directory, and the
// tarball is imported into the engine (ImageImport). The tarball is reused
// by later builds, on this engine or others, so a rebuild takes seconds;
// an image whose tag is present is not rebuilt at all unless asked to.
// Building the rootfs needs root and debootstrap on the machine that runs
// BuildBase, not on the engine's.
//
// BuildTask builds a task's Dockerfile on an engine with the legacy builder
// (no BuildKit: no heredocs, no --mount), from a tar of the task's
// directory, and tags the image by the task's name and a hash of its
// content. A FROM image that is not on the engine is replaced by
// TaskOptions.BaseImage, so tasks written for images on a registry build
// from the local base image.
//
// The functions take the engine's client; they are safe for concurrent
// use, and BuildBase serializes rootfs builds in one cache directory with a
// lock file.
package image

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

const (
	// Repo is the base image's repository.
	Repo = "nextstate/base"
	// Base is the default sandbox image.
	Base = Repo + ":latest"
	// DefaultSuite is the Debian release of the base image.
	DefaultSuite = "bookworm"
	// DefaultMirror is used when the host's apt sources name no mirror
	// for the suite.
	DefaultMirror = "http://deb.debian.org/debian"
	// recipe is bumped when the build steps change in a way the package
	// list does not show.
	recipe = "1"
)

// Packages are installed into the base image on top of minbase: a shell
// and core tools, Python with pytest (task tests) and `python` as python3
// (python-is-python3: Terminal-Bench's images, and the tests and solutions
// written for them, call it so), git, tmux (interactive programs), procps,
// a C toolchain for small build tasks, and common text and archive tools.
var Packages = []string{
	"bash", "bc", "bzip2", "ca-certificates", "coreutils", "curl", "diffutils",
	"file", "findutils", "gawk", "gcc", "git", "grep", "gzip", "jq", "less",
	"libc6-dev", "make", "nano", "patch", "procps", "psmisc", "python3",
	"python-is-python3", "python3-pytest", "sed", "tar", "tmux", "unzip",
	"util-linux", "vim-tiny", "xz-utils",
}

// BaseOptions configure BuildBase. The zero value builds the default image.
type BaseOptions struct {
	// Suite is the Debian release; default DefaultSuite.
	Suite string
	// Mirror is the Debian archive to install from; default the host's
	// (HostMirror).
	Mirror string
	// Packages to install; default Packages.
	Packages []string
	// CacheDir keeps rootfs tarballs; default DefaultCacheDir().
	CacheDir string
	// Force imports the image again even if its tag is present.
	Force bool
	// Fresh runs debootstrap again even if the tarball is cached.
	Fresh bool
	// Log receives progress and tool output; nil discards it.
	Log io.Writer
}

func (o BaseOptions) withDefaults() BaseOptions {
	if o.Suite == "" {
		o.Suite = DefaultSuite
	}
	if o.Mirror == "" {
		o.Mirror = HostMirror(o.Suite)
	}
	if o.Packages == nil {
		o.Packages = Packages
	}
	if o.CacheDir == "" {
		o.CacheDir = DefaultCacheDir()
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// Version is the base image's recipe version, its tag beside "latest": the
// suite and a hash of the package list and build steps. The mirror is not
// part of it.
func (o BaseOptions) Version() string {
	o = o.withDefaults()
	pkgs := slices.Clone(o.Packages)
	slices.Sort(pkgs)
	h := sha256.Sum256([]byte(recipe + "\n" + o.Suite + "\n" + strings.Join(pkgs, ",")))
	return o.Suite + "-" + hex.EncodeToString(h[:4])
}

// DefaultCacheDir is $XDG_CACHE_HOME/nextstate/images (~/.cache/... when
// unset).
func DefaultCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "nextstate", "images")
}

// Exists reports whether ref is on the engine.
func Exists(ctx context.Context, cli *client.Client, ref string) (bool, error) {
	_, err := cli.ImageInspect(ctx, ref)
	switch {
	case err == nil:
		return true, nil
	case cerrdefs.IsNotFound(err):
		return false, nil
	}
	return false, err
}

// BuildBase makes the base image on the engine: Repo:Version() and Base.
// When Repo:Version() is present and o.Force is not set it only points
// Base at it. It returns the versioned reference.
func BuildBase(ctx context.Context, cli *client.Client, o BaseOptions) (string, error) {
	o = o.withDefaults()
	ref := Repo + ":" + o.Version()
	if !o.Force {
		ok, err := Exists(ctx, cli, ref)
		if err != nil {
			return "", err
		}
		if ok {
			fmt.Fprintf(o.Log, "image: %s is present\n", ref)
			if _, err := cli.ImageTag(ctx, client.ImageTagOptions{Source: ref, Target: Base}); err != nil {
				return "", fmt.Errorf("image: tagging %s: %w", Base, err)
			}
			return ref, nil
		}
	}
	tarball, err := Rootfs(ctx, o)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(o.Log, "image: importing %s\n", ref)
	if err := Import(ctx, cli, tarball, ref, Base); err != nil {
		return "", err
	}
	return ref, nil
}

// Rootfs returns the path of the base image's rootfs tarball in the cache
// directory, running debootstrap to make it when it is missing (or when
// o.Fresh is set). It needs root and debootstrap.
func Rootfs(ctx context.Context, o BaseOptions) (string, error) {
	o = o.withDefaults()
	if err := os.MkdirAll(o.CacheDir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockDir(o.CacheDir)
	if err != nil {
		return "", err
	}
	defer unlock()
	out := filepath.Join(o.CacheDir, "rootfs-"+o.Version()+".tar")
	if _, err := os.Stat(out); err == nil && !o.Fresh {
		fmt.Fprintf(o.Log, "image: using cached %s\n", out)
		return out, nil
	}
	if os.Geteuid() != 0 {
		return "", errors.New("image: building the base image's rootfs (debootstrap) needs root")
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return "", fmt.Errorf("image: debootstrap is needed to build the base image (apt-get install debootstrap): %w", err)
	}
	work, err := os.MkdirTemp(o.CacheDir, "build-")
	if err != nil {
		return "", err
	}
	defer func() {
		if err := removeTree(work); err != nil {
			fmt.Fprintf(o.Log, "image: leaving %s: %v\n", work, err)
		}
	}()
	root := filepath.Join(work, "root")
	fmt.Fprintf(o.Log, "image: debootstrap %s from %s into %s\n", o.Suite, o.Mirror, root)
	args := []string{"--variant=minbase", "--include=" + strings.Join(o.Packages, ","), o.Suite, root, o.Mirror}
	if err := run(ctx, o.Log, "debootstrap", args...); err != nil {
		return "", fmt.Errorf("image: debootstrap: %w", err)
	}
	if err := trimRootfs(root, o); err != nil {
		return "", err
	}
	tmp := filepath.Join(work, "rootfs.tar")
	if err := run(ctx, o.Log, "tar", "--numeric-owner", "-C", root, "-cf", tmp,
		"--exclude=./dev/*", "--exclude=./proc/*", "--exclude=./sys/*", "."); err != nil {
		return "", fmt.Errorf("image: packing the rootfs: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", err
	}
	fmt.Fprintf(o.Log, "image: cached %s\n", out)
	return out, nil
}

// trimRootfs drops package caches and documentation, and writes the apt
// sources and the image's version.
func trimRootfs(root string, o BaseOptions) error {
	for _, glob := range []string{"var/cache/apt/archives/*.deb", "var/cache/apt/*.bin", "var/lib/apt/lists/*", "usr/share/man/*", "usr/share/locale/*", "var/log/*.log"} {
		matches, _ := filepath.Glob(filepath.Join(root, glob))
		for _, m := range matches {
			if err := os.RemoveAll(m); err != nil {
				return fmt.Errorf("image: trimming the rootfs: %w", err)
			}
		}
	}
	src := fmt.Sprintf("deb %s %s main\n", o.Mirror, o.Suite)
	if err := os.WriteFile(filepath.Join(root, "etc/apt/sources.list"), []byte(src), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, "etc/nextstate-image"), []byte(Repo+":"+o.Version()+"\n"), 0o644)
}

// Import makes an image from a rootfs tarball and tags it with every ref.
func Import(ctx context.Context, cli *client.Client, tarball string, refs ...string) error {
	if len(refs) == 0 {
		return errors.New("image: import: no reference")
	}
	f, err := os.Open(tarball)
	if err != nil {
		return err
	}
	defer f.Close()
	rc, err := cli.ImageImport(ctx, client.ImageImportSource{Source: f, SourceName: "-"}, refs[0], client.ImageImportOptions{
		Message: "nextstate base image",
		Changes: []string{
			`ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
			`ENV LANG=C.UTF-8`,
			`CMD ["/bin/bash"]`,
		},
	})
	if err != nil {
		return fmt.Errorf("image: import %s: %w", refs[0], err)
	}
	defer rc.Close()
	if err := readStream(rc, io.Discard); err != nil {
		return fmt.Errorf("image: import %s: %w", refs[0], err)
	}
	for _, r := range refs[1:] {
		if _, err := cli.ImageTag(ctx, client.ImageTagOptions{Source: refs[0], Target: r}); err != nil {
			return fmt.Errorf("image: tagging %s: %w", r, err)
		}
	}
	return nil
}

// MaxErrorOutput caps the output a BuildError keeps: the end of the
// build's output, where the failing step is.
const MaxErrorOutput = 8 << 10

// BuildError is an engine's error message with the output that led to it
// (the failing step's command and what it printed), at most
// MaxErrorOutput of its end.
type BuildError struct {
	Message string
	Output  string
}

func (e *BuildError) Error() string {
	if strings.TrimSpace(e.Output) == "" {
		return e.Message
	}
	return e.Message + "\nthe build's output:\n" + strings.TrimRight(e.Output, "\n")
}

// readStream reads an engine's JSON message stream, writing its text to
// log, and returns the first error message in it as a *BuildError, with
// the end of the output before it.
func readStream(r io.Reader, log io.Writer) error {
	dec := json.NewDecoder(bufio.NewReader(r))
	var out tailBuffer
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if m.Error != nil {
			return &BuildError{Message: strings.TrimSpace(m.Error.Message), Output: out.String()}
		}
		if m.Stream != "" {
			io.WriteString(log, m.Stream)
			out.write(m.Stream)
		} else if m.Status != "" && m.Progress == nil {
			fmt.Fprintln(log, m.Status)
			out.write(m.Status + "\n")
		}
	}
}

// tailBuffer keeps the last MaxErrorOutput bytes written to it, from a
// line's start, marking what it dropped.
type tailBuffer struct {
	b       []byte
	dropped bool
}

func (t *tailBuffer) write(s string) {
	t.b = append(t.b, s...)
	if len(t.b) > 2*MaxErrorOutput {
		t.b = append(t.b[:0], t.b[len(t.b)-MaxErrorOutput:]...)
		t.dropped = true
	}
}

func (t *tailBuffer) String() string {
	b := t.b
	if len(b) > MaxErrorOutput {
		b, t.dropped = b[len(b)-MaxErrorOutput:], true
	}
	if !t.dropped {
		return string(b)
	}
	if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
		b = b[i+1:]
	}
	return "[... earlier output cut ...]\n" + string(b)
}

func run(ctx context.Context, log io.Writer, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = log, log
	return cmd.Run()
}

// lockDir takes an exclusive lock on dir/.lock until the returned func.
func lockDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// removeTree removes dir after unmounting what debootstrap may have left
// mounted under it (proc, sys, a bind of /dev); it refuses to remove a
// tree that still has a mount point in it.
func removeTree(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for range 3 {
		mounts := mountsUnder(abs)
		if len(mounts) == 0 {
			return os.RemoveAll(abs)
		}
		for _, m := range mounts { // deepest first
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
	}
	return fmt.Errorf("image: %s still has mounts in it; not removing it", abs)
}

// mountsUnder lists the mount points under dir, deepest first.
func mountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMount(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
