// Package testfix holds the API bodies that the tests of several packages
// of this module serve from their local status endpoints.
package testfix

import (
	"fmt"
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
