package cryptopaytest

import (
	"net/http"
	"strings"
)

// Route names one API operation, written as its method and path pattern.
type Route string

// The seven operations of the spec.
const (
	RouteCreatePayment Route = "POST /v1/payment"
	RouteGetPayment    Route = "GET /v1/payment/{id}/status"
	RouteCreatePayout  Route = "POST /v1/payout"
	RouteGetPayout     Route = "GET /v1/payout/{id}/status"
	RouteListPayouts   Route = "GET /v1/payout/list"
	RouteBalance       Route = "GET /v1/balance"
	RouteCurrencies    Route = "GET /v1/currencies"
)

const (
	rCreatePayment = iota
	rGetPayment
	rCreatePayout
	rGetPayout
	rListPayouts
	rBalance
	rCurrencies
	numRoutes
)

var routeInfo = [numRoutes]struct {
	route  Route
	method string
}{
	rCreatePayment: {RouteCreatePayment, http.MethodPost},
	rGetPayment:    {RouteGetPayment, http.MethodGet},
	rCreatePayout:  {RouteCreatePayout, http.MethodPost},
	rGetPayout:     {RouteGetPayout, http.MethodGet},
	rListPayouts:   {RouteListPayouts, http.MethodGet},
	rBalance:       {RouteBalance, http.MethodGet},
	rCurrencies:    {RouteCurrencies, http.MethodGet},
}

// Routes returns the seven routes of the API.
func Routes() []Route {
	out := make([]Route, numRoutes)
	for i := range routeInfo {
		out[i] = routeInfo[i].route
	}
	return out
}

func (r Route) index() int {
	for i := range routeInfo {
		if routeInfo[i].route == r {
			return i
		}
	}
	return -1
}

// matchRoute maps a path to a route index and the {id} it carries; -1 if
// no route has that path.
func matchRoute(path string) (int, string) {
	switch path {
	case "/v1/payment":
		return rCreatePayment, ""
	case "/v1/payout":
		return rCreatePayout, ""
	case "/v1/payout/list":
		return rListPayouts, ""
	case "/v1/balance":
		return rBalance, ""
	case "/v1/currencies":
		return rCurrencies, ""
	}
	if id, ok := idSegment(path, "/v1/payment/"); ok {
		return rGetPayment, id
	}
	if id, ok := idSegment(path, "/v1/payout/"); ok {
		return rGetPayout, id
	}
	return -1, ""
}

func idSegment(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix)
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, "/status")
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}
