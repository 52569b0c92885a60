package durableweb_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/durableweb"
	"github.com/seed64e23a5c/timingwheel/durable/memstore"
)

// Example mounts the dashboard of a service's queue under /queue/ of the
// service's mux, with an Observer for throughput and lateness. Put the
// service's own authentication in front of it.
func Example() {
	obs := durableweb.NewObserver()
	q, err := durable.New(memstore.New(nil), durable.WithObserver(obs)) // or durable.Open(path, ...)
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()

	// durableweb.Handler(q, ...) is the same handler; a Dashboard can also
	// be closed on its own, which ends its sampler at once (Handler's
	// ends at its next sample after q is closed).
	dash := durableweb.New(q, durableweb.WithObserver(obs))
	defer dash.Close()
	mux := http.NewServeMux()
	mux.Handle("/queue/", http.StripPrefix("/queue", dash))

	srv := httptest.NewServer(mux) // a service would use http.ListenAndServe
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/queue/")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, strings.Contains(string(body), "<h1>Overview</h1>"))
	// Output: 200 OK true
}
