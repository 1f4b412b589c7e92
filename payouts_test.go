package cryptopay

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const payoutBody = `{
 "payoutId": "po_77", "status": "created", "amount": 0.00000001, "walletAddress": "TTmPKqxafRT1oacWi3zcTMKf3Ro9GJx82N",
 "networkFeeByUser": false, "currency": "usdt", "network": "tron", "customerId": "cus_9",
 "customerIp": "198.51.100.4", "orderId": "wd-1", "createdAt": "2026-11-22T10:00:00Z",
 "updatedAt": "2026-11-22T10:00:00Z", "webhookUrl": "https://shop.test/po"}`

func validPayoutParams() CreatePayoutParams {
	return CreatePayoutParams{WalletAddress: "TTmPKqxafRT1oacWi3zcTMKf3Ro9GJx82N", Amount: decimal.NewFromInt(10), Currency: "usdt", Network: "tron",
		CustomerID: "c1", CustomerIP: "203.0.113.1", OrderID: "wd-1"}
}

func TestCreatePayoutRequestAndDecode(t *testing.T) {
	c, mux := setup(t)
	var seen capturedRequest
	mux.HandleFunc("POST /v1/payout", serveJSON(200, payoutBody, &seen, nil))
	p, err := c.CreatePayout(context.Background(), CreatePayoutParams{
		WalletAddress: "TTmPKqxafRT1oacWi3zcTMKf3Ro9GJx82N", Amount: decimal.RequireFromString("1e-6"), Currency: "usdt", Network: "tron",
		CustomerID: "cus_9", CustomerIP: "198.51.100.4", OrderID: "wd-1", WebhookURL: "https://shop.test/po",
	})
	require.NoError(t, err)
	assert.JSONEq(t, `{"walletAddress":"TTmPKqxafRT1oacWi3zcTMKf3Ro9GJx82N","networkFeeByUser":false,"amount":0.000001,"currency":"usdt",
		"network":"tron","customerId":"cus_9","customerIp":"198.51.100.4","orderId":"wd-1",
		"webhookUrl":"https://shop.test/po"}`, string(seen.Body))
	assert.Equal(t, "po_77", p.ID)
	assert.Equal(t, PayoutCreated, p.Status)
	assert.Equal(t, "0.00000001", p.Amount.String())
	assert.Equal(t, "TTmPKqxafRT1oacWi3zcTMKf3Ro9GJx82N", p.WalletAddress)
	assert.Equal(t, "wd-1", p.OrderID)
	assert.Equal(t, "https://shop.test/po", p.WebhookURL)
	assert.Equal(t, 2026, p.UpdatedAt.Year())
	assert.False(t, p.PaidAmount.Valid)
}

func TestPayoutParamsValidate(t *testing.T) {
	bad := "wd-\xff\xfe-42" // JSON would send it as "wd-\ufffd\ufffd-42"
	tests := []struct {
		name   string
		mutate func(*CreatePayoutParams)
		field  string
	}{
		{"zero amount", func(p *CreatePayoutParams) { p.Amount = decimal.Zero }, "Amount"},
		{"no wallet", func(p *CreatePayoutParams) { p.WalletAddress = "" }, "WalletAddress"},
		{"no order id", func(p *CreatePayoutParams) { p.OrderID = "" }, "OrderID"},
		{"no customer id", func(p *CreatePayoutParams) { p.CustomerID = "" }, "CustomerID"},
		{"no customer ip", func(p *CreatePayoutParams) { p.CustomerIP = "" }, "CustomerIP"},
		{"orderId not UTF-8", func(p *CreatePayoutParams) { p.OrderID = bad }, "OrderID"},
		{"wallet not UTF-8", func(p *CreatePayoutParams) { p.WalletAddress = bad }, "WalletAddress"},
		{"currency not UTF-8", func(p *CreatePayoutParams) { p.Currency = bad }, "Currency"},
		{"network not UTF-8", func(p *CreatePayoutParams) { p.Network = bad }, "Network"},
		{"customer id not UTF-8", func(p *CreatePayoutParams) { p.CustomerID = bad }, "CustomerID"},
		{"customer ip not UTF-8", func(p *CreatePayoutParams) { p.CustomerIP = bad }, "CustomerIP"},
		{"additional data not UTF-8", func(p *CreatePayoutParams) { p.AdditionalData = bad }, "AdditionalData"},
		{"webhook url not UTF-8", func(p *CreatePayoutParams) { p.WebhookURL = "https://shop.test/h?o=" + bad }, "WebhookURL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mux := setup(t)
			var hits atomic.Int32
			mux.HandleFunc("/", serveJSON(200, payoutBody, nil, &hits))
			p := validPayoutParams()
			tt.mutate(&p)
			_, err := c.CreatePayout(context.Background(), p)
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			assert.ErrorIs(t, err, ErrInvalidParams)
			assert.Equal(t, tt.field, ve.Field)
			assert.Zero(t, hits.Load(), "nothing may be sent")
		})
	}
}

// TestGetPayoutEscapesID: every id is sent path-escaped inside its one
// segment; only what cannot travel in a segment is refused.
func TestGetPayoutEscapesID(t *testing.T) {
	tests := []struct{ id, path string }{
		{"po_ü+1", "/v1/payout/po_%C3%BC+1/status"},
		{"consectetur culpa eu", "/v1/payout/consectetur%20culpa%20eu/status"}, // a schema-valid mock's id
		{"../balance", "/v1/payout/..%2Fbalance/status"},
		{"x?limit=1", "/v1/payout/x%3Flimit=1/status"},
		{"a#b", "/v1/payout/a%23b/status"},
		{"%2e%2e", "/v1/payout/%252e%252e/status"},
		{"...", "/v1/payout/.../status"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			c, mux := setup(t)
			var seen capturedRequest
			var gotID string
			mux.HandleFunc("GET /v1/payout/{id}/status", func(w http.ResponseWriter, r *http.Request) {
				gotID = r.PathValue("id")
				serveJSON(200, `{"payoutId":`+strconv.Quote(gotID)+`,"status":"paid","amount":"5","paidAmount":5,"merchantAmount":"5.1"}`, &seen, nil)(w, r)
			})
			p, err := c.GetPayout(context.Background(), tt.id)
			require.NoError(t, err)
			assert.Equal(t, tt.path, seen.Path)
			assert.Equal(t, tt.id, gotID, "the server reads back the id as one segment")
			assert.Equal(t, tt.id, p.ID)
			assert.Equal(t, PayoutPaid, p.Status)
			assert.Equal(t, "5.1", p.MerchantAmount.Decimal.String())
		})
	}
}

func TestGetPayoutRefusesUntravellableIDs(t *testing.T) {
	c, mux := setup(t)
	var hits atomic.Int32
	mux.HandleFunc("/", serveJSON(200, strings.Replace(payoutBody, `"po_77"`, `"`+strings.Repeat("a", 256)+`"`, 1), nil, &hits))
	for id, reason := range map[string]string{
		"":                       "empty",
		".":                      "path step",
		"..":                     "path step",
		"a\nb":                   "control character",
		"a\x00b":                 "control character",
		"a\x7fb":                 "control character",
		"a\u0085b":               "control character",
		strings.Repeat("a", 257): "longer than 256",
	} {
		_, err := c.GetPayout(context.Background(), id)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, "%q", id)
		assert.Contains(t, ve.Reason, reason, "%q", id)
	}
	assert.Zero(t, hits.Load(), "the refused ids sent nothing")
	_, err := c.GetPayout(context.Background(), strings.Repeat("a", 256))
	require.NoError(t, err, "256 bytes travel")
	assert.Equal(t, int32(1), hits.Load())
}

func TestListPayoutsQueryAndDecode(t *testing.T) {
	item := `{"status":"paid","amount":"12.5","merchantAmount":12.6,"paidAddress":"T1","orderId":"o1",
		"customerId":"c1","payCurrency":{"name":"usdt"},"payNetwork":{"name":"tron"},
		"createdAt":"2026-11-22T10:00:00Z","payoutWallet":{"label":"main","address":"T9"}}`
	tests := []struct {
		name   string
		params ListPayoutsParams
		query  string
	}{
		{"zero values not sent", ListPayoutsParams{}, ""},
		{"limit only", ListPayoutsParams{Limit: 10}, "limit=10"},
		{"both", ListPayoutsParams{Limit: 10, Offset: 30}, "limit=10&offset=30"},
		{"offset only", ListPayoutsParams{Offset: 5}, "offset=5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mux := setup(t)
			var seen capturedRequest
			mux.HandleFunc("GET /v1/payout/list", serveJSON(200, `{"payout":[`+item+`],"count":41}`, &seen, nil))
			page, err := c.ListPayouts(context.Background(), tt.params)
			require.NoError(t, err)
			assert.Equal(t, "/v1/payout/list", seen.Path)
			assert.Equal(t, tt.query, seen.RawQuery)
			assert.Equal(t, 41, page.Count)
			require.Len(t, page.Payouts, 1)
			it := page.Payouts[0]
			assert.Equal(t, PayoutPaid, it.Status)
			assert.Equal(t, "12.5", it.Amount.String())
			assert.Equal(t, "12.6", it.MerchantAmount.Decimal.String())
			assert.Equal(t, "usdt", it.Currency)
			assert.Equal(t, "tron", it.Network)
			assert.Equal(t, "main", it.WalletLabel)
			assert.Equal(t, "T9", it.WalletAddress)
			assert.Equal(t, "T1", it.PaidAddress)
			assert.Equal(t, "o1", it.OrderID)
			assert.Equal(t, "c1", it.CustomerID)
			assert.Equal(t, 2026, it.CreatedAt.Year())
		})
	}
}

// TestListPayoutsRefusesBadCounts: a count that is not a whole number of
// payouts cannot be evidence of anything.
func TestListPayoutsRefusesBadCounts(t *testing.T) {
	for _, count := range []string{`-5`, `1.5`, `1e30`, `"many"`, `2147483648`} {
		t.Run(count, func(t *testing.T) {
			c, mux := setup(t)
			mux.HandleFunc("GET /v1/payout/list", serveJSON(200, `{"payout":[],"count":`+count+`}`, nil, nil))
			_, err := c.ListPayouts(context.Background(), ListPayoutsParams{})
			assert.ErrorIs(t, err, ErrUnexpectedResponse)
		})
	}
	c, mux := setup(t)
	mux.HandleFunc("GET /v1/payout/list", serveJSON(200, `{"payout":[],"count":"2147483647"}`, nil, nil))
	page, err := c.ListPayouts(context.Background(), ListPayoutsParams{})
	require.NoError(t, err)
	assert.Equal(t, 2147483647, page.Count)
}

func TestListPayoutsEmptyPageNotNil(t *testing.T) {
	c, mux := setup(t)
	mux.HandleFunc("GET /v1/payout/list", serveJSON(200, `{"count":0}`, nil, nil))
	page, err := c.ListPayouts(context.Background(), ListPayoutsParams{})
	require.NoError(t, err)
	assert.NotNil(t, page.Payouts)
}

// listServer serves total items (orderId "o<i>", no createdAt) with
// limit/offset paging, capping a page at maxPage, and failing with the
// status fail[offset] where given. It returns the queries it saw.
func listServer(t *testing.T, mux *http.ServeMux, total, maxPage int, fail map[int]int) func() []string {
	t.Helper()
	var mu sync.Mutex
	var queries []string
	mux.HandleFunc("GET /v1/payout/list", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.RawQuery)
		mu.Unlock()
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
		if status, ok := fail[offset]; ok {
			serveJSON(status, `{"code":"boom","message":"list failed"}`, nil, nil)(w, r)
			return
		}
		if limit == 0 || limit > maxPage {
			limit = maxPage
		}
		var items []string
		for i := offset; i < total && i < offset+limit; i++ {
			items = append(items, fmt.Sprintf(`{"status":"paid","amount":"%d.5","orderId":"o%d","payCurrency":{"name":"usdt"}}`, i, i))
		}
		serveJSON(200, fmt.Sprintf(`{"payout":[%s],"count":%d}`, strings.Join(items, ","), total), nil, nil)(w, r)
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), queries...)
	}
}

func TestAllPayouts(t *testing.T) {
	tests := []struct {
		name           string
		total, maxPage int
		params         ListPayoutsParams
		wantItems      int
		wantQueries    []string
	}{
		{"empty", 0, 100, ListPayoutsParams{}, 0, []string{"limit=100"}},
		{"one page", 3, 100, ListPayoutsParams{}, 3, []string{"limit=100"}},
		{"exact pages", 4, 100, ListPayoutsParams{Limit: 2}, 4, []string{"limit=2", "limit=2&offset=2"}},
		{"server caps page below limit", 5, 2, ListPayoutsParams{Limit: 10}, 5, []string{"limit=10", "limit=10&offset=2", "limit=10&offset=4"}},
		{"start at offset", 5, 100, ListPayoutsParams{Limit: 2, Offset: 3}, 2, []string{"limit=2&offset=3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mux := setup(t)
			queries := listServer(t, mux, tt.total, tt.maxPage, nil)
			var got []string
			for it, err := range c.AllPayouts(context.Background(), tt.params) {
				require.NoError(t, err)
				got = append(got, it.OrderID)
			}
			assert.Len(t, got, tt.wantItems)
			for i, id := range got {
				assert.Equal(t, fmt.Sprintf("o%d", i+tt.params.Offset), id)
			}
			assert.Equal(t, tt.wantQueries, queries())
		})
	}
}

func TestAllPayoutsBreakStopsFetching(t *testing.T) {
	c, mux := setup(t)
	queries := listServer(t, mux, 50, 10, nil)
	n := 0
	for _, err := range c.AllPayouts(context.Background(), ListPayoutsParams{Limit: 10}) {
		require.NoError(t, err)
		n++
		if n == 12 {
			break
		}
	}
	assert.Len(t, queries(), 2, "only the pages the loop reached")
}

func TestAllPayoutsErrorYieldedOnce(t *testing.T) {
	c, mux := setup(t)
	listServer(t, mux, 50, 10, map[int]int{20: 404})
	var items, errs int
	for _, err := range c.AllPayouts(context.Background(), ListPayoutsParams{Limit: 10}) {
		if err != nil {
			errs++
			assert.ErrorIs(t, err, ErrNotFound)
			continue
		}
		items++
	}
	assert.Equal(t, 20, items)
	assert.Equal(t, 1, errs)
}

// TestAllPayoutsListEndsBeforeCount: an empty page before the count is
// reached is an error, not the end of the list.
func TestAllPayoutsListEndsBeforeCount(t *testing.T) {
	c, mux := setup(t)
	mux.HandleFunc("GET /v1/payout/list", func(w http.ResponseWriter, r *http.Request) {
		body := `{"payout":[],"count":30}`
		if r.URL.Query().Get("offset") == "" {
			body = `{"payout":[{"orderId":"a"},{"orderId":"b"}],"count":30}`
		}
		serveJSON(200, body, nil, nil)(w, r)
	})
	var items int
	var last error
	for _, err := range c.AllPayouts(context.Background(), ListPayoutsParams{}) {
		if err != nil {
			last = err
			continue
		}
		items++
	}
	assert.Equal(t, 2, items)
	assert.ErrorIs(t, last, ErrUnexpectedResponse)
}

func TestReconcilePayoutWholeList(t *testing.T) {
	c, mux := setup(t)
	listServer(t, mux, 250, 100, nil)
	it, found, err := findPayout(c, context.Background(), "o234")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, "234.5", it.Amount.String())

	it, found, err = findPayout(c, context.Background(), "missing")
	require.NoError(t, err, "not found is an answer, not an error")
	assert.False(t, found)
	assert.Nil(t, it)
}

func TestReconcilePayoutWholeListError(t *testing.T) {
	c, mux := setup(t)
	listServer(t, mux, 250, 100, map[int]int{100: 500})
	_, found, err := findPayout(c, context.Background(), "o120")
	assert.False(t, found)
	assert.ErrorIs(t, err, ErrServer, "an error is not 'not found': the outcome stays unknown")
}

// TestReconcilePayoutWholeListRefusesInvalidUTF8: JSON would turn the invalid
// bytes into U+FFFD, so the server's orderId would never match and the
// search would say "not found" for a payout that exists.
func TestReconcilePayoutWholeListRefusesInvalidUTF8(t *testing.T) {
	c, mux := setup(t)
	var hits atomic.Int32
	mux.HandleFunc("/", serveJSON(200, `{"payout":[{"orderId":"wd-\ufffd\ufffd-42"}],"count":1}`, nil, &hits))
	_, found, err := findPayout(c, context.Background(), "wd-\xff\xfe-42")
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "OrderID", ve.Field)
	assert.False(t, found)
	assert.Zero(t, hits.Load())
}

// TestPayoutListItemJSON: the list item's nested wire shape flattens into
// PayoutListItem, and an id is taken from payoutId or id.
func TestPayoutListItemJSON(t *testing.T) {
	var it PayoutListItem
	require.NoError(t, json.Unmarshal([]byte(`{"id":"x1","payCurrency":{"name":"eth"},"payoutWallet":{"label":"l","address":"a"}}`), &it))
	assert.Equal(t, PayoutListItem{ID: "x1", Currency: "eth", WalletLabel: "l", WalletAddress: "a"}, it)
	require.NoError(t, json.Unmarshal([]byte(`{"payoutId":"p1","id":"x1"}`), &it))
	assert.Equal(t, "p1", it.ID)
}

// TestWirePayoutHasPayoutsFields: as TestWirePaymentHasPaymentsFields, for
// payouts.
func TestWirePayoutHasPayoutsFields(t *testing.T) {
	assertWireMirrors[Payout, wirePayout](t, `{"payoutId":"po_1","status":"paid","amount":"1.5","walletAddress":"a",`+
		`"networkFeeByUser":true,"currency":"usdt","network":"tron","customerId":"c","customerIp":"i","orderId":"o",`+
		`"createdAt":"2026-01-02T03:04:05Z","updatedAt":"2026-01-02T03:04:06Z","additionalData":"d","webhookUrl":"w",`+
		`"paidAmount":1,"merchantAmount":2}`)
}
