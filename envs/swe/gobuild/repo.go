package gobuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The author and committer of base commits: fixed, with the OLD version's
// time as the date, so one module version always gives the same hash.
const (
	gitName  = "nextstate"
	gitEmail = "swe@nextstate.invalid"
)

// Pathspecs of the test side of a diff: every *_test.go file and anything
// under a testdata directory, at any depth.
var (
	testPathspecs  = []string{":(glob)**/*_test.go", ":(glob)**/testdata/**"}
	fixPathspecs   = []string{".", ":(exclude,glob)**/*_test.go", ":(exclude,glob)**/testdata/**"}
	errGitNotFound = fmt.Errorf("git is needed to build Go instances: install git")
)

// IsTestPath reports whether a path (slash-separated, relative to the
// module root) belongs to the test patch: a *_test.go file, or a file
// under a directory named testdata.
func IsTestPath(p string) bool {
	if strings.HasSuffix(p, "_test.go") {
		return true
	}
	return strings.HasPrefix(p, "testdata/") || strings.Contains(p, "/testdata/")
}

// git runs git with no user or system configuration, a fixed identity and
// date, in dir.
func (b *builder) git(ctx context.Context, dir string, env map[string]string, args ...string) ([]byte, error) {
	e := map[string]string{
		"GIT_CONFIG_NOSYSTEM":     "1",
		"GIT_CONFIG_GLOBAL":       os.DevNull,
		"GIT_TERMINAL_PROMPT":     "0",
		"GIT_AUTHOR_NAME":         gitName,
		"GIT_AUTHOR_EMAIL":        gitEmail,
		"GIT_COMMITTER_NAME":      gitName,
		"GIT_COMMITTER_EMAIL":     gitEmail,
		"GIT_CEILING_DIRECTORIES": filepath.Dir(dir),
		"LC_ALL":                  "C",
		// The caller's repository settings do not apply (empty: unset).
		"GIT_DIR": "", "GIT_WORK_TREE": "", "GIT_INDEX_FILE": "", "GIT_OBJECT_DIRECTORY": "",
		"GIT_ALTERNATE_OBJECT_DIRECTORIES": "", "GIT_COMMON_DIR": "", "GIT_EXTERNAL_DIFF": "",
	}
	for k, v := range env {
		e[k] = v
	}
	out, err := mustRun(ctx, command{Args: append([]string{"git"}, args...), Dir: dir, Env: e, Timeout: 10 * time.Minute})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func gitDate(t time.Time) string {
	if t.IsZero() { // local directories: a fixed date
		t = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return fmt.Sprintf("@%d +0000", t.Unix())
}

// makeRepo makes a git repository at repoDir holding oldDir's files in one
// commit (the base commit: fixed author, committer and date, so the hash
// is reproducible) checked out, and returns that commit's hash. Ignore
// files are not obeyed: every file of the module is committed.
func (b *builder) makeRepo(ctx context.Context, repoDir, oldDir, message string, date time.Time) (string, error) {
	tmp := repoDir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil {
		return "", err
	}
	if _, err := b.git(ctx, filepath.Dir(tmp), nil, "init", "-q", "-b", "main", tmp); err != nil {
		return "", err
	}
	gitDir := filepath.Join(tmp, ".git")
	env := map[string]string{"GIT_DIR": gitDir, "GIT_WORK_TREE": oldDir,
		"GIT_AUTHOR_DATE": gitDate(date), "GIT_COMMITTER_DATE": gitDate(date)}
	if _, err := b.git(ctx, oldDir, env, "-c", "core.autocrlf=false", "add", "-A", "-f", "."); err != nil {
		return "", err
	}
	tree, err := b.git(ctx, oldDir, env, "write-tree")
	if err != nil {
		return "", err
	}
	commit, err := b.git(ctx, oldDir, env, "commit-tree", "-m", message, strings.TrimSpace(string(tree)))
	if err != nil {
		return "", err
	}
	hash := strings.TrimSpace(string(commit))
	env = map[string]string{"GIT_DIR": gitDir, "GIT_WORK_TREE": tmp}
	if _, err := b.git(ctx, tmp, env, "update-ref", "refs/heads/main", hash); err != nil {
		return "", err
	}
	if _, err := b.git(ctx, tmp, env, "-c", "core.autocrlf=false", "reset", "-q", "--hard", "main"); err != nil {
		return "", err
	}
	if err := os.RemoveAll(repoDir); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, repoDir); err != nil {
		return "", err
	}
	return hash, nil
}

// diff is NEW against the base commit, split in two.
type diff struct {
	TestPatch string
	Patch     string
	// Changed lists every path NEW adds, changes, deletes or renames
	// (both names of a rename), slash-separated.
	Changed []string
}

// diffNew computes the diff from base (a commit of repoDir) to newDir's
// files, in a scratch git directory under b.work that borrows the
// repository's objects: NEW's files never enter the repository an agent
// is given. Renames are detected; binary files are in git's binary patch
// form, with full blob ids, so git apply takes them.
func (b *builder) diffNew(ctx context.Context, repoDir, base, newDir string) (diff, error) {
	scratch, err := os.MkdirTemp(b.work, "diff-")
	if err != nil {
		return diff{}, err
	}
	gitDir := filepath.Join(scratch, "git")
	if _, err := b.git(ctx, scratch, nil, "init", "-q", "--bare", gitDir); err != nil {
		return diff{}, err
	}
	objects := filepath.Join(repoDir, ".git", "objects")
	if err := os.WriteFile(filepath.Join(gitDir, "objects", "info", "alternates"), []byte(objects+"\n"), 0o644); err != nil {
		return diff{}, err
	}
	env := map[string]string{"GIT_DIR": gitDir, "GIT_WORK_TREE": newDir,
		"GIT_INDEX_FILE": filepath.Join(scratch, "index")}
	if _, err := b.git(ctx, newDir, env, "-c", "core.autocrlf=false", "add", "-A", "-f", "."); err != nil {
		return diff{}, err
	}
	treeOut, err := b.git(ctx, newDir, env, "write-tree")
	if err != nil {
		return diff{}, err
	}
	tree := strings.TrimSpace(string(treeOut))
	env = map[string]string{"GIT_DIR": gitDir}
	var d diff
	names, err := b.git(ctx, scratch, env, "diff-tree", "-r", "-M", "-z", "--name-only", base, tree)
	if err != nil {
		return diff{}, err
	}
	seen := map[string]bool{}
	for _, n := range bytes.Split(names, []byte{0}) {
		if len(n) > 0 && !seen[string(n)] {
			seen[string(n)] = true
			d.Changed = append(d.Changed, string(n))
		}
	}
	// --name-only lists a rename's new name; the old one comes from
	// --name-status.
	status, err := b.git(ctx, scratch, env, "diff-tree", "-r", "-M", "-z", "--name-status", base, tree)
	if err != nil {
		return diff{}, err
	}
	for _, n := range bytes.Split(status, []byte{0}) {
		s := string(n)
		if s != "" && !seen[s] && !isStatusField(s) {
			seen[s] = true
			d.Changed = append(d.Changed, s)
		}
	}
	patchArgs := []string{"diff-tree", "-r", "-p", "-M", "--binary", "--full-index", "--no-color", "--no-ext-diff", "--no-textconv", base, tree, "--"}
	test, err := b.git(ctx, scratch, env, append(patchArgs, testPathspecs...)...)
	if err != nil {
		return diff{}, err
	}
	fix, err := b.git(ctx, scratch, env, append(patchArgs, fixPathspecs...)...)
	if err != nil {
		return diff{}, err
	}
	d.TestPatch, d.Patch = string(test), string(fix)
	return d, nil
}

// isStatusField reports whether s is a --name-status status ("M", "R100").
func isStatusField(s string) bool {
	if len(s) == 0 || len(s) > 4 || !strings.ContainsRune("ACDMRTUXB", rune(s[0])) {
		return false
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// checkout writes the files of commit (of repoDir) into dst.
func (b *builder) checkout(ctx context.Context, repoDir, commit, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	index, err := os.CreateTemp(b.work, "index-")
	if err != nil {
		return err
	}
	index.Close()
	os.Remove(index.Name())
	env := map[string]string{"GIT_DIR": filepath.Join(repoDir, ".git"), "GIT_INDEX_FILE": index.Name()}
	if _, err := b.git(ctx, repoDir, env, "read-tree", commit); err != nil {
		return err
	}
	if _, err := b.git(ctx, repoDir, env, "checkout-index", "-a", "-f", "--prefix="+dst+"/"); err != nil {
		return err
	}
	return os.Remove(index.Name())
}

// apply applies a patch (git's format) to the files in dir, which is not
// a git repository.
func (b *builder) apply(ctx context.Context, dir, patch, what string) error {
	if strings.TrimSpace(patch) == "" {
		return nil
	}
	f, err := os.CreateTemp(b.work, "patch-")
	if err != nil {
		return err
	}
	if _, err := f.WriteString(patch); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if _, err := b.git(ctx, dir, nil, "apply", "--binary", "--whitespace=nowarn", f.Name()); err != nil {
		return fmt.Errorf("applying the %s: %w", what, err)
	}
	return nil
}
