package main

import (
	"net/http"

	"github.com/spf13/pflag"

	"github.com/nextstate-rl/nextstate/proxy"
	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/server"
)

// proxyFlags mount the OpenAI-compatible proxy inside serve, on the
// server's store, so its samples join the gym's samples stream.
type proxyFlags struct {
	upstream, allowUsers, allowFile string
	sessionRate, userRate           float64
}

func (p *proxyFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&p.upstream, "proxy-upstream", "", "also serve the OpenAI-compatible proxy (/v1/chat/completions, /v1/models) in front of this policy server; its samples join the samples stream, judged by --judge-url")
	fl.StringVar(&p.allowUsers, "proxy-allow-users", "", "with --proxy-upstream: comma-separated users whose feedback trains (default: everyone)")
	fl.StringVar(&p.allowFile, "proxy-allow-users-file", "", "with --proxy-upstream: file of users whose feedback trains, one a line")
	fl.Float64Var(&p.sessionRate, "proxy-session-rate", 0, "with --proxy-upstream: trained turns per minute per session (0: no limit)")
	fl.Float64Var(&p.userRate, "proxy-user-rate", 0, "with --proxy-upstream: trained turns per minute per user (0: no limit)")
}

// newJudge is the judge the flags name: the proxy's (on its rl.KindChat
// prompt, so --judge-templates may replace chat.tmpl and
// --judge-votes-by-kind set chat's votes).
func newJudge(j judgeFlags) (*rl.Judge, error) {
	jc, err := judgeConfig(j)
	if err != nil {
		return nil, err
	}
	return rl.NewJudge(jc)
}

// mountProxy serves the proxy on srv's address and store: its samples are
// stored and streamed as the gym's, its quarantine lives in the store's
// directory, and it is closed (its queued turns judged) before the store.
// The server's bearer token guards it and is not forwarded upstream.
func mountProxy(srv *server.Server, dataDir string, pf proxyFlags, j judgeFlags) error {
	allow, err := readAllow(pf.allowUsers, pf.allowFile)
	if err != nil {
		return err
	}
	cfg := proxy.Config{Upstream: pf.upstream, AllowUsers: allow, SessionRate: pf.sessionRate, UserRate: pf.userRate,
		Store: srv.Store()}
	if j.url != "" {
		if cfg.Judge, err = newJudge(j); err != nil {
			return err
		}
	}
	if cfg.Quarantine, err = proxy.OpenQuarantine(dataDir); err != nil {
		return err
	}
	p, err := proxy.New(cfg)
	if err != nil {
		return err
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Authorization") // the server's token, not the upstream's
		p.ServeHTTP(w, r)
	})
	srv.Mount([]string{"/v1/chat/completions", "/v1/models"}, h, p.Close)
	return nil
}
