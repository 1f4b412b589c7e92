package console

import (
	"context"
	"slices"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// health is the summary at the top of every page: the queue's and the
// tracker's own (Queue.Health, Tracker.Health), nil for the one not
// configured.
type health struct {
	Payouts, Payments *pgstore.Health
	// Refused: the webhook refusals the queue's and the tracker's
	// health report, each once (both when they differ).
	Refused []refused
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
	for _, s := range []*pgstore.Health{h.Payments, h.Payouts} {
		if s == nil || s.WebhookRefusals.Count == 0 {
			continue
		}
		line := refused{Text: s.WebhookRefusals.String(), Continuing: s.WebhookRefusing}
		if !slices.Contains(h.Refused, line) {
			h.Refused = append(h.Refused, line)
		}
	}
	return h
}

// refused is a line of webhook refusals: "webhooks refused: N since T,
// last reason R ..."; Continuing when one is within
// pgstore.WebhookRefusalWindow.
type refused struct {
	Text       string
	Continuing bool
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
