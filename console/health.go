package console

import (
	"context"
	"fmt"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// health is the summary at the top of every page.
type health struct {
	// Due: open intents whose next step is due now; Overdue: due for
	// longer than Config.OverdueAfter (the workers are behind, or down);
	// Failing: open intents whose latest try recorded an error.
	Due, Overdue, Failing int
	// NeedsApproval and Parked wait for a person.
	NeedsApproval, Parked int
	// CommonError is the commonest last error among open intents, and
	// how many have it.
	CommonError string
	CommonCount int
	// PaymentsNeedAction counts tracked payments a person should look at.
	PaymentsNeedAction int
	// Unknown: the summary could not be read (logged).
	Unknown bool
}

// health reads the summary; nil when there is nothing to read it from.
// It is the one place that knows how, so that a health method of the
// queue can replace its query.
func (c *console) health(ctx context.Context) *health {
	if c.cfg.Pool == nil && c.cfg.Tracker == nil {
		return nil
	}
	h := &health{}
	if c.cfg.Pool != nil && c.cfg.Queue != nil {
		if err := c.queueHealth(ctx, h); err != nil {
			c.log.Error("console: reading the queue's health", "err", err)
			h.Unknown = true
		}
	}
	if c.cfg.Tracker != nil {
		if err := c.trackerHealth(ctx, h); err != nil {
			c.log.Error("console: counting tracked payments", "err", err)
			h.Unknown = true
		}
	}
	return h
}

// trackerHealth counts the tracked payments that need action: by the
// needs-action index when Pool is set, else through Tracker.Counts.
func (c *console) trackerHealth(ctx context.Context, h *health) error {
	if c.cfg.Pool == nil {
		_, n, err := c.cfg.Tracker.Counts(ctx)
		h.PaymentsNeedAction = n
		return err
	}
	return c.cfg.Pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*)::int FROM %s WHERE needs_action`, c.cfg.Tracker.Table())).Scan(&h.PaymentsNeedAction)
}

// openStates are the states the workers still move.
func openStates() []string {
	var out []string
	for _, s := range pgstore.States() {
		if !s.IsFinal() && s != pgstore.StateNeedsApproval {
			out = append(out, string(s))
		}
	}
	return out
}

// queueHealth counts due, overdue, failing, held and parked intents, and
// finds the commonest last error, in two statements on the queue's table.
func (c *console) queueHealth(ctx context.Context, h *health) error {
	t := c.cfg.Queue.Table()
	open := openStates()
	err := c.cfg.Pool.QueryRow(ctx, fmt.Sprintf(`SELECT
    count(*) FILTER (WHERE state <> 'needs_approval' AND next_at <= now())::int,
    count(*) FILTER (WHERE state <> 'needs_approval' AND next_at <= now() - $2 * interval '1 microsecond')::int,
    count(*) FILTER (WHERE state <> 'needs_approval' AND last_error <> '')::int,
    count(*) FILTER (WHERE state = 'needs_approval')::int,
    count(*) FILTER (WHERE state = 'parked')::int
FROM %s WHERE state = ANY($1)`, t), append(open, string(pgstore.StateNeedsApproval)), c.cfg.OverdueAfter.Microseconds()).
		Scan(&h.Due, &h.Overdue, &h.Failing, &h.NeedsApproval, &h.Parked)
	if err != nil || h.Failing == 0 {
		return err
	}
	return c.cfg.Pool.QueryRow(ctx, fmt.Sprintf(`SELECT last_error, count(*)::int FROM %s
WHERE state = ANY($1) AND last_error <> '' GROUP BY last_error ORDER BY 2 DESC, 1 LIMIT 1`, t), open).
		Scan(&h.CommonError, &h.CommonCount)
}
