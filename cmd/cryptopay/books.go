package main

import (
	"bufio"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// booksTableCap bounds the items the terminal table lists (the drift and
// the undecided ones); the rest are counted, and --output json or csv has them all.
const booksTableCap = 1000

// booksItemOut is one item of the books check as the CLI writes it:
// amounts as exact decimal strings.
type booksItemOut struct {
	Section     string `json:"section"`
	OrderID     string `json:"orderId"`
	Class       string `json:"class"`
	Drift       bool   `json:"drift"`
	Ours        string `json:"ours,omitempty"`
	Theirs      string `json:"theirs,omitempty"`
	Delta       string `json:"delta"`
	Ledger      string `json:"ledger,omitempty"`
	Adjusted    string `json:"adjusted,omitempty"`
	OurStatus   string `json:"ourStatus,omitempty"`
	TheirStatus string `json:"theirStatus,omitempty"`
	Currency    string `json:"currency,omitempty"`
	Network     string `json:"network,omitempty"`
	OurWallet   string `json:"ourWallet,omitempty"`
	TheirWallet string `json:"theirWallet,omitempty"`
	Payouts     int    `json:"payouts,omitempty"`
	Detail      string `json:"detail,omitempty"`
}

func newBooksItemOut(it *pgstore.BooksItem) booksItemOut {
	return booksItemOut{Section: it.Section, OrderID: it.OrderID, Class: string(it.Class), Drift: it.Class.IsDrift(),
		Ours: nullMoney(it.Ours), Theirs: nullMoney(it.Theirs), Delta: money(it.Delta), Ledger: nullMoney(it.Ledger), Adjusted: nullMoney(it.Adjusted),
		OurStatus: it.OurStatus, TheirStatus: it.TheirStatus, Currency: it.Currency, Network: it.Network,
		OurWallet: it.OurWallet, TheirWallet: it.TheirWallet, Payouts: it.Payouts, Detail: it.Detail}
}

// booksCSVHeader names the CSV columns, in order.
var booksCSVHeader = []string{"section", "order_id", "class", "drift", "ours", "theirs", "delta", "ledger",
	"our_status", "their_status", "currency", "network", "our_wallet", "their_wallet", "payouts", "detail", "adjusted"}

func (o booksItemOut) csvRecord() []string {
	return []string{o.Section, o.OrderID, o.Class, strconv.FormatBool(o.Drift), o.Ours, o.Theirs, o.Delta, o.Ledger,
		o.OurStatus, o.TheirStatus, o.Currency, o.Network, o.OurWallet, o.TheirWallet, strconv.Itoa(o.Payouts), o.Detail, o.Adjusted}
}

// booksSummaryOut is the summary as the CLI writes it.
type booksSummaryOut struct {
	Counts         map[string]map[pgstore.BooksClass]int `json:"counts"`
	Drift          int                                   `json:"drift"`
	InFlight       int                                   `json:"inFlight"`
	Undecided      int                                   `json:"undecided"`
	DriftBySection map[string]map[string]string          `json:"driftBySection"`
	Totals         []booksTotalOut                       `json:"totals"`
	FinishedAt     string                                `json:"finishedAt"`
	NotRead        map[string]string                     `json:"notRead"`
	Unfinished     map[string]string                     `json:"unfinished"`
	Clean          bool                                  `json:"clean"`
}

// booksTotalOut is one line of the summary's totals: the items of one
// section, class, currency and network, and the sum of their deltas.
type booksTotalOut struct {
	Section  string `json:"section"`
	Class    string `json:"class"`
	Currency string `json:"currency"`
	Network  string `json:"network"`
	Items    int    `json:"items"`
	Delta    string `json:"delta"`
}

func newBooksSummaryOut(s *pgstore.BooksSummary, finished time.Time) booksSummaryOut {
	out := booksSummaryOut{FinishedAt: finished.UTC().Format(time.RFC3339Nano), Counts: s.Counts, Drift: s.Drift, InFlight: s.InFlight, Undecided: s.Undecided,
		DriftBySection: make(map[string]map[string]string, len(s.DriftBySection)), Totals: make([]booksTotalOut, 0, len(s.Totals)),
		NotRead: s.NotRead, Unfinished: s.Unfinished, Clean: s.Clean()}
	for section, pairs := range s.DriftBySection {
		out.DriftBySection[section] = make(map[string]string, len(pairs))
		for k, v := range pairs {
			out.DriftBySection[section][k] = money(v)
		}
	}
	for _, t := range s.Totals {
		out.Totals = append(out.Totals, booksTotalOut{Section: t.Section, Class: string(t.Class), Currency: t.Currency,
			Network: t.Network, Items: t.Items, Delta: money(t.Delta)})
	}
	return out
}

// booksMoney names what a section's amounts are.
var booksMoney = map[string]string{"payouts": "money out", "payments": "money in", "ledger": "your ledger against the credits",
	"payout_ledger": "your payout ledger against the payouts paid",
	"refunds":       "money refunded against money paid in",
	"balances":      "the balance"}

// booksReportOut is the head of a report, so a finance team can file it:
// when it ran, as of when, the settings, the sections and the window.
type booksReportOut struct {
	Report       string   `json:"report"`
	StartedAt    string   `json:"startedAt"`
	AsOf         string   `json:"asOf"`
	Sections     []string `json:"sections"`
	Window       string   `json:"window"`
	Settle       string   `json:"settle"`
	PayoutDebit  string   `json:"payoutDebit"`
	PayoutFees   string   `json:"payoutFees"`
	Ledger       bool     `json:"ledger"`
	PayoutLedger bool     `json:"payoutLedger"`
	QueueTable   string   `json:"queueTable"`
	TrackerTable string   `json:"trackerTable"`
	BalanceTable string   `json:"balanceTable"`
}

// newBooksReport is the head of a check started at start with flags f.
func newBooksReport(f *booksFlags, start time.Time) booksReportOut {
	at := start.UTC().Format(time.RFC3339Nano)
	window := "every tracked payment; every payout"
	if f.since != "" {
		window = "payments tracked or changed since " + f.since + " (and, with balances, every payment not closed); every payout"
	}
	return booksReportOut{Report: "cryptopay books", StartedAt: at, AsOf: at, Sections: strings.Split(f.sections, ","), Window: window,
		Settle: f.settle.String(), PayoutDebit: cmp.Or(f.debit, "unset"), PayoutFees: cmp.Or(f.fees, "unset"), Ledger: f.ledgerSQL != "", PayoutLedger: f.payoutLedgerSQL != "",
		QueueTable: f.db.table(queueStore), TrackerTable: f.db.table(trackerStore), BalanceTable: f.balanceTable}
}

// lines is the head as "key: value" lines, in the JSON's order.
func (r booksReportOut) lines() []string {
	return []string{"report: " + r.Report, "started_at: " + r.StartedAt, "as_of: " + r.AsOf,
		"sections: " + strings.Join(r.Sections, ","), "window: " + r.Window, "settle: " + r.Settle,
		"payout_debit: " + r.PayoutDebit, "payout_fees: " + r.PayoutFees, "ledger: " + strconv.FormatBool(r.Ledger),
		"payout_ledger: " + strconv.FormatBool(r.PayoutLedger),
		"queue_table: " + r.QueueTable, "tracker_table: " + r.TrackerTable, "balance_table: " + r.BalanceTable}
}

// booksWriter writes the items as they come and the summary at the end.
type booksWriter interface {
	item(booksItemOut) error
	end(booksSummaryOut) error
}

// booksFlags are the books command's own flags, and the shared ones it
// reads.
type booksFlags struct {
	sections, since, ledgerSQL string
	payoutLedgerSQL            string
	balanceTable, debit, fees  string
	settle                     time.Duration
	reportOnly                 bool
	db                         *dbFlags
	pageSize                   *int
}

func (f *booksFlags) register(a *app, fs *cmdFlags) {
	f.pageSize = a.pageSize(fs)
	fs.StringVar(&f.sections, "sections", "payouts,payments", "the `sections` to check (comma-separated): payouts, payments,\n"+
		"balances (which needs the other two and stores a snapshot in --balance-table), refunds\n"+
		"(each refunded payment's paid amount against its refunds' payouts; needs payouts)")
	fs.StringVar(&f.balanceTable, "balance-table", pgstore.DefaultBooksBalanceTable, "the books check's own `table` of balance snapshots\n"+
		"(created if missing)")
	fs.StringVar(&f.debit, "payout-debit", "", "`when` the provider takes a payout from the balance: created or paid\n"+
		"(the API does not say; unset: balances are undecided)")
	fs.StringVar(&f.fees, "payout-fees", "", "whether a payout takes a fee on top of its amount: `excluded` or included\n"+
		"(unset: balances are undecided)")
	fs.StringVar(&f.since, "since", "", "check the payments tracked or changed at or after this `time` (RFC 3339; default all)")
	fs.StringVar(&f.ledgerSQL, "ledger-sql", "", "your ledger: a `query` returning (order_id, credited) per orderId, compared\n"+
		"with what the tracker credited")
	fs.StringVar(&f.payoutLedgerSQL, "payout-ledger-sql", "", "your payout ledger: a `query` returning (order_id, booked) per\n"+
		"orderId, compared with the queue's paid intents")
	fs.BoolVar(&f.reportOnly, "report-only", false, "change nothing in the queue: an intent found unsent_but_listed is reported,\n"+
		"not parked (by default it is parked, so the workers never send it: docs/books.md)")
	fs.DurationVar(&f.settle, "settle", pgstore.DefaultBooksSettleTime, "how long the two sides may disagree as things in progress do\n"+
		"before it is drift")
}

// payoutDebits and payoutFees are the values of --payout-debit and
// --payout-fees ("": unset).
var (
	payoutDebits = map[string]pgstore.PayoutDebit{"": pgstore.DebitUndecided, "created": pgstore.DebitAtCreate, "paid": pgstore.DebitAtPaid}
	payoutFees   = map[string]pgstore.PayoutFees{"": pgstore.FeesUndecided, "excluded": pgstore.FeesExcluded, "included": pgstore.FeesIncluded}
)

// check refuses flags that cannot work together.
func (f *booksFlags) check() (since time.Time, err error) {
	if f.settle <= 0 || *f.pageSize <= 0 {
		return since, usageErr("books: --settle and --page-size must be positive")
	}
	sections := strings.Split(f.sections, ",")
	for _, s := range sections {
		if s != "payouts" && s != "payments" && s != "balances" && s != "refunds" {
			return since, usageErr("books: --sections %q: want payouts, payments, balances, refunds", s)
		}
	}
	if slices.Contains(sections, "refunds") && !slices.Contains(sections, "payouts") {
		return since, usageErr("books: --sections refunds reads the payout list: add payouts too")
	}
	if slices.Contains(sections, "balances") && (!slices.Contains(sections, "payouts") || !slices.Contains(sections, "payments")) {
		return since, usageErr("books: --sections balances needs payouts and payments too")
	}
	if _, ok := payoutDebits[f.debit]; !ok {
		return since, usageErr("books: --payout-debit %q: want created or paid", f.debit)
	}
	if _, ok := payoutFees[f.fees]; !ok {
		return since, usageErr("books: --payout-fees %q: want excluded or included", f.fees)
	}
	if f.ledgerSQL != "" && !slices.Contains(sections, "payments") {
		return since, usageErr("books: --ledger-sql is compared with the payments: add payments to --sections")
	}
	if f.payoutLedgerSQL != "" && !slices.Contains(sections, "payouts") {
		return since, usageErr("books: --payout-ledger-sql is compared with the payouts: add payouts to --sections")
	}
	if f.since != "" {
		if since, err = time.Parse(time.RFC3339, f.since); err != nil {
			return since, usageErr("books: --since %q: want an RFC 3339 time such as 2026-11-01T00:00:00Z", f.since)
		}
	}
	return since, nil
}

func (a *app) books(args []string) error {
	fs, db := a.newDBAPIFlagSet(command{"books", "", "Prove the books: compare the payout queue and the payment tracker with the\n" +
		"provider (the whole payout list, each tracked payment read again, with --sections\n" +
		"...,balances the balances rolled forward) and name every difference with its exact\n" +
		"amount; double payments first. See docs/books.md.\n" +
		"Exit 0: the books tie; 1: drift found; 2: no drift, but something undecided or\n" +
		"the check could not finish."}, queueStore, trackerStore, refundsStore)
	a.writes(fs, outJSON, outTable, outCSV)
	f := booksFlags{db: db}
	f.register(a, fs)
	if _, err := a.parse(fs, args, 0, 0); err != nil {
		return err
	}
	since, err := f.check()
	if err != nil {
		return err
	}
	c, err := a.client() // first: it reads the key the writers redact
	if err != nil {
		return err
	}
	cfg, closeDB, err := a.booksConfig(&f)
	var ee *exitError
	if err != nil && !errors.As(err, &ee) {
		return &exitError{exitNotYet, fmt.Errorf("books: the check could not start: %w", err)} // the database is down: not finished
	}
	if err != nil {
		return err
	}
	defer closeDB()
	cfg.Client, cfg.Since, cfg.SettleTime, cfg.PageSize, cfg.LedgerSQL = c, since, f.settle, *f.pageSize, f.ledgerSQL
	cfg.PayoutLedgerSQL, cfg.ReportOnly = f.payoutLedgerSQL, f.reportOnly
	cfg.BalanceTable, cfg.CreateTable, cfg.PayoutDebit, cfg.PayoutFees = f.balanceTable, true, payoutDebits[f.debit], payoutFees[f.fees]
	return a.runBooks(cfg, a.booksWriter(newBooksReport(&f, a.now())))
}

// booksConfig opens the database and names the sections' tables.
func (a *app) booksConfig(f *booksFlags) (pgstore.BooksConfig, func(), error) {
	var cfg pgstore.BooksConfig
	pool, err := a.openPool(f.db.databaseURL, 4)
	if err != nil {
		return cfg, nil, err
	}
	fail := func(err error) (pgstore.BooksConfig, func(), error) {
		pool.Close()
		return cfg, nil, storeErr(err)
	}
	for s := range strings.SplitSeq(f.sections, ",") {
		switch s {
		case "payouts":
			if cfg.Queue, err = pgstore.NewQueue(a.ctx, pgstore.QueueConfig{Pool: pool, Table: f.db.table(queueStore)}); err == nil {
				err = cfg.Queue.CheckSchema(a.ctx)
			}
		case "payments":
			if cfg.Tracker, err = pgstore.NewTracker(a.ctx, pgstore.TrackerConfig{Pool: pool, Table: f.db.table(trackerStore)}); err == nil {
				err = cfg.Tracker.CheckSchema(a.ctx)
			}
		case "balances":
			cfg.Balances = true
		}
		if err != nil {
			return fail(err)
		}
	}
	if slices.Contains(strings.Split(f.sections, ","), "refunds") {
		// The refunds' tracker is the payments' table, read only for its
		// paid amounts: the payments section stays as --sections says.
		tr, err := pgstore.NewTracker(a.ctx, pgstore.TrackerConfig{Pool: pool, Table: f.db.table(trackerStore)})
		if err == nil {
			cfg.Refunds, err = pgstore.NewRefunds(a.ctx, pgstore.RefundsConfig{Queue: cfg.Queue, Tracker: tr, Table: f.db.table(refundsStore)})
		}
		if err == nil {
			err = errors.Join(tr.CheckSchema(a.ctx), cfg.Refunds.CheckSchema(a.ctx))
		}
		if err != nil {
			return fail(err)
		}
	}
	return cfg, pool.Close, nil
}

// runBooks runs the check into w, with a progress bar per section on a
// terminal, and maps what it found to the exit code.
func (a *app) runBooks(cfg pgstore.BooksConfig, w booksWriter) error {
	bars := map[string]*progress{}
	cfg.Progress = func(section string, done, total int) {
		bar := bars[section]
		if bar == nil {
			bar = a.newProgress(total, 100, section, false)
			bars[section] = bar
		}
		bar.total = max(bar.total, total)
		bar.set(done)
	}
	b, err := pgstore.NewBooks(cfg)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	sum, err := b.Check(a.ctx, func(it pgstore.BooksItem) error { return w.item(newBooksItemOut(&it)) })
	for _, bar := range bars {
		bar.done()
	}
	if err != nil {
		return booksStopped(w, sum, err, a.now())
	}
	if err := w.end(newBooksSummaryOut(sum, a.now())); err != nil {
		return err
	}
	switch {
	case sum.Drift > 0:
		return quietExit(exitNo)
	case !sum.Clean():
		return quietExit(exitNotYet)
	}
	return nil
}

// booksStopped ends the report of a check that stopped (interrupted, or
// its output failed) with the summary so far, and exits 1 if drift was
// found before the stop (a double payment outranks an unfinished check),
// else 2.
func booksStopped(w booksWriter, sum *pgstore.BooksSummary, err error, finished time.Time) error {
	code := exitNotYet
	if sum != nil {
		_ = w.end(newBooksSummaryOut(sum, finished)) // the output may be what failed
		if sum.Drift > 0 {
			code = exitNo
			err = fmt.Errorf("%d drift found before it stopped: %w", sum.Drift, err)
		}
	}
	return &exitError{code, fmt.Errorf("books: the check could not finish: %w", err)}
}

// booksWriter is the writer of the settled --output format; JSON and CSV
// carry the report's head.
func (a *app) booksWriter(head booksReportOut) booksWriter {
	switch a.format {
	case outCSV:
		w := csv.NewWriter(a.stdout)
		return &booksCSV{a: a, w: w, safe: a.csvSafe, terminal: a.isTerminal(a.stdout), head: head}
	case outJSON:
		bw := bufio.NewWriterSize(a.stdout, 64<<10)
		jw := jsonWriter{w: bw}
		if a.isTerminal(a.stdout) {
			jw.secrets = a.secrets // a file or pipe gets the data exact
		}
		return &booksJSON{bw: bw, enc: json.NewEncoder(jw), head: head}
	}
	return &booksTable{a: a}
}

// booksJSON writes {"report": {...}, "items": [...], "summary": {...}},
// the items one a line as they come.
type booksJSON struct {
	bw      *bufio.Writer
	enc     *json.Encoder
	n       int
	head    booksReportOut
	started bool
}

// start writes the report's head and opens the items.
func (j *booksJSON) start() error {
	if j.started {
		return nil
	}
	j.started = true
	if _, err := j.bw.WriteString("{\"report\": "); err != nil {
		return err
	}
	if err := j.enc.Encode(j.head); err != nil {
		return err
	}
	_, err := j.bw.WriteString(",\n\"items\": [")
	return err
}

func (j *booksJSON) item(o booksItemOut) error {
	if err := j.start(); err != nil {
		return err
	}
	sep := ",\n"
	if j.n == 0 {
		sep = "\n"
	}
	j.n++
	if _, err := j.bw.WriteString(sep); err != nil {
		return err
	}
	return j.enc.Encode(o) // ends with a newline, which JSON allows before the comma
}

func (j *booksJSON) end(s booksSummaryOut) error {
	if err := j.start(); err != nil {
		return err
	}
	if _, err := j.bw.WriteString("],\n\"summary\": "); err != nil {
		return err
	}
	if err := j.enc.Encode(s); err != nil {
		return err
	}
	if _, err := j.bw.WriteString("}\n"); err != nil {
		return err
	}
	return j.bw.Flush()
}

// booksCSV writes the report's head as comment lines ("# key: value"),
// then one row per item, the column names first.
type booksCSV struct {
	a              *app
	w              *csv.Writer
	safe, terminal bool
	started        bool
	head           booksReportOut
}

// start writes the head and the column names.
func (c *booksCSV) start() error {
	if c.started {
		return nil
	}
	c.started = true
	for _, l := range c.head.lines() {
		if _, err := fmt.Fprintln(c.a.stdout, "# "+c.a.safeText(l)); err != nil {
			return err
		}
	}
	return c.w.Write(booksCSVHeader)
}

func (c *booksCSV) item(o booksItemOut) error {
	if err := c.start(); err != nil {
		return err
	}
	return c.w.Write(csvCells(o.csvRecord(), c.safe, c.terminal, c.a.secrets))
}

// end writes the header if no item came, and names each section that
// did not finish, and why, on stderr: a CSV has no place for it, and a
// file with the header alone must not read as books that tie.
func (c *booksCSV) end(s booksSummaryOut) error {
	if err := c.start(); err != nil {
		return err
	}
	c.w.Flush()
	for _, k := range slices.Sorted(maps.Keys(s.Unfinished)) {
		fmt.Fprintln(c.a.stderr, "cryptopay: books: "+c.a.safeText(k+" not finished: "+s.Unfinished[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(s.NotRead)) {
		fmt.Fprintln(c.a.stderr, "cryptopay: books: "+c.a.safeText(k+" not read: "+s.NotRead[k]))
	}
	return c.w.Error()
}

// booksTable lists the drift, the undecided and the adjusted items (up
// to booksTableCap), then the summary table.
type booksTable struct {
	a     *app
	rows  [][]string
	extra int
}

func (t *booksTable) item(o booksItemOut) error {
	if !o.Drift && o.Class != string(pgstore.BooksUndecided) && o.Class != string(pgstore.BooksAdjusted) {
		return nil
	}
	if len(t.rows) >= booksTableCap {
		t.extra++
		return nil
	}
	name := strings.ToUpper(strings.ReplaceAll(o.Class, "_", " "))
	t.rows = append(t.rows, []string{name, o.Section, o.OrderID, o.Ours, o.Theirs, signed(o.Delta), o.Currency + "/" + o.Network, o.Detail})
	return nil
}

// signed writes a delta with its sign, so "+10.25" reads as more at the
// provider.
func signed(d string) string {
	if v, err := decimal.NewFromString(d); err == nil && v.IsPositive() {
		return "+" + d
	}
	return d
}

func (t *booksTable) end(s booksSummaryOut) error {
	a := t.a
	if len(t.rows) > 0 {
		if err := a.printTable([]string{"CLASS", "SECTION", "ORDER ID", "OURS", "THEIRS", "DELTA", "CURRENCY", "WHY"}, t.rows); err != nil {
			return err
		}
		if t.extra > 0 {
			a.printLine("... and %d more: use --output json or --output csv for every item", t.extra)
		}
		fmt.Fprintln(a.stdout)
	}
	var rows [][]string
	for _, section := range slices.Sorted(maps.Keys(s.Counts)) {
		for _, class := range slices.Sorted(maps.Keys(s.Counts[section])) {
			rows = append(rows, []string{section, string(class), strconv.Itoa(s.Counts[section][class])})
		}
	}
	if err := a.printTable([]string{"SECTION", "CLASS", "ITEMS"}, rows); err != nil {
		return err
	}
	for _, section := range slices.Sorted(maps.Keys(s.DriftBySection)) {
		for _, k := range slices.Sorted(maps.Keys(s.DriftBySection[section])) {
			a.printLine("drift in %s (%s) %s: %s", section, booksMoney[section], k, signed(s.DriftBySection[section][k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.NotRead)) {
		a.printLine("%s not read: %s", k, s.NotRead[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.Unfinished)) {
		a.printLine("%s not finished: %s", k, s.Unfinished[k])
	}
	a.printLine("%d drift, %d in flight, %d undecided", s.Drift, s.InFlight, s.Undecided)
	return nil
}

// booksAdjustmentOut is a booked adjustment as the CLI writes it.
type booksAdjustmentOut struct {
	ID       int64  `json:"id"`
	At       string `json:"at"`
	Section  string `json:"section"`
	OrderID  string `json:"orderId,omitempty"`
	Currency string `json:"currency,omitempty"`
	Network  string `json:"network,omitempty"`
	Amount   string `json:"amount"`
	Actor    string `json:"actor"`
	Note     string `json:"note"`
}

// booksAdjust books a drift (pgstore.Books.Adjust): the database alone.
func (a *app) booksAdjust(args []string) error {
	cmd := command{"books adjust", "", "Book a drift the books check found, so the next check ties with it: --amount\n" +
		"(the drift's delta, exact) against one item: --section payouts or payments with\n" +
		"--order-id, or --section balances with --currency and --network. Recorded with\n" +
		"--actor and --note in the check's adjustments table (--balance-table with\n" +
		"_adjustments appended), never edited or deleted: book another to correct one.\n" +
		"See docs/books.md."}
	fs, db := a.newDBFlagSet(cmd, queueStore)
	var adj pgstore.BooksAdjustment
	var amount, balanceTable string
	fs.StringVar(&adj.Section, "section", "", "the `section` of the drift: payouts, payments or balances (required)")
	fs.StringVar(&adj.OrderID, "order-id", "", "the payout's or payment's `orderId` (payouts, payments)")
	fs.StringVar(&adj.Currency, "currency", "", "the balance's `currency` (balances); with payouts, the currency of a payout\n"+
		"of the orderId listed in another currency or network than its intent's")
	fs.StringVar(&adj.Network, "network", "", "the balance's `network` (balances); with payouts, as --currency")
	fs.StringVar(&amount, "amount", "", "the `amount` to book: the drift's delta, a signed plain decimal (required)")
	fs.StringVar(&balanceTable, "balance-table", pgstore.DefaultBooksBalanceTable, "the books check's own `table` of balance\n"+
		"snapshots; its adjustments are in this name with _adjustments appended (created if missing)")
	fs.StringVar(&adj.Note, "note", "", "why it is booked: what was found, a ticket (required)")
	actor := a.actorFlag(fs.FlagSet)
	_, asJSON, err := a.parseOutput(fs, args, 0, 0)
	if err != nil {
		return err
	}
	if adj.Amount, err = parseAmount(amount); err != nil {
		return usageErr("books adjust: --amount %q: %v", amount, err)
	}
	adj.Actor = *actor
	q, pool, err := a.openQueueReader(db)
	if err != nil {
		return err
	}
	defer pool.Close()
	b, err := pgstore.NewBooks(pgstore.BooksConfig{Queue: q, BalanceTable: balanceTable, CreateTable: true})
	if err != nil {
		return &exitError{exitUsage, err}
	}
	got, err := b.Adjust(a.ctx, adj)
	var ve *cryptopay.ValidationError
	if errors.As(err, &ve) {
		return usageErr("books adjust: %v", err)
	}
	if err != nil {
		return err
	}
	out := booksAdjustmentOut{ID: got.ID, At: got.At.UTC().Format(time.RFC3339Nano), Section: got.Section, OrderID: got.OrderID,
		Currency: got.Currency, Network: got.Network, Amount: money(got.Amount), Actor: got.Actor, Note: got.Note}
	if asJSON {
		return a.printJSON(out)
	}
	what := out.OrderID
	if out.Section == "balances" {
		what = out.Currency + "/" + out.Network
	}
	a.printLine("adjustment %d booked: %s %s %s by %s", out.ID, out.Section, what, signed(out.Amount), out.Actor)
	return nil
}
