package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// failureOut is a worker's latest failure as the CLI writes it.
type failureOut struct {
	Class     string `json:"class"`
	Permanent bool   `json:"permanent"`
	Hint      string `json:"hint"`
	Text      string `json:"text"`
	At        string `json:"at"`
	Count     int    `json:"count"`
}

// newFailureOut is f for output (nil: it never failed).
func newFailureOut(f pgstore.Failure) *failureOut {
	if f.Class == "" {
		return nil
	}
	return &failureOut{Class: string(f.Class), Permanent: f.Class.Permanent(), Hint: f.Class.Hint(), Text: f.Text,
		At: when(f.At), Count: f.Count}
}

// failingCell is a list's column: the class and how many in a row, ""
// when the latest read or send succeeded.
func failingCell(f pgstore.Failure) string {
	if !f.Failing() {
		return ""
	}
	return string(f.Class) + " x" + strconv.Itoa(f.Count)
}

// failureLine is a show's line: what failed, what to do, when; "" if it
// never failed.
func failureLine(f pgstore.Failure) string {
	switch {
	case f.Class == "":
		return ""
	case !f.Failing():
		return fmt.Sprintf("none since %s (earlier: %s: %s)", when(f.At), f.Class, f.Text)
	}
	return fmt.Sprintf("%s; %d in a row, latest %s: %s", f.Class.Hint(), f.Count, when(f.At), f.Text)
}

// healthOut is a health summary as the CLI writes it.
type healthOut struct {
	Open           int         `json:"open"`
	Due            int         `json:"due"`
	Overdue        int         `json:"overdue"`
	Failing        int         `json:"failing"`
	NeedsAction    int         `json:"needsAction"`
	Commonest      *failureOut `json:"commonestFailure,omitempty"`
	CommonestCount int         `json:"commonestCount,omitempty"`
	// WebhookRefusals: the webhook deliveries refused, as the shop's
	// handler recorded them (pgstore's WebhookRefused); absent if none.
	WebhookRefusals *refusalsOut `json:"webhookRefusals,omitempty"`
	Summary         string       `json:"summary"`
}

// refusalsOut is the count of refused webhook deliveries as the CLI
// writes it.
type refusalsOut struct {
	Count      int64            `json:"count"`
	Since      string           `json:"since"`
	Last       string           `json:"lastReason"`
	LastStatus int              `json:"lastStatus"`
	LastAt     string           `json:"lastAt"`
	ByReason   map[string]int64 `json:"byReason"`
	// Continuing: one was refused within pgstore.WebhookRefusalWindow (the
	// command then exits 1).
	Continuing bool `json:"continuing"`
}

// newRefusalsOut is h's refusals for output (nil: none).
func newRefusalsOut(h pgstore.Health) *refusalsOut {
	s := h.WebhookRefusals
	if s.Count == 0 {
		return nil
	}
	out := &refusalsOut{Count: s.Count, Since: when(s.Since), Last: string(s.Last), LastStatus: s.LastStatus,
		LastAt: when(s.LastAt), ByReason: make(map[string]int64, len(s.ByReason)), Continuing: h.WebhookRefusing}
	for why, n := range s.ByReason {
		out.ByReason[string(why)] = n
	}
	return out
}

func healthHelp(noun, open string) string {
	return "Summarize the " + noun + " still worked on (" + open + "): how many are due, overdue\n" +
		"(due for longer than a lease: no worker is taking them), failing (their latest read or\n" +
		"send failed) and need a person, and the commonest failure with what to do about it,\n" +
		"e.g. \"12 " + noun + " failing: 401 unauthorized: no retry fixes this: check the API key\";\n" +
		"and the webhook deliveries the shop's handler refused (recorded by pgstore's WebhookRefused),\n" +
		"e.g. \"webhooks refused: 3 since ..., last reason token (401)\": a wrong or rotated secret.\n" +
		"Exit 1 when anything is overdue, failing or needs a person, or a webhook was refused\n" +
		"within the last hour."
}

// healthFunc is Queue.Health or Tracker.Health.
type healthFunc func(context.Context) (pgstore.Health, error)

// healthCommand runs a health command on store s: its flags, then the
// Health of the store open returns, printed; exit 1 when it is not OK.
func healthCommand[S any](a *app, cmd command, s store, args []string,
	open func(*dbFlags) (S, *pgxpool.Pool, error), health func(S, context.Context) (pgstore.Health, error)) error {
	fs, db := a.newDBFlagSet(cmd, s)
	_, asJSON, err := a.parseOutput(fs, args, 0, 0)
	if err != nil {
		return err
	}
	st, pool, err := open(db)
	if err != nil {
		return err
	}
	defer pool.Close()
	return a.printHealth(func(ctx context.Context) (pgstore.Health, error) { return health(st, ctx) }, asJSON)
}

// printHealth prints a health summary; exit 1 when it is not OK.
func (a *app) printHealth(health healthFunc, asJSON bool) error {
	h, err := health(a.ctx)
	if err != nil {
		return err
	}
	if asJSON {
		out := healthOut{Open: h.Open, Due: h.Due, Overdue: h.Overdue, Failing: h.Failing, NeedsAction: h.NeedsAction,
			CommonestCount: h.CommonestCount, WebhookRefusals: newRefusalsOut(h), Summary: h.String()}
		if h.Failing > 0 {
			out.Commonest = newFailureOut(h.Commonest)
		}
		err = a.printJSON(out)
	} else {
		for line := range strings.Lines(h.String()) {
			a.printLine("%s", strings.TrimSuffix(line, "\n"))
		}
	}
	if err == nil && !h.OK() {
		return quietExit(exitNo)
	}
	return err
}
