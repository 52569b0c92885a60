package redisstore_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/redisstore"
)

// With a replica behind Sentinel, every write waits until the replica has
// it, so that a failover loses none that returned nil; dead letters are
// kept for a day at most.
func ExampleWithReplicas() {
	client := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    "mymaster",
		SentinelAddrs: []string{"localhost:26379"},
	})
	defer client.Close()
	store, err := redisstore.New(client, "orders",
		redisstore.WithReplicas(1, time.Second),
		redisstore.WithStartTimeout(3*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	q, err := durable.New(store, durable.WithDeadLetterRetention(durable.DefaultDeadLetterCount, 24*time.Hour))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()

	err = q.Enqueue(context.Background(), durable.Message{ID: "order-1", Due: time.Now().Add(30 * time.Minute)})
	if errors.Is(err, redisstore.ErrNotReplicated) {
		// On the primary, not known to be on the replica: enqueue again
		// (an upsert) or report it.
		log.Print(err)
	}
}
