package mysqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/mysqlstore"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// An order and its timeout are written in one transaction: the timeout
// exists, and fires at its due time, if and only if the order was
// created. A worker, in this process or any other, receives it then. (The
// tests give MYSQL_DSN a database of the server they start; an
// application's DSN is like "app:secret@tcp(db:3306)/shop?parseTime=true&interpolateParams=true".)
func Example() {
	ctx := context.Background()
	db, err := sql.Open("mysql", os.Getenv("MYSQL_DSN"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS orders (
	id VARCHAR(64) PRIMARY KEY, status VARCHAR(16) NOT NULL)`); err != nil {
		log.Fatal(err)
	}
	timeouts, err := mysqlstore.New(ctx, db, "order-timeouts")
	if err != nil {
		log.Fatal(err)
	}
	defer timeouts.Close()

	// Close the order if it is unpaid in 300ms (30 minutes, in a shop).
	due := time.Now().Add(300 * time.Millisecond)
	createOrder := func(id string, commit bool) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id, status) VALUES (?, 'open')`, id); err != nil {
			return err
		}
		if err := timeouts.EnqueueTx(ctx, tx, durable.Message{ID: id, Payload: []byte(id), Due: due}); err != nil {
			return err
		}
		if !commit {
			return tx.Rollback() // a failed checkout: no order, no timeout
		}
		return tx.Commit()
	}
	if err := createOrder("order-1", false); err != nil {
		log.Fatal(err)
	}
	if err := createOrder("order-2", true); err != nil {
		log.Fatal(err)
	}

	// The worker: a queue on the store.
	q, err := durable.New(timeouts)
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d, err := q.Receive(rctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("received", d.ID, "not before its due time:", !time.Now().Before(due))
	if _, err := db.ExecContext(ctx, `UPDATE orders SET status = 'closed' WHERE id = ? AND status = 'open'`, d.ID); err != nil {
		_ = d.Retry(ctx, time.Minute)
		log.Fatal(err)
	}
	if err := d.Ack(ctx); err != nil {
		log.Fatal(err)
	}

	// Delivered once; the rolled-back order left no timeout.
	short, cancel2 := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel2()
	_, err = q.Receive(short)
	fmt.Println("another delivery:", !errors.Is(err, context.DeadlineExceeded))
	_, err = timeouts.Get(ctx, "order-1")
	fmt.Println("order-1's timeout exists:", !errors.Is(err, store.ErrNotFound))
	// Output:
	// received order-2 not before its due time: true
	// another delivery: false
	// order-1's timeout exists: false
}

// Teams that run their own migrations take the statements, and have New
// only check the version.
func ExampleMigrationSQL() {
	for _, stmt := range mysqlstore.MigrationSQL() {
		fmt.Println(stmt + ";")
	}
	// Then, in the application:
	//	store, err := mysqlstore.New(ctx, db, "emails", mysqlstore.WithoutMigrate())
}
