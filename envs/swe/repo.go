package swe

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Repo is an instance's repository made ready to copy into a sandbox: a tar
// of the tree at the base commit with a fresh .git of one commit (so the
// agent sees no history past the base, nor the fix), kept in a cache
// directory and shared by the instances of one repository and commit.
type Repo struct {
	// Tar is the tar file: the tree and its .git, names relative to the
	// repository root.
	Tar string `json:"-"`
	// Commit is the sandbox repository's one commit (not the instance's
	// BaseCommit: the history is not copied).
	Commit string `json:"commit"`
	// Language is "go" when the tree has a go.mod at its root, else
	// "python", unless the instance says.
	Language string `json:"language"`
	// Module is the Go module path of the go.mod at the root ("" when
	// there is none).
	Module string `json:"module,omitempty"`
	Files  int    `json:"files"` // the tree's regular files, .git aside
	Bytes  int64  `json:"bytes"` // their size
}

// gitExclude keeps what running tests leaves behind out of `git add -A`,
// and so out of the agent's diff.
const gitExclude = "__pycache__/\n*.pyc\n.pytest_cache/\n*.egg-info/\n.nextstate/\n"

// The sandbox repository's commit is made with a fixed author and date, so
// the same tree always gives the same commit.
var gitCommitEnv = []string{
	"GIT_AUTHOR_NAME=nextstate", "GIT_AUTHOR_EMAIL=swe@nextstate.invalid",
	"GIT_COMMITTER_NAME=nextstate", "GIT_COMMITTER_EMAIL=swe@nextstate.invalid",
	"GIT_AUTHOR_DATE=2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2000-01-01T00:00:00Z",
	"GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
}

// repoCache prepares repositories into a directory, once per key, also when
// many evaluations ask at once.
type repoCache struct {
	dir string
	mu  sync.Mutex
	inf map[string]*sync.Mutex
}

func newRepoCache(dir string) *repoCache {
	return &repoCache{dir: dir, inf: map[string]*sync.Mutex{}}
}

func (c *repoCache) lock(key string) func() {
	c.mu.Lock()
	m := c.inf[key]
	if m == nil {
		m = &sync.Mutex{}
		c.inf[key] = m
	}
	c.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// PrepareRepo makes an instance's repository ready to copy into sandboxes
// (see Repo), under cacheDir/repos, or returns the one made before. The
// source is in.Source: a local git repository (its working tree or a bare
// one), read at in.BaseCommit, or a source archive (.tar, .tar.gz, .tgz,
// .zip; a single top-level directory is stripped). It needs git on this
// host.
func PrepareRepo(ctx context.Context, in *Instance, cacheDir string) (*Repo, error) {
	return newRepoCache(cacheDir).prepare(ctx, in)
}

func (c *repoCache) prepare(ctx context.Context, in *Instance) (*Repo, error) {
	if in.Source == "" {
		return nil, fmt.Errorf("instance %s: no source: set \"source\" to a local git repository or a source archive "+
			"(relative to the instances file), or put the repository %q beside the instances file", in.InstanceID, in.Repo)
	}
	fi, err := os.Stat(in.Source)
	if err != nil {
		return nil, fmt.Errorf("instance %s: source: %w", in.InstanceID, err)
	}
	var key string
	isArchive := !fi.IsDir()
	if isArchive {
		if archiveKind(in.Source) == "" {
			return nil, fmt.Errorf("instance %s: source %s is neither a directory (a git repository) nor an archive (.tar, .tar.gz, .tgz, .zip)", in.InstanceID, in.Source)
		}
		key = fmt.Sprintf("archive\x00%s\x00%d\x00%d", in.Source, fi.Size(), fi.ModTime().UnixNano())
	} else {
		sha, err := gitOut(ctx, in.Source, nil, "rev-parse", "--verify", "--quiet", in.BaseCommit+"^{commit}")
		if err != nil {
			return nil, fmt.Errorf("instance %s: base commit %s is not a commit of %s: %w", in.InstanceID, in.BaseCommit, in.Source, err)
		}
		key = "git\x00" + strings.TrimSpace(sha)
	}
	sum := sha256.Sum256([]byte(key + "\x00" + in.Language + "\x00v3"))
	name := hex.EncodeToString(sum[:12])
	dir := filepath.Join(c.dir, "repos")
	tarPath, metaPath := filepath.Join(dir, name+".tar"), filepath.Join(dir, name+".json")
	unlock := c.lock(name)
	defer unlock()
	if r, err := readRepoMeta(metaPath, tarPath); err == nil {
		return r, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp(dir, name+".work-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	tree := filepath.Join(work, "tree")
	if err := os.Mkdir(tree, 0o755); err != nil {
		return nil, err
	}
	if isArchive {
		err = extractArchive(in.Source, tree)
	} else {
		err = checkoutTree(ctx, in.Source, in.BaseCommit, tree, work)
	}
	if err != nil {
		return nil, fmt.Errorf("instance %s: reading the source at the base commit: %w", in.InstanceID, err)
	}
	r := &Repo{Tar: tarPath, Language: in.Language}
	if gomod, err := os.ReadFile(filepath.Join(tree, "go.mod")); err == nil {
		r.Module = modulePath(gomod)
		if r.Language == "" {
			r.Language = "go"
		}
	}
	if r.Language == "" {
		r.Language = "python"
	}
	if r.Commit, err = commitTree(ctx, tree, in.BaseCommit); err != nil {
		return nil, fmt.Errorf("instance %s: making the sandbox repository: %w", in.InstanceID, err)
	}
	tmp := filepath.Join(work, "repo.tar")
	if r.Files, r.Bytes, err = tarTree(tree, tmp); err != nil {
		return nil, err
	}
	meta, _ := json.Marshal(r)
	if err := os.WriteFile(filepath.Join(work, "meta.json"), meta, 0o644); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, tarPath); err != nil {
		return nil, err
	}
	if err := os.Rename(filepath.Join(work, "meta.json"), metaPath); err != nil {
		return nil, err
	}
	return r, nil
}

func readRepoMeta(metaPath, tarPath string) (*Repo, error) {
	b, err := os.ReadFile(metaPath)
	if err != nil {
		return nil, err
	}
	var r Repo
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	if _, err := os.Stat(tarPath); err != nil {
		return nil, err
	}
	r.Tar = tarPath
	return &r, nil
}

// gitOut runs git in dir and returns its stdout; a failure carries stderr.
func gitOut(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), gitCommitEnv...), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", fmt.Errorf("git is not installed on this host (Debian package git): %w", err)
		}
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// checkoutTree writes the tree of commit in the git repository src into
// dst, through a private index (git archive would honour export-ignore).
func checkoutTree(ctx context.Context, src, commit, dst, work string) error {
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(work, "index")}
	if _, err := gitOut(ctx, src, env, "read-tree", commit); err != nil {
		return err
	}
	_, err := gitOut(ctx, src, env, "-c", "core.autocrlf=false", "checkout-index", "-a", "-f", "--prefix="+dst+"/")
	return err
}

// commitTree makes dir a git repository whose one commit holds all of it,
// and returns the commit.
func commitTree(ctx context.Context, dir, base string) (string, error) {
	steps := [][]string{
		{"init", "-q"},
		{"config", "user.name", "nextstate"},
		{"config", "user.email", "swe@nextstate.invalid"},
		// Stat data differs once the tree is copied into a sandbox: compare
		// only times and sizes, so `git status` does not rehash everything.
		{"config", "core.checkStat", "minimal"},
		{"config", "core.trustctime", "false"},
		{"config", "gc.auto", "0"},
		{"add", "-A", "-f", "."},
		{"commit", "-q", "--allow-empty", "--no-verify", "-m", "base commit " + base},
		{"repack", "-a", "-d", "-q"},
		{"prune-packed"},
	}
	for _, s := range steps {
		if _, err := gitOut(ctx, dir, nil, s...); err != nil {
			return "", err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte(gitExclude), 0o644); err != nil {
		return "", err
	}
	out, err := gitOut(ctx, dir, nil, "rev-parse", "HEAD")
	return strings.TrimSpace(out), err
}

// tarTree writes dir into a tar file with root-owned entries, modes,
// times and symbolic links kept. files and size count the regular files
// outside .git.
func tarTree(dir, dst string) (files int, size int64, err error) {
	f, err := os.Create(dst)
	if err != nil {
		return 0, 0, err
	}
	files, size, err = tarTreeTo(dir, f, nil)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return files, size, err
}

// tarTreeTo writes dir as a tar stream to w, the entries keep says yes to
// (nil: all; a directory said no to is skipped whole).
func tarTreeTo(dir string, w io.Writer, keep func(rel string) bool) (files int, size int64, err error) {
	tw := tar.NewWriter(w)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if keep != nil && !keep(filepath.ToSlash(rel)) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			h.Name += "/"
		}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "root", "root"
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			if rel != ".git" && !strings.HasPrefix(rel, ".git"+string(filepath.Separator)) {
				files++
				size += fi.Size()
			}
			src, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, src)
			src.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return files, size, tw.Close()
}

func archiveKind(p string) string {
	switch {
	case strings.HasSuffix(p, ".tar.gz"), strings.HasSuffix(p, ".tgz"):
		return "tgz"
	case strings.HasSuffix(p, ".tar"):
		return "tar"
	case strings.HasSuffix(p, ".zip"):
		return "zip"
	}
	return ""
}

// archiveEntry is one file of a source archive.
type archiveEntry struct {
	name string
	mode fs.FileMode
	link string
	dir  bool
	time time.Time
	open func() (io.ReadCloser, error)
}

// extractArchive unpacks a source archive into dst, stripping one
// top-level directory when every entry is under it. Names that leave dst
// are refused.
func extractArchive(src, dst string) error {
	var ents []archiveEntry
	switch archiveKind(src) {
	case "zip":
		zr, err := zip.OpenReader(src)
		if err != nil {
			return err
		}
		defer zr.Close()
		for _, f := range zr.File {
			e := archiveEntry{name: f.Name, mode: f.Mode(), dir: f.FileInfo().IsDir(), time: f.Modified, open: f.Open}
			if f.Mode()&fs.ModeSymlink != 0 {
				rc, err := f.Open()
				if err != nil {
					return err
				}
				b, _ := io.ReadAll(io.LimitReader(rc, 4096))
				rc.Close()
				e.link = string(b)
			}
			ents = append(ents, e)
		}
		return writeEntries(ents, dst)
	default:
		f, err := os.Open(src)
		if err != nil {
			return err
		}
		defer f.Close()
		var r io.Reader = f
		if archiveKind(src) == "tgz" {
			gz, err := gzip.NewReader(f)
			if err != nil {
				return err
			}
			r = gz
		}
		// A tar is read once: buffer the files (source archives are small
		// enough; the result is tarred again anyway).
		tr := tar.NewReader(r)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			e := archiveEntry{name: h.Name, mode: h.FileInfo().Mode(), time: h.ModTime}
			switch h.Typeflag {
			case tar.TypeDir:
				e.dir = true
			case tar.TypeSymlink:
				e.link = h.Linkname
			case tar.TypeReg:
				b, err := io.ReadAll(tr)
				if err != nil {
					return err
				}
				e.open = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
			default:
				continue // pax headers, hard links, devices: not source
			}
			ents = append(ents, e)
		}
		return writeEntries(ents, dst)
	}
}

func writeEntries(ents []archiveEntry, dst string) error {
	strip := ""
	for i, e := range ents {
		top, _, _ := strings.Cut(strings.TrimPrefix(path.Clean("/"+e.name), "/"), "/")
		if i == 0 {
			strip = top
		}
		if top != strip || (!e.dir && path.Clean("/"+e.name) == "/"+top) {
			strip = ""
			break
		}
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, e := range ents {
		name := strings.TrimPrefix(path.Clean("/"+e.name), "/")
		if strip != "" {
			name = strings.TrimPrefix(strings.TrimPrefix(name, strip), "/")
		}
		if name == "" || name == "." {
			continue
		}
		switch {
		case e.dir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return err
			}
		case e.link != "":
			if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
				return err
			}
			if err := root.Symlink(e.link, name); err != nil {
				return err
			}
		case e.open != nil:
			if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
				return err
			}
			rc, err := e.open()
			if err != nil {
				return err
			}
			f, err := root.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, e.mode.Perm()|0o600)
			if err != nil {
				rc.Close()
				return err
			}
			_, err = io.Copy(f, rc)
			rc.Close()
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// modulePath reads the module path of a go.mod file ("" when it has none).
func modulePath(gomod []byte) string {
	for _, l := range strings.Split(string(gomod), "\n") {
		f := strings.Fields(strings.TrimSpace(l))
		if len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`+"`")
		}
	}
	return ""
}
