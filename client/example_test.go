package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strconv"
	"time"

	"github.com/nextstate-rl/nextstate/client"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/wire"
)

// ExampleClient plays one episode of guess-v1 by binary search, while
// another goroutine watches the session's events.
func ExampleClient() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, "http://127.0.0.1:7070", client.WithToken(os.Getenv("NEXTSTATE_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	s, first, err := c.Create(ctx, gym.CreateRequest{Env: "guess-v1", TaskID: "guess-1-100", Seed: 1})
	var full *gym.CapacityError
	if errors.As(err, &full) {
		log.Fatalf("server is full; retry in %s", full.RetryAfter)
	}
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close(context.WithoutCancel(ctx))
	fmt.Println(first.Instruction)

	sub, err := c.Subscribe(ctx, wire.SubscribeParams{Session: s.ID(), AfterSeq: s.LastSeq()})
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()
	go func() {
		for ev := range sub.C() {
			fmt.Println("event", ev.Seq, ev.Type)
		}
	}()

	lo, hi := 1, 100
	for lo <= hi {
		mid := (lo + hi) / 2
		// Step survives a dropped connection: it is re-sent with its step
		// id and answered from the server's record.
		res, err := s.Step(ctx, gym.TextAction(strconv.Itoa(mid)))
		if err != nil {
			log.Fatal(err)
		}
		switch res.Observation.Text() {
		case "higher":
			lo = mid + 1
		case "lower":
			hi = mid - 1
		default:
			fmt.Println("found", mid, "reward", res.Reward)
			return
		}
	}
}
