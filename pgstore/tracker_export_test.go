package pgstore

import (
	"context"
	"time"

	"github.com/cryptopay/cryptopay-go"
)

// SetTrackerHook makes t call fn at its named points ("change-recorded",
// "before-commit"): the crash tests kill the worker there.
func SetTrackerHook(t *Tracker, fn func(point string)) { t.hook = fn }

// TrackerAPI is the one API call the tracker makes (for counting reads).
type TrackerAPI = trackerAPI

// WithTrackerAPI makes the tracker read payments through api.
func WithTrackerAPI(cfg *TrackerConfig, api interface {
	GetPayment(ctx context.Context, id string, opts ...cryptopay.Option) (*cryptopay.Payment, error)
}) {
	cfg.api = api
}

// TrackerSchedule is t's schedule: the state and time of the next read of
// a payment expiring at expiredAt, in status st, after latePolls late
// reads (at nil: none).
func TrackerSchedule(t *Tracker, now, expiredAt time.Time, st cryptopay.PaymentStatus, latePolls int) (TrackState, *time.Time, int) {
	nx := t.schedule(now, expiredAt, st, latePolls)
	return nx.state, nx.at, nx.latePolls
}

// BooksCredited is what the books check reads as credited to orderID's
// payment: the sum of its history's ToPaid - FromPaid (nil: no history).
func BooksCredited(ctx context.Context, t *Tracker, orderID string) (*string, error) {
	r, err := scanPaymentRow(t.cfg.Pool.QueryRow(ctx, "SELECT * FROM ("+booksPaymentsSQL(t.Table(), t.history.Sanitize(), "", false)+") p WHERE order_id = $5",
		nil, "", 1_000_000, nil, orderID))
	return r.credited, err
}
