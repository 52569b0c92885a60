package pgstore_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/pgstore"
)

// An order and its timeout are written in one transaction: the timeout
// exists, and fires in 30 minutes, if and only if the order was created.
// A worker, in this process or any other, receives it then.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@localhost/app")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	store, err := pgstore.New(ctx, pool, "order-timeouts")
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO orders (id, status) VALUES ($1, 'open')`, "order-1"); err != nil {
			return err
		}
		return store.EnqueueTx(ctx, tx, durable.Message{
			ID:      "order-1",
			Payload: []byte(`{"order":"order-1"}`),
			Due:     time.Now().Add(30 * time.Minute),
		})
	})
	if err != nil {
		log.Fatal(err)
	}

	// The worker: a queue on the store, woken by the commit's notification.
	q, err := durable.New(store)
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	d, err := q.Receive(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE orders SET status = 'expired' WHERE id = $1 AND status = 'open'`, d.ID); err != nil {
		_ = d.Retry(ctx, time.Minute)
		return
	}
	_ = d.Ack(ctx)
}

// Behind PgBouncer in transaction mode, the pool's connections cannot
// LISTEN: the store listens on a direct connection to PostgreSQL.
func ExampleWithListenerConfig() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@pgbouncer:6432/app?default_query_exec_mode=simple_protocol")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	direct, err := pgx.ParseConfig("postgres://app@postgres:5432/app")
	if err != nil {
		log.Fatal(err)
	}
	store, err := pgstore.New(ctx, pool, "emails", pgstore.WithListenerConfig(direct))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
}

// Teams that run their own migrations take the statements, and have New
// only check the version.
func ExampleMigrationSQL() {
	for _, stmt := range pgstore.MigrationSQL("jobs") {
		fmt.Println(stmt + ";")
	}
	// Then, in the application:
	//	store, err := pgstore.New(ctx, pool, "emails", pgstore.WithSchema("jobs"), pgstore.WithoutMigrate())
}
