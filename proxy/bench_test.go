package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/store"
)

// constJudge votes 0 at once: the benchmark measures the proxy, not a judge.
type constJudge struct{}

func (constJudge) Score(context.Context, rl.JudgeInput) (rl.Verdict, error) {
	return rl.Verdict{Votes: []rl.Vote{{Valid: true}}, Tally: rl.Tally{Valid: 1}}, nil
}

// BenchmarkProxyLatency measures the latency the proxy adds: the same
// requests, 100 sessions at once (each a goroutine sending main turns),
// and 1 session alone (the proxy's own cost, without queueing for the CPU),
// sent straight to the scripted upstream and then through the proxy; the
// added p50 and p99 are the differences of the two runs' percentiles of
// the time to read the whole answer.
func BenchmarkProxyLatency(b *testing.B) {
	for _, c := range []struct {
		stream   bool
		sessions int
	}{{false, 100}, {true, 100}, {false, 1}, {true, 1}} {
		stream := c.stream
		name := fmt.Sprintf("nonstream/sessions=%d", c.sessions)
		if stream {
			name = fmt.Sprintf("stream/sessions=%d", c.sessions)
		}
		b.Run(name, func(b *testing.B) {
			usrv := httptest.NewServer(&upstream{})
			defer usrv.Close()
			dir := b.TempDir()
			st, err := store.Open(dir, store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			q, err := OpenQuarantine(dir)
			if err != nil {
				b.Fatal(err)
			}
			p, err := New(Config{Upstream: usrv.URL, Store: st, Quarantine: q, Judge: benchJudge(), Queue: 1 << 16})
			if err != nil {
				b.Fatal(err)
			}
			psrv := httptest.NewServer(p)
			defer psrv.Close()
			defer p.Close(context.Background())
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 200, MaxIdleConns: 400}}
			extra := ""
			if stream {
				extra = `,"stream":true`
			}
			direct := measure(b, client, usrv.URL, extra, c.sessions)
			proxied := measure(b, client, psrv.URL, extra, c.sessions)
			b.ReportMetric(pct(direct, 50), "direct-p50-µs")
			b.ReportMetric(pct(proxied, 50), "proxy-p50-µs")
			b.ReportMetric(pct(proxied, 50)-pct(direct, 50), "added-p50-µs")
			b.ReportMetric(pct(proxied, 99)-pct(direct, 99), "added-p99-µs")
		})
	}
}

// measure sends b.N chat requests from that many concurrent sessions
// and returns each one's latency in microseconds.
func measure(b *testing.B, client *http.Client, base, extra string, sessions int) []float64 {
	var next atomic.Int64
	lat := make([]float64, b.N)
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ResetTimer()
	for s := range sessions {
		wg.Go(func() {
			sid := fmt.Sprintf("bench-%d", s)
			for turn := 0; ; turn++ {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				body := conv(extra, "hello", "answer", fmt.Sprintf("turn %d, thanks", turn))
				req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("X-Session-Id", sid)
				start := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					failed.Store(err)
					return
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat[i] = float64(time.Since(start).Microseconds())
				if err != nil || resp.StatusCode != http.StatusOK {
					failed.Store(fmt.Errorf("status %d, %v", resp.StatusCode, err))
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}
	return lat
}

func pct(lat []float64, p int) float64 {
	s := slices.Clone(lat)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, len(s)*p/100)]
}

func benchJudge() rl.Scorer {
	if os.Getenv("PROXY_BENCH_NOJUDGE") != "" {
		return nil
	}
	return constJudge{}
}
