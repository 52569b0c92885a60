package dedup

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/seed64e23a5c/timingwheel/durable"
)

func TestLastOfEachID(t *testing.T) {
	m := func(id, p string) durable.Message { return durable.Message{ID: id, Payload: []byte(p)} }
	unique := []durable.Message{m("a", "1"), m("b", "2")}
	assert.Equal(t, unique, LastOfEachID(unique))
	assert.Empty(t, LastOfEachID(nil))
	assert.Equal(t, []durable.Message{m("b", "2"), m("a", "3"), m("c", "5")},
		LastOfEachID([]durable.Message{m("a", "1"), m("b", "2"), m("a", "3"), m("c", "4"), m("c", "5")}),
		"the last of each ID, in the order of the last ones")
}
