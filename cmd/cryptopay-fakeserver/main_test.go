package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		want     int
		wantErr  string
		canceled bool
	}{
		{"help", []string{"-h"}, 0, "-addr", false},
		{"bad flag", []string{"-port", "1"}, 64, "not defined", false},
		{"not loopback", []string{"-addr", "0.0.0.0:0"}, 64, "not loopback", false},
		{"serves until canceled", []string{"-addr", "127.0.0.1:0"}, 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			if tt.canceled {
				cancel()
			}
			defer cancel()
			var out, errOut bytes.Buffer
			assert.Equal(t, tt.want, run(ctx, tt.args, &out, &errOut))
			assert.Contains(t, errOut.String(), tt.wantErr)
			if tt.canceled {
				assert.Contains(t, out.String(), "cryptopay-fakeserver listening on http://127.0.0.1:")
				assert.Contains(t, out.String(), "shutting down")
			}
		})
	}
}
