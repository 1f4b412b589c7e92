// Package cryptopaytest is a complete, in-memory fake of the cryptopay API
// for tests: all seven endpoints of the spec on a loopback listener, the
// spec's authentication and validation, a payment and payout lifecycle a
// test drives by hand, webhooks, and fault injection.
//
// Start one per test, like an httptest.Server:
//
//	srv := cryptopaytest.NewServer()
//	defer srv.Close()
//	client := srv.Client() // a *cryptopay.Client for srv.URL with srv.APIKey
//
// The server writes its JSON with its own structs built from the spec, not
// with the SDK's types, so a wrong JSON tag in the SDK fails a test instead
// of agreeing with itself. Request keys are matched case-sensitively for the
// same reason.
//
// # Lifecycle
//
// A payment is created waiting. Pay records money arriving: the paid amount
// accumulates and the status becomes paid, paid_partial or paid_over by
// comparison with payAmount. An unpaid payment past expiredAt reads as
// expired; the clock moves with real time and with Advance. A late Pay moves
// an expired payment to a paid status. SetPaymentStatus plays the
// processor's own decisions (confirming, locked, failed, rejected, expired,
// paid) and refuses moves out of paid, paid_over, failed and rejected.
//
// A payout is created with status created and its amount (plus the network
// fee when the merchant bears it) is taken from the balance at once.
// SetPayoutStatus moves it along
//
//	created    -> review | processing | failed | cancelled
//	review     -> processing | failed | cancelled
//	processing -> confirming | paid | failed
//	confirming -> paid | failed
//
// paid, failed and cancelled are final; failed and cancelled give the
// reserved amount back to the balance. Any other move is an error matching
// ErrTransition.
//
// The fake, like the spec, does not deduplicate payouts by orderId: a payout
// the SDK sent twice exists twice, and PayoutsWithOrderID counts it.
//
// # Money rules
//
// Every amount is an exact decimal and is written as a JSON number (never a
// quoted string). With a fee of f percent (WithFeePercent, default 1) a
// payment's fee is amount*f/100: payAmount is amount+fee when
// platformFeeByUser is true, else amount. merchantAmount is paidAmount minus
// the fee, never below zero, and the balance of the payment's currency and
// network rises by it. With a network fee of n percent
// (WithNetworkFeePercent, default 0.5) a paid payout reports
// paidAmount = amount - amount*n/100 and merchantAmount = amount when
// networkFeeByUser is true, else paidAmount = amount and
// merchantAmount = amount + amount*n/100. The balance falls by
// merchantAmount when the payout is created.
//
// # Faults
//
// InjectFault makes the next requests of a route misbehave: another status,
// a malformed body, a delay, a dropped connection or a truncated body, with
// or without processing the request first. Process plus Drop or Status 500
// on RouteCreatePayout is the ambiguous case every payout caller must
// survive: the payout exists, the caller saw no answer.
//
// # Webhooks
//
// Every change of a payment or payout (status or paid amount) is POSTed as
// the status-response JSON to the object's webhookUrl, in order per object,
// retried on a non-2xx answer or a transport error, and recorded
// (Webhooks, WaitWebhooks). At most WithWebhookConcurrency attempts are in
// flight at once; the rest wait in a queue. The record keeps the newest
// WithWebhookLog attempts. By default only loopback URLs are called; see
// WithWebhookAnyHost.
//
// Nothing in this package touches process-wide state: not
// http.DefaultClient, not http.DefaultTransport, not decimal's settings.
package cryptopaytest
