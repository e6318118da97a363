package multiturn

import (
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// TestFileSystemPython replays calls whose results BFCL's Python gave
// beyond the recorded runs: cp's shared files, a directory copied into
// itself, tail's slicing, du's units, the TypeErrors of odd arguments.
func TestFileSystemPython(t *testing.T) {
	cfg, err := pyval.Decode([]byte(`{"root": {"alex": {"type": "directory", "contents": {
		"a": {"type": "directory", "contents": {"f.txt": {"type": "file", "content": "one\ntwo\r\nthree"}}},
		"big": {"type": "file", "content": "` + strings.Repeat("x", 3000) + `"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := New("GorillaFileSystem", cfg.(*pyval.Dict))
	if err != nil {
		t.Fatal(err)
	}
	xs := `{"last_lines": "` + strings.Repeat("x", 3000) + `"}`
	for _, step := range [][2]string{
		{"pwd()", `{"current_working_directory": "/alex"}`},
		{"cp(source='a', destination='b')", `{"result": "'a' copied to 'b'"}`},
		{"cd(folder='b')", `{"current_working_directory": "b"}`},
		{"echo(content='changed', file_name='f.txt')", "None"},
		{"cd(folder='..')", "{}"},
		{"cd(folder='a')", `{"current_working_directory": "a"}`},
		{"cat(file_name='f.txt')", `{"file_content": "changed"}`},
		{"cd(folder='/')", `{"current_working_directory": "alex"}`},
		{"pwd()", `{"current_working_directory": "/alex"}`},
		{"du(human_readable=True)", `{"disk_usage": "2.94 KB"}`},
		{"du()", `{"disk_usage": "3014 bytes"}`},
		{"tail(file_name='big', lines=0)", xs},
		{"tail(file_name='big', lines=2.0)", xs},
		{"echo(content='a\\nb\\nc', file_name='big')", "None"},
		{"tail(file_name='big', lines=-1)", `{"last_lines": "b\nc"}`},
		{"tail(file_name='big', lines=True)", `{"last_lines": "c"}`},
		{"tail(file_name='big', lines=1.5)", "Error during execution: slice indices must be integers or None or have an __index__ method"},
		{"cp(source='a', destination='a')", `{"result": "'a' copied to 'a/a'"}`},
		{"find(path='a')", "Error during execution: maximum recursion depth exceeded while calling a Python object"},
		{"du()", "Error during execution: maximum recursion depth exceeded"},
		{"mv(source='b', destination='c')", `{"result": "'b' moved to 'c'"}`},
		{"ls()", `{"current_directory_content": ["a", "big", "c"]}`},
		{"wc(file_name='big', mode='c')", `{"count": 5, "type": "characters"}`},
		{"echo(content=5, file_name='big')", "None"},
		{"wc(file_name='big', mode='l')", "Error during execution: 'int' object has no attribute 'splitlines'"},
		{"cd(folder='x/y')", `{"error": "cd: x/y: Unsupported path. Only one folder level at a time is supported."}`},
		{"find(path='/nope')", `{"error": "find: '/nope': No such file or directory"}`},
		{"mkdir(dir_name=5)", "Error during execution: argument of type 'int' is not iterable"},
		{"touch(file_name=['a'])", "Error during execution: unhashable type: 'list'"},
		{"diff(file_name1='big', file_name2='a')", `{"error": "diff: big or a: No such file or directory"}`},
		{"rmdir(dir_name='c')", `{"error": "rmdir: cannot remove 'c': Directory not empty"}`},
		{"echo(content='x', file_name='c')", "Error during execution: 'Directory' object has no attribute '_write'"},
	} {
		if got := runOn(t, "GorillaFileSystem", c, step[0]); got != step[1] {
			t.Errorf("%s: got %.200s, want %.200s", step[0], got, step[1])
		}
	}
	// a holds itself now: its state equals no finite tree, not even its own.
	if pyval.Eq(c.State(), c.State()) {
		t.Error("a state with a cycle compares equal")
	}
}

// TestFileSystemDefault is the scenario without a root: a root named "/".
func TestFileSystemDefault(t *testing.T) {
	c, err := New("GorillaFileSystem", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := runOn(t, "GorillaFileSystem", c, "pwd()"), `{"current_working_directory": "//"}`; got != want {
		t.Errorf("pwd: got %s, want %s", got, want)
	}
	if got, want := runOn(t, "GorillaFileSystem", c, "cd(folder='..')"), `{"error": "Current directory is already the root. Cannot go back."}`; got != want {
		t.Errorf("cd ..: got %s, want %s", got, want)
	}
	if got, want := pyval.Repr(c.State()), `{'long_context': False, 'root': {'name': '/', 'contents': {}}}`; got != want {
		t.Errorf("state: got %s, want %s", got, want)
	}
}
