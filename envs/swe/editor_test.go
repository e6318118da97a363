package swe_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/swe"
	"github.com/nextstate-rl/nextstate/sandbox"
)

func ptr[T any](v T) *T { return &v }

// editorIn makes a sandbox holding /testbed/a.py and returns an editor on
// it and a function that reads a file back.
func editorIn(t *testing.T) (*swe.Editor, func(string) string) {
	t.Helper()
	b := openBackend(t, "bwrap")
	ctx := context.Background()
	sb, err := b.Create(ctx, sandbox.Spec{Workdir: swe.Workdir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close(context.Background()) })
	r, err := sb.Exec(ctx, sandbox.ExecRequest{Script: "mkdir -p pkg/sub .hidden && printf 'def f():\\n    return 1\\n\\n\\ndef g():\\n    return 1\\n' > a.py && " +
		"chmod 755 a.py && touch pkg/b.py pkg/sub/c.py .hidden/x && printf 'bin\\000ary' > blob"})
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("setup: %v %s", err, r.Stderr)
	}
	read := func(p string) string {
		cmd := []string{"cat", p}
		if p == "mode of a.py" {
			cmd = []string{"stat", "-c", "%a", "a.py"}
		}
		r, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: cmd})
		if err != nil {
			t.Fatal(err)
		}
		return string(r.Stdout)
	}
	return swe.NewEditor(sb), read
}

func run(t *testing.T, ed *swe.Editor, a swe.EditArgs) (string, string) {
	t.Helper()
	out, err := ed.Run(context.Background(), a)
	var ee *swe.EditError
	switch {
	case errors.As(err, &ee):
		return "", ee.Message
	case err != nil:
		t.Fatalf("%+v: %v", a, err)
	}
	return out, ""
}

func TestEditor(t *testing.T) {
	ed, read := editorIn(t)
	const a = "/testbed/a.py"
	orig := "def f():\n    return 1\n\n\ndef g():\n    return 1\n"

	out, _ := run(t, ed, swe.EditArgs{Command: "view", Path: a})
	if want := "Here's the result of running `cat -n` on /testbed/a.py:\n     1\tdef f():\n     2\t    return 1\n     3\t\n     4\t\n     5\tdef g():\n     6\t    return 1"; out != want {
		t.Errorf("view:\n%q\nwant\n%q", out, want)
	}
	out, _ = run(t, ed, swe.EditArgs{Command: "view", Path: a, ViewRange: []int{5, -1}})
	if !strings.HasSuffix(out, "     5\tdef g():\n     6\t    return 1") || !strings.Contains(out, "(lines 5-6)") {
		t.Errorf("view range: %q", out)
	}
	out, _ = run(t, ed, swe.EditArgs{Command: "view", Path: "/testbed"})
	if !strings.Contains(out, "\n/testbed/pkg/sub") || strings.Contains(out, ".hidden") || strings.Contains(out, "c.py") {
		t.Errorf("view dir: %q", out)
	}
	for _, c := range []struct {
		args swe.EditArgs
		msg  string
	}{
		{swe.EditArgs{Command: "view", Path: a, ViewRange: []int{0, 2}}, "view_range start 0 is out of range"},
		{swe.EditArgs{Command: "view", Path: a, ViewRange: []int{2, 9}}, "view_range end 9 is out of range"},
		{swe.EditArgs{Command: "view", Path: "a.py"}, `is not absolute; did you mean /testbed/a.py?`},
		{swe.EditArgs{Command: "view", Path: "/testbed/nope.py"}, "does not exist"},
		{swe.EditArgs{Command: "view", Path: "/testbed/blob"}, "binary file"},
		{swe.EditArgs{Command: "str_replace", Path: a, OldStr: ptr("    return 1\n"), NewStr: ptr("    return 2\n")},
			"No replacement was performed: old_str appears 2 times in /testbed/a.py, in lines 2, 6; include more context"},
		{swe.EditArgs{Command: "str_replace", Path: a, OldStr: ptr("return 3")}, "No replacement was performed: old_str does not appear verbatim"},
		{swe.EditArgs{Command: "str_replace", Path: a}, `parameter "old_str" is required`},
		{swe.EditArgs{Command: "create", Path: a, FileText: ptr("x")}, "already exists: create does not overwrite"},
		{swe.EditArgs{Command: "insert", Path: a, InsertLine: ptr(7), NewStr: ptr("x")}, "insert_line 7 is out of range: /testbed/a.py has 6 lines"},
		{swe.EditArgs{Command: "undo_edit", Path: a}, "No edit to undo"},
		{swe.EditArgs{Command: "delete", Path: a}, `unknown command "delete"`},
		{swe.EditArgs{Command: "str_replace", Path: "/testbed/pkg", OldStr: ptr("x")}, "is a directory"},
	} {
		if _, msg := run(t, ed, c.args); !strings.Contains(msg, c.msg) {
			t.Errorf("%+v: %q, want %q", c.args, msg, c.msg)
		}
	}
	if read(a) != orig {
		t.Fatalf("a failed command changed the file: %q", read(a))
	}

	// str_replace with a unique match, then insert, then undo both.
	out, msg := run(t, ed, swe.EditArgs{Command: "str_replace", Path: a, OldStr: ptr("def g():\n    return 1"), NewStr: ptr("def g():\n    return 2")})
	if msg != "" || !strings.Contains(out, "has been edited") || !strings.Contains(out, "     6\t    return 2") {
		t.Errorf("str_replace: %q %q", out, msg)
	}
	out, msg = run(t, ed, swe.EditArgs{Command: "insert", Path: a, InsertLine: ptr(0), NewStr: ptr("import os")})
	if msg != "" || !strings.Contains(out, "     1\timport os\n     2\tdef f():") {
		t.Errorf("insert: %q %q", out, msg)
	}
	if got := read(a); got != "import os\ndef f():\n    return 1\n\n\ndef g():\n    return 2\n" {
		t.Errorf("after the edits: %q", got)
	}
	run(t, ed, swe.EditArgs{Command: "undo_edit", Path: a})
	if got := read(a); got != "def f():\n    return 1\n\n\ndef g():\n    return 2\n" {
		t.Errorf("after one undo: %q", got)
	}
	run(t, ed, swe.EditArgs{Command: "undo_edit", Path: a})
	if got := read(a); got != orig {
		t.Errorf("after two undos: %q", got)
	}
	if got := read("mode of a.py"); got != "755\n" {
		t.Errorf("the edits changed the file's mode to %q", got)
	}

	// create makes directories; undo removes the file; an empty new_str
	// deletes.
	out, msg = run(t, ed, swe.EditArgs{Command: "create", Path: "/testbed/new/dir/n.py", FileText: ptr("x = 1\ny = 2\n")})
	if msg != "" || out != "File created successfully at: /testbed/new/dir/n.py" || read("/testbed/new/dir/n.py") != "x = 1\ny = 2\n" {
		t.Errorf("create: %q %q", out, msg)
	}
	run(t, ed, swe.EditArgs{Command: "str_replace", Path: "/testbed/new/dir/n.py", OldStr: ptr("y = 2\n")})
	if got := read("/testbed/new/dir/n.py"); got != "x = 1\n" {
		t.Errorf("str_replace with no new_str: %q", got)
	}
	run(t, ed, swe.EditArgs{Command: "undo_edit", Path: "/testbed/new/dir/n.py"})
	run(t, ed, swe.EditArgs{Command: "undo_edit", Path: "/testbed/new/dir/n.py"})
	if _, msg := run(t, ed, swe.EditArgs{Command: "view", Path: "/testbed/new/dir/n.py"}); !strings.Contains(msg, "does not exist") {
		t.Errorf("undoing a create: %q", msg)
	}
	// A file without a final newline: insert after its last line.
	run(t, ed, swe.EditArgs{Command: "create", Path: "/tmp/nl.txt", FileText: ptr("one\ntwo")})
	run(t, ed, swe.EditArgs{Command: "insert", Path: "/tmp/nl.txt", InsertLine: ptr(2), NewStr: ptr("three")})
	if got := read("/tmp/nl.txt"); got != "one\ntwo\nthree\n" {
		t.Errorf("insert after a last line without newline: %q", got)
	}
	// A path it cannot write.
	if _, msg := run(t, ed, swe.EditArgs{Command: "create", Path: "/usr/new.txt", FileText: ptr("x")}); !strings.Contains(msg, "cannot write /usr/new.txt") {
		t.Errorf("create in a read-only place: %q", msg)
	}
}
