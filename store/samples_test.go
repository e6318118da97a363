package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// appendTraj stores a trajectory of n samples, each {"g":group,"i":index,"k":k}.
func appendTraj(t *testing.T, s *Store, run, task string, n int) (first, last int64) {
	t.Helper()
	first, last, err := s.AppendSamples(context.Background(), Trajectory{Run: run, Env: "echo-v1", Task: task, Session: "s-" + run + task, Episode: 1},
		func(group, index int) ([][]byte, error) {
			out := make([][]byte, n)
			for k := range out {
				out[k] = fmt.Appendf(nil, `{"g":%d,"i":%d,"k":%d}`, group, index, k)
			}
			return out, nil
		})
	if err != nil {
		t.Fatalf("AppendSamples: %v", err)
	}
	return first, last
}

// TestSamplesNumbering: offsets increase across trajectories; a group per
// (run, task), an index per trajectory; both survive a reopen.
func TestSamplesNumbering(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	for _, c := range []struct {
		run, task   string
		n           int
		first, last int64
	}{{"r1", "a", 2, 1, 2}, {"r1", "b", 1, 3, 3}, {"r1", "a", 3, 4, 6}, {"r2", "a", 1, 7, 7}} {
		if f, l := appendTraj(t, s, c.run, c.task, c.n); f != c.first || l != c.last {
			t.Errorf("%s/%s: offsets %d..%d, want %d..%d", c.run, c.task, f, l, c.first, c.last)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, Options{})
	if s.LastSampleOffset() != 7 {
		t.Errorf("reopened: last offset %d, want 7", s.LastSampleOffset())
	}
	appendTraj(t, s, "r1", "b", 1) // group 1 again, index 4
	appendTraj(t, s, "r3", "c", 1) // a new group, 3
	all, err := s.Samples(context.Background(), SampleFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range all {
		got = append(got, fmt.Sprintf("%d:%d/%d", x.Offset, x.Group, x.Index))
		if !strings.HasPrefix(string(x.Body), fmt.Sprintf(`{"g":%d,"i":%d,`, x.Group, x.Index)) {
			t.Errorf("sample %d: body %s does not carry group %d index %d", x.Offset, x.Body, x.Group, x.Index)
		}
	}
	want := "1:0/0 2:0/0 3:1/1 4:0/2 5:0/2 6:0/2 7:2/3 8:1/4 9:3/5"
	if strings.Join(got, " ") != want {
		t.Errorf("offset:group/index\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	// Filters and pages.
	r1, _ := s.Samples(context.Background(), SampleFilter{Run: "r1", AfterOffset: 2, Limit: 2})
	if len(r1) != 2 || r1[0].Offset != 3 || r1[1].Offset != 4 {
		t.Errorf("run r1 after 2, limit 2: %+v", r1)
	}
}

// TestSamplesEncoderErrors: an encoder's error or bad JSON stores nothing
// and uses up no number.
// TestSamplesChanged: the channel SamplesChanged returns is closed when
// samples are next committed, not before, and not by an encoder that
// writes none.
func TestSamplesChanged(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	ch := s.SamplesChanged()
	if _, _, err := s.AppendSamples(context.Background(), Trajectory{Run: "r"}, func(int, int) ([][]byte, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
		t.Fatal("closed with no sample stored")
	default:
	}
	appendTraj(t, s, "r", "a", 2)
	select {
	case <-ch:
	default:
		t.Fatal("not closed after samples were stored")
	}
	select {
	case <-s.SamplesChanged():
		t.Fatal("the next channel is closed already")
	default:
	}
}

func TestSamplesEncoderErrors(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	boom := errors.New("boom")
	if _, _, err := s.AppendSamples(context.Background(), Trajectory{Run: "r"}, func(int, int) ([][]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("encoder error: %v", err)
	}
	if _, _, err := s.AppendSamples(context.Background(), Trajectory{Run: "r"}, func(int, int) ([][]byte, error) {
		return [][]byte{[]byte(`[1]`)}, nil
	}); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("a sample that is not an object: %v", err)
	}
	if f, l, err := s.AppendSamples(context.Background(), Trajectory{Run: "r"}, func(int, int) ([][]byte, error) { return nil, nil }); f != 0 || l != 0 || err != nil {
		t.Errorf("no samples: %d..%d %v", f, l, err)
	}
	if f, _ := appendTraj(t, s, "r", "t", 1); f != 1 {
		t.Errorf("first stored sample has offset %d, want 1", f)
	}
	x, _ := s.Samples(context.Background(), SampleFilter{})
	if len(x) != 1 || x[0].Group != 0 || x[0].Index != 0 {
		t.Errorf("numbers after failed appends: %+v", x)
	}
}

// TestSamplesReadOnly: a read-only store sees the samples another has
// written, and exports them; a store without samples exports nothing.
func TestSamplesReadOnly(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	appendTraj(t, s, "r1", "a", 2)
	ro, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	appendTraj(t, s, "r2", "a", 1) // after the read-only open
	var out bytes.Buffer
	if err := ro.Export(context.Background(), &out, Filter{AfterSeq: 1}, FormatSamples); err != nil {
		t.Fatal(err)
	}
	want := `{"offset":2,"g":0,"i":0,"k":1}` + "\n" + `{"offset":3,"g":1,"i":1,"k":0}` + "\n"
	if out.String() != want {
		t.Errorf("read-only export:\n%s\nwant\n%s", out.String(), want)
	}
	if _, _, err := ro.AppendSamples(context.Background(), Trajectory{}, nil); !errors.Is(err, ErrReadOnly) {
		t.Errorf("AppendSamples on a read-only store: %v", err)
	}

	// A store from before samples existed: no samples.db.
	empty := t.TempDir()
	e := openT(t, empty, Options{})
	e.Close()
	for _, f := range []string{samplesFile, samplesFile + "-wal", samplesFile + "-shm"} {
		os.Remove(filepath.Join(empty, f))
	}
	ro2, err := OpenReadOnly(empty)
	if err != nil {
		t.Fatal(err)
	}
	defer ro2.Close()
	out.Reset()
	if err := ro2.Export(context.Background(), &out, Filter{}, FormatSamples); err != nil || out.Len() != 0 || ro2.LastSampleOffset() != 0 {
		t.Errorf("export of a store without samples: %q %v", out.String(), err)
	}
}

func TestWithOffset(t *testing.T) {
	for body, want := range map[string]string{
		`{"a":1}`:  `{"offset":7,"a":1}`,
		`{}`:       `{"offset":7}`,
		`{ "a":1}`: `{"offset":7,"a":1}`,
		"{\n}":     `{"offset":7}`,
	} {
		if got := string(WithOffset(nil, 7, []byte(body))); got != want {
			t.Errorf("WithOffset(%q) = %s, want %s", body, got, want)
		}
	}
}
