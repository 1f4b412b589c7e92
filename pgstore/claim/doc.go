// Package claim is the customer's refund claim page: an http.Handler (New)
// that a merchant mounts on their site, reached by a link (Link) carrying
// a signed (HMAC-SHA256 under the merchant's key), expiring token. The
// customer sees the refund (its amount, currency and network), gives the
// address of their wallet, checked offline for the network before anything
// is stored, and the refund (pgstore.Refunds) becomes a payout intent held
// for approval in the merchant's queue. The claim takes a token once; the
// page then sends the browser on to a status link that follows the refund
// (awaiting approval, being sent, sent, paid, failed) without any login.
//
// The page is server-rendered, works without JavaScript and runs none: a
// Content-Security-Policy of default-src 'none' allows its one inline
// style by hash and forms posting to itself only; no referrer is sent
// (the token is in the URL) and nothing is cached. A forged, expired or
// reused token, or an address refused, answers a page that changes
// nothing, and a page shows only the refund its token names. See
// docs/refunds.md.
//
// Its browser test (a claim in headless Chromium) is in the console
// module (console/claim_browser_test.go), which has the browser driver:
// pgstore takes no dependency for a test.
package claim
