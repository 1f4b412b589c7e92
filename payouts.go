package cryptopay

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go/address"
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

// wirePayout is a payout as read from the wire: Payout's fields, flat (see
// wirePayment), with the amounts and times read by lenient decoders.
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
	AdditionalData   string       `json:"additionalData,omitempty"`
	WebhookURL       string       `json:"webhookUrl"`
	PaidAmount       wire.Amount  `json:"paidAmount"`
	MerchantAmount   wire.Amount  `json:"merchantAmount"`
}

// payoutPool reuses the wire form of a payout (see wirePool).
var payoutPool wirePool[wirePayout]

// UnmarshalJSON reads a payout as the API sends it: amounts may be JSON
// numbers or strings; absent status-only amounts stay invalid (not zero).
func (p *Payout) UnmarshalJSON(b []byte) error { return decodeVia[Payout, wirePayout](b, p) }

// to converts the wire form (see wirePayment.to).
func (w *wirePayout) to(p *Payout) {
	*p = Payout{
		ID: w.ID, Status: w.Status, Amount: w.Amount.Decimal, WalletAddress: w.WalletAddress, NetworkFeeByUser: w.NetworkFeeByUser,
		Currency: w.Currency, Network: w.Network, CustomerID: w.CustomerID, CustomerIP: w.CustomerIP, OrderID: w.OrderID,
		CreatedAt: w.CreatedAt.Time, UpdatedAt: w.UpdatedAt.Time, AdditionalData: w.AdditionalData, WebhookURL: w.WebhookURL,
		PaidAmount: w.PaidAmount.Null(), MerchantAmount: w.MerchantAmount.Null(),
	}
}

func (p *Payout) check() string { return checkIDStatus(p.ID, string(p.Status), payoutIDMissing) }

// payoutIDMissing is why an answer without a payoutId is refused.
const payoutIDMissing = "payoutId missing"

// answerOrderID is the orderId a create's answer was made for.
func (w *wirePayout) answerOrderID() string { return w.OrderID }

// answers reports whether w is the payout id names.
func (w *wirePayout) answers(id string) bool { return w.ID == id }

func (w *wirePayout) check() string {
	return cmp.Or(checkIDStatus(w.ID, string(w.Status), payoutIDMissing), requiredAmount("amount", w.Amount))
}

// CreatePayoutParams are the fields of POST /v1/payout. The struct tags
// give each field's JSON name and the rules Validate applies.
type CreatePayoutParams struct {
	// WalletAddress is the destination address; required. It is checked
	// offline for Network (package address: checksum, version, the right
	// network) and may contain no white space or invisible character.
	// A network the checks do not know is not checked, and no check knows
	// whether the address's owner can use the funds: a wrong address loses
	// them.
	WalletAddress string `json:"walletAddress" cryptopay:"required,address"`
	// NetworkFeeByUser: true if the end user bears the network fee.
	NetworkFeeByUser bool `json:"networkFeeByUser"`
	// Amount is the amount to send; must be greater than 0.
	Amount decimal.Decimal `json:"-"`
	// Currency is the currency key, for example "usdt"; required, in
	// canonical form (lower case, no spaces: "USDT" is refused).
	Currency string `json:"currency" cryptopay:"required,key"`
	// Network is the network key, for example "tron"; required, in
	// canonical form. It picks WalletAddress's check.
	Network string `json:"network" cryptopay:"required,key"`
	// CustomerID identifies the end user; required, an identifier of at
	// most 128 bytes (see OrderID).
	CustomerID string `json:"customerId" cryptopay:"required,id=128"`
	// CustomerIP is the end user's IP address; required, at most 64
	// bytes, the same character rules as OrderID.
	CustomerIP string `json:"customerIp" cryptopay:"required,id=64"`
	// OrderID identifies the withdrawal; required. Make it unique: it is the
	// only handle for reconciling a payout whose outcome is unknown. At
	// most 128 bytes, with no leading or trailing white space and no
	// control, invisible or bidi character: a server that trims or
	// rewrites it would store another orderId.
	OrderID string `json:"orderId" cryptopay:"required,id=128"`
	// AdditionalData is optional free-form data, at most 64 KiB; empty is
	// not sent.
	AdditionalData string `json:"additionalData,omitempty" cryptopay:"max=65536"`
	// WebhookURL is where events for this payout go; empty is not sent.
	WebhookURL string `json:"webhookUrl,omitempty"`
}

var payoutParamRules = paramRules(reflect.TypeFor[CreatePayoutParams]())

// Validate checks p as CreatePayout does before anything is sent, with
// the built-in address checks (see ValidateWith for others): Amount > 0;
// every string valid UTF-8; WalletAddress, Currency, Network, CustomerID,
// CustomerIP and OrderID not empty; OrderID, CustomerID and CustomerIP
// identifiers within their length (see the fields); Currency and Network
// canonical keys; AdditionalData at most 64 KiB; WalletAddress valid for
// Network. A refusal is a *ValidationError naming the Go field.
func (p CreatePayoutParams) Validate() error { return p.ValidateWith(address.Checker{}) }

// validateFields is Validate without the network's address check.
func (p CreatePayoutParams) validateFields() error {
	return checkParams(reflect.ValueOf(&p).Elem(), payoutParamRules, p.Amount, p.Currency, p.Network)
}

// ValidateWith is Validate with the wallet address checked by c instead
// of the built-in checks (a zero address.Checker is the built-ins, which
// is what Validate uses). Use it where payouts are checked outside
// CreatePayout with the Checker given to WithAddressChecker.
func (p CreatePayoutParams) ValidateWith(c address.Checker) error {
	if err := p.validateFields(); err != nil {
		return err
	}
	if err := c.Check(p.Network, p.WalletAddress); err != nil {
		reason := err.Error()
		if ae, ok := errors.AsType[*address.Error](err); ok {
			reason = ae.Reason
		}
		return &ValidationError{Field: "WalletAddress", Reason: "is not a valid " + strconv.Quote(p.Network) + " address: " + reason}
	}
	return nil
}

// payoutRequest is a payout's params with the Checker its address is
// checked by: create validates it with Validate like any params.
type payoutRequest struct {
	CreatePayoutParams
	addresses address.Checker
}

// Validate is ValidateWith the request's Checker.
func (r payoutRequest) Validate() error { return r.ValidateWith(r.addresses) }

// MarshalJSON writes the request body, the amount first as a JSON number.
func (p CreatePayoutParams) MarshalJSON() ([]byte, error) {
	type fields CreatePayoutParams // without this method
	return marshalWithAmount(p.Amount, (*fields)(&p))
}

// GetPayout reads a payout's current status, including PaidAmount and
// MerchantAmount.
//
// GET /v1/payout/{id}/status. The id is sent path-escaped, so any id the
// server issued works (spaces included); only an empty id, "." or "..",
// control characters and ids over 256 bytes are refused. Retried on
// transient failures; an unknown id matches ErrNotFound.
func (c *Client) GetPayout(ctx context.Context, id string, opts ...Option) (*Payout, error) {
	return getByID[Payout](ctx, c, getPayout, validatePayoutID, id, opts, &payoutPool)
}

// CreatePayout sends crypto to a wallet.
//
// POST /v1/payout. It is never resent after it may have reached the server:
// if the connection breaks after the request was written, the attempt times
// out, or the server answers anything but 2xx or a 4xx other than 408 (a
// 3xx, 1xx, 408, 5xx), the error matches ErrOutcomeUnknown (and ErrServer
// for a 5xx) and names the orderId. Only a 4xx other than 408 means the
// payout was refused. Resending could pay twice;
// call ReconcilePayout first. Only a request that never left (connection
// refused) is retried.
func (c *Client) CreatePayout(ctx context.Context, params CreatePayoutParams, opts ...Option) (*Payout, error) {
	return create[Payout](ctx, c, createPayout, payoutRequest{params, c.cfg.addresses}, params.OrderID, opts, &payoutPool)
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
	return decodeVia[PayoutListItem, wirePayoutListItem](b, it)
}

// to converts the wire form, whose nested objects the public item
// flattens.
func (w *wirePayoutListItem) to(it *PayoutListItem) {
	id := w.PayoutID
	if id == "" {
		id = w.ID
	}
	*it = PayoutListItem{
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

// payoutPagePool reuses the wire form of a payout page (see wirePool).
var payoutPagePool wirePool[wirePayoutPage]

// check refuses a 2xx body that is not a page: neither key present (an
// object of another shape, {}, null), a positive count with no list, or a
// count that is not a whole number from 0 to math.MaxInt32. Read as an
// empty page, such a body would make a payout search report "not found"
// for a payout that exists, and the caller would pay twice.
func (w *wirePayoutPage) check() string {
	n := w.Count.Decimal
	switch {
	case w.Payout == nil && !w.Count.Valid:
		return "neither payout nor count present"
	case w.Payout == nil && n.IsPositive():
		return "count " + n.String() + " without a payout list"
	case !n.IsInteger() || n.IsNegative() || n.GreaterThan(maxPayoutCount):
		return "count " + n.String() + " is not a whole number of payouts"
	}
	return ""
}

var maxPayoutCount = decimal.NewFromInt(math.MaxInt32)

func (w *wirePayoutPage) to(p *PayoutPage) {
	p.Payouts = make([]PayoutListItem, len(w.Payout))
	for i := range w.Payout {
		w.Payout[i].to(&p.Payouts[i])
	}
	p.Count = int(w.Count.Decimal.IntPart())
}

// ListPayouts reads one page of payouts.
//
// GET /v1/payout/list with limit and offset (omitted when zero). The API
// marks this operation as under development: its paging parameters'
// bounds are not documented. A count that is not a whole number from 0 to
// math.MaxInt32 is refused (ErrUnexpectedResponse).
func (c *Client) ListPayouts(ctx context.Context, params ListPayoutsParams, opts ...Option) (*PayoutPage, error) {
	if params.Limit < 0 {
		return nil, &ValidationError{Field: "Limit", Reason: "must not be negative"}
	}
	if params.Offset < 0 {
		return nil, &ValidationError{Field: "Offset", Reason: "must not be negative"}
	}
	r := listPayouts.call(opts)
	if params.Limit > 0 || params.Offset > 0 {
		q := make(url.Values, 2)
		if params.Limit > 0 {
			q.Set("limit", strconv.Itoa(params.Limit))
		}
		if params.Offset > 0 {
			q.Set("offset", strconv.Itoa(params.Offset))
		}
		r.path += "?" + q.Encode()
	}
	return fetch[PayoutPage](ctx, c, r, &payoutPagePool)
}

// defaultPageSize is the page size AllPayouts asks for when none is given.
const defaultPageSize = 100

// AllPayouts iterates over every payout from params.Offset on, fetching
// pages of params.Limit items (100 if zero) lazily as the loop advances.
// An error is yielded once and ends the iteration (an empty page before the
// count is reached is one: ErrUnexpectedResponse); breaking out of the loop
// stops fetching. Payouts created while iterating may shift items between
// pages (offset paging), so an item can be seen twice or missed.
//
// The API marks the payout list as under development.
func (c *Client) AllPayouts(ctx context.Context, params ListPayoutsParams, opts ...Option) iter.Seq2[PayoutListItem, error] {
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
			if len(page.Payouts) == 0 && offset < page.Count {
				yield(PayoutListItem{}, &ResponseError{StatusCode: http.StatusOK, Method: http.MethodGet, Path: listPayouts.path,
					Reason: "the list ends at offset " + strconv.Itoa(offset) + " before its count " + strconv.Itoa(page.Count)})
				return
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
