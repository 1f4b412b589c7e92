package cryptopay

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go/internal/wire"
)

// Payout is a withdrawal of crypto to a wallet address.
type Payout struct {
	// ID is the payout identifier (payoutId).
	ID string `json:"payoutId"`
	// Status is the payout's current status.
	Status PayoutStatus `json:"status"`
	// Amount is the amount requested.
	Amount decimal.Decimal `json:"amount"`
	// WalletAddress is the address the payout goes to.
	WalletAddress string `json:"walletAddress"`
	// NetworkFeeByUser reports whether the end user bears the network fee.
	NetworkFeeByUser bool `json:"networkFeeByUser"`
	// Currency is the currency key, for example "usdt".
	Currency string `json:"currency"`
	// Network is the network key, for example "tron".
	Network string `json:"network"`
	// CustomerID is the merchant's end-user identifier.
	CustomerID string `json:"customerId"`
	// CustomerIP is the end user's IP address.
	CustomerIP string `json:"customerIp"`
	// OrderID is the merchant's order identifier for the withdrawal.
	OrderID string `json:"orderId"`
	// CreatedAt is the creation time.
	CreatedAt time.Time `json:"createdAt"`
	// UpdatedAt is the last update time.
	UpdatedAt time.Time `json:"updatedAt"`
	// AdditionalData is the merchant's free-form data, if any.
	AdditionalData string `json:"additionalData,omitempty"`
	// WebhookURL is where events for this payout go.
	WebhookURL string `json:"webhookUrl"`
	// PaidAmount is the amount paid out; Valid is false when absent
	// (creation responses never carry it), which differs from zero.
	PaidAmount decimal.NullDecimal `json:"paidAmount"`
	// MerchantAmount is the amount taken from the merchant's balance;
	// Valid as above.
	MerchantAmount decimal.NullDecimal `json:"merchantAmount"`
}

type wirePayout struct {
	ID               string       `json:"payoutId"`
	Status           PayoutStatus `json:"status"`
	Amount           wire.Amount  `json:"amount"`
	WalletAddress    string       `json:"walletAddress"`
	NetworkFeeByUser bool         `json:"networkFeeByUser"`
	Currency         string       `json:"currency"`
	Network          string       `json:"network"`
	CustomerID       string       `json:"customerId"`
	CustomerIP       string       `json:"customerIp"`
	OrderID          string       `json:"orderId"`
	CreatedAt        wire.Time    `json:"createdAt"`
	UpdatedAt        wire.Time    `json:"updatedAt"`
	AdditionalData   string       `json:"additionalData"`
	WebhookURL       string       `json:"webhookUrl"`
	PaidAmount       wire.Amount  `json:"paidAmount"`
	MerchantAmount   wire.Amount  `json:"merchantAmount"`
}

// UnmarshalJSON reads a payout as the API sends it: amounts may be JSON
// numbers or strings; absent status-only amounts stay invalid (not zero).
func (p *Payout) UnmarshalJSON(b []byte) error {
	var w wirePayout
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*p = w.payout()
	return nil
}

// payout converts the wire form (see wirePayment.payment).
func (w *wirePayout) payout() Payout {
	return Payout{
		ID:               w.ID,
		Status:           w.Status,
		Amount:           w.Amount.Decimal,
		WalletAddress:    w.WalletAddress,
		NetworkFeeByUser: w.NetworkFeeByUser,
		Currency:         w.Currency,
		Network:          w.Network,
		CustomerID:       w.CustomerID,
		CustomerIP:       w.CustomerIP,
		OrderID:          w.OrderID,
		CreatedAt:        w.CreatedAt.Time,
		UpdatedAt:        w.UpdatedAt.Time,
		AdditionalData:   w.AdditionalData,
		WebhookURL:       w.WebhookURL,
		PaidAmount:       w.PaidAmount.Null(),
		MerchantAmount:   w.MerchantAmount.Null(),
	}
}

func (p *Payout) check() string { return checkIDStatus(p.ID, string(p.Status), "payoutId missing") }

func (w *wirePayout) check() string { return checkIDStatus(w.ID, string(w.Status), "payoutId missing") }

// CreatePayoutParams are the fields of POST /v1/payout.
type CreatePayoutParams struct {
	// WalletAddress is the destination address; required. The SDK does not
	// check it against the network: a wrong address loses the funds.
	WalletAddress string
	// NetworkFeeByUser: true if the end user bears the network fee.
	NetworkFeeByUser bool
	// Amount is the amount to send; must be greater than 0.
	Amount decimal.Decimal
	// Currency is the currency key, for example "usdt".
	Currency string
	// Network is the network key, for example "tron".
	Network string
	// CustomerID identifies the end user; required.
	CustomerID string
	// CustomerIP is the end user's IP address; required.
	CustomerIP string
	// OrderID identifies the withdrawal; required. Make it unique: it is the
	// only handle for reconciling a payout whose outcome is unknown.
	OrderID string
	// AdditionalData is optional free-form data; empty is not sent.
	AdditionalData string
	// WebhookURL is where events for this payout go; empty is not sent.
	WebhookURL string
}

type wireCreatePayout struct {
	WalletAddress    string      `json:"walletAddress"`
	NetworkFeeByUser bool        `json:"networkFeeByUser"`
	Amount           wire.Number `json:"amount"`
	Currency         string      `json:"currency"`
	Network          string      `json:"network"`
	CustomerID       string      `json:"customerId"`
	CustomerIP       string      `json:"customerIp"`
	OrderID          string      `json:"orderId"`
	AdditionalData   string      `json:"additionalData,omitempty"`
	WebhookURL       string      `json:"webhookUrl,omitempty"`
}

// MarshalJSON writes the request body with the amount as a JSON number.
func (p CreatePayoutParams) MarshalJSON() ([]byte, error) {
	return json.Marshal(wireCreatePayout{
		WalletAddress:    p.WalletAddress,
		NetworkFeeByUser: p.NetworkFeeByUser,
		Amount:           wire.Number(p.Amount),
		Currency:         p.Currency,
		Network:          p.Network,
		CustomerID:       p.CustomerID,
		CustomerIP:       p.CustomerIP,
		OrderID:          p.OrderID,
		AdditionalData:   p.AdditionalData,
		WebhookURL:       p.WebhookURL,
	})
}

// Validate applies the API's documented limits (CustomerID, CustomerIP and
// OrderID not empty) and two money-safety rules: Amount > 0 and a non-empty
// WalletAddress.
func (p CreatePayoutParams) Validate() error {
	if err := positiveAmount(p.Amount); err != nil {
		return err
	}
	return firstMissing(
		field{"WalletAddress", p.WalletAddress},
		field{"CustomerID", p.CustomerID},
		field{"CustomerIP", p.CustomerIP},
		field{"OrderID", p.OrderID},
	)
}

// CreatePayout sends crypto to a wallet.
//
// POST /v1/payout. It is never resent after it may have reached the server:
// if the connection breaks after the request was written, the attempt times
// out, or the server answers 5xx, the error matches ErrOutcomeUnknown (and
// ErrServer for a 5xx) and names the orderId. Resending could pay twice;
// call FindPayoutByOrderID first. Only a request that never left (connection
// refused) is retried.
func (c *Client) CreatePayout(ctx context.Context, params CreatePayoutParams, opts ...RequestOption) (*Payout, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	body, err := params.MarshalJSON()
	if err != nil {
		return nil, err
	}
	w := getWirePayout()
	defer putWirePayout(w)
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/payout", route: "POST /v1/payout", body: body, orderID: params.OrderID, opts: opts}, w); err != nil {
		return nil, err
	}
	p := w.payout()
	return &p, nil
}

// GetPayout reads a payout's current status, including PaidAmount and
// MerchantAmount.
//
// GET /v1/payout/{id}/status. Retried on transient failures; an unknown id
// matches ErrNotFound.
func (c *Client) GetPayout(ctx context.Context, id string, opts ...RequestOption) (*Payout, error) {
	if err := validatePayoutID(id); err != nil {
		return nil, err
	}
	w := getWirePayout()
	defer putWirePayout(w)
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/payout/" + url.PathEscape(id) + "/status", route: "GET /v1/payout/{id}/status", opts: opts}, w); err != nil {
		return nil, err
	}
	p := w.payout()
	return &p, nil
}

// validatePayoutID refuses ids that are empty, overlong, or that could change
// the request's path or query once sent.
func validatePayoutID(id string) error {
	switch {
	case id == "":
		return &ValidationError{Field: "id", Reason: "payout id is empty"}
	case len(id) > 256:
		return &ValidationError{Field: "id", Reason: "payout id is longer than 256 bytes"}
	case id == "." || id == "..":
		return &ValidationError{Field: "id", Reason: "payout id is a path segment"}
	case strings.ContainsFunc(id, func(r rune) bool {
		return r <= ' ' || r == 0x7f || strings.ContainsRune(`/\?#%`, r)
	}):
		return &ValidationError{Field: "id", Reason: "payout id contains a character that is not allowed in an id"}
	}
	return nil
}

// ListPayoutsParams pages through the payout list. Zero values are not sent,
// so the server's defaults apply.
type ListPayoutsParams struct {
	// Limit is the page size; 0 leaves it to the server.
	Limit int
	// Offset is how many items to skip; 0 starts at the beginning.
	Offset int
}

// PayoutPage is one page of the payout list.
type PayoutPage struct {
	// Payouts are the items on this page.
	Payouts []PayoutListItem
	// Count is the total number of payouts the server reports.
	Count int
}

// PayoutListItem is a payout as the list reports it: a different, shorter
// shape than Payout (the spec gives it no payout id).
type PayoutListItem struct {
	// ID is the payout id if the server sends one (payoutId or id); the
	// documented list item has none, so it is usually empty.
	ID string
	// Status is the payout's status.
	Status PayoutStatus
	// Amount is the amount requested.
	Amount decimal.Decimal
	// MerchantAmount is the amount taken from the merchant; Valid is false
	// when absent.
	MerchantAmount decimal.NullDecimal
	// PaidAddress is the address paid to.
	PaidAddress string
	// OrderID is the merchant's order identifier.
	OrderID string
	// CustomerID is the merchant's end-user identifier.
	CustomerID string
	// Currency is payCurrency.name.
	Currency string
	// Network is payNetwork.name.
	Network string
	// CreatedAt is the creation time.
	CreatedAt time.Time
	// WalletLabel and WalletAddress are payoutWallet.label and .address.
	WalletLabel, WalletAddress string
}

type wireName struct {
	Name string `json:"name"`
}

type wirePayoutListItem struct {
	PayoutID       string       `json:"payoutId"`
	ID             string       `json:"id"`
	Status         PayoutStatus `json:"status"`
	Amount         wire.Amount  `json:"amount"`
	MerchantAmount wire.Amount  `json:"merchantAmount"`
	PaidAddress    string       `json:"paidAddress"`
	OrderID        string       `json:"orderId"`
	CustomerID     string       `json:"customerId"`
	PayCurrency    wireName     `json:"payCurrency"`
	PayNetwork     wireName     `json:"payNetwork"`
	CreatedAt      wire.Time    `json:"createdAt"`
	PayoutWallet   struct {
		Label   string `json:"label"`
		Address string `json:"address"`
	} `json:"payoutWallet"`
}

// UnmarshalJSON reads a list item in the API's shape.
func (it *PayoutListItem) UnmarshalJSON(b []byte) error {
	var w wirePayoutListItem
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*it = w.item()
	return nil
}

// item converts the wire form (see wirePayment.payment).
func (w *wirePayoutListItem) item() PayoutListItem {
	id := w.PayoutID
	if id == "" {
		id = w.ID
	}
	return PayoutListItem{
		ID:             id,
		Status:         w.Status,
		Amount:         w.Amount.Decimal,
		MerchantAmount: w.MerchantAmount.Null(),
		PaidAddress:    w.PaidAddress,
		OrderID:        w.OrderID,
		CustomerID:     w.CustomerID,
		Currency:       w.PayCurrency.Name,
		Network:        w.PayNetwork.Name,
		CreatedAt:      w.CreatedAt.Time,
		WalletLabel:    w.PayoutWallet.Label,
		WalletAddress:  w.PayoutWallet.Address,
	}
}

type wirePayoutPage struct {
	Payout []wirePayoutListItem `json:"payout"`
	Count  wire.Amount          `json:"count"`
}

// check refuses a 2xx body that is not a page: neither key present (an
// object of another shape, {}, null), or a positive count with no list.
// Read as an empty page, such a body would make FindPayoutByOrderID report
// "not found" for a payout that exists, and the caller would pay twice.
func (w *wirePayoutPage) check() string {
	switch {
	case w.Payout == nil && !w.Count.Valid:
		return "neither payout nor count present"
	case w.Payout == nil && w.Count.Decimal.IsPositive():
		return "count " + w.Count.Decimal.String() + " without a payout list"
	}
	return ""
}

// ListPayouts reads one page of payouts.
//
// GET /v1/payout/list with limit and offset (omitted when zero). The API
// marks this operation as under development: its paging parameters'
// bounds are not documented.
func (c *Client) ListPayouts(ctx context.Context, params ListPayoutsParams, opts ...RequestOption) (*PayoutPage, error) {
	if params.Limit < 0 {
		return nil, &ValidationError{Field: "Limit", Reason: "must not be negative"}
	}
	if params.Offset < 0 {
		return nil, &ValidationError{Field: "Offset", Reason: "must not be negative"}
	}
	path := "/v1/payout/list"
	if params.Limit > 0 || params.Offset > 0 {
		q := make(url.Values, 2)
		if params.Limit > 0 {
			q.Set("limit", strconv.Itoa(params.Limit))
		}
		if params.Offset > 0 {
			q.Set("offset", strconv.Itoa(params.Offset))
		}
		path += "?" + q.Encode()
	}
	var w wirePayoutPage
	if err := c.do(ctx, request{method: http.MethodGet, path: path, route: "GET /v1/payout/list", opts: opts}, &w); err != nil {
		return nil, err
	}
	items := make([]PayoutListItem, len(w.Payout))
	for i := range w.Payout {
		items[i] = w.Payout[i].item()
	}
	return &PayoutPage{Payouts: items, Count: int(w.Count.Decimal.IntPart())}, nil
}

// defaultPageSize is the page size AllPayouts asks for when none is given.
const defaultPageSize = 100

// AllPayouts iterates over every payout from params.Offset on, fetching
// pages of params.Limit items (100 if zero) lazily as the loop advances.
// An error is yielded once and ends the iteration; breaking out of the loop
// stops fetching. Payouts created while iterating may shift items between
// pages (offset paging), so an item can be seen twice or missed.
//
// The API marks the payout list as under development.
func (c *Client) AllPayouts(ctx context.Context, params ListPayoutsParams, opts ...RequestOption) iter.Seq2[PayoutListItem, error] {
	return func(yield func(PayoutListItem, error) bool) {
		limit := params.Limit
		if limit <= 0 {
			limit = defaultPageSize
		}
		offset := params.Offset
		for {
			page, err := c.ListPayouts(ctx, ListPayoutsParams{Limit: limit, Offset: offset}, opts...)
			if err != nil {
				yield(PayoutListItem{}, err)
				return
			}
			for _, it := range page.Payouts {
				if !yield(it, nil) {
					return
				}
			}
			offset += len(page.Payouts)
			// Stop on an empty page, or once the reported total is reached.
			// A short page is not the end: a server may cap the page size
			// below the limit asked for.
			if len(page.Payouts) == 0 || (page.Count > 0 && offset >= page.Count) {
				return
			}
		}
	}
}

// FindPayoutByOrderID looks a payout up by the orderId it was created with,
// paging through the payout list. It is the way out of ErrOutcomeUnknown:
//
//	p, err := client.CreatePayout(ctx, params)
//	if errors.Is(err, cryptopay.ErrOutcomeUnknown) {
//		item, found, ferr := client.FindPayoutByOrderID(ctx, params.OrderID)
//		// found: the payout exists, do not create it again.
//		// !found and ferr == nil: it was not created; creating it again is safe.
//		// ferr != nil: still unknown; try again later, do not resend.
//	}
//
// found is false with a nil error when the list holds no such order. The
// list may lag behind creation; if in doubt, look again after a short wait.
// If several payouts share the orderId, the first listed is returned.
func (c *Client) FindPayoutByOrderID(ctx context.Context, orderID string, opts ...RequestOption) (item *PayoutListItem, found bool, err error) {
	if orderID == "" {
		return nil, false, &ValidationError{Field: "orderID", Reason: "must not be empty"}
	}
	for it, err := range c.AllPayouts(ctx, ListPayoutsParams{}, opts...) {
		if err != nil {
			return nil, false, err
		}
		if it.OrderID == orderID {
			return &it, true, nil
		}
	}
	return nil, false, nil
}

// reconcilePayout is being built (issue: reconciliation); until then it
// answers "still unknown", which never leads a caller to resend.
func (c *Client) reconcilePayout(ctx context.Context, params ReconcileParams, opts []RequestOption) (*ReconcileResult, error) {
	return &ReconcileResult{Verdict: PayoutStillUnknown, Reason: "not implemented"}, nil
}
