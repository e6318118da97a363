package rl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/nextstate-rl/nextstate/gym"
	_ "github.com/nextstate-rl/nextstate/gym/testenvs" // echo-v1
	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/store"
)

// A Follower wired in-process, as the package doc shows, with no judge:
// one episode of echo-v1 becomes two samples, unjudged.
func Example_follower() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "follower")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	var f *rl.Follower
	st, err := store.Open(dir, store.Options{OnCommit: func(evs []*gym.Event, bodies []string) { f.Publish(evs, bodies) }})
	if err != nil {
		log.Fatal(err)
	}
	if f, err = rl.NewFollower(rl.FollowerConfig{Store: st}); err != nil {
		log.Fatal(err)
	}
	f.Start(st.LastSeq())
	mgr := gym.NewManager(gym.Config{Recorder: st})

	changed := st.SamplesChanged()
	sess, _, err := mgr.Create(ctx, gym.CreateRequest{Env: "echo-v1"})
	if err != nil {
		log.Fatal(err)
	}
	for _, say := range []string{"hello", "/done"} {
		if _, err := sess.Step(ctx, "", gym.TextAction(say)); err != nil {
			log.Fatal(err)
		}
	}
	<-changed // the episode's samples are stored
	samples, err := st.Samples(ctx, store.SampleFilter{AfterOffset: 0})
	if err != nil {
		log.Fatal(err)
	}
	for _, x := range samples {
		var s rl.Sample
		if err := json.Unmarshal(x.Body, &s); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%d %s %s judged=%v\n", x.Offset, s.Response, s.Status, s.Metadata.Origin.Judged)
	}

	if err := mgr.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(ctx); err != nil {
		log.Fatal(err)
	}
	if err := st.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// 1 hello completed judged=false
	// 2 /done completed judged=false
}
