package main

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

func TestExitCode(t *testing.T) {
	live := context.Background()
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want int
	}{
		{"exit error", live, &exitError{exitNotYet, errors.New("still waiting")}, exitNotYet},
		{"usage error", live, usageErr("bad flag %s", "--x"), exitUsage},
		{"wrapped exit error", live, fmt.Errorf("payout: %w", &exitError{exitNo, errors.New("no")}), exitNo},
		{"interrupted", stopped, fmt.Errorf("get: %w", context.Canceled), exitInterrupted},
		{"canceled while the run is live is a failure", live, context.Canceled, exitFailed},
		{"outcome unknown", live, fmt.Errorf("create: %w", cryptopay.ErrOutcomeUnknown), exitOutcomeUnknown},
		{"invalid params", live, &cryptopay.ValidationError{Field: "Amount", Reason: "is zero"}, exitUsage},
		{"anything else", live, errors.New("connection refused"), exitFailed},
		{"the exit error wins over the interrupt", stopped, &exitError{exitNo, context.Canceled}, exitNo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, exitCode(tt.ctx, tt.err))
		})
	}
}

func TestExitErrors(t *testing.T) {
	inner := errors.New("no payout")
	e := &exitError{exitNo, inner}
	assert.Equal(t, "no payout", e.Error())
	assert.ErrorIs(t, e, inner)
	assert.Equal(t, "--amount: is zero", usageErr("%s: %s", "--amount", "is zero").Error())
	assert.Equal(t, "exit 2", quietExit(2).Error())
}
