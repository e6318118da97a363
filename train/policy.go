package train

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/serve"
	"github.com/nextstate-rl/nextstate/trainer/service"
	"github.com/nextstate-rl/nextstate/trainer/tokenizer"
)

// PolicyServer serves an in-process trainer over HTTP on loopback
// (Handler's paths).
type PolicyServer struct {
	URL, ReferenceURL string // the OpenAI base URLs, ending in /v1

	srv    *http.Server
	ln     net.Listener
	served chan error
}

// Handler is a trainer's HTTP face, what `serve-trainer` and `train`'s
// loopback server answer: the OpenAI API on its newest published version
// at /v1 (each answer's X-Weight-Version names the version by
// save_weights_for_sampler's counter; a request keeps the version it began
// with while newer ones are published; the loop names versions by their
// optimizer steps in its records), the frozen reference (version 0, the
// weights as loaded) at /reference/v1 for a judge of the policy's own
// family (--judge self), and the training API (docs/training.md) at its
// paths under /v1. name is the model id the OpenAI API answers to.
func Handler(svc *service.Service, tok *tokenizer.Tokenizer, name string, log *slog.Logger) (http.Handler, error) {
	serving := func(version int) (*serve.Server, error) {
		l, err := svc.Acquire(version)
		if err != nil {
			return nil, err
		}
		h := serve.New(l.Engine, tok, name)
		l.Release()
		h.Logger = log
		h.Versions = func() (*trainer.Engine, int, func(), error) {
			l, err := svc.Acquire(version)
			if err != nil {
				return nil, 0, nil, err
			}
			return l.Engine, l.Version.Version, l.Release, nil
		}
		return h, nil
	}
	policy, err := serving(-1)
	if err != nil {
		return nil, err
	}
	reference, err := serving(0)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", policy)
	mux.Handle("/health", policy)
	mux.Handle("/reference/", http.StripPrefix("/reference", reference))
	api := service.NewHandler(svc)
	for _, p := range []string{"forward_backward", "forward", "optim_step", "save_weights_for_sampler", "sample", "save_state", "load_state", "info"} {
		mux.Handle("/v1/"+p, api)
	}
	return mux, nil
}

// ServePolicy starts a PolicyServer for svc on 127.0.0.1 (a free port).
func ServePolicy(svc *service.Service, tok *tokenizer.Tokenizer, name string, log *slog.Logger) (*PolicyServer, error) {
	h, err := Handler(svc, tok, name, log)
	if err != nil {
		return nil, err
	}
	return ServeHandler(h)
}

// ServeHandler serves h (Handler's paths, or a live.Router of them) on
// 127.0.0.1 (a free port).
func ServeHandler(h http.Handler) (*PolicyServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ps := &PolicyServer{URL: "http://" + ln.Addr().String() + "/v1", ReferenceURL: "http://" + ln.Addr().String() + "/reference/v1",
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}, ln: ln,
		served: make(chan error, 1)}
	go func() { ps.served <- ps.srv.Serve(ln) }()
	return ps, nil
}

// Close stops the server, waiting at most for ctx for requests in flight.
func (ps *PolicyServer) Close(ctx context.Context) error {
	err := ps.srv.Shutdown(ctx)
	if serr := <-ps.served; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
