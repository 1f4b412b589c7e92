package dashboard

import (
	"net/http"
	"time"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// faultPreset is a fault the page offers by name.
type faultPreset struct {
	Name  string
	Label string
	Fault cryptopaytest.Fault
}

// faultPresets are the faults the page can inject: the failures a client
// must survive, including the ones after which a create call's outcome is
// unknown.
var faultPresets = []faultPreset{
	{"500", "500 error, not processed", cryptopaytest.Fault{Status: http.StatusInternalServerError}},
	{"503", "503 + Retry-After: 1, not processed", cryptopaytest.Fault{Status: http.StatusServiceUnavailable, RetryAfter: "1"}},
	{"429", "429 + Retry-After: 1, not processed", cryptopaytest.Fault{Status: http.StatusTooManyRequests, RetryAfter: "1"}},
	{"drop", "connection dropped, not processed", cryptopaytest.Fault{Drop: true}},
	{"slow", "2 s delay, then the normal answer", cryptopaytest.Fault{Delay: 2 * time.Second}},
	{"processed-drop", "processed, then dropped (outcome unknown)", cryptopaytest.Fault{Process: true, Drop: true}},
	{"processed-500", "processed, then 500 (outcome unknown)", cryptopaytest.Fault{Process: true, Status: http.StatusInternalServerError}},
}
