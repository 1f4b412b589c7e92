package cryptopaytest_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTrailingDataRefused(t *testing.T) {
	// Guard for the table above: a second JSON value after the object is
	// not a valid body.
	s := newServer(t)
	r := call(t, s, "POST", "/v1/payment", paymentBody+` x`)
	assert.Equal(t, http.StatusBadRequest, r.Status)
}
