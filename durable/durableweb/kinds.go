package durableweb

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// Counting by kind: the overview counts the pending and the dead
// messages by kind, reading them with Queue.List (no store keeps counts
// by kind), in pages of kindPage, and stops after the bounds of
// WithKindCounts: so its cost does not grow with the queue. The page
// says how many messages it read, and the bound when it stopped.

const (
	// defaultKindCount is how many messages of each state the overview
	// reads at most to count them by kind (WithKindCounts).
	defaultKindCount = 10_000
	// defaultKindBytes is how many bytes of payloads the overview reads
	// at most in each state: List returns the payloads too.
	defaultKindBytes = 32 << 20
	// kindPage is the limit of each List.
	kindPage = 100
	// topKinds is how many kinds the overview shows of each state: the
	// largest counts.
	topKinds = 20
)

// kindCount is how many of the messages read have one kind.
type kindCount struct {
	Kind string // "" for the messages without a kind
	N    int
}

// kindCounts is a state's messages counted by kind.
type kindCounts struct {
	State string
	// Top are the largest counts, largest first (kinds in byte order
	// among equal counts), at most topKinds of them.
	Top []kindCount
	// Others counts the kinds after Top, and OthersN their messages.
	Others, OthersN int
	// Read is how many messages were read, in the list's order, and
	// Complete says whether they are all the state's (the list ended).
	Read     int
	Complete bool
	// Total is the state's count (Stats), for the note of a partial count.
	Total int
	// Bound says what stopped the count: "" when it was complete.
	Bound string
	Err   string
}

// HasKinds reports whether a message read has a kind.
func (k kindCounts) HasKinds() bool {
	return k.Others > 0 || len(k.Top) > 1 || (len(k.Top) == 1 && k.Top[0].Kind != "")
}

// Note says what the counts are of, and the bound that stopped them.
func (k kindCounts) Note() string {
	order := "in due order"
	if k.State == durable.Dead.String() {
		order = "oldest death first"
	}
	switch {
	case k.Err != "":
		return fmt.Sprintf("Read %s %s messages before the error.", group(k.Read), k.State)
	case k.Complete && k.Read == 0:
		return fmt.Sprintf("No %s messages.", k.State)
	case k.Complete && k.Read == 1:
		return fmt.Sprintf("Counted the one %s message.", k.State)
	case k.Complete:
		return fmt.Sprintf("Counted all %s %s messages.", group(k.Read), k.State)
	}
	// Stats was read before the count: more may have come since.
	total := max(k.Total, k.Read+1)
	return fmt.Sprintf("Counted the first %s of %s %s messages (%s): the count stops at %s.",
		group(k.Read), group(total), k.State, order, k.Bound)
}

// countKinds counts the messages of state s by kind, reading at most
// maxN of them and maxBytes of their payloads (checked after each page).
func (d *Dashboard) countKinds(ctx context.Context, s durable.State, total, maxN, maxBytes int) kindCounts {
	kc := kindCounts{State: s.String(), Total: total}
	counts := make(map[string]int)
	cursor, size := "", 0
	for {
		if kc.Read >= maxN || size >= maxBytes {
			kc.Bound = fmt.Sprintf("%s messages or %s of payloads, whichever comes first", group(maxN), showBytes(maxBytes))
			break
		}
		infos, next, err := d.q.List(ctx, s, cursor, min(kindPage, maxN-kc.Read))
		if err != nil {
			kc.Err = describe(err)
			break
		}
		for _, in := range infos {
			counts[in.Kind]++
			size += len(in.Payload)
		}
		kc.Read += len(infos)
		if next == "" {
			kc.Complete = true
			break
		}
		cursor = next
	}
	all := make([]kindCount, 0, len(counts))
	for k, n := range counts {
		all = append(all, kindCount{Kind: k, N: n})
	}
	slices.SortFunc(all, func(a, b kindCount) int {
		return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.Kind, b.Kind))
	})
	if len(all) > topKinds {
		for _, c := range all[topKinds:] {
			kc.Others++
			kc.OthersN += c.N
		}
		all = all[:topKinds]
	}
	kc.Top = all
	return kc
}

// group writes n with a comma between groups of three digits: 10,000.
func group(n int) string {
	s := strconv.Itoa(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// showBytes shows n bytes in MiB if it is a whole number of them, else
// in bytes.
func showBytes(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%s bytes", group(n))
}
