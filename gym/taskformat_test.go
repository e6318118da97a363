package gym_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
)

// A format detected by a marker file; its task.yaml is not a gym task.
func init() {
	gym.RegisterTaskFormat("markerfmt",
		func(dir string) bool {
			_, err := os.Stat(filepath.Join(dir, "MARKER"))
			return err == nil
		},
		func(dir string) (gym.Task, error) {
			b, err := os.ReadFile(filepath.Join(dir, "MARKER"))
			if err != nil {
				return gym.Task{}, err
			}
			if strings.TrimSpace(string(b)) == "bad" {
				return gym.Task{}, errors.New("a bad marker")
			}
			return gym.Task{Env: "echo-v1", Instruction: strings.TrimSpace(string(b))}, nil
		})
}

func TestRegisterTaskFormat(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		// task.yaml in a foreign format: strict gym decoding would reject it.
		"foreign/task.yaml":  "instruction: hi\nmax_agent_timeout_sec: 60\n",
		"foreign/MARKER":     "say hi",
		"plain/task.yaml":    "env: echo-v1\n",
		"listed.json":        `{"id":"listed","env":"echo-v1"}`,
		"other/MARKER-not":   "",
		"other/notes.txt":    "",
		"nested/x/MARKER":    "too deep: not searched",
		"nested/x/task.yaml": "env: echo-v1\n",
	})
	s, err := gym.LoadSuite(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(s.Tasks); !slices.Equal(got, []string{"foreign", "listed", "plain"}) {
		t.Fatalf("tasks %v", got)
	}
	f, _ := s.Task("foreign")
	if f.Dir != filepath.Join(dir, "foreign") || f.Instruction != "say hi" || f.Env != "echo-v1" {
		t.Errorf("foreign task: %+v", f)
	}

	// The directory given may itself be a task folder: a suite of one.
	one, err := gym.LoadSuite(filepath.Join(dir, "foreign"))
	if err != nil || len(one.Tasks) != 1 || one.Tasks[0].ID != "foreign" || one.Name != "foreign" {
		t.Fatalf("one task folder: %+v, %v", one, err)
	}

	// A load error names the directory and the format.
	bad := writeFiles(t, map[string]string{"b/MARKER": "bad"})
	if _, err := gym.LoadSuite(bad); err == nil || !strings.Contains(err.Error(), "markerfmt") ||
		!strings.Contains(err.Error(), filepath.Join(bad, "b")) || !strings.Contains(err.Error(), "a bad marker") {
		t.Errorf("bad marker: %v", err)
	}

	for name, f := range map[string]func(){
		"duplicate": func() {
			gym.RegisterTaskFormat("markerfmt", func(string) bool { return false }, func(string) (gym.Task, error) { return gym.Task{}, nil })
		},
		"nil load": func() { gym.RegisterTaskFormat("x", func(string) bool { return false }, nil) },
		"no name": func() {
			gym.RegisterTaskFormat("", func(string) bool { return false }, func(string) (gym.Task, error) { return gym.Task{}, nil })
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: RegisterTaskFormat did not panic", name)
				}
			}()
			f()
		}()
	}
}
