package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shopspring/decimal"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

// printJSON writes v as indented JSON. Amounts are decimal.Decimal, whose
// JSON is a quoted exact decimal string (the package's global switch to
// bare numbers is never set), so no reader parses money as a float.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(jsonWriter{w: a.stdout, secrets: a.secrets})
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printRows writes label/value rows as an aligned two-column table, or
// under --output csv as CSV with the header field,value.
func (a *app) printRows(rows [][2]string) error {
	if a.format == outCSV {
		table := make([][]string, len(rows))
		for i, r := range rows {
			table[i] = []string{r[0], r[1]}
		}
		return a.printCSV([]string{"field", "value"}, table)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], a.cell(r[1]))
	}
	return tw.Flush()
}

// printTable writes a header and rows as aligned columns, or under
// --output csv as CSV.
func (a *app) printTable(header []string, rows [][]string) error {
	if a.format == outCSV {
		return a.printCSV(header, rows)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = a.cell(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// printCSV writes a header (as column names: "ORDER ID" is order_id) and
// rows as CSV, each cell through csvCells (--spreadsheet-safe; on a
// terminal, made safe to show).
func (a *app) printCSV(header []string, rows [][]string) error {
	w := csv.NewWriter(a.stdout)
	terminal := a.isTerminal(a.stdout)
	names := make([]string, len(header))
	for i, h := range header {
		names[i] = strings.ReplaceAll(strings.ToLower(h), " ", "_")
	}
	if err := w.Write(csvCells(names, a.csvSafe, terminal, a.secrets)); err != nil {
		return err
	}
	for _, r := range rows {
		if err := w.Write(csvCells(slices.Clone(r), a.csvSafe, terminal, a.secrets)); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}

// printDone writes what a move did to orderID: the line "ORDER_ID: done",
// or under --output json an object with both.
func (a *app) printDone(orderID, done string) error {
	if a.format == outJSON {
		return a.printJSON(struct {
			OrderID string `json:"orderId"`
			Done    string `json:"done"`
		}{orderID, done})
	}
	a.printLine("%s: %s", orderID, done)
	return nil
}

// cell makes a value safe for one table cell: no tabs, line breaks,
// terminal control characters or part of a secret (a value comes from the
// API), "-" for none.
func (a *app) cell(s string) string {
	if s == "" {
		return "-"
	}
	return a.safeText(s)
}

// printLine writes one line of text built from API values to stdout,
// through safeText.
func (a *app) printLine(format string, args ...any) {
	fmt.Fprintln(a.stdout, a.safeText(fmt.Sprintf(format, args...)))
}

// money writes an amount exactly.
func money(d decimal.Decimal) string { return d.String() }

// nullMoney writes an amount that may be absent ("" when absent).
func nullMoney(d decimal.NullDecimal) string {
	if !d.Valid {
		return ""
	}
	return d.Decimal.String()
}

// when writes a time in RFC 3339 UTC ("" for the zero time).
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// paymentClass says what a payment status means for the operator.
func paymentClass(s cryptopay.PaymentStatus) string {
	return statusClass(s.IsTerminal(), s.IsSuccess(), s.NeedsAction())
}

// payoutClass says what a payout status means for the operator.
func payoutClass(s cryptopay.PayoutStatus) string {
	return statusClass(s.IsTerminal(), s.IsSuccess(), s.NeedsAction())
}

func statusClass(terminal, success, action bool) string {
	var parts []string
	switch {
	case success:
		parts = append(parts, "terminal, success")
	case terminal:
		parts = append(parts, "terminal, not a success")
	default:
		parts = append(parts, "in progress")
	}
	if action {
		parts = append(parts, "needs a person")
	}
	return strings.Join(parts, "; ")
}

func paymentRows(p *cryptopay.Payment) [][2]string {
	return [][2]string{
		{"Payment ID", p.ID},
		{"Status", string(p.Status) + " (" + paymentClass(p.Status) + ")"},
		{"Order ID", p.OrderID},
		{"Pay amount", money(p.PayAmount) + " " + p.Currency + " on " + p.Network},
		{"Fee paid by customer", fmt.Sprint(p.PlatformFeeByUser)},
		{"Pay address", p.PayAddress},
		{"QR code URI", p.PayQRCodeURI},
		{"Paid amount", nullMoney(p.PaidAmount)},
		{"Merchant amount", nullMoney(p.MerchantAmount)},
		{"Paid address", p.PaidAddress},
		{"Customer", p.CustomerID + " (" + p.CustomerIP + ")"},
		{"Additional data", p.AdditionalData},
		{"Created", when(p.CreatedAt)},
		{"Updated", when(p.UpdatedAt)},
		{"Expires", when(p.ExpiredAt)},
		{"Webhook URL", p.WebhookURL},
	}
}

func payoutRows(p *cryptopay.Payout) [][2]string {
	return [][2]string{
		{"Payout ID", p.ID},
		{"Status", string(p.Status) + " (" + payoutClass(p.Status) + ")"},
		{"Order ID", p.OrderID},
		{"Amount", money(p.Amount) + " " + p.Currency + " on " + p.Network},
		{"Network fee paid by user", fmt.Sprint(p.NetworkFeeByUser)},
		{"Wallet address", p.WalletAddress},
		{"Paid amount", nullMoney(p.PaidAmount)},
		{"Merchant amount", nullMoney(p.MerchantAmount)},
		{"Customer", p.CustomerID + " (" + p.CustomerIP + ")"},
		{"Additional data", p.AdditionalData},
		{"Created", when(p.CreatedAt)},
		{"Updated", when(p.UpdatedAt)},
		{"Webhook URL", p.WebhookURL},
	}
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:/@+=,", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// csvCells makes a CSV record safe where it goes, in place: with
// spreadsheetSafe, a ' before each cell a spreadsheet would run as a
// formula (= + - @ tab CR first), except a signed exact decimal, which
// stays a number (a negative delta summed to the digit); on a terminal,
// each cell through termSafe with the secrets cut (a file or pipe gets
// the data exact).
func csvCells(rec []string, spreadsheetSafe, terminal bool, secrets []string) []string {
	for i, v := range rec {
		if spreadsheetSafe && v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) && !signedDecimalRe.MatchString(v) {
			v = "'" + v
		}
		if terminal {
			v = termSafe(redactSecrets(v, secrets...))
		}
		rec[i] = v
	}
	return rec
}

// signedDecimalRe matches a signed plain decimal, which a spreadsheet
// reads as a number and never runs.
var signedDecimalRe = regexp.MustCompile(`^[+-][0-9]+(\.[0-9]+)?$`)
