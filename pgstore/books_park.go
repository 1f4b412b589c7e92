package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

// listedPayout is the payout the provider lists for an intent the queue
// never sent: the one standing for the orderId (the first that can move
// money), and how many of the orderId's can.
type listedPayout struct {
	amount                    *string
	currency, network, status string
	created                   *time.Time
	moving                    int
	movers                    string // each that can move money: amount, createdAt, id (US-separated, any order)
}

// set fingerprints the payouts listed that can move money (each one's
// amount, createdAt to the microsecond and id, in a fixed order): two
// checks that list other payouts give other fingerprints.
func (p listedPayout) set() string {
	movers := strings.Split(p.movers, "\x1f")
	slices.Sort(movers)
	sum := sha256.Sum256([]byte(strings.Join(movers, "\n")))
	return hex.EncodeToString(sum[:4])
}

// words names the listed payout, as the park records it (Intent.LastError)
// and the release's confirmation shows it. It begins with what the
// payout was created with, how many are listed and their set's
// fingerprint (same, up to the status), so that a park an operator
// released is not made again when only that status moved.
func (p listedPayout) words() (words, same string) {
	amount, created := "an unknown amount", "not given"
	if p.amount != nil {
		amount = *p.amount
	}
	if p.created != nil {
		created = p.created.UTC().Format(time.RFC3339)
	}
	same = fmt.Sprintf("the books check found a payout listed at the provider under this orderId, which the queue never sent: "+
		"%s %s/%s, createdAt %s", amount, p.currency, p.network, created)
	if p.moving > 1 {
		same += fmt.Sprintf(" (one of %d listed that can move money)", p.moving)
	}
	same += " [listed set " + p.set() + "]"
	same = scrubText(same) + ", status " // the delimiter: a park that named more payouts is not the same
	return same + scrubText(p.status) + ": not sent until an operator releases it (the listed payout is another one), rejects it or resolves it", same
}

// park parks the intent of it (an intent the queue never sent, with a
// payout listed for it) with HoldUnsentListed, unless the check only
// reports (ReportOnly), and says in it.Detail what became of it.
func (b *Books) park(ctx context.Context, it *BooksItem, p listedPayout) {
	switch {
	case b.cfg.ReportOnly:
		it.Detail += "; not parked (a report-only check): nothing stops the workers from sending it"
		return
	case b.cfg.Queue.cfg.Pool.Config().MaxConns < 2: // the check's transaction holds its one connection
		it.Detail += "; not parked: the queue's pool has one connection, which the check holds: nothing stops the workers from sending it"
		return
	}
	words, same := p.words()
	got, err := b.cfg.Queue.parkListed(ctx, it.OrderID, words, same)
	switch {
	case err != nil:
		it.Detail += "; not parked: " + scrubText(err.Error()) + ": nothing stops the workers from sending it"
	case got.released:
		it.Detail += "; not parked again: an operator released it after a park that named these payouts (see its history)"
	case got.reworded:
		it.Detail += "; parked by an earlier check, and what is listed changed since: its last error now names it, and a release confirmed against the words shown before changes nothing"
	case got.held && got.was == StateParked:
		it.Detail += "; parked by an earlier check: not sent until an operator releases, rejects or resolves it"
	case got.held:
		it.Detail += "; parked by this check (hold " + HoldUnsentListed + "): not sent until an operator releases, rejects or resolves it"
	case got.was == StateSending || got.was == StateReconciling || got.was == StateCreated:
		it.Detail += "; not parked: it is " + string(got.was) + " now (a worker began sending it while the check ran): look now, it may be paid twice"
	default:
		it.Detail += "; not parked: it is " + string(got.was) + " now"
	}
}
