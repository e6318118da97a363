package server

import (
	"sync"
	"time"
)

// pool runs the connections' request handlers and writes on goroutines
// shared by the whole server. A connection owns one goroutine of its own,
// its reader; everything else it needs runs here, so 10,000 idle
// connections are 10,000 parked goroutines, not 30,000, and the few
// workers that serve the steps keep their grown stacks from one request to
// the next (JSON and schema code run deep: a fresh goroutine's stack grows
// anew for every request, which cost more than the request).
type pool struct {
	work  chan func()   // unbuffered: idle workers wait on it
	quit  chan struct{} // closed by stop: idle workers exit
	once  sync.Once
	start func(func()) // starts a goroutine the server waits for
}

// workerIdle is how long an idle worker waits for more work before it
// exits.
const workerIdle = 10 * time.Second

func newPool(start func(func())) *pool {
	return &pool{work: make(chan func()), quit: make(chan struct{}), start: start}
}

// run hands f to an idle worker, or starts one. f never waits for a
// worker: the pool grows with the work in flight (a slow step holds its
// worker, not the others').
func (p *pool) run(f func()) {
	select {
	case p.work <- f:
	default:
		p.start(func() { p.worker(f) })
	}
}

func (p *pool) worker(f func()) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		f()
		idle.Reset(workerIdle)
		select {
		case f = <-p.work:
		case <-p.quit:
			return
		case <-idle.C:
			return
		}
	}
}

// stop lets the idle workers exit; those at work exit when done. Work
// handed to run after stop still runs.
func (p *pool) stop() { p.once.Do(func() { close(p.quit) }) }
