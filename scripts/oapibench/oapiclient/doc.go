// Package oapiclient is the client oapi-codegen generates from the
// repository's OpenAPI document, unedited: what a merchant gets who skips
// the SDK and generates a client from the same interface.
package oapiclient

//go:generate go tool oapi-codegen -config config.yaml ../../../testdata/openapi.yaml
