package cryptopay

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sync"
)

// This file holds the API's endpoints and the one generic path an endpoint
// method goes through (validate, marshal, send, decode, convert), and the
// pool type of the wire structs (each resource's file declares its pools).

// endpoint names one API operation: its method, its path (for routes with
// an id, the part before the id) and its route template.
type endpoint struct {
	method, path, route string
}

// The API's operations.
var (
	createPayment  = endpoint{http.MethodPost, "/v1/payment", "POST /v1/payment"}
	getPayment     = endpoint{http.MethodGet, "/v1/payment/", "GET /v1/payment/{id}/status"}
	createPayout   = endpoint{http.MethodPost, "/v1/payout", "POST /v1/payout"}
	getPayout      = endpoint{http.MethodGet, "/v1/payout/", "GET /v1/payout/{id}/status"}
	listPayouts    = endpoint{http.MethodGet, "/v1/payout/list", "GET /v1/payout/list"}
	getBalances    = endpoint{http.MethodGet, "/v1/balance", "GET /v1/balance"}
	listCurrencies = endpoint{http.MethodGet, "/v1/currencies", "GET /v1/currencies"}
)

// call is the request for e with no query and no body.
func (e endpoint) call(opts []Option) request {
	return request{method: e.method, path: e.path, route: e.route, opts: opts}
}

// decoder is a wire struct (W, used through its pointer PW) that a body
// decodes into in one pass and that converts itself into the public T.
type decoder[T, W any] interface {
	*W
	to(*T)
}

// wirePool reuses the wire structs responses are decoded into: each call
// then allocates only what it returns. A struct goes back zeroed, so no
// field of one response shows through in the next (json leaves absent
// fields as they were) and nothing it pointed to is kept.
type wirePool[W any] struct{ pool sync.Pool }

func (p *wirePool[W]) get() *W {
	if w, ok := p.pool.Get().(*W); ok {
		return w
	}
	return new(W)
}

func (p *wirePool[W]) put(w *W) {
	var zero W
	*w = zero
	p.pool.Put(w)
}

// fetch sends r, decodes the 2xx body into a pooled W (checking its shape
// if W has a check method) and converts it to a new T.
func fetch[T, W any, PW decoder[T, W]](ctx context.Context, c *Client, r request, pool *wirePool[W]) (*T, error) {
	w := pool.get()
	defer pool.put(w)
	if err := c.do(ctx, r, PW(w)); err != nil {
		return nil, err
	}
	v := new(T)
	PW(w).to(v)
	return v, nil
}

// deref returns *v, for endpoints that answer with a slice.
func deref[T any](v *T, err error) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	return *v, nil
}

// decodeVia is the UnmarshalJSON of a public type T: b is decoded into its
// wire form W, which converts itself into dst.
func decodeVia[T, W any, PW decoder[T, W]](b []byte, dst *T) error {
	var w W
	if err := json.Unmarshal(b, PW(&w)); err != nil {
		return err
	}
	PW(&w).to(dst)
	return nil
}

// createParams is what a create request's parameters provide.
type createParams interface {
	Validate() error
	MarshalJSON() ([]byte, error)
}

// create validates params (nothing is sent if they are refused), marshals
// them and POSTs them to e. orderID goes into an OutcomeUnknownError.
func create[T, W any, PW decoder[T, W], P createParams](ctx context.Context, c *Client, e endpoint, params P, orderID string, opts []Option, pool *wirePool[W]) (*T, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	body, err := params.MarshalJSON()
	if err != nil {
		return nil, err
	}
	r := e.call(opts)
	r.body, r.orderID = body, orderID
	return fetch[T, W, PW](ctx, c, r, pool)
}

// getByID checks id with validID and GETs e.path + escaped id + "/status".
func getByID[T, W any, PW decoder[T, W]](ctx context.Context, c *Client, e endpoint, validID func(string) error, id string, opts []Option, pool *wirePool[W]) (*T, error) {
	if err := validID(id); err != nil {
		return nil, err
	}
	r := e.call(opts)
	r.path += url.PathEscape(id) + "/status"
	r.id = id
	return fetch[T, W, PW](ctx, c, r, pool)
}

// checkIDStatus reports what makes a response without an id or a status
// unusable as an API answer ("" if nothing).
func checkIDStatus(id, status, noID string) string {
	switch {
	case id == "":
		return noID
	case status == "":
		return "status missing"
	}
	return ""
}
