package cryptopaytest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Advance adds only positive durations to the clock's offset; a negative or
// zero one leaves the clock where it was.
func TestAdvanceOffset(t *testing.T) {
	tests := []struct {
		name  string
		steps []time.Duration
		want  time.Duration
	}{
		{"none", nil, 0},
		{"one", []time.Duration{time.Hour}, time.Hour},
		{"adds up", []time.Duration{time.Minute, 2 * time.Minute}, 3 * time.Minute},
		{"negative ignored", []time.Duration{time.Hour, -30 * time.Minute}, time.Hour},
		{"zero ignored", []time.Duration{0}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStateT(t)
			for _, d := range tt.steps {
				s.Advance(d)
			}
			assert.Equal(t, tt.want, time.Duration(s.clock.offset.Load()))
		})
	}
}

// sleep reports false when it is cut short by the context or by Close, and
// a zero wait succeeds only while the context is live.
func TestSleepCutShort(t *testing.T) {
	tests := []struct {
		name     string
		d        time.Duration
		canceled bool
		closed   bool
		want     bool
	}{
		{"zero, live context", 0, false, false, true},
		{"zero, canceled context", 0, true, false, false},
		{"negative, live context", -time.Second, false, false, true},
		{"long, canceled context", time.Hour, true, false, false},
		{"long, server closed", time.Hour, false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStateT(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.canceled {
				cancel()
			}
			if tt.closed {
				close(s.done)
			}
			assert.Equal(t, tt.want, s.sleep(ctx, tt.d))
		})
	}
}
