package cryptopaytest

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"2", 2 * time.Second},
		{"59", 59 * time.Second},
		{"60", time.Minute},
		{"3600", time.Minute},
		{"99999999999999999999", time.Minute},
		{"-1", 0},
		{"soon", 0},
		{time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat), 0},
		{time.Now().Add(time.Hour).UTC().Format(http.TimeFormat), time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			assert.Equal(t, tt.want, parseRetryAfter(tt.in))
		})
	}
}
