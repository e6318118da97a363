package terminal

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/sandbox"
)

// SetupTimeout bounds one RUN step of a task's setup under bwrap.
const SetupTimeout = 5 * time.Minute

// applySetup applies the Dockerfile steps the bwrap backend honours (see
// Dockerfile): WORKDIR makes the directory, COPY copies from the task
// folder, RUN runs in the sandbox.
func applySetup(ctx context.Context, sb sandbox.Sandbox, files fs.FS, steps []DockerStep) error {
	for _, st := range steps {
		where := fmt.Sprintf("Dockerfile line %d (%s)", st.Line, st.Op)
		switch st.Op {
		case "WORKDIR":
			if err := mkdirAll(ctx, sb, st.Dest); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
		case "COPY":
			if err := copyFromTask(ctx, sb, files, st.Sources, st.Dest); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
		case "RUN":
			req := sandbox.ExecRequest{Dir: st.Dir, Env: st.Env, Timeout: SetupTimeout, MaxOutput: 16 << 10}
			if st.Argv != nil {
				req.Cmd = st.Argv
			} else {
				req.Cmd = []string{"bash", "-c", st.Script}
			}
			r, err := sb.Exec(ctx, req)
			if err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			if r.TimedOut || r.ExitCode != 0 {
				return fmt.Errorf("%s failed (exit %d%s): %s\n%s%s", where, r.ExitCode, timedOut(r.TimedOut),
					clip(st.Script, 200), tail(r.Stdout, 2000), tail(r.Stderr, 2000)+
						"\n(with bubblewrap, RUN steps run against the host's read-only root: package installs need --sandbox docker)")
			}
		}
	}
	return nil
}

func timedOut(t bool) string {
	if t {
		return ", timed out"
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func tail(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return "…" + string(b[len(b)-n:])
}

// mkdirAll makes a directory in the sandbox.
func mkdirAll(ctx context.Context, sb sandbox.Sandbox, dir string) error {
	r, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"mkdir", "-p", "--", dir}, Dir: "/", Timeout: time.Minute})
	if err != nil {
		return err
	}
	if r.ExitCode != 0 {
		return fmt.Errorf("mkdir %s: %s%s", dir, bytes.TrimSpace(r.Stdout), bytes.TrimSpace(r.Stderr))
	}
	return nil
}

// tarEntry is one file or directory to pack.
type tarEntry struct {
	name string // relative, slash-separated
	dir  bool
	mode int64
	data []byte
}

// copyFromTask copies COPY sources from the task folder to dest in the
// sandbox, with docker's rules: a directory's contents go into dest; a file
// goes to dest, or into it when dest ends in "/" (or there are several
// sources). Sources may be globs.
func copyFromTask(ctx context.Context, sb sandbox.Sandbox, files fs.FS, sources []string, dest string) error {
	if files == nil {
		return errors.New("COPY in a task without files")
	}
	intoDir := strings.HasSuffix(dest, "/")
	dest = path.Clean(dest)
	var entries []tarEntry
	for _, src := range sources {
		matches := []string{src}
		if strings.ContainsAny(src, "*?[") {
			m, err := fs.Glob(files, src)
			if err != nil || len(m) == 0 {
				return fmt.Errorf("COPY %s: no file in the task folder matches", src)
			}
			matches = m
		}
		for _, m := range matches {
			fi, err := fs.Stat(files, m)
			if err != nil {
				return fmt.Errorf("COPY %s: %w", src, err)
			}
			if fi.IsDir() {
				err := fs.WalkDir(files, m, func(p string, d fs.DirEntry, err error) error {
					if err != nil {
						return err
					}
					rel := strings.TrimPrefix(strings.TrimPrefix(p, m), "/")
					if m == "." {
						rel = p
					}
					if rel == "" || rel == "." {
						return nil
					}
					if hiddenFromAgent(p) {
						if d.IsDir() {
							return fs.SkipDir
						}
						return nil
					}
					e, err := entryOf(files, p, rel, d)
					if err != nil {
						return err
					}
					if e != nil {
						entries = append(entries, *e)
					}
					return nil
				})
				if err != nil {
					return fmt.Errorf("COPY %s: %w", src, err)
				}
				intoDir = true // a directory's contents go into dest
				continue
			}
			name := path.Base(m)
			if !intoDir && len(matches) == 1 && len(sources) == 1 {
				name = path.Base(dest)
			}
			e, err := entryOf(files, m, name, fs.FileInfoToDirEntry(fi))
			if err != nil {
				return err
			}
			if e != nil {
				entries = append(entries, *e)
			}
		}
	}
	target := dest
	if !intoDir && len(entries) == 1 && !entries[0].dir {
		target = path.Dir(dest)
	}
	if err := mkdirAll(ctx, sb, target); err != nil {
		return err
	}
	tb, err := packTar(entries)
	if err != nil {
		return err
	}
	return sb.CopyIn(ctx, target, bytes.NewReader(tb))
}

// hiddenFromAgent says whether a path of the task folder is the grader's
// or the task's own (tests, the test runner, the oracle, task.yaml, the
// Dockerfile): a COPY of the whole folder does not copy it into the
// sandbox, so the agent never sees the tests or the solution.
func hiddenFromAgent(p string) bool { return slices.Contains(hiddenPaths, p) }

// hiddenPaths are the task folder's top-level entries that never reach the
// agent: left out of a bwrap COPY and out of a docker build's context (the
// Dockerfile itself is always in the context; the builder reads it there).
var hiddenPaths = []string{"tests", "run-tests.sh", "solution.sh", "solution.yaml", "task.yaml", "Dockerfile",
	"docker-compose.yaml", "docker-compose.yml", ".dockerignore"}

// entryOf reads one file of the task folder into a tar entry; modes are
// 0644 or 0755 (executable sources; the embedded smoke tasks have none).
func entryOf(files fs.FS, p, name string, d fs.DirEntry) (*tarEntry, error) {
	if d.IsDir() {
		return &tarEntry{name: name, dir: true, mode: 0o755}, nil
	}
	if !d.Type().IsRegular() {
		return nil, nil // symlinks and devices are not copied
	}
	b, err := fs.ReadFile(files, p)
	if err != nil {
		return nil, err
	}
	mode := int64(0o644)
	if fi, err := d.Info(); err == nil && fi.Mode()&0o111 != 0 && fi.Mode()&0o222 != 0 {
		mode = 0o755
	}
	return &tarEntry{name: name, mode: mode, data: b}, nil
}

// packTar writes entries as a tar stream, directories first.
func packTar(entries []tarEntry) ([]byte, error) {
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].dir && !entries[j].dir })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(1700000000, 0)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: mtime, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag, h.Name = tar.TypeDir, e.name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if !e.dir {
			if _, err := tw.Write(e.data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// errWrite marks write_file failures that are the agent's (a path that
// cannot be written), returned to it as the tool's answer.
var errWrite = errors.New("write_file")

// writeFile writes content to the absolute path p in the sandbox, making
// its directory first.
func writeFile(ctx context.Context, sb sandbox.Sandbox, p string, content []byte) error {
	dir := path.Dir(p)
	r, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"mkdir", "-p", "--", dir}, Dir: "/", Timeout: time.Minute})
	if err != nil {
		return err
	}
	if r.ExitCode != 0 {
		return fmt.Errorf("%w: cannot make %s: %s", errWrite, dir, bytes.TrimSpace(append(r.Stdout, r.Stderr...)))
	}
	// cat through the shell keeps an existing file's mode and owner, as an
	// editor's save would.
	r, err = sb.Exec(ctx, sandbox.ExecRequest{
		Cmd: []string{"bash", "-c", `cat > "$1"`, "write_file", p}, Dir: "/",
		Stdin: bytes.NewReader(content), Timeout: time.Minute,
	})
	if err != nil {
		return err
	}
	if r.ExitCode != 0 {
		return fmt.Errorf("%w: cannot write %s: %s", errWrite, p, bytes.TrimSpace(append(r.Stdout, r.Stderr...)))
	}
	return nil
}
