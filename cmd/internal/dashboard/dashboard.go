// Package dashboard is the sandbox dashboard of the cryptopaytest fake: a
// web page that lists payments (with their QR codes), payouts, webhook
// deliveries and balances, refreshed live, with buttons that pay, expire,
// move payouts along, advance the clock and inject faults.
//
// It is server-rendered HTML with a little JavaScript, all embedded in the
// binary. Like the control API it needs no key, so it only answers requests
// addressed to a loopback host name (which defeats DNS rebinding), and its
// actions only run for a request whose Origin is the dashboard's own (which
// defeats other web pages posting to it through the developer's browser).
// The page forbids being framed. The fake moves no real money.
package dashboard

import (
	"embed"
	"sync"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

//go:embed templates/*.html static/*
var files embed.FS

// dash serves one Server's dashboard.
type dash struct {
	srv *cryptopaytest.Server
	// act serialises actions, so that two quick clicks on "pay in full"
	// do not both read the same outstanding amount and pay it twice.
	act sync.Mutex
}
