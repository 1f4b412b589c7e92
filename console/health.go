package console

import (
	"context"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// health is the summary at the top of every page: the queue's and the
// tracker's own (Queue.Health, Tracker.Health), nil for the one not
// configured.
type health struct {
	Payouts, Payments *pgstore.Health
	// Unknown: part of the summary could not be read (logged).
	Unknown bool
}

// health reads the summary.
func (c *console) health(ctx context.Context) *health {
	h := &health{}
	if c.cfg.Queue != nil {
		h.Payouts = c.read(ctx, "the queue's health", c.cfg.Queue.Health, &h.Unknown)
	}
	if c.cfg.Tracker != nil {
		h.Payments = c.read(ctx, "the tracker's health", c.cfg.Tracker.Health, &h.Unknown)
	}
	return h
}

// read runs one health method; an error is logged and marks the summary
// unknown.
func (c *console) read(ctx context.Context, what string, f func(context.Context) (pgstore.Health, error), unknown *bool) *pgstore.Health {
	h, err := f(ctx)
	if err != nil {
		c.log.Error("console: reading "+what, "err", err)
		*unknown = true
		return nil
	}
	return &h
}
