package cryptopaytest

import (
	"time"

	"github.com/shopspring/decimal"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

// payment is the server's record of a payment. Guarded by Server.mu.
type payment struct {
	id                string
	status            cryptopay.PaymentStatus
	amount            decimal.Decimal // requested
	fee               decimal.Decimal // amount * fee%
	payAmount         decimal.Decimal
	payAddress        string
	qrURI             string
	currency, network string
	customerID        string
	customerIP        string
	orderID           string
	additionalData    *string
	feeByUser         bool
	createdAt         time.Time
	updatedAt         time.Time
	expiredAt         time.Time
	webhookURL        string
	paid              decimal.Decimal
	merchant          decimal.Decimal
	paidAddress       string
	everPaid          bool
}

// json builds the wire form; status adds the status-only fields.
func (p *payment) json(status bool, unpaid UnpaidFields) paymentJSON {
	j := paymentJSON{
		PaymentID:         p.id,
		Status:            string(p.status),
		PayAmount:         number(p.payAmount),
		PayAddress:        p.payAddress,
		PayQrCodeURI:      p.qrURI,
		Currency:          p.currency,
		Network:           p.network,
		CustomerID:        p.customerID,
		CustomerIP:        p.customerIP,
		OrderID:           p.orderID,
		AdditionalData:    p.additionalData,
		PlatformFeeByUser: p.feeByUser,
		CreatedAt:         wireTime(p.createdAt),
		UpdatedAt:         wireTime(p.updatedAt),
		ExpiredAt:         wireTime(p.expiredAt),
		WebhookURL:        p.webhookURL,
	}
	if !status {
		return j
	}
	switch {
	case p.everPaid:
		j.PaidAmount = optNumber{p.paid, fieldSet}
		j.MerchantAmount = optNumber{p.merchant, fieldSet}
		j.PaidAddress = optString{p.paidAddress, fieldSet}
	case unpaid == UnpaidNull:
		j.PaidAmount.state, j.MerchantAmount.state, j.PaidAddress.state = fieldNull, fieldNull, fieldNull
	case unpaid == UnpaidZero:
		j.PaidAmount = optNumber{decimal.Zero, fieldSet}
		j.MerchantAmount = optNumber{decimal.Zero, fieldSet}
		j.PaidAddress = optString{"", fieldSet}
	}
	return j
}

func (p *payment) expiryDue(now time.Time) bool {
	return p.status == cryptopay.PaymentWaiting && !now.Before(p.expiredAt)
}

// payout is the server's record of a payout. Guarded by Server.mu.
type payout struct {
	id                string
	status            cryptopay.PayoutStatus
	amount            decimal.Decimal
	walletAddress     string
	feeByUser         bool
	currency, network string
	customerID        string
	customerIP        string
	orderID           string
	additionalData    *string
	webhookURL        string
	createdAt         time.Time
	updatedAt         time.Time
	reserved          decimal.Decimal // taken from the balance: merchantAmount once paid
	paidAmount        decimal.Decimal // what the wallet receives once paid
	paid              bool
}

func (p *payout) json(status bool, unpaid UnpaidFields) payoutJSON {
	j := payoutJSON{
		PayoutID:         p.id,
		Status:           string(p.status),
		Amount:           number(p.amount),
		WalletAddress:    p.walletAddress,
		NetworkFeeByUser: p.feeByUser,
		Currency:         p.currency,
		Network:          p.network,
		CustomerID:       p.customerID,
		CustomerIP:       p.customerIP,
		OrderID:          p.orderID,
		CreatedAt:        wireTime(p.createdAt),
		UpdatedAt:        wireTime(p.updatedAt),
		AdditionalData:   p.additionalData,
		WebhookURL:       p.webhookURL,
	}
	if status {
		j.PaidAmount, j.MerchantAmount = p.statusAmounts(unpaid)
	}
	return j
}

func (p *payout) statusAmounts(unpaid UnpaidFields) (paid, merchant optNumber) {
	switch {
	case p.paid:
		return optNumber{p.paidAmount, fieldSet}, optNumber{p.reserved, fieldSet}
	case unpaid == UnpaidNull:
		return optNumber{state: fieldNull}, optNumber{state: fieldNull}
	case unpaid == UnpaidZero:
		return optNumber{decimal.Zero, fieldSet}, optNumber{decimal.Zero, fieldSet}
	}
	return optNumber{}, optNumber{}
}

func (p *payout) listItem(unpaid UnpaidFields) payoutListItemJSON {
	_, merchant := p.statusAmounts(unpaid)
	return payoutListItemJSON{
		Status:         string(p.status),
		Amount:         number(p.amount),
		MerchantAmount: merchant,
		PaidAddress:    p.walletAddress,
		OrderID:        p.orderID,
		CustomerID:     p.customerID,
		PayCurrency:    nameJSON{p.currency},
		PayNetwork:     nameJSON{p.network},
		CreatedAt:      wireTime(p.createdAt),
		PayoutWallet:   walletJSON{Label: "customer " + p.customerID, Address: p.walletAddress},
	}
}
