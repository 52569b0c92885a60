package durableweb

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// TestRequeueAllFollowsTheFilter: on the dead list filtered by an ID
// prefix, "requeue all" says it requeues those, and requeues those only;
// without a filter it requeues every dead message.
func TestRequeueAllFollowsTheFilter(t *testing.T) {
	q := newQueue(t, durable.WithMaxAttempts(1))
	ctx := context.Background()
	for _, id := range []string{"eu-1", "eu-2", "us-1", "us-2"} {
		kill(t, q, id, "boom")
	}
	_, srv := newDashboard(t, q)
	same := map[string]string{"Sec-Fetch-Site": "same-origin"}

	_, body := get(t, srv, "/queue/dead?prefix=eu-")
	assert.Contains(t, body, `<input type="hidden" name="prefix" value="eu-">`)
	assert.Contains(t, body, "Requeue all dead starting with “eu-”")
	assert.Contains(t, body, `data-confirm="Requeue every dead message with an ID starting with “eu-”?"`)
	resp, _ := post(t, srv, "/queue/requeue-all", url.Values{"token": {token(t, body)}, "prefix": {"eu-"}}, same)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "dead?done=requeued-all&n=2&prefix=eu-", resp.Header.Get("Location"))
	for id, want := range map[string]durable.State{"eu-1": durable.Pending, "eu-2": durable.Pending, "us-1": durable.Dead, "us-2": durable.Dead} {
		info, err := q.Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, want, info.State, id)
	}
	_, body = get(t, srv, "/queue/dead?done=requeued-all&n=2&prefix=eu-")
	assert.Contains(t, body, "Requeued 2 dead messages with an ID starting with &#34;eu-&#34;")

	_, body = get(t, srv, "/queue/dead")
	assert.NotContains(t, body, `type="hidden" name="prefix"`)
	assert.Contains(t, body, ">Requeue all dead</button>")
	resp, _ = post(t, srv, "/queue/requeue-all", url.Values{"token": {token(t, body)}}, same)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "dead?done=requeued-all&n=2", resp.Header.Get("Location"))
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, st.Dead)
}
