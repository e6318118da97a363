package swe

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/sandbox"
)

// EvalOptions configure a Harness. The zero value is usable: the defaults
// are in each field's comment.
type EvalOptions struct {
	SandboxConfig
	// WorkDir keeps prepared repositories (WorkDir/repos) and the
	// evaluation build cache; default DefaultWorkDir().
	WorkDir string
	// GoCache is the host directory of the evaluations' shared Go build
	// cache, mounted read-write into evaluation sandboxes only (never
	// into an agent's), so that a warm cache makes an evaluation fast;
	// default WorkDir/gocache-eval. "off" gives each evaluation a fresh,
	// empty cache of its own (slower, and nothing an evaluated patch's
	// tests write there outlives the evaluation).
	GoCache string
	// AgentGoCache is "seed" (the default: an agent's Go build cache
	// starts as a copy of the base commit's, made once per repository in
	// WorkDir/gocache-seed; see Harness.Seed) or "off" (it starts empty).
	AgentGoCache string
	// TestTimeout bounds the test run (go test -timeout, and the command);
	// default DefaultTestTimeout.
	TestTimeout time.Duration
	// KeepAgentTests keeps a diff's changes to test files that test_patch
	// does not touch, as SWE-bench does. By default they are dropped too
	// (IsTestFile): a test file the agent adds could fake results (a Go
	// TestMain that prints "--- PASS" lines, a conftest.py hook that
	// rewrites outcomes), and judging needs none.
	KeepAgentTests bool
}

// IsTestFile reports whether a repository path is a test file of lang:
// Go's *_test.go and anything under a testdata directory; Python's
// test_*.py, *_test.py and conftest.py.
func IsTestFile(p, lang string) bool {
	base := path.Base(p)
	switch lang {
	case "go":
		return strings.HasSuffix(base, "_test.go") || strings.HasPrefix(p, "testdata/") || strings.Contains(p, "/testdata/")
	case "python":
		return base == "conftest.py" || strings.HasSuffix(base, ".py") && (strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py"))
	}
	return false
}

// DefaultTestTimeout bounds an evaluation's test run.
const DefaultTestTimeout = 15 * time.Minute

// Reasons in Result.Error: why an instance was not resolved. All are the
// agent's (its patch's) fault; an infrastructure failure is an error
// returned instead.
const (
	ErrorEmptyPatch       = "empty_patch"          // nothing to apply (after dropping test files)
	ErrorPatchNotApplied  = "patch_does_not_apply" // git apply and patch --fuzz both refused it
	ErrorBuildFailed      = "build_failed"         // a package or test file did not compile or collect
	ErrorTestsFailed      = "tests_failed"         // a listed test failed or did not run
	ErrorTestsTimedOut    = "tests_timed_out"      // the test run passed TestTimeout
	ErrorTestsDidNotStart = "tests_did_not_run"    // the test command reported no test at all
)

// Result is an evaluation's verdict on one diff.
type Result struct {
	InstanceID string `json:"instance_id"`
	// Resolved is true when every FAIL_TO_PASS and PASS_TO_PASS test
	// passed; Reward is 1 then, else 0.
	Resolved bool    `json:"resolved"`
	Reward   float64 `json:"reward"`
	// Error says why it is not resolved (one of the Error* reasons; ""
	// when resolved) and Message gives the tool's words: git apply's and
	// patch's for a diff that does not apply, the command's for a run
	// that reported no test.
	Error   string `json:"error,omitempty"`
	Message string `json:"message,omitempty"`
	// Tests is every listed test's result: "pass", "fail", "skip" or
	// "not_run" (no result was reported for it: its package did not
	// build, or the test binary died before it ran; see TestNotRun).
	// Only "pass" counts as passed.
	Tests      map[string]TestStatus `json:"tests"`
	FailToPass TestCount             `json:"fail_to_pass"`
	PassToPass TestCount             `json:"pass_to_pass"`
	// DroppedFiles are the diff's test files (those test_patch touches,
	// and others unless KeepAgentTests): their changes were discarded
	// before the tests ran.
	DroppedFiles []string `json:"dropped_files,omitempty"`
	// AppliedWith is "git apply" or "patch --fuzz=3" ("" when nothing was
	// applied).
	AppliedWith string `json:"applied_with,omitempty"`
	// BuildOutput is the compiler's (or pytest's collection) message when
	// a package or test file did not build, cut at MaxTestOutput.
	BuildOutput string `json:"build_output,omitempty"`
	// Output is the failing tests' output, cut at MaxTestOutput.
	Output string `json:"output,omitempty"`
	// TestCommand is the command that ran the tests.
	TestCommand string  `json:"test_command,omitempty"`
	Language    string  `json:"language"`
	Backend     string  `json:"backend"`
	Image       string  `json:"image,omitempty"`
	Timings     Timings `json:"timings"`
}

// TestCount counts a list's tests that passed.
type TestCount struct {
	Passed int `json:"passed"`
	Total  int `json:"total"`
	// Fraction is Passed/Total, 1 for an empty list.
	Fraction float64  `json:"fraction"`
	Failed   []string `json:"failed,omitempty"`
}

// Timings are an evaluation's phases, in milliseconds.
type Timings struct {
	PrepareMs int64 `json:"prepare_ms"` // the repository tar (cached after the first)
	ReadyMs   int64 `json:"ready_ms"`   // sandbox created and repository copied in
	ApplyMs   int64 `json:"apply_ms"`   // both patches applied
	TestMs    int64 `json:"test_ms"`    // the test run
	TotalMs   int64 `json:"total_ms"`
}

// Harness evaluates diffs against instances, each in a fresh sandbox of
// its backend. It is safe for concurrent use; it keeps no sandbox between
// calls.
type Harness struct {
	backend sandbox.Backend
	opts    EvalOptions
	repos   *repoCache
}

// NewHarness returns a harness over backend, which the caller keeps
// and closes.
func NewHarness(backend sandbox.Backend, opts EvalOptions) *Harness {
	if opts.WorkDir == "" {
		opts.WorkDir = DefaultWorkDir()
	}
	if opts.GoCache == "" {
		opts.GoCache = filepath.Join(opts.WorkDir, "gocache-eval")
	}
	if opts.TestTimeout <= 0 {
		opts.TestTimeout = DefaultTestTimeout
	}
	if opts.Backend == "" {
		opts.Backend = backend.Name()
	}
	if opts.GoRoot == "" {
		opts.GoRoot = DefaultGoRoot()
	}
	if opts.GoModCache == "" {
		opts.GoModCache = DefaultGoModCache()
	}
	return &Harness{backend: backend, opts: opts, repos: newRepoCache(opts.WorkDir)}
}

// Evaluate judges diff against in with a one-use Harness; see
// Harness.Evaluate.
func Evaluate(ctx context.Context, backend sandbox.Backend, in Instance, diff string, opts EvalOptions) (Result, error) {
	return NewHarness(backend, opts).Evaluate(ctx, &in, diff)
}

// Prepare makes an instance's repository ready (see PrepareRepo), in the
// harness's work directory.
func (h *Harness) Prepare(ctx context.Context, in *Instance) (*Repo, error) {
	return h.repos.prepare(ctx, in)
}

// AgentSpec is the spec of an agent's sandbox for in: like an evaluation
// sandbox's, but with the agent's own build cache, and with the module
// cache's copies of the repository's own module (its other versions, which
// may hold the fix) covered by an empty directory.
func (h *Harness) AgentSpec(in *Instance, repo *Repo) (sandbox.Spec, error) {
	spec, err := h.opts.Spec(in, repo.Language, "")
	if err != nil || repo.Language != "go" {
		return spec, err
	}
	hide := moduleCopies(h.opts.GoModCache, repo.Module)
	if in.Module != "" && in.Module != repo.Module {
		hide = append(hide, moduleCopies(h.opts.GoModCache, in.Module)...)
	}
	if len(hide) == 0 {
		return spec, nil
	}
	empty := filepath.Join(h.opts.WorkDir, "empty")
	if err := os.MkdirAll(empty, 0o555); err != nil {
		return spec, err
	}
	for _, rel := range hide {
		spec.Mounts = append(spec.Mounts, sandbox.Mount{Source: empty, Target: SandboxGoModCache + "/" + filepath.ToSlash(rel), ReadOnly: true})
	}
	return spec, nil
}

// Backend is the sandbox backend the harness evaluates in.
func (h *Harness) Backend() sandbox.Backend { return h.backend }

// Options are the harness's options, defaults filled in.
func (h *Harness) Options() EvalOptions { return h.opts }

// evalDir holds the patches in an evaluation sandbox.
const evalDir = "/tmp/nextstate-eval"

// Evaluate judges diff against in, the way SWE-bench's harness does: a
// fresh sandbox with the repository at its base commit; the diff's
// changes to files that test_patch touches discarded (DroppedFiles), and
// to other test files unless KeepAgentTests; the
// rest applied with git apply, or patch --fuzz=3 when that refuses; then
// test_patch; then the FAIL_TO_PASS and PASS_TO_PASS tests, with per-test
// results (go test -json; pytest -rA), no network. A diff that does not
// apply, does not build or fails a test is a Result with Reward 0 and the
// reason in Error. An error is returned only when the evaluation itself
// failed (the sandbox, an instance whose test_patch does not apply, ctx):
// its outcome is unknown.
func (h *Harness) Evaluate(ctx context.Context, in *Instance, diff string) (res Result, err error) {
	start := time.Now()
	res = Result{InstanceID: in.InstanceID, Backend: h.opts.Backend, Tests: map[string]TestStatus{}}
	defer func() { res.Timings.TotalMs = time.Since(start).Milliseconds() }()
	repo, err := h.repos.prepare(ctx, in)
	if err != nil {
		return res, err
	}
	res.Language = repo.Language
	res.Timings.PrepareMs = time.Since(start).Milliseconds()

	protected := DiffFiles(in.TestPatch)
	if !h.opts.KeepAgentTests {
		for _, f := range DiffFiles(diff) {
			if IsTestFile(f, repo.Language) {
				protected = append(protected, f)
			}
		}
	}
	kept, dropped := FilterDiff(diff, protected)
	res.DroppedFiles = dropped

	gocache := ""
	if repo.Language == "go" && h.opts.GoCache != "off" {
		gocache = h.opts.GoCache
	}
	spec, err := h.opts.Spec(in, repo.Language, gocache)
	if err != nil {
		return res, fmt.Errorf("instance %s: %w", in.InstanceID, err)
	}
	spec.Labels = sandbox.MergeLabels(spec.Labels, map[string]string{"swe.instance": labelValue(in.InstanceID), "swe.role": "eval"})
	res.Image = spec.Image
	t := time.Now()
	sb, err := h.backend.Create(ctx, spec)
	if err != nil {
		return res, fmt.Errorf("instance %s: creating the evaluation sandbox: %w", in.InstanceID, err)
	}
	defer sb.Close(context.WithoutCancel(ctx))
	if err := copyRepo(ctx, sb, repo); err != nil {
		return res, fmt.Errorf("instance %s: %w", in.InstanceID, err)
	}
	res.Timings.ReadyMs = time.Since(t).Milliseconds()

	t = time.Now()
	if err := copyFiles(ctx, sb, evalDir, map[string]string{"agent.diff": kept, "test.diff": in.TestPatch}); err != nil {
		return res, fmt.Errorf("instance %s: copying the patches in: %w", in.InstanceID, err)
	}
	if strings.TrimSpace(kept) == "" {
		res.Error = ErrorEmptyPatch
		res.Message = "the diff changes nothing"
		if len(dropped) > 0 {
			res.Message = "the diff changes nothing but test files, which were discarded: " + strings.Join(dropped, ", ")
		}
	} else {
		how, msg, err := applyPatch(ctx, sb, evalDir+"/agent.diff")
		if err != nil {
			return res, fmt.Errorf("instance %s: applying the diff: %w", in.InstanceID, err)
		}
		if how == "" {
			res.Error, res.Message = ErrorPatchNotApplied, msg
			res.score(in)
			res.Timings.ApplyMs = time.Since(t).Milliseconds()
			return res, nil
		}
		res.AppliedWith = how
	}
	if how, msg, err := applyPatch(ctx, sb, evalDir+"/test.diff"); err != nil || how == "" {
		if err == nil {
			err = errors.New(msg)
		}
		return res, fmt.Errorf("instance %s: the test patch does not apply (the instance is broken): %w", in.InstanceID, err)
	}
	res.Timings.ApplyMs = time.Since(t).Milliseconds()

	t = time.Now()
	switch repo.Language {
	case "go":
		err = h.runGo(ctx, sb, in, &res)
	default:
		err = h.runPytest(ctx, sb, in, &res)
	}
	res.Timings.TestMs = time.Since(t).Milliseconds()
	if err != nil {
		return res, fmt.Errorf("instance %s: running the tests: %w", in.InstanceID, err)
	}
	empty := res.Error == ErrorEmptyPatch
	res.score(in)
	if empty {
		res.Error = ErrorEmptyPatch // the first reason stays
	}
	return res, nil
}

// score fills the counts, Resolved and Reward from Tests, and Error when
// none is set yet.
func (r *Result) score(in *Instance) {
	count := func(names []string) TestCount {
		c := TestCount{Total: len(names), Fraction: 1}
		for _, n := range names {
			st, ok := r.Tests[n]
			if !ok {
				st = TestNotRun
				r.Tests[n] = st
			}
			if st == TestPass {
				c.Passed++
			} else {
				c.Failed = append(c.Failed, n)
			}
		}
		if c.Total > 0 {
			c.Fraction = float64(c.Passed) / float64(c.Total)
		}
		return c
	}
	r.FailToPass, r.PassToPass = count(in.FailToPass), count(in.PassToPass)
	r.Resolved = r.Error == "" && r.FailToPass.Passed == r.FailToPass.Total && r.PassToPass.Passed == r.PassToPass.Total
	if r.Resolved {
		r.Reward = 1
		return
	}
	r.Reward = 0
	if r.Error == "" {
		r.Error = ErrorTestsFailed
	}
}

// copyRepo copies the prepared repository into the sandbox's Workdir.
func copyRepo(ctx context.Context, sb sandbox.Sandbox, repo *Repo) error {
	f, err := os.Open(repo.Tar)
	if err != nil {
		return fmt.Errorf("the prepared repository: %w", err)
	}
	defer f.Close()
	if err := sb.CopyIn(ctx, Workdir, f); err != nil {
		return fmt.Errorf("copying the repository in: %w", err)
	}
	return nil
}

// copyFiles writes files (name → content) into dir in the sandbox.
func copyFiles(ctx context.Context, sb sandbox.Sandbox, dir string, files map[string]string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[n])), ModTime: time.Now()}); err != nil {
			return err
		}
		if _, err := tw.Write([]byte(files[n])); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return sb.CopyIn(ctx, dir, &buf)
}

// applyScript applies the patch $1 in the repository: git apply when it
// takes the whole patch, else patch with fuzz when its dry run does, else
// it prints both tools' messages and fails.
const applyScript = `f=$1; d=$(dirname "$f")
for t in git patch; do command -v $t >/dev/null || { echo "$t is not installed in the sandbox image" >&2; exit 127; }; done
if git apply --whitespace=nowarn --check "$f" 2>"$d/git.err"; then
  git apply --whitespace=nowarn "$f" 2>>"$d/git.err" && { echo "git apply"; exit 0; }
fi
if patch --batch --forward -p1 --fuzz=3 --no-backup-if-mismatch --dry-run -i "$f" >"$d/patch.out" 2>&1; then
  patch --batch --forward -p1 --fuzz=3 --no-backup-if-mismatch -i "$f" >>"$d/patch.out" 2>&1 && { echo "patch --fuzz=3"; exit 0; }
fi
echo "git apply: $(cat "$d/git.err")"; echo "patch: $(cat "$d/patch.out")"; exit 1`

// applyPatch applies a patch file in the sandbox's repository. how is
// the tool that applied it, "" when none could (msg says why).
func applyPatch(ctx context.Context, sb sandbox.Sandbox, file string) (how, msg string, err error) {
	r, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"bash", "-c", applyScript, "apply", file},
		Dir: Workdir, Timeout: 2 * time.Minute})
	if err != nil {
		return "", "", err
	}
	out := strings.TrimSpace(string(r.Stdout) + string(r.Stderr))
	if r.ExitCode == 127 {
		return "", "", errors.New(out)
	}
	if r.ExitCode == 0 {
		return out, "", nil
	}
	return "", truncate(out, MaxTestOutput), nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func boolKeys[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// truncate cuts s at n bytes with the sandbox's marker.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf(sandbox.TruncationMarker, len(s)-n)
}

// labelValue makes an instance id fit a label value.
func labelValue(s string) string {
	if len(s) > 63 {
		s = s[:63]
	}
	return s
}
