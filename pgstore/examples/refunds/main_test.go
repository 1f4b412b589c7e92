package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore/pgstoretest"
)

func TestMain(m *testing.M) { os.Exit(pgstoretest.Main(m)) }

// The example runs both stories on a throwaway PostgreSQL and the fake:
// each refund is claimed or enqueued, approved by two people, paid, and
// the payment resolved, to the digit.
func TestExample(t *testing.T) {
	srv := pgstoretest.Need(t)
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), srv.DSN(), &out), out.String())
	got := regexp.MustCompile(`-[0-9a-f]{8}\b`).ReplaceAllString(out.String(), "-RUN")
	got = regexp.MustCompile(`refund-[0-9a-f]{32}`).ReplaceAllString(got, "refund-ID")
	assert.Equal(t, `overpayment order-over-RUN: 10.5 paid of 10 usdt
  refund refund-ID of 0.5 usdt, awaiting the customer's claim
  the customer claimed it; their page says: Awaiting approval
  approved by bob and carol (four eyes)
  their page says: Paid
  resolved as refunded; refunds of order-over-RUN: 1, 0.5 usdt
underpayment order-under-RUN: 4 paid of 10 usdt
  refund refund-ID of 4 usdt to the address on file, held for approval
  approved by bob and carol (four eyes)
  paid
  resolved as refunded; refunds of order-under-RUN: 1, 4 usdt
books, refunds section:
  order-over-RUN: matched, paid in 10.5, refunded out 0.5
  order-under-RUN: matched, paid in 4, refunded out 4
`, got)
}

func TestExampleNeedsADatabase(t *testing.T) {
	err := run(context.Background(), "", &bytes.Buffer{})
	assert.ErrorContains(t, err, "CRYPTOPAY_DATABASE_URL")
}
