package main

import (
	"errors"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

// flagOfField names, for the SDK's ValidationError fields, what a CLI user
// sets instead: the flag (or argument, or environment variable).
var flagOfField = map[string]string{
	"Amount":         "--amount",
	"Currency":       "--currency",
	"Network":        "--network",
	"CustomerID":     "--customer-id",
	"CustomerIP":     "--customer-ip",
	"OrderID":        "--order-id",
	"WalletAddress":  "--wallet",
	"AdditionalData": "--additional-data",
	"WebhookURL":     "--webhook-url",
	"AttemptedAt":    "--attempted-at",
	"id":             "the ID argument",
	"baseURL":        "the base URL (--base-url or $" + envBaseURL + ")",
	"apiKey":         "the API key",
}

// userError says err in the CLI's words: a ValidationError names the flag
// to fix instead of the SDK's Go field. Other errors are returned as they
// are.
func userError(err error) error {
	var ve *cryptopay.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	name, ok := flagOfField[ve.Field]
	if !ok {
		return err
	}
	return &exitError{exitUsage, errors.New(name + ": " + ve.Reason)}
}
