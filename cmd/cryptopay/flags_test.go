package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestKeyOnArgv(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // "" or the start of the refusal
	}{
		{"none", []string{"payment", "get", "x"}, ""},
		{"api key", []string{"--api-key", "sk_x"}, "the API key"},
		{"api key with =", []string{"-api-key=sk_x"}, "the API key"},
		{"key", []string{"--key=sk_x"}, "the API key"},
		{"secret", []string{"--secret", "whsec"}, "the webhook secret"},
		{"webhook secret", []string{"--webhook-secret=whsec"}, "the webhook secret"},
		{"a file flag is fine", []string{"--api-key-file", "/run/key"}, ""},
		{"after --", []string{"--", "--api-key=sk_x"}, ""},
		{"a value named like the flag", []string{"--order-id", "api-key"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := keyOnArgv(tt.args)
			if tt.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, got, tt.want)
			for _, a := range tt.args {
				if a != "--" && a[0] != '-' {
					assert.NotContains(t, got, a, "the value is never echoed")
				}
			}
		})
	}
}

func TestCheckBaseURL(t *testing.T) {
	tests := []struct {
		base string
		ok   bool
	}{
		{"https://api.example", true},
		{"http://127.0.0.1:8080", true},
		{"http://localhost:8080", true},
		{"http://LOCALHOST", true},
		{"http://[::1]:9000", true},
		{"http://api.example", false},
		{"http://10.0.0.1", false},
		{"http://user:pw@api.example", false},
		{"ftp://api.example", true}, // NewClient refuses it in its own words
		{"%zz", true},               // NewClient refuses it in its own words
	}
	for _, tt := range tests {
		t.Run(tt.base, func(t *testing.T) {
			err := checkBaseURL(tt.base)
			if tt.ok {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, "plain http")
			assert.NotContains(t, err.Error(), "pw", "the URL's password is not echoed")
			assert.Equal(t, exitUsage, exitCode(t.Context(), err))
		})
	}
}

func TestLooksLikeKey(t *testing.T) {
	tests := []struct {
		arg  string
		want bool
	}{
		{"sk_live_0123456789abcdef", true},
		{"d2hzZWMtMDEyMzQ1Njc4OWFiY2RlZg==", true},
		{"payouts-2026-11.csv", false},      // a dot: a file name
		{"/var/lib/cryptopay/batch1", true}, // '/' is base64: hidden, costs a less helpful message only
		{"abcdefghijklmnopqrstuvwxyz", false},
		{"short1", false},
		{"0123456789abcde", false}, // 15 characters
		{"0123456789 abcdef", false},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			assert.Equal(t, tt.want, looksLikeKey(tt.arg))
		})
	}
}
