package swe_test

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/swe"
)

const twoFiles = `diff --git a/pkg/a.go b/pkg/a.go
index 1..2 100644
--- a/pkg/a.go
+++ b/pkg/a.go
@@ -1,2 +1,2 @@
 package pkg
--- a/old line that looks like a header
+++ b/new line that looks like a header
diff --git a/pkg/a_test.go b/pkg/a_test.go
new file mode 100644
--- /dev/null
+++ b/pkg/a_test.go
@@ -0,0 +1 @@
+package pkg
diff --git a/old.txt b/new.txt
similarity index 100%
rename from old.txt
rename to new.txt
`

func TestDiffFilesAndFilter(t *testing.T) {
	if got, want := swe.DiffFiles(twoFiles), []string{"new.txt", "old.txt", "pkg/a.go", "pkg/a_test.go"}; !reflect.DeepEqual(got, want) {
		t.Errorf("DiffFiles: %v, want %v", got, want)
	}
	kept, dropped := swe.FilterDiff(twoFiles, []string{"pkg/a_test.go", "old.txt"})
	if !reflect.DeepEqual(dropped, []string{"old.txt", "pkg/a_test.go"}) {
		t.Errorf("dropped %v", dropped)
	}
	if !strings.HasPrefix(kept, "diff --git a/pkg/a.go") || strings.Contains(kept, "a_test.go") || strings.Contains(kept, "rename") ||
		!strings.Contains(kept, "+++ b/new line that looks like a header") {
		t.Errorf("kept:\n%s", kept)
	}
	// A plain diff -u without git headers, with a preamble.
	plain := "Some words first.\n--- a/x.py\t2024-01-01\n+++ b/x.py\t2024-01-02\n@@ -1 +1 @@\n-a\n+b\n--- y.py\n+++ y.py\n@@ -1 +1 @@\n-c\n+d\n"
	if got := swe.DiffFiles(plain); !reflect.DeepEqual(got, []string{"x.py", "y.py"}) {
		t.Errorf("plain DiffFiles: %v", got)
	}
	kept, dropped = swe.FilterDiff(plain, []string{"y.py"})
	if kept != "--- a/x.py\t2024-01-01\n+++ b/x.py\t2024-01-02\n@@ -1 +1 @@\n-a\n+b\n" || len(dropped) != 1 {
		t.Errorf("plain FilterDiff: %q %v", kept, dropped)
	}
	if kept, dropped := swe.FilterDiff("", []string{"a"}); kept != "" || dropped != nil {
		t.Errorf("empty: %q %v", kept, dropped)
	}
}

func TestParsePytest(t *testing.T) {
	out := "\x1b[1m============================= test session starts ==============================\x1b[0m\n" +
		"collected 5 items / 1 error\n\n" +
		"==================================== ERRORS ====================================\n" +
		"_____________________ ERROR collecting tests/test_b.py _____________________\n" +
		"E     File \"/testbed/b.py\", line 3\n" +
		"E       def f(x)\n" +
		"E   SyntaxError: expected ':'\n" +
		"=========================== short test summary info ============================\n" +
		"PASSED tests/test_a.py::test_one\n" +
		"PASSED tests/test_a.py::test_p[a b - c]\n" +
		"FAILED tests/test_a.py::TestK::test_two - AssertionError: 1 != 2\n" +
		"ERROR tests/test_a.py::test_fix - RuntimeError: setup\n" +
		"XFAIL tests/test_a.py::test_x - known\n" +
		"XPASS tests/test_a.py::test_y unexpectedly\n" +
		"SKIPPED [1] tests/test_a.py:9: no numpy\n" +
		"ERROR tests/test_b.py - SyntaxError: expected ':'\n" +
		"==================== 1 failed, 2 passed, 1 error in 0.12s =====================\n"
	r := swe.ParsePytest(out)
	want := map[string]swe.TestStatus{
		"tests/test_a.py::test_one":        "pass",
		"tests/test_a.py::TestK::test_two": "fail", "tests/test_a.py::test_fix": "fail",
		"tests/test_a.py::test_x": "pass", "tests/test_a.py::test_y": "fail",
	}
	// "test_p[a b - c]" holds " - " in its parameters: the node id ends
	// after the brackets, so the pass is kept under the whole id, and not
	// under what comes before " - " too.
	want["tests/test_a.py::test_p[a b - c]"] = "pass"
	if !reflect.DeepEqual(r.Tests, want) {
		t.Errorf("tests: %v\nwant %v", r.Tests, want)
	}
	if len(r.Errors) != 1 || !strings.Contains(r.Errors[0], "tests/test_b.py - SyntaxError") {
		t.Errorf("errors: %q", r.Errors)
	}
	if !strings.Contains(r.ErrorsSection, "SyntaxError: expected ':'") || r.Summary != "1 failed, 2 passed, 1 error in 0.12s" {
		t.Errorf("errors section %q, summary %q", r.ErrorsSection, r.Summary)
	}
}

func TestLoadPredictions(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	want := []swe.Prediction{{InstanceID: "a", ModelNameOrPath: "m", ModelPatch: "p1"}, {InstanceID: "b", ModelNameOrPath: "m", ModelPatch: "p2"}}
	for name, body := range map[string]string{
		"p.jsonl": `{"instance_id":"a","model_name_or_path":"m","model_patch":"p1"}` + "\n\n" + `{"instance_id":"b","model_name_or_path":"m","model_patch":"p2"}` + "\n",
		"p.json":  `[{"instance_id":"a","model_name_or_path":"m","model_patch":"p1"},{"instance_id":"b","model_name_or_path":"m","model_patch":"p2"}]`,
		"d.json":  `{"b":{"model_name_or_path":"m","model_patch":"p2"},"a":{"instance_id":"a","model_name_or_path":"m","model_patch":"p1"}}`,
	} {
		got, err := swe.LoadPredictions(write(name, body))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v %v", name, got, err)
		}
	}
	one, err := swe.LoadPredictions(write("one.jsonl", `{"instance_id":"a","model_patch":"p1"}`))
	if err != nil || len(one) != 1 || one[0].ModelPatch != "p1" {
		t.Errorf("one line: %+v %v", one, err)
	}
	for name, body := range map[string]string{
		"dup.jsonl":  `{"instance_id":"a","model_patch":"x"}` + "\n" + `{"instance_id":"a","model_patch":"y"}`,
		"noid.json":  `[{"model_patch":"x"}]`,
		"bad.jsonl":  "{\"instance_id\":\"a\"}\nnot json\n",
		"empty.json": "  ",
	} {
		if _, err := swe.LoadPredictions(write(name, body)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// Instances load from JSON and JSON Lines; a source archive is a source.
func TestInstancesAndArchiveSources(t *testing.T) {
	in := instance(t, "python", "local__textutil-1")
	base := filepath.Join("testdata", "python", "textutil", "base")
	dir := t.TempDir()
	// A .tar.gz with one top-level directory, and a .zip without.
	tgz := filepath.Join(dir, "textutil-0.1.tar.gz")
	f, _ := os.Create(tgz)
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	zf, _ := os.Create(filepath.Join(dir, "textutil.zip"))
	zw := zip.NewWriter(zf)
	filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		b, _ := os.ReadFile(p)
		tw.WriteHeader(&tar.Header{Name: "textutil-0.1/" + rel, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg})
		tw.Write(b)
		w, _ := zw.Create(rel)
		w.Write(b)
		return nil
	})
	tw.Close()
	gz.Close()
	f.Close()
	zw.Close()
	zf.Close()
	var list []swe.Instance
	for i, src := range []string{"textutil-0.1.tar.gz", "textutil.zip"} {
		x := in
		x.InstanceID = in.InstanceID + "-" + []string{"tgz", "zip"}[i]
		x.Source, x.BaseCommit = src, "0.1"
		list = append(list, x)
	}
	b, _ := json.Marshal(list)
	os.WriteFile(filepath.Join(dir, "instances.json"), b, 0o644)
	got, err := swe.LoadInstances(filepath.Join(dir, "instances.json"))
	if err != nil || len(got) != 2 || got[0].Source != tgz {
		t.Fatalf("LoadInstances: %+v %v", got, err)
	}
	h := harness(t, "bwrap")
	for _, x := range got {
		repo, err := h.Prepare(context.Background(), &x)
		if err != nil || repo.Language != "python" || repo.Files != 4 {
			t.Errorf("%s: %+v %v", x.InstanceID, repo, err)
			continue
		}
		if r := evaluate(t, h, x, x.Patch); !r.Resolved {
			t.Errorf("%s: gold from an archive: %+v", x.InstanceID, r)
		}
	}
	// Bad instance files say what is wrong.
	for name, body := range map[string]string{
		"missing.jsonl": `{"instance_id":"x","base_commit":"c"}`,
		"dup.jsonl": `{"instance_id":"x","base_commit":"c","test_patch":"t","problem_statement":"p","FAIL_TO_PASS":["a"]}` + "\n" +
			`{"instance_id":"x","base_commit":"c","test_patch":"t","problem_statement":"p","FAIL_TO_PASS":"[\"a\"]"}`,
		"lang.json": `{"instance_id":"x","base_commit":"c","test_patch":"t","problem_statement":"p","FAIL_TO_PASS":["a"],"language":"rust"}`,
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := swe.LoadInstances(p); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// An instance whose source is missing is an error of the evaluation,
	// not a verdict.
	x := in
	x.Source = filepath.Join(dir, "nope")
	if _, err := h.Evaluate(context.Background(), &x, x.Patch); err == nil || !strings.Contains(err.Error(), "source") {
		t.Errorf("a missing source: %v", err)
	}
}

func TestEvaluateAll(t *testing.T) {
	h := harness(t, "bwrap")
	ins := instances(t, "python")
	preds := []swe.Prediction{
		{InstanceID: ins[0].InstanceID, ModelNameOrPath: "model", ModelPatch: ins[0].Patch},
		{InstanceID: ins[1].InstanceID, ModelNameOrPath: "model", ModelPatch: ""},
		{InstanceID: "unknown-1", ModelNameOrPath: "model", ModelPatch: "x"},
	}
	var seen []string
	rep := h.EvaluateAll(context.Background(), ins, preds, 2, func(r swe.Result) { seen = append(seen, r.InstanceID) })
	if rep.Instances != 3 || rep.Submitted != 2 || rep.Resolved != 1 || rep.Empty != 1 || rep.Errors != 0 ||
		!reflect.DeepEqual(rep.Unknown, []string{"unknown-1"}) || rep.Model != "model" || len(seen) != 3 {
		t.Errorf("report: %+v (seen %v)", rep, seen)
	}
	byID := map[string]swe.Result{}
	for _, r := range rep.Results {
		byID[r.InstanceID] = r
	}
	if r := byID[ins[2].InstanceID]; r.Error != swe.ErrorNoPrediction || r.FailToPass.Total != len(ins[2].FailToPass) {
		t.Errorf("no prediction: %+v", r)
	}
	var b strings.Builder
	rep.WriteTable(&b)
	for _, want := range []string{"INSTANCE", ins[0].InstanceID + "  yes", "no_prediction", "empty_patch",
		"resolved 1 of 3 instances (33.3%)", "unknown instances (ignored): unknown-1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
