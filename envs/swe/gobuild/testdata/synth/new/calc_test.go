package calc

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestAbs(t *testing.T) {
	b, err := os.ReadFile("testdata/cases.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		in, _ := strconv.Atoi(f[0])
		want, _ := strconv.Atoi(f[1])
		t.Run(f[0], func(t *testing.T) {
			if got := Abs(in); got != want {
				t.Errorf("Abs(%d) = %d, want %d", in, got, want)
			}
		})
	}
}

func TestAdd(t *testing.T) {
	if got := Add(2, 3); got != 5 {
		t.Fatalf("Add(2, 3) = %d, want 5", got)
	}
}

func TestShared(t *testing.T) {}
