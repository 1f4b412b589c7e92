// Package demo connects the example programs to the API: the real one when
// CRYPTOPAY_BASE_URL and CRYPTOPAY_API_KEY are set, otherwise the bundled
// in-process fake server, so the examples run with no account.
package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/google/uuid"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// Env is what an example runs against.
type Env struct {
	// Client calls the API.
	Client *cryptopay.Client
	// Fake is the in-process fake server, or nil against a real API; the
	// examples use it to play the customer (Pay) and the processor.
	Fake *cryptopaytest.Server
	// PollInterval suits the target: short on the fake, the default on a
	// real API.
	PollInterval time.Duration
}

// Connect returns the environment named by CRYPTOPAY_BASE_URL and
// CRYPTOPAY_API_KEY, or a fresh fake server. Call Close when done.
func Connect() (*Env, error) {
	base, key := os.Getenv("CRYPTOPAY_BASE_URL"), os.Getenv("CRYPTOPAY_API_KEY")
	if base != "" || key != "" {
		if base == "" || key == "" {
			return nil, fmt.Errorf("set both CRYPTOPAY_BASE_URL and CRYPTOPAY_API_KEY, or neither to use the fake server")
		}
		c, err := cryptopay.NewClient(base, key, cryptopay.WithHeader("User-Agent", "cryptopay-examples"))
		if err != nil {
			return nil, err
		}
		return &Env{Client: c, PollInterval: cryptopay.DefaultPollInterval}, nil
	}
	fake := cryptopaytest.NewServer()
	return &Env{Client: fake.Client(), Fake: fake, PollInterval: 20 * time.Millisecond}, nil
}

// Close stops the fake server, if any.
func (e *Env) Close() {
	if e.Fake != nil {
		e.Fake.Close()
	}
}

// OrderID returns a fresh order id: unique per order, as reconciliation
// and webhook signing require.
func OrderID(prefix string) string {
	return prefix + "-" + uuid.NewString()[:8]
}

// Main runs an example's run function with a context that ends on Ctrl-C,
// writing to standard output, and exits non-zero on error.
func Main(name string, run func(context.Context, io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}
