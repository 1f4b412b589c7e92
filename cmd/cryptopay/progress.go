package main

import (
	"fmt"
	"io"
	"strings"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

// progress reports how far a long command is, on stderr: a bar redrawn
// in place on a terminal; plain lines, each step on its own, when plain is
// set and stderr is not a terminal; otherwise nothing.
type progress struct {
	w        io.Writer
	terminal bool
	total    int
	every    int    // redraw after this many more
	what     string // "payouts", "rows enqueued"
	last     int
}

// newProgress returns a progress for total items (0: unknown) of what.
func (a *app) newProgress(total, every int, what string, plain bool) *progress {
	p := &progress{total: total, every: every, what: what, last: -1}
	switch {
	case a.isTerminal(a.stderr):
		p.w, p.terminal = a.stderr, true
		p.draw(0)
	case plain:
		p.w = a.stderr
	}
	return p
}

// exportProgress is payout export's bar, its total the list's count.
func (a *app) exportProgress(c *cryptopay.Client) *progress {
	total := 0
	if a.isTerminal(a.stderr) {
		if page, err := c.ListPayouts(a.ctx, cryptopay.ListPayoutsParams{Limit: 1}); err == nil {
			total = page.Count
		}
	}
	return a.newProgress(total, 100, "payouts", false)
}

func (p *progress) set(n int) {
	if p.w != nil && (n-p.last >= p.every || n == p.total) {
		p.draw(n)
	}
}

func (p *progress) draw(n int) {
	p.last = n
	switch {
	case !p.terminal:
		fmt.Fprintf(p.w, "%d/%d %s\n", n, p.total, p.what)
	case p.total <= 0:
		fmt.Fprintf(p.w, "\r%d %s", n, p.what)
	default:
		const width = 30
		filled := min(width, n*width/p.total)
		fmt.Fprintf(p.w, "\r[%s%s] %d/%d %s", strings.Repeat("#", filled), strings.Repeat(".", width-filled), n, p.total, p.what)
	}
}

// done ends the bar's line on a terminal.
func (p *progress) done() {
	if p.terminal {
		p.draw(p.last)
		fmt.Fprintln(p.w)
	}
}
