package durable_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// ExampleQueue_Get shows what a queue keeps of a message whose first
// attempt failed: its state, attempts and the error's text.
func ExampleQueue_Get() {
	dir, err := os.MkdirTemp("", "inspect")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	mock := clock.NewMock()
	q, err := durable.Open(filepath.Join(dir, "q.db"), durable.WithClock(mock))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()

	if err := q.Enqueue(ctx, durable.Message{ID: "invoice-7", Payload: []byte("send")}); err != nil {
		log.Fatal(err)
	}
	d, err := q.Receive(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if err := d.RetryWithError(ctx, time.Minute, errors.New("smtp: connection refused")); err != nil {
		log.Fatal(err)
	}

	info, err := q.Get(ctx, "invoice-7")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(info.State, info.Attempt, info.LastError)
	fmt.Println("due in", info.Due.Sub(mock.Now()))
	_, err = q.Get(ctx, "invoice-8")
	fmt.Println(errors.Is(err, durable.ErrNotFound))
	// Output:
	// pending 1 smtp: connection refused
	// due in 1m0s
	// true
}

// ExampleQueue_List pages through the pending messages, by due time, two
// at a time.
func ExampleQueue_List() {
	dir, err := os.MkdirTemp("", "inspect")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	mock := clock.NewMock()
	q, err := durable.Open(filepath.Join(dir, "q.db"), durable.WithClock(mock))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()

	for i, id := range []string{"c", "a", "e", "b", "d"} {
		m := durable.Message{ID: id, Due: mock.Now().Add(time.Duration(5-i) * time.Minute)}
		if err := q.Enqueue(ctx, m); err != nil {
			log.Fatal(err)
		}
	}
	cursor := ""
	for page := 1; ; page++ {
		infos, next, err := q.List(ctx, durable.Pending, cursor, 2)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Print("page ", page, ":")
		for _, info := range infos {
			fmt.Print(" ", info.ID, " in ", info.Due.Sub(mock.Now()))
		}
		fmt.Println()
		if next == "" {
			break
		}
		cursor = next
	}
	// Output:
	// page 1: d in 1m0s b in 2m0s
	// page 2: e in 3m0s a in 4m0s
	// page 3: c in 5m0s
}
