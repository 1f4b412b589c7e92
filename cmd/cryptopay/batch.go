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

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/internal/ids"
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
	{"currency", "Currency", true},
	{"network", "Network", true},
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

// Caps on a batch file, stated in batchHelp and docs/cli.md. The file is
// read as a stream and refused as soon as it passes one, so a huge file
// or value costs no more memory than the caps allow.
const (
	maxBatchBytes = 32 << 20 // the whole file
	maxBatchRows  = 50_000   // payouts, the header not counted
	maxFieldBytes = 8 << 10  // any one value, additionalData included
	maxURLBytes   = 2048     // webhookUrl
	// maxRecordFields caps the fields of one record, the header's too:
	// the CSV reader builds a record's slice of fields before any check,
	// and a line of commas under the file cap would make it millions long
	// (gigabytes allocated). A record over the columns but under this cap
	// is one bad row among others.
	maxRecordFields = 100
)

// idLimits are the byte limits of the identifier columns: the SDK's bounds
// on CreatePayoutParams' fields (docs/security.md), checked here first with
// the other character rules. maxAddressBytes is the SDK's bound on an
// address of a network it does not check.
var idLimits = map[string]int{"orderId": 128, "customerId": 128, "customerIp": 64, "walletAddress": 256, "webhookUrl": maxURLBytes}

// readBatch reads the CSV: a header of column names, then one payout per
// row. It returns every row, or up to maxBadRows errors. A row with the
// wrong number of fields is one bad row among others; a file broken
// otherwise (a stray quote, a cap passed) stops the reading there.
func readBatch(r io.Reader) ([]batchRow, []error) {
	guard := &csvGuard{r: r, line: 1, recLine: 1}
	cr := csv.NewReader(bufio.NewReaderSize(guard, 64<<10))
	cr.ReuseRecord = true
	col, header, err := readHeader(cr)
	if err != nil {
		return nil, []error{guard.named(err, header)}
	}
	var rows []batchRow
	var errs []error
	first := map[string]int{} // orderId -> index in rows
	for n := 0; ; n++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		var pe *csv.ParseError
		isParseErr := errors.As(err, &pe)
		if n == maxBatchRows && (err == nil || isParseErr) { // one record past the cap, good or bad
			line := 0
			if isParseErr {
				line = pe.StartLine
			} else {
				line, _ = cr.FieldPos(0)
			}
			return nil, append(errs, &rowError{line: line, msg: fmt.Sprintf("more than %d payouts in one file; split it", maxBatchRows)})
		}
		switch {
		case isParseErr && errors.Is(pe.Err, csv.ErrFieldCount):
			err = &rowError{line: pe.StartLine, msg: fmt.Sprintf("%d fields, want %d as in the header", len(rec), len(header))}
		case err != nil:
			if isParseErr {
				err = &rowError{line: pe.StartLine, msg: pe.Err.Error()}
			}
			return nil, append(errs, guard.named(err, header)) // the CSV itself is broken: stop
		default:
			line, _ := cr.FieldPos(0)
			var row batchRow
			row, err = parseRow(line, rec, col)
			if err == nil {
				if i, seen := first[row.p.OrderID]; seen && !sameParams(rows[i].p, row.p) {
					err = &rowError{line: line, column: "orderId", msg: fmt.Sprintf("repeats line %d's orderId with other parameters", rows[i].line)}
				} else if !seen {
					first[row.p.OrderID] = len(rows)
				}
			}
			if err == nil {
				rows = append(rows, row)
				continue
			}
		}
		if errs = append(errs, err); len(errs) == maxBadRows {
			return nil, errs
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if len(rows) == 0 {
		return nil, []error{&rowError{line: 2, msg: "no payouts after the header"}}
	}
	return rows, nil
}

// csvGuard passes a batch file through, refusing it once it is larger
// than maxBatchBytes or a value is longer than maxFieldBytes, before the
// CSV reader buffers it. It follows the CSV's quoting to know which line
// a record starts on and which field it is in.
type csvGuard struct {
	r        io.Reader
	total    int64
	line     int  // the line being read
	recLine  int  // the line the current record starts on
	field    int  // the index of the current field in its record
	fieldLen int  // bytes of the current field so far
	inQuote  bool // inside a quoted field
	err      error
}

// guardError is a cap the file passed: at a field (field >= 0) or as a
// whole.
type guardError struct {
	line  int
	field int // -1: the file as a whole
	msg   string
}

func (e *guardError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

func (g *csvGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.r.Read(p)
	for i, c := range p[:n] {
		if g.total++; g.total > maxBatchBytes {
			g.err = &guardError{line: g.line, field: -1, msg: fmt.Sprintf("the file is larger than %d MiB; split it", maxBatchBytes>>20)}
			return i, g.err
		}
		switch {
		case c == '"':
			g.inQuote = !g.inQuote // "" inside quotes toggles twice
			g.fieldLen++
		case c == ',' && !g.inQuote:
			g.field, g.fieldLen = g.field+1, 0
			if g.field >= maxRecordFields {
				g.err = &guardError{line: g.recLine, field: -1, msg: fmt.Sprintf("more than %d fields; a payout has at most %d columns", maxRecordFields, len(batchColumns))}
				return i, g.err
			}
		case c == '\n':
			g.line++
			if g.inQuote {
				g.fieldLen++
			} else {
				g.recLine, g.field, g.fieldLen = g.line, 0, 0
			}
		default:
			g.fieldLen++
		}
		if g.fieldLen > maxFieldBytes {
			g.err = &guardError{line: g.recLine, field: g.field, msg: fmt.Sprintf("longer than %d KiB", maxFieldBytes>>10)}
			return i, g.err
		}
	}
	return n, err
}

// named turns a guardError into a rowError naming the column from the
// header (when it was read); other errors pass unchanged.
func (g *csvGuard) named(err error, header []string) error {
	var ge *guardError
	if !errors.As(err, &ge) {
		return err
	}
	re := &rowError{line: ge.line, msg: ge.msg}
	switch {
	case ge.field < 0:
	case ge.field < len(header):
		re.column = header[ge.field]
	default:
		re.column = "#" + strconv.Itoa(ge.field+1)
	}
	return re
}

// readHeader reads the header row and returns each column's index by
// name, and the names in their order.
func readHeader(cr *csv.Reader) (map[string]int, []string, error) {
	rec, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil, &rowError{line: 1, msg: "the file is empty; want a header row of column names"}
	}
	if err != nil {
		return nil, nil, err
	}
	header := slices.Clone(rec) // the reader reuses rec
	col := map[string]int{}
	for i, name := range header {
		if i == 0 {
			name = strings.TrimPrefix(name, "\ufeff") // a spreadsheet's byte-order mark
			header[0] = name
		}
		switch _, dup := col[name]; {
		case fieldOfColumn(name) == "":
			return nil, header, &rowError{line: 1, column: name, msg: "unknown column; want " + columnNames()}
		case dup:
			return nil, header, &rowError{line: 1, column: name, msg: "appears twice"}
		}
		col[name] = i
	}
	for _, c := range batchColumns {
		if _, ok := col[c.name]; c.required && !ok {
			return nil, header, &rowError{line: 1, column: c.name, msg: "missing (required)"}
		}
	}
	cr.FieldsPerRecord = len(header)
	return col, header, nil
}

func requiredColumns() string {
	var names []string
	for _, c := range batchColumns {
		if c.required {
			names = append(names, c.name)
		}
	}
	return strings.Join(names, ", ")
}

func columnNames() string {
	names := make([]string, len(batchColumns))
	for i, c := range batchColumns {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

// parseRow reads one record into payout parameters, refuses what a CSV
// file must not carry (an amount with an exponent, an identifier with
// surrounding space or an invisible character, a currency or network key
// not in its canonical spelling, an empty currency) and validates the rest
// as the SDK does before sending. The first bad value names its column.
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
	bad := func(column, msg string) (batchRow, error) {
		return batchRow{}, &rowError{line: line, column: column, msg: msg}
	}
	for _, c := range batchColumns {
		v := get(c.name)
		switch c.name {
		case "orderId", "walletAddress", "customerId", "customerIp", "webhookUrl":
			if v == "" {
				continue // Validate says whether it may be empty
			}
			if why := ids.Text(v, idLimits[c.name]); why != "" {
				return bad(c.name, why)
			}
		case "currency":
			if v == "" {
				return bad(c.name, "is empty: a currency is required (the guardrails are per currency)")
			}
			if why := ids.Key(v); why != "" {
				return bad(c.name, why)
			}
		case "network":
			if why := ids.Key(v); v != "" && why != "" {
				return bad(c.name, why)
			}
		case "amount":
			var err error
			if p.Amount, err = parseAmount(v); err != nil {
				return bad(c.name, err.Error())
			}
		case "networkFeeByUser":
			if v != "" {
				var err error
				if p.NetworkFeeByUser, err = strconv.ParseBool(v); err != nil {
					return bad(c.name, "not true or false")
				}
			}
		}
	}
	if err := p.Validate(); err != nil {
		var ve *cryptopay.ValidationError
		if errors.As(err, &ve) {
			return bad(columnOfField(ve.Field), ve.Reason)
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
	d, err := parseAmount(amount)
	if err != nil {
		return fmt.Errorf("the amount after =: %w", err)
	}
	if d.IsNegative() {
		return errors.New("the amount after = is not a decimal of 0 or more")
	}
	// The same keys as the workers' Guardrails: canonical, refused (with
	// the canonical spelling named) rather than rewritten, and one cap per
	// currency, so the dry run checks what a worker with these caps would.
	if why := ids.Key(cur); why != "" {
		return fmt.Errorf("the currency before = %s", why)
	}
	if prev, dup := c[cur]; dup {
		return fmt.Errorf("a second cap for %s (%s, then %s): give one", cur, prev, d)
	}
	c[cur] = d
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
		"required: " + requiredColumns() + ".\n" +
		"Amounts are exact plain decimals (10.5): an exponent (1.23457E+11) is refused, since a\n" +
		"spreadsheet that shows a number that way may have saved it rounded. orderId and customerId:\n" +
		"at most " + strconv.Itoa(idLimits["orderId"]) + " bytes, customerIp " + strconv.Itoa(idLimits["customerIp"]) +
		", walletAddress " + strconv.Itoa(idLimits["walletAddress"]) + "; no surrounding space, no control or\n" +
		"invisible character; currency and network in their canonical lower-case spelling; each\n" +
		"walletAddress checked offline for its network (cryptopay.CreatePayoutParams.Validate).\n" +
		"Caps: " + strconv.Itoa(maxBatchBytes>>20) + " MiB a file, " + strconv.Itoa(maxBatchRows) + " payouts a file, " +
		strconv.Itoa(maxRecordFields) + " fields a row, " + strconv.Itoa(maxFieldBytes>>10) + " KiB a value (webhookUrl " + strconv.Itoa(maxURLBytes) + " bytes).\n" +
		"A row whose orderId is queued already with the same parameters is skipped (a rerun enqueues\n" +
		"nothing new); with other parameters the file is refused. A bad row names its line and column\n" +
		"(up to " + strconv.Itoa(maxBadRows) + " are named), and nothing of the file is enqueued. The queue's workers send the payouts.\n" +
		"If the database's answer to the commit is lost, the outcome is unknown (exit 4): run the same\n" +
		"file again, which enqueues only what is not queued yet.\n\n" +
		"Guardrails: --max-amount, --velocity, --allow-address-file and --approval-above apply to\n" +
		"--dry-run only: the workers check their own pgstore.Guardrails before sending (approval\n" +
		"included: an intent above their threshold waits for 'payout queue approve'), so pass the\n" +
		"same values to see what they would stop or hold. A cap's currency is a canonical key\n" +
		"(usdt=1000, not USDT=1000), one cap per currency and flag."
}

func (a *app) payoutBatch(args []string) error {
	fs, db := a.newDBFlagSet(command{"payout batch", "FILE.csv", batchHelp()}, queueStore)
	var bf batchFlags
	bf.register(fs.FlagSet)
	actor := a.actorFlag(fs.FlagSet)
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

	q, pool, err := a.openQueue(db, g)
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

	created, err := a.enqueueAll(q, pool, *actor, ps, dryRun, lineOf, pos[0])
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
// and changes nothing). A conflict names the row's line. actor is recorded
// as the intents' enqueuer: four eyes, their approval does not count.
func (a *app) enqueueAll(q *pgstore.Queue, pool *pgxpool.Pool, actor string, ps []cryptopay.CreatePayoutParams, dryRun bool, lineOf map[string]int, file string) (int, error) {
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
		n, err := q.EnqueueBy(a.ctx, tx, actor, ps[start:min(start+enqueueChunk, len(ps))])
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
		if commitRefused(err) {
			return 0, fmt.Errorf("payout batch: nothing was enqueued: committing: %w", err)
		}
		return 0, &exitError{exitOutcomeUnknown, fmt.Errorf("payout batch: outcome unknown: the database's answer to the commit was lost (%w): "+
			"every row of %s may be queued, and will then be paid; do not edit the file: run the same file again, "+
			"which skips the rows queued already and enqueues only what is missing (see 'cryptopay payout queue list')", err, file)}
	}
	return created, nil
}

// commitRefused reports whether a failed COMMIT certainly did not commit:
// the database answered it with an error, or the transaction had failed
// before. Any other failure (the connection broke after COMMIT was sent)
// leaves the outcome unknown. pgconn.SafeToRetry is no evidence here: a
// connection lost while reading COMMIT's answer is reported as "conn
// closed", which it calls safe to retry.
func commitRefused(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) || errors.Is(err, pgx.ErrTxCommitRollback)
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
