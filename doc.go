/*
Package cryptopay is the Go SDK for the cryptopay payment and payout API:
payment links (an address, an amount and a QR code URI for the customer),
payouts to wallets, statuses, balances, currencies and webhooks.

Money is exact, a payout is never sent twice by the SDK, and a webhook body
is never trusted. The guides in the repository's docs/ directory hold every
detail; this overview is the map.

# The Client

A [Client] calls the API. Make one with [NewClient] and share it: it is safe
for concurrent use, holds a connection pool sized for concurrent callers,
and changes no global state.

	client, err := cryptopay.NewClient("https://api.example.com", os.Getenv("CRYPTOPAY_API_KEY"),
		cryptopay.WithTimeout(20*time.Second))
	if err != nil {
		log.Fatal(err) // an empty key, a bad URL, or http:// to a remote host
	}

Options are one type, [Option]. Given to NewClient they configure every
call; [WithTimeout], [WithRetryPolicy] and [WithHeader] given after a call's
parameters change that call only, and [WithResponseInto] is per call only.
Options that shape the Client ([WithHTTPClient], [WithLogger],
[WithObserver], [WithWakeupBus], ...) are refused on a call with
[ErrInvalidParams]. The API key is never printed, neither by fmt nor in
errors and log lines.

# Calling the API

Every method takes a context first, then its parameters, then options
that change that one call ([WithResponseInto] fills a [Response], whose
RawJSON reaches fields the SDK does not decode yet):

	payment, err := client.CreatePayment(ctx, cryptopay.CreatePaymentParams{
		Amount:     decimal.RequireFromString("49.99"),
		Currency:   "usdt",
		Network:    "tron",
		CustomerID: "customer-42",
		CustomerIP: "203.0.113.7",
		OrderID:    "order-1042", // unique per order
	})

The endpoints are [Client.CreatePayment], [Client.GetPayment],
[Client.CreatePayout], [Client.GetPayout], [Client.ListPayouts] (and the
lazy iterator [Client.AllPayouts]), [Client.GetBalances] and
[Client.ListCurrencies]. Parameters are checked before anything is sent.

Every amount is a decimal.Decimal, never a float, and travels as a JSON
number written from its exact text. Amounts that only status responses carry
([Payment].PaidAmount, MerchantAmount) are decimal.NullDecimal: Valid false
means the server did not send it, which is not zero.

# Errors

A call's error matches a sentinel with [errors.Is] and a type with
[errors.As]:

  - [*APIError] for any non-2xx answer, matching [ErrUnauthorized],
    [ErrNotFound], [ErrInvalidRequest], [ErrRateLimited] or [ErrServer];
  - [*ValidationError] ([ErrInvalidParams]) for parameters refused before
    sending;
  - [*OutcomeUnknownError] ([ErrOutcomeUnknown]) for a create request that
    may have been processed;
  - [*ResponseError] ([ErrUnexpectedResponse]) for a 2xx the SDK cannot read.

Match errors this way, never on their text.

# Never twice

Reads are retried on transient failures, with backoff and Retry-After. A
create request ([Client.CreatePayment], [Client.CreatePayout]) is never
resent once it may have reached the server, by the SDK or by Go's HTTP/2
transport, because the API documents no idempotency key and a second payout
sends money twice. Such a failure matches [ErrOutcomeUnknown]: reconcile it
by orderId with [Client.ReconcilePayout] before anything else, never resend
blindly, and follow a payout that exists to its final status:

	attempted := time.Now() // before sending: the search reaches back to it
	payout, err := client.CreatePayout(ctx, params)
	if errors.Is(err, cryptopay.ErrOutcomeUnknown) {
		res, rerr := client.ReconcilePayout(ctx, cryptopay.ReconcileParams{
			OrderID:     params.OrderID,
			AttemptedAt: attempted,
		})
		switch {
		case rerr != nil || res.Verdict == cryptopay.PayoutStillUnknown:
			// look again later, and do not resend
		case res.Verdict == cryptopay.PayoutNotCreated:
			payout, err = client.CreatePayout(ctx, params) // never created: safe to send again
		case res.Verdict == cryptopay.PayoutExists:
			// never send it again; the list item has no payout id, so
			// follow the payout by its orderId to its final status
			payout, err = client.WaitForPayout(ctx, cryptopay.WaitForPayoutParams{OrderID: params.OrderID})
		}
	}

For a durable promise across crashes and replicas, the companion module
github.com/cryptopay/cryptopay-go/pgstore has a payout queue on your
PostgreSQL (pgstore.Queue).

# Waits

[Client.WaitForPayment] and [Client.WaitForPayout] ([WaitForPaymentParams],
[WaitForPayoutParams]; a payout known only by its orderId can be followed
too) poll the status until it
is terminal ([PaymentStatus.IsTerminal], [PayoutStatus.IsTerminal]) or the
context ends; always give them a deadline. [PaymentStatus.IsSuccess] is what
may ship goods and [PaymentStatus.NeedsAction] what a person should look at.
A terminal status is not final ([PaymentStatus.IsFinal]): an expired
payment can still be paid late, and a paid_partial one paid in full. A webhook handler built on the same Client ends the waits for
its object at once (through [Client.Notify]); across replicas,
[WithWakeupBus] does the same.

# Webhooks

Package [github.com/cryptopay/cryptopay-go/webhook] receives events. The API
does not say how it signs events, so webhook.URL signs the URL: it adds an
HMAC token of the orderId to your endpoint, to be passed as the payment's or
payout's webhookUrl. webhook.NewHandler serves that endpoint: it checks the
token before decoding anything, re-reads the object through the API when
webhook.Config.Client is set (do this whenever money moves on the answer),
and hands each (kind, id, status) to your callback once per
webhook.DedupeStore. Make the callback idempotent.

# Testing

Package [github.com/cryptopay/cryptopay-go/cryptopaytest] is a complete
fake of the API on a loopback listener: lifecycles, balances, webhooks and
fault injection, with no account.

# Guides

  - The Client in depth: https://github.com/cryptopay/cryptopay-go/blob/main/docs/client.md
  - Webhooks in depth: https://github.com/cryptopay/cryptopay-go/blob/main/docs/webhooks.md
  - Testing with the fake: https://github.com/cryptopay/cryptopay-go/blob/main/docs/testing.md
  - Running several replicas: https://github.com/cryptopay/cryptopay-go/blob/main/docs/replicas.md
  - Observability: https://github.com/cryptopay/cryptopay-go/blob/main/docs/observability.md
  - The durable payout queue: https://github.com/cryptopay/cryptopay-go/blob/main/docs/payout-queue.md
  - The operator CLI: https://github.com/cryptopay/cryptopay-go/blob/main/docs/cli.md
  - Security: https://github.com/cryptopay/cryptopay-go/blob/main/SECURITY.md
  - All guides: https://github.com/cryptopay/cryptopay-go/blob/main/README.md#guides
*/
package cryptopay
