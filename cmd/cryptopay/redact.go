package main

import "strings"

// keyFragment is the shortest run of a secret's characters that is
// redacted where it appears: a server may echo the key cut (a capped
// request id or message), re-cased or percent-encoded, and the SDK's own
// scrubbing matches the whole key. Shorter runs would match ordinary text
// (a key "cryptopay_live_..." and the hint "run 'cryptopay payout find'"),
// as would a run of fewer than 4 distinct characters ("000000000000").
const keyFragment = 12

// redactSecrets returns s with every run of keyFragment or more characters
// of a secret (the API key, the webhook secret), in any letter case,
// replaced by "[REDACTED]". It is applied to the text an error brings to
// the terminal (the error line, payout find's reason), on top of the SDK's
// scrubbing.
//
// A run lying wholly inside the secret's public prefix is not redacted:
// keys start with lower-case words that name their kind ("sk_live_",
// the fake's "test_key_cryptopaytest_"), and those words are ordinary
// text too (the fake's own "fault injected by cryptopaytest" came out as
// "fault injected by [REDACTED]"). A run reaching past the prefix is.
func redactSecrets(s string, secrets ...string) string {
	low := asciiLower(s)
	var hit []bool // hit[i]: byte i of s is part of a secret
	for _, secret := range secrets {
		sl := asciiLower(secret)
		public := publicPrefix(secret)
		for i := 0; i+keyFragment <= len(sl); i++ {
			w := sl[i : i+keyFragment]
			if distinct(w) < 4 || i+keyFragment <= public {
				continue
			}
			for from := 0; ; {
				j := strings.Index(low[from:], w)
				if j < 0 {
					break
				}
				if hit == nil {
					hit = make([]bool, len(s))
				}
				for k := from + j; k < from+j+keyFragment; k++ {
					hit[k] = true
				}
				from += j + 1
			}
		}
	}
	if hit == nil {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if !hit[i] {
			b.WriteByte(s[i])
			continue
		}
		b.WriteString("[REDACTED]")
		for i+1 < len(s) && hit[i+1] {
			i++
		}
	}
	return b.String()
}

// publicPrefix is the length of the secret's leading words: runs of
// lower-case ASCII letters, each followed by '_' or '-' ("sk_live_",
// "test_key_cryptopaytest_"). A word with a capital or a digit, or the
// last run without a separator after it, is not part of it: random key
// material has those.
func publicPrefix(secret string) int {
	n, word := 0, 0
	for i := 0; i < len(secret); i++ {
		switch c := secret[i]; {
		case c >= 'a' && c <= 'z':
			word++
		case (c == '_' || c == '-') && word > 0:
			n, word = i+1, 0
		default:
			return n
		}
	}
	return n
}

// asciiLower lowers ASCII letters only, byte by byte, so offsets stay
// those of s (also where s is not UTF-8).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func distinct(s string) int {
	var seen [256]bool
	n := 0
	for i := 0; i < len(s); i++ {
		if !seen[s[i]] {
			seen[s[i]], n = true, n+1
		}
	}
	return n
}

// dbErrorText removes the database connection string and its password
// from text an error brings to the terminal. pgx errors can quote a
// connection string; a password of any length is removed where it
// appears.
func dbErrorText(s string, secrets []string) string {
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "[REDACTED]")
		}
	}
	return s
}
