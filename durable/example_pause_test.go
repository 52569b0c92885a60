package durable_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// ExampleQueue_Pause pauses a queue: messages are still enqueued, but no
// receiver gets one until Resume.
func ExampleQueue_Pause() {
	dir, err := os.MkdirTemp("", "pause")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	q, err := durable.Open(filepath.Join(dir, "q.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()

	if err := q.Pause(ctx); err != nil {
		log.Fatal(err)
	}
	if err := q.Enqueue(ctx, durable.Message{ID: "report", Payload: []byte("monthly")}); err != nil {
		log.Fatal(err)
	}
	st, err := q.Stats(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("paused:", st.Paused, "pending:", st.Pending)

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = q.Receive(short)
	fmt.Println("while paused:", err)

	if err := q.Resume(ctx); err != nil {
		log.Fatal(err)
	}
	d, err := q.Receive(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("after resume:", d.ID)
	if err := d.Ack(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// paused: true pending: 1
	// while paused: context deadline exceeded
	// after resume: report
}
