package main

import (
	"bufio"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// batchColumns are the CSV columns of payout batch: CreatePayoutParams'
// wire names. Required are those the SDK's validation requires.
var batchColumns = []struct {
	name     string
	field    string // the Go field, as a ValidationError names it
	required bool
}{
	{"orderId", "OrderID", true},
	{"walletAddress", "WalletAddress", true},
	{"amount", "Amount", true},
	{"currency", "Currency", false},
	{"network", "Network", false},
	{"customerId", "CustomerID", true},
	{"customerIp", "CustomerIP", true},
	{"networkFeeByUser", "NetworkFeeByUser", false},
	{"additionalData", "AdditionalData", false},
	{"webhookUrl", "WebhookURL", false},
}

// columnOfField names the CSV column of a CreatePayoutParams field.
func columnOfField(field string) string {
	for _, c := range batchColumns {
		if c.field == field {
			return c.name
		}
	}
	return field
}

// fieldOfColumn names the CreatePayoutParams field of a CSV column ("" if
// none).
func fieldOfColumn(name string) string {
	for _, c := range batchColumns {
		if c.name == name {
			return c.field
		}
	}
	return ""
}

// maxBadRows caps the bad rows one run reports.
const maxBadRows = 20

// enqueueChunk is how many intents go to one EnqueueMany (all in one
// transaction); the progress bar moves per chunk.
const enqueueChunk = 1000

// batchRow is one payout of the file and the line it starts on.
type batchRow struct {
	line int
	p    cryptopay.CreatePayoutParams
}

// rowError is a bad cell or row: "line 17, column amount: not a decimal".
type rowError struct {
	line   int
	column string
	msg    string
}

func (e *rowError) Error() string {
	if e.column == "" {
		return fmt.Sprintf("line %d: %s", e.line, e.msg)
	}
	return fmt.Sprintf("line %d, column %s: %s", e.line, e.column, e.msg)
}

// readBatch reads the CSV: a header of column names, then one payout per
// row. It returns every row, or up to maxBadRows errors.
func readBatch(r io.Reader) ([]batchRow, []error) {
	cr := csv.NewReader(bufio.NewReaderSize(r, 64<<10))
	col, err := readHeader(cr)
	if err != nil {
		return nil, []error{err}
	}
	var rows []batchRow
	var errs []error
	first := map[string]int{} // orderId -> index in rows
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				err = &rowError{line: pe.StartLine, msg: pe.Err.Error()}
			}
			return nil, append(errs, err) // the CSV itself is broken: stop
		}
		line, _ := cr.FieldPos(0)
		row, err := parseRow(line, rec, col)
		if err == nil {
			if i, seen := first[row.p.OrderID]; seen && !sameParams(rows[i].p, row.p) {
				err = &rowError{line: line, column: "orderId", msg: fmt.Sprintf("repeats line %d's orderId with other parameters", rows[i].line)}
			} else if !seen {
				first[row.p.OrderID] = len(rows)
			}
		}
		if err != nil {
			if errs = append(errs, err); len(errs) == maxBadRows {
				return nil, errs
			}
			continue
		}
		rows = append(rows, row)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if len(rows) == 0 {
		return nil, []error{&rowError{line: 2, msg: "no payouts after the header"}}
	}
	return rows, nil
}

// readHeader reads the header row and returns each column's index by
// name.
func readHeader(cr *csv.Reader) (map[string]int, error) {
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, &rowError{line: 1, msg: "the file is empty; want a header row of column names"}
	}
	if err != nil {
		return nil, err
	}
	col := map[string]int{}
	for i, name := range header {
		if i == 0 {
			name = strings.TrimPrefix(name, "\ufeff") // a spreadsheet's byte-order mark
		}
		switch _, dup := col[name]; {
		case fieldOfColumn(name) == "":
			return nil, &rowError{line: 1, column: name, msg: "unknown column; want " + columnNames()}
		case dup:
			return nil, &rowError{line: 1, column: name, msg: "appears twice"}
		}
		col[name] = i
	}
	for _, c := range batchColumns {
		if _, ok := col[c.name]; c.required && !ok {
			return nil, &rowError{line: 1, column: c.name, msg: "missing (required)"}
		}
	}
	return col, nil
}

func columnNames() string {
	names := make([]string, len(batchColumns))
	for i, c := range batchColumns {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

// parseRow reads one record into payout parameters and validates them as
// the SDK does before sending.
func parseRow(line int, rec []string, col map[string]int) (batchRow, error) {
	get := func(name string) string {
		if i, ok := col[name]; ok {
			return rec[i]
		}
		return ""
	}
	p := cryptopay.CreatePayoutParams{
		OrderID: get("orderId"), WalletAddress: get("walletAddress"), Currency: get("currency"), Network: get("network"),
		CustomerID: get("customerId"), CustomerIP: get("customerIp"), AdditionalData: get("additionalData"), WebhookURL: get("webhookUrl"),
	}
	var err error
	if p.Amount, err = decimal.NewFromString(get("amount")); err != nil {
		return batchRow{}, &rowError{line: line, column: "amount", msg: "not a decimal"}
	}
	if s := get("networkFeeByUser"); s != "" {
		if p.NetworkFeeByUser, err = strconv.ParseBool(s); err != nil {
			return batchRow{}, &rowError{line: line, column: "networkFeeByUser", msg: "not true or false"}
		}
	}
	if err := p.Validate(); err != nil {
		var ve *cryptopay.ValidationError
		if errors.As(err, &ve) {
			return batchRow{}, &rowError{line: line, column: columnOfField(ve.Field), msg: ve.Reason}
		}
		return batchRow{}, &rowError{line: line, msg: err.Error()}
	}
	return batchRow{line: line, p: p}, nil
}

// sameParams reports whether two rows ask for the same payout (amounts by
// value: 1.0 is 1.00), as the queue's no-op rule does.
func sameParams(a, b cryptopay.CreatePayoutParams) bool {
	if !a.Amount.Equal(b.Amount) {
		return false
	}
	a.Amount, b.Amount = decimal.Zero, decimal.Zero
	return a == b
}

// capsValue is a repeatable currency=amount flag.
type capsValue map[string]decimal.Decimal

func (c capsValue) String() string {
	var parts []string
	for k, v := range c {
		parts = append(parts, k+"="+v.String())
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func (c capsValue) Set(s string) error {
	cur, amount, ok := strings.Cut(s, "=")
	if !ok || cur == "" {
		return errors.New("want currency=amount, for example usdt=1000")
	}
	d, err := decimal.NewFromString(amount)
	if err != nil || d.IsNegative() {
		return errors.New("the amount after = is not a decimal of 0 or more")
	}
	c[strings.ToLower(cur)] = d
	return nil
}

// batchOutput is what payout batch reports.
type batchOutput struct {
	File          string          `json:"file"`
	DryRun        bool            `json:"dryRun"`
	Rows          int             `json:"rows"`
	Duplicates    int             `json:"duplicates"`
	Enqueued      int             `json:"enqueued"`
	AlreadyQueued int             `json:"alreadyQueued"`
	NeedsApproval int             `json:"needsApproval"`
	Currencies    []currencyTotal `json:"currencies"`
	Stopped       []stoppedRow    `json:"stopped,omitempty"`
}

// currencyTotal is the count and exact total of one currency's rows.
type currencyTotal struct {
	Currency string `json:"currency"`
	Count    int    `json:"count"`
	Total    string `json:"total"`
}

// stoppedRow is a row the guardrails would stop, hold or send to
// approval.
type stoppedRow struct {
	Line    int    `json:"line"`
	OrderID string `json:"orderId"`
	Rule    string `json:"rule"`
	Reason  string `json:"reason"`
}

// batchFlags are payout batch's own flags: --dry-run and the guardrails
// a dry run checks.
type batchFlags struct {
	dryRun                        bool
	maxAmount, velocity, approval capsValue
	window                        time.Duration
	allowFile                     string
}

func (bf *batchFlags) register(fs *flag.FlagSet) {
	bf.maxAmount, bf.velocity, bf.approval = capsValue{}, capsValue{}, capsValue{}
	fs.BoolVar(&bf.dryRun, "dry-run", false, "enqueue nothing: print counts, totals per currency and the rows the guardrails would stop")
	fs.Var(bf.maxAmount, "max-amount", "dry run: cap of one payout, `currency=amount` (repeatable), as Guardrails.MaxAmount")
	fs.Var(bf.velocity, "velocity", "dry run: cap of the total within --velocity-window, `currency=amount` (repeatable), as Guardrails.Velocity")
	fs.DurationVar(&bf.window, "velocity-window", pgstore.DefaultVelocityWindow, "dry run: the velocity cap's rolling `window`, as Guardrails.VelocityWindow")
	fs.StringVar(&bf.allowFile, "allow-address-file", "", "dry run: the only wallet addresses paid to, one per line (`path`), as Guardrails.AllowedAddresses")
	fs.Var(bf.approval, "approval-above", "dry run: hold an intent above `currency=amount` for approval (repeatable), as Guardrails.ApprovalAbove")
}

// guardrails are the guardrails a dry run checks; outside a dry run the
// guardrail flags are refused (they would look enforced and not be).
func (bf *batchFlags) guardrails() (pgstore.Guardrails, error) {
	var g pgstore.Guardrails
	if !bf.dryRun {
		if len(bf.maxAmount) > 0 || len(bf.velocity) > 0 || bf.allowFile != "" || len(bf.approval) > 0 {
			return g, usageErr("payout batch: --max-amount, --velocity, --allow-address-file and --approval-above apply to --dry-run only " +
				"(the workers check their own guardrails before sending, approval included); add --dry-run, or drop them")
		}
		return g, nil
	}
	g.MaxAmount, g.Velocity, g.VelocityWindow, g.ApprovalAbove = bf.maxAmount, bf.velocity, bf.window, bf.approval
	if bf.allowFile != "" {
		var err error
		if g.AllowedAddresses, err = readAddresses(bf.allowFile); err != nil {
			return g, err
		}
	}
	return g, nil
}

// readBatchFile reads the CSV file at path; bad rows are printed, each
// with its line, and refuse the whole file.
func (a *app) readBatchFile(path string) ([]batchRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usageErr("payout batch: %v", err)
	}
	defer f.Close()
	rows, errs := readBatch(f)
	if len(errs) == 0 {
		return rows, nil
	}
	for _, e := range errs {
		fmt.Fprintln(a.stderr, "cryptopay: payout batch: "+a.safeText(path+": "+e.Error()))
	}
	more := ""
	if len(errs) == maxBadRows {
		more = " (the first " + strconv.Itoa(maxBadRows) + " shown)"
	}
	fmt.Fprintln(a.stderr, "cryptopay: payout batch: "+a.safeText(path)+": bad rows"+more+"; nothing was enqueued")
	return nil, quietExit(exitUsage)
}

// batchHelp is payout batch's help text.
func batchHelp() string {
	return "Enqueue every payout of a CSV file in the payout queue, in one transaction: all or nothing.\n" +
		"Header row: column names, of " + columnNames() + ";\n" +
		"required: orderId, walletAddress, amount, customerId, customerIp. Amounts are exact decimals.\n" +
		"A row whose orderId is queued already with the same parameters is skipped (a rerun enqueues\n" +
		"nothing new); with other parameters the file is refused. A bad row names its line and column,\n" +
		"and nothing of the file is enqueued. The queue's workers send the payouts.\n\n" +
		"Guardrails: --max-amount, --velocity, --allow-address-file and --approval-above apply to\n" +
		"--dry-run only: the workers check their own pgstore.Guardrails before sending (approval\n" +
		"included: an intent above their threshold waits for 'payout queue approve'), so pass the\n" +
		"same values to see what they would stop or hold."
}

func (a *app) payoutBatch(args []string) error {
	fs := a.newFlagSet(command{"payout batch", "FILE.csv", batchHelp()})
	var qf queueFlags
	qf.register(fs.FlagSet)
	var bf batchFlags
	bf.register(fs.FlagSet)
	pos, asJSON, err := a.parseOutput(fs, args, 1, 1)
	if err != nil {
		return err
	}
	g, err := bf.guardrails()
	if err != nil {
		return err
	}
	rows, err := a.readBatchFile(pos[0])
	if err != nil {
		return err
	}
	dryRun := bf.dryRun
	ps, lineOf := uniqueIntents(rows)
	out := batchOutput{File: pos[0], DryRun: dryRun, Rows: len(rows), Duplicates: len(rows) - len(ps), Currencies: totals(ps)}

	q, pool, err := a.openQueue(qf, g)
	if err != nil {
		return err
	}
	defer pool.Close()
	stops, err := q.CheckGuardrails(a.ctx, ps)
	if err != nil {
		return err
	}
	for _, s := range stops {
		if s.Err.Rule == "approval" {
			out.NeedsApproval++
		}
		if dryRun {
			out.Stopped = append(out.Stopped, stoppedRow{Line: lineOf[s.OrderID], OrderID: s.OrderID, Rule: s.Err.Rule, Reason: s.Err.Reason})
		}
	}

	created, err := a.enqueueAll(q, pool, ps, dryRun, lineOf, pos[0])
	if err != nil {
		return err
	}
	out.Enqueued, out.AlreadyQueued = created, len(ps)-created
	if asJSON {
		return a.printJSON(out)
	}
	return a.printBatch(out)
}

// uniqueIntents keeps one intent per orderId (an identical repeat is the
// queue's no-op) and the line each comes from.
func uniqueIntents(rows []batchRow) ([]cryptopay.CreatePayoutParams, map[string]int) {
	var ps []cryptopay.CreatePayoutParams
	lineOf := map[string]int{}
	for _, r := range rows {
		if _, seen := lineOf[r.p.OrderID]; !seen {
			lineOf[r.p.OrderID] = r.line
			ps = append(ps, r.p)
		}
	}
	return ps, lineOf
}

// enqueueAll enqueues ps in one transaction, committed unless dryRun (a
// dry run rolls it back: it learns what would be new and what conflicts,
// and changes nothing). A conflict names the row's line.
func (a *app) enqueueAll(q *pgstore.Queue, pool *pgxpool.Pool, ps []cryptopay.CreatePayoutParams, dryRun bool, lineOf map[string]int, file string) (int, error) {
	what := "rows enqueued"
	if dryRun {
		what = "rows checked"
	}
	bar := a.newProgress(len(ps), enqueueChunk, what, true)
	defer bar.done()
	tx, err := pool.Begin(a.ctx)
	if err != nil {
		return 0, fmt.Errorf("payout batch: database: %w", err)
	}
	defer func() { _ = tx.Rollback(a.ctx) }()
	created := 0
	for start := 0; start < len(ps); start += enqueueChunk {
		n, err := q.EnqueueMany(a.ctx, tx, ps[start:min(start+enqueueChunk, len(ps))])
		if err != nil {
			var ce *pgstore.IntentConflictError
			if errors.As(err, &ce) {
				return 0, &exitError{exitNo, fmt.Errorf("payout batch: %s: line %d, column orderId: %q is queued already with a different %s; nothing was enqueued",
					file, lineOf[ce.OrderID], ce.OrderID, columnOfField(ce.Field))}
			}
			return 0, fmt.Errorf("payout batch: nothing was enqueued: %w", err)
		}
		created += n
		bar.set(start + min(enqueueChunk, len(ps)-start))
	}
	if dryRun {
		return created, nil
	}
	if err := tx.Commit(a.ctx); err != nil {
		return 0, fmt.Errorf("payout batch: nothing was enqueued: committing: %w", err)
	}
	return created, nil
}

// totals counts the payouts and sums their amounts per currency, exactly.
func totals(ps []cryptopay.CreatePayoutParams) []currencyTotal {
	sums, counts := map[string]decimal.Decimal{}, map[string]int{}
	for _, p := range ps {
		sums[p.Currency] = sums[p.Currency].Add(p.Amount)
		counts[p.Currency]++
	}
	out := make([]currencyTotal, 0, len(sums))
	for cur, sum := range sums {
		out = append(out, currencyTotal{Currency: cur, Count: counts[cur], Total: sum.String()})
	}
	slices.SortFunc(out, func(x, y currencyTotal) int { return strings.Compare(x.Currency, y.Currency) })
	return out
}

func (a *app) printBatch(out batchOutput) error {
	verb := "Enqueued"
	if out.DryRun {
		verb = "Would enqueue"
	}
	if err := a.printRows([][2]string{
		{"File", out.File},
		{"Rows", strconv.Itoa(out.Rows)},
		{"Repeated rows (same orderId, same payout)", strconv.Itoa(out.Duplicates)},
		{verb, strconv.Itoa(out.Enqueued)},
		{"Queued already (skipped)", strconv.Itoa(out.AlreadyQueued)},
		{"Held for approval", strconv.Itoa(out.NeedsApproval)},
	}); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout)
	rows := make([][]string, len(out.Currencies))
	for i, c := range out.Currencies {
		rows[i] = []string{c.Currency, strconv.Itoa(c.Count), c.Total}
	}
	if err := a.printTable([]string{"CURRENCY", "PAYOUTS", "TOTAL"}, rows); err != nil {
		return err
	}
	if !out.DryRun {
		return nil
	}
	fmt.Fprintln(a.stdout)
	if len(out.Stopped) == 0 {
		a.printLine("The guardrails given would stop no row.")
		return nil
	}
	rows = make([][]string, len(out.Stopped))
	for i, s := range out.Stopped {
		rows[i] = []string{strconv.Itoa(s.Line), s.OrderID, s.Rule, s.Reason}
	}
	return a.printTable([]string{"LINE", "ORDER ID", "RULE", "REASON"}, rows)
}

// readAddresses reads an allow-list: one wallet address a line; blank
// lines and lines starting with # are skipped.
func readAddresses(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErr("--allow-address-file: %v", err)
	}
	out := []string{}
	for line := range strings.Lines(string(b)) {
		if s := strings.TrimSpace(line); s != "" && !strings.HasPrefix(s, "#") {
			out = append(out, s)
		}
	}
	return out, nil
}
