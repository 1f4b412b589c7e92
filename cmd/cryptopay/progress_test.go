package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestProgress(t *testing.T) {
	newApp := func(terminal bool, stderr *bytes.Buffer) *app {
		return &app{ctx: context.Background(), stderr: stderr, isTerminal: func(any) bool { return terminal }}
	}
	t.Run("plain lines every step", func(t *testing.T) {
		var buf bytes.Buffer
		p := newApp(false, &buf).newProgress(5, 2, "rows enqueued", true)
		for n := 1; n <= 5; n++ {
			p.set(n)
		}
		p.done()
		// The first item is drawn at once, then every second one, and the last.
		assert.Equal(t, "1/5 rows enqueued\n3/5 rows enqueued\n5/5 rows enqueued\n", buf.String())
	})
	t.Run("nothing off a terminal unless plain", func(t *testing.T) {
		var buf bytes.Buffer
		p := newApp(false, &buf).newProgress(5, 1, "payouts", false)
		p.set(3)
		p.done()
		assert.Empty(t, buf.String())
	})
	t.Run("a bar on a terminal", func(t *testing.T) {
		var buf bytes.Buffer
		p := newApp(true, &buf).newProgress(4, 100, "payouts", false)
		p.set(2) // under every: not drawn
		p.set(4) // the total: drawn
		p.done()
		assert.Equal(t, "\r[..............................] 0/4 payouts"+
			"\r[##############################] 4/4 payouts"+
			"\r[##############################] 4/4 payouts\n", buf.String())
	})
	t.Run("unknown total", func(t *testing.T) {
		var buf bytes.Buffer
		p := newApp(true, &buf).newProgress(0, 2, "payouts", false)
		p.set(2)
		p.done()
		assert.Equal(t, "\r0 payouts\r2 payouts\r2 payouts\n", buf.String())
	})
	t.Run("never past the bar's width", func(t *testing.T) {
		var buf bytes.Buffer
		p := newApp(true, &buf).newProgress(2, 1, "payouts", false)
		p.set(3) // more than announced: the list grew meanwhile
		assert.Contains(t, buf.String(), "\r[##############################] 3/2 payouts")
	})
}
