package cryptopaytest

import (
	"crypto/subtle"
	"net/http"
)

// serveRoute answers a request for real: authentication, then the route.
func (s *Server) serveRoute(w http.ResponseWriter, r *http.Request, idx int, id string, body []byte) {
	key := r.Header.Get("X-Api-Key")
	if key == "" {
		writeError(w, http.StatusUnauthorized, codeUnauthorized, "missing x-api-key header")
		return
	}
	if subtle.ConstantTimeCompare([]byte(key), []byte(s.APIKey)) != 1 {
		writeError(w, http.StatusUnauthorized, codeUnauthorized, "invalid API key")
		return
	}
	if r.Method == http.MethodPost {
		if rerr := checkJSONContentType(r); rerr != nil {
			writeRequestError(w, rerr)
			return
		}
	}
	switch idx {
	case rCreatePayment:
		s.createPayment(w, body)
	case rGetPayment:
		s.getPayment(w, id)
	case rCreatePayout:
		s.createPayout(w, body)
	case rGetPayout:
		s.getPayout(w, id)
	case rListPayouts:
		s.listPayouts(w, r)
	case rBalance:
		s.getBalances(w)
	case rCurrencies:
		s.getCurrencies(w)
	}
}

// getCurrencies handles GET /v1/currencies.
func (s *Server) getCurrencies(w http.ResponseWriter) {
	out := make([]currencyJSON, 0, len(s.currencies))
	for _, c := range s.currencies { // immutable after start
		out = append(out, currencyJSON(c))
	}
	writeJSON(w, http.StatusOK, out)
}
