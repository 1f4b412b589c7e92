// Package testfix holds the API bodies that the tests of several packages
// of this module serve from their local status endpoints.
package testfix

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// PaymentJSON is a status body for payment id with status, orderID and
// updatedAt.
func PaymentJSON(id, status, orderID string, updated time.Time) string {
	return fmt.Sprintf(`{"paymentId":%q,"status":%q,"payAmount":10.5,"payAddress":"addr","payQrCodeUri":"qr",
"currency":"usdt","network":"tron","customerId":"c1","customerIp":"203.0.113.7","orderId":%q,
"platformFeeByUser":true,"createdAt":"2026-01-01T00:00:00Z","updatedAt":%q,"expiredAt":"2026-01-01T01:00:00Z",
"webhookUrl":"https://shop.example/hook","paidAmount":null,"merchantAmount":null}`, id, status, orderID, updated.UTC().Format(time.RFC3339Nano))
}

// PayoutJSON is a status body for payout id with status and orderID.
func PayoutJSON(id, status, orderID string) string {
	return fmt.Sprintf(`{"payoutId":%q,"status":%q,"amount":"5","walletAddress":"T9y","networkFeeByUser":false,
"currency":"usdt","network":"tron","customerId":"c1","customerIp":"203.0.113.7","orderId":%q,
"createdAt":"2026-01-01T00:00:00Z","updatedAt":"2026-01-01T00:00:00Z","webhookUrl":""}`, id, status, orderID)
}

// Leaks reports whether s holds 6 or more consecutive bytes of key, in any
// letter case, raw or in a common encoding. It decodes on its own (it does
// not use the scrubber it checks).
func Leaks(s, key string) bool {
	s = decodeForLeak(decodeForLeak(s)) // twice: a JSON log line quotes an escaped text
	s, key = strings.ToLower(s), strings.ToLower(key)
	for i := 0; i+6 <= len(key); i++ {
		if strings.Contains(s, key[i:i+6]) {
			return true
		}
	}
	return false
}

var leakEscapes = regexp.MustCompile(`\\u[0-9a-fA-F]{4}|\\x[0-9a-fA-F]{2}|%[0-9a-fA-F]{2}|&#[0-9]+;|&#[xX][0-9a-fA-F]+;|\\[^0-9a-zA-Z]`)

func decodeForLeak(s string) string {
	return leakEscapes.ReplaceAllStringFunc(s, func(m string) string {
		var v uint64
		switch {
		case strings.HasPrefix(m, `\u`), strings.HasPrefix(m, `\x`):
			v, _ = strconv.ParseUint(m[2:], 16, 32)
		case m[0] == '%':
			v, _ = strconv.ParseUint(m[1:], 16, 32)
		case strings.HasPrefix(strings.ToLower(m), "&#x"):
			v, _ = strconv.ParseUint(m[3:len(m)-1], 16, 32)
		case m[0] == '&':
			v, _ = strconv.ParseUint(m[2:len(m)-1], 10, 32)
		default:
			return m[1:]
		}
		return string(rune(v))
	})
}
