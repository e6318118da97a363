package main

import (
	"bytes"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The shipped task set is what the generator makes with its documented
// flags: -n 240 -seed 1.
func TestShippedFileIsCurrent(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("..", "tasks", "math.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := Generate(240, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := Write(&got, tasks); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got.Bytes(), want) {
		return
	}
	gl, wl := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(gl), len(wl)) {
		if gl[i] != wl[i] {
			t.Fatalf("tasks/math.jsonl is not current (line %d differs; regenerate it with "+
				"go run ./envs/toolcall/code/gen -n 240 -seed 1 -o envs/toolcall/code/tasks/math.jsonl):\n got  %s\n file %s", i+1, gl[i], wl[i])
		}
	}
	t.Fatalf("tasks/math.jsonl is not current: %d lines generated, %d in the file", len(gl), len(wl))
}

func TestDeterministic(t *testing.T) {
	a, _ := Generate(60, 7)
	b, _ := Generate(60, 7)
	c, _ := Generate(60, 8)
	var ab, bb, cb bytes.Buffer
	Write(&ab, a)
	Write(&bb, b)
	Write(&cb, c)
	if !bytes.Equal(ab.Bytes(), bb.Bytes()) {
		t.Error("the same seed gave two different sets")
	}
	if bytes.Equal(ab.Bytes(), cb.Bytes()) {
		t.Error("two seeds gave the same set")
	}
}

func TestCounts(t *testing.T) {
	tasks, err := Generate(7, 1)
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	ids := map[string]bool{}
	for _, task := range tasks {
		per[task.Labels["category"]]++
		if ids[task.ID] {
			t.Errorf("id %s twice", task.ID)
		}
		ids[task.ID] = true
	}
	if per["arithmetic"] != 3 || per["algebra"] != 2 || per["combinatorics"] != 2 {
		t.Errorf("-n 7 splits as %v; want 3, 2, 2", per)
	}
	if _, err := Generate(2, 1); err == nil || !strings.Contains(err.Error(), "at least 3") {
		t.Errorf("-n 2: %v", err)
	}
}

// Every topic makes problems whose answers are exact numbers in
// canonical form, with a solution, across many seeds; the range helper
// stays in its bounds.
func TestTopics(t *testing.T) {
	r := newRNG(99)
	for _, c := range categories {
		for _, tp := range c.topics {
			for range 50 {
				p := tp.make(r)
				v, ok := new(big.Rat).SetString(p.answer)
				if !ok || v.RatString() != p.answer {
					t.Errorf("%s: answer %q is not canonical", tp.name, p.answer)
				}
				if p.text == "" || !strings.Contains(p.solution, "print(") || strings.Contains(p.text, "%!") {
					t.Errorf("%s: text %q, solution %q", tp.name, p.text, p.solution)
				}
			}
		}
	}
	for range 10000 {
		if v := r.between(-3, 4); v < -3 || v > 4 {
			t.Fatalf("between(-3, 4) = %d", v)
		}
	}
}

// A few answers checked by hand.
func TestKnownAnswers(t *testing.T) {
	if got := solve([][]int{{2, 1}, {1, -1}}, []int{5, 1}); got[0].RatString() != "2" || got[1].RatString() != "1" {
		t.Errorf("solve: %v", got)
	}
	if s := poly2(1, -1, -1); s != "x^2 - x - 1" {
		t.Errorf("poly2 = %q", s)
	}
	if s := poly2(-2, 0, 1); s != "-2x^2 + 1" {
		t.Errorf("poly2 = %q", s)
	}
	if s := linear1(3, -1); s != "3x - 1" {
		t.Errorf("linear1 = %q", s)
	}
}
