package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

// listItem is a payout list item as the CLI writes it: amounts as exact
// decimal strings, times in RFC 3339.
type listItem struct {
	PayoutID       string  `json:"payoutId,omitempty"`
	Status         string  `json:"status"`
	Amount         string  `json:"amount"`
	MerchantAmount *string `json:"merchantAmount"`
	Currency       string  `json:"currency"`
	Network        string  `json:"network"`
	OrderID        string  `json:"orderId"`
	CustomerID     string  `json:"customerId"`
	PaidAddress    string  `json:"paidAddress"`
	WalletLabel    string  `json:"walletLabel"`
	WalletAddress  string  `json:"walletAddress"`
	CreatedAt      string  `json:"createdAt"`
}

func newListItem(it cryptopay.PayoutListItem) listItem {
	out := listItem{
		PayoutID: it.ID, Status: string(it.Status), Amount: money(it.Amount), Currency: it.Currency, Network: it.Network,
		OrderID: it.OrderID, CustomerID: it.CustomerID, PaidAddress: it.PaidAddress,
		WalletLabel: it.WalletLabel, WalletAddress: it.WalletAddress, CreatedAt: when(it.CreatedAt),
	}
	if it.MerchantAmount.Valid {
		s := it.MerchantAmount.Decimal.String()
		out.MerchantAmount = &s
	}
	return out
}

// csvHeader names the CSV columns, in order.
var csvHeader = []string{"payout_id", "status", "amount", "merchant_amount", "currency", "network", "order_id",
	"customer_id", "paid_address", "wallet_label", "wallet_address", "created_at"}

func (it listItem) csvRecord() []string {
	merchant := ""
	if it.MerchantAmount != nil {
		merchant = *it.MerchantAmount
	}
	return []string{it.PayoutID, it.Status, it.Amount, merchant, it.Currency, it.Network, it.OrderID,
		it.CustomerID, it.PaidAddress, it.WalletLabel, it.WalletAddress, it.CreatedAt}
}

// exportWriter writes items in one format.
type exportWriter interface {
	write(listItem) error
	flush() error
}

type csvExport struct {
	w        *csv.Writer
	safe     bool
	terminal bool     // stdout is a terminal: cells go through termSafe
	secrets  []string // redacted from cells on a terminal (see redactSecrets)
}

func (e *csvExport) write(it listItem) error {
	return e.w.Write(csvCells(it.csvRecord(), e.safe, e.terminal, e.secrets))
}
func (e *csvExport) flush() error { e.w.Flush(); return e.w.Error() }

type jsonlExport struct {
	bw  *bufio.Writer
	enc *json.Encoder
}

func (e *jsonlExport) write(it listItem) error { return e.enc.Encode(it) }
func (e *jsonlExport) flush() error            { return e.bw.Flush() }

func (a *app) payoutExport(args []string) error {
	fs := a.newFlagSet(command{"payout export", "", "Write every payout in the list to stdout, streaming, as CSV (with a header) or JSON\n" +
		"lines (--output csv or jsonl). A progress bar goes to stderr when stderr is a terminal.\n" +
		"On an error the output is incomplete and the exit code is 3."})
	a.writes(fs, outCSV, outJSONL)
	pageSize := a.pageSize(fs)
	if _, err := a.parse(fs, args, 0, 0); err != nil {
		return err
	}
	if *pageSize <= 0 {
		return usageErr("payout export: --page-size must be positive")
	}
	c, err := a.client() // first: it reads the key the writers redact
	if err != nil {
		return err
	}
	var out exportWriter
	switch a.format {
	case outCSV:
		w := csv.NewWriter(a.stdout)
		if err := w.Write(csvHeader); err != nil {
			return err
		}
		out = &csvExport{w: w, safe: a.csvSafe, terminal: a.isTerminal(a.stdout), secrets: a.secrets}
	case outJSONL:
		bw := bufio.NewWriterSize(a.stdout, 64<<10)
		jw := jsonWriter{w: bw}
		if a.isTerminal(a.stdout) {
			jw.secrets = a.secrets // a file or pipe gets the data exact
		}
		out = &jsonlExport{bw: bw, enc: json.NewEncoder(jw)}
	}
	bar := a.exportProgress(c)
	n := 0
	for it, err := range c.AllPayouts(a.ctx, cryptopay.ListPayoutsParams{Limit: *pageSize}) {
		if err != nil {
			_ = out.flush()
			bar.done()
			return fmt.Errorf("payout export: stopped after %d payouts, the output is incomplete: %w", n, err)
		}
		if err := out.write(newListItem(it)); err != nil {
			return fmt.Errorf("payout export: writing: %w", err)
		}
		n++
		if n%*pageSize == 0 { // a page is out: let a pipe's reader have it now
			if err := out.flush(); err != nil {
				return fmt.Errorf("payout export: writing: %w", err)
			}
		}
		bar.set(n)
	}
	bar.done()
	return out.flush()
}
