// Package gobuild makes Go SWE-bench instances from real history, offline
// afterwards: two tagged versions of a module become a repository at the
// old version (the base commit), the gold fix (patch), the tests that judge
// a fix (test_patch, FAIL_TO_PASS, PASS_TO_PASS) and a module cache holding
// every dependency, so the instance's tests run with no network. It is
// `nextstate swe build-go MODULE OLD NEW`; Build makes one instance,
// BuildList a list of them.
//
// # What Build does
//
//  1. Fetch: `go mod download -json MODULE@OLD` and `@NEW` into the module
//     cache (Options.ModCache, default ~/.cache/nextstate/swe/gomod) through
//     the user's GOPROXY; versions must be exact (a query such as "latest"
//     is refused). Spec.OldDir and Spec.NewDir take two local module trees
//     instead (the module path then comes from NEW's go.mod, the versions
//     default to "old" and "new").
//  2. Repository: OLD's files, every one (ignore files are not obeyed), in
//     one commit of a new git repository at Options.Out/<instance id>
//     (default ~/.cache/nextstate/swe/instances), checked out on branch
//     main. Author and committer are "nextstate <swe@nextstate.invalid>",
//     the date is OLD's publication time (2000-01-01 for local
//     directories) and git runs without user or system configuration, so
//     a version always gives the same base_commit. NEW's files never enter
//     that repository: the diff is computed in a scratch git directory that
//     borrows its objects.
//  3. Split: `git diff-tree -p -M --binary --full-index` from the base
//     commit to NEW, in two: test_patch holds every *_test.go file and
//     everything under a testdata directory (IsTestPath), patch the rest
//     (go.mod and go.sum included; README and CI files too). Renames are
//     detected within each side; binary files are git binary patches.
//  4. Dependencies: in scratch copies of OLD and NEW, `go mod download`
//     and `go list -e -deps -test ./...` fill the module cache (both sides,
//     so go.mod changes in the patch are covered). Everything after this
//     runs with GOPROXY=off.
//  5. Tests: two trees, (a) the base commit + test_patch and (b) (a) +
//     patch, both made with `git apply` as an evaluation would. In each,
//     `go test -json -count=1 -vet=off` (swe.GoTestArgs) runs the packages
//     the diff touches (the directory of a changed .go file, the directory
//     above a changed testdata tree, that holds tests; Options.AllPackages
//     runs ./... instead), offline (swe.GoTestEnv: GOPROXY=off, GOSUMDB=off,
//     GOFLAGS=-mod=mod, GOTOOLCHAIN=local, GOWORK=off, CGO_ENABLED=0), under
//     Options.TestTimeout. Where a test binary died in (a) (a panic, a
//     timeout) before reaching tests that pass in (b), those tests are run
//     again on their own, so each test's own result decides.
//  6. Classify, by package-qualified name: FAIL_TO_PASS are the tests that
//     pass in (b) and fail, or did not run because their package did not
//     build, in (a); PASS_TO_PASS pass in both. Names are written by swe's
//     rule (bare "TestName" or "TestName/sub", qualified
//     "import/path.TestName" where the test function's name is declared in
//     more than one package of the module).
//  7. Confirm: the listed tests run once more in (b), selected the way an
//     evaluation selects them (swe.GoTestTargets); a FAIL_TO_PASS test that
//     does not pass again rejects the pair (flaky), a PASS_TO_PASS one is
//     dropped from the list.
//
// The instance is kept only when FAIL_TO_PASS is not empty. Otherwise
// Build returns a *RejectError (errors.Is(err, ErrRejected)) that says
// why: NEW changes no test file; NEW changes only tests; the tests do not
// build after the fix; no test passes after the fix; the tests that fail
// before still fail after; no test fails before; a FAIL_TO_PASS test is
// flaky.
//
// # The instance
//
// instance_id is the module path with "/" written "__", a dash and NEW
// ("github.com__Masterminds__semver__v3-v3.3.1"); repo is the module path;
// version, old and module say where it came from; created_at is NEW's
// publication time; language is "go"; source is the repository (written
// relative to the instances file when under its directory). The problem
// statement is synthesized, not a human issue (there is no issue text
// offline), and says so: the version bump, the tests to make pass, what
// they report before the fix (assertion messages, a panic, or the
// compiler's message for a package that does not build; at most three,
// scratch paths removed) and the names of the Go files the fix touches.
// Build adds the instance to Options.Instances (default
// Options.Out/instances.jsonl; "-" for none), replacing an instance of the
// same id, under a file lock (WriteInstance); swe.LoadInstances reads it.
//
// # Where tests run
//
// The builder runs tests on the host, offline: under bwrap with the host's
// file system and new PID and network namespaces (only a loopback
// interface, so httptest servers work and nothing outside is reached),
// or, where bwrap cannot do that, directly (a warning is logged; modules
// still come only from the cache). Each command's process group is killed
// at its timeout. The evaluation harness (swe.Evaluate) runs the same tests
// in a fresh sandbox with the toolchain and the module cache mounted
// read-only; it should run go test with the same flags (swe.GoTestArgs).
//
// # The build list
//
// instances/go.jsonl (BuiltinList, embedded) lists the shipped instances
// as {"module", "old", "new"} lines, the sources are not shipped: eight
// releases of six popular modules whose fix added or changed a test
// (hashicorp/go-version, Masterminds/semver/v3 twice, google/uuid,
// spf13/cast, mattn/go-runewidth, tidwall/gjson, BurntSushi/toml), each
// checked to give a valid instance. BuildList builds a list (ReadList:
// blank and "#" lines skipped) and is idempotent: an entry whose instance is
// in the instances file, with its repository at the base commit and both
// module versions in the cache, is reused. `nextstate swe build-go
// --builtin` builds the shipped list, --list FILE another;
// --builtin-list prints the shipped list and builds nothing.
//
// # Settings
//
// Options (and the command's flags): ModCache (--modcache), Out (--out),
// Instances (--instances), BuildCache (--gocache; default the go command's
// own build cache, which makes a rebuild fast), Proxy (--proxy, GOPROXY of
// the downloads), Go (the go command), TestTimeout (--test-timeout, default
// 5m), DownloadTimeout (10m), AllPackages (--all-packages), Log.
//
// # Timings
//
// Measured on a 2-core machine (BenchmarkBuildReal, semver v3.3.0..v3.3.1,
// and the command): with an empty module cache and an empty build cache an
// instance takes 37 to 47 s, nearly all of it compiling the standard
// library for the first test run; with the build cache warm and the
// module cache empty 3 to 10 s; with both warm 2.5 to 4 s (each go test
// run about 1.3 s, the confirming run 0.6 s). tidwall/gjson, whose tests
// take 10 s a run, takes about 45 s warm.
//
// # Tests
//
// The tests build a synthetic pair (testdata/synth: example.com/calc, with a
// bug fixed in the new version and a test added for it) from local
// directories, with no network. The tests that build the shipped list from
// the module proxy are opt-in (NEXTSTATE_SWE_GOBUILD=1; see real_test.go),
// so `make test` does not need the network and is not slowed by them.
package gobuild
