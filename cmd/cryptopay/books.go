package main

import (
	"bufio"
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
		Ours: nullMoney(it.Ours), Theirs: nullMoney(it.Theirs), Delta: money(it.Delta), Ledger: nullMoney(it.Ledger),
		OurStatus: it.OurStatus, TheirStatus: it.TheirStatus, Currency: it.Currency, Network: it.Network,
		OurWallet: it.OurWallet, TheirWallet: it.TheirWallet, Payouts: it.Payouts, Detail: it.Detail}
}

// booksCSVHeader names the CSV columns, in order.
var booksCSVHeader = []string{"section", "order_id", "class", "drift", "ours", "theirs", "delta", "ledger",
	"our_status", "their_status", "currency", "network", "our_wallet", "their_wallet", "payouts", "detail"}

func (o booksItemOut) csvRecord() []string {
	return []string{o.Section, o.OrderID, o.Class, strconv.FormatBool(o.Drift), o.Ours, o.Theirs, o.Delta, o.Ledger,
		o.OurStatus, o.TheirStatus, o.Currency, o.Network, o.OurWallet, o.TheirWallet, strconv.Itoa(o.Payouts), o.Detail}
}

// booksSummaryOut is the summary as the CLI writes it.
type booksSummaryOut struct {
	Counts      map[string]map[pgstore.BooksClass]int `json:"counts"`
	Drift       int                                   `json:"drift"`
	InFlight    int                                   `json:"inFlight"`
	Undecided   int                                   `json:"undecided"`
	DriftAmount map[string]string                     `json:"driftAmount"`
	Unfinished  map[string]string                     `json:"unfinished"`
	Clean       bool                                  `json:"clean"`
}

func newBooksSummaryOut(s *pgstore.BooksSummary) booksSummaryOut {
	out := booksSummaryOut{Counts: s.Counts, Drift: s.Drift, InFlight: s.InFlight, Undecided: s.Undecided,
		DriftAmount: make(map[string]string, len(s.DriftAmount)), Unfinished: s.Unfinished, Clean: s.Clean()}
	for k, v := range s.DriftAmount {
		out.DriftAmount[k] = money(v)
	}
	return out
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
	balanceTable, debit, fees  string
	settle                     time.Duration
	db                         *dbFlags
	pageSize                   *int
}

func (f *booksFlags) register(a *app, fs *cmdFlags) {
	f.pageSize = a.pageSize(fs)
	fs.StringVar(&f.sections, "sections", "payouts,payments", "the `sections` to check (comma-separated): payouts, payments,\n"+
		"balances (which needs the other two and stores a snapshot in --balance-table)")
	fs.StringVar(&f.balanceTable, "balance-table", pgstore.DefaultBooksBalanceTable, "the books check's own `table` of balance snapshots\n"+
		"(created if missing)")
	fs.StringVar(&f.debit, "payout-debit", "", "`when` the provider takes a payout from the balance: created or paid\n"+
		"(the API does not say; unset: balances are undecided)")
	fs.StringVar(&f.fees, "payout-fees", "", "whether a payout takes a fee on top of its amount: `excluded` or included\n"+
		"(unset: balances are undecided)")
	fs.StringVar(&f.since, "since", "", "check the payments tracked or changed at or after this `time` (RFC 3339; default all)")
	fs.StringVar(&f.ledgerSQL, "ledger-sql", "", "your ledger: a `query` returning (order_id, credited) per orderId, compared\n"+
		"with what the tracker credited")
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
		if s != "payouts" && s != "payments" && s != "balances" {
			return since, usageErr("books: --sections %q: want payouts, payments, balances", s)
		}
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
		"the check could not finish."}, queueStore, trackerStore)
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
	cfg.BalanceTable, cfg.CreateTable, cfg.PayoutDebit, cfg.PayoutFees = f.balanceTable, true, payoutDebits[f.debit], payoutFees[f.fees]
	return a.runBooks(cfg, a.booksWriter())
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
		return booksStopped(w, sum, err)
	}
	if err := w.end(newBooksSummaryOut(sum)); err != nil {
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
func booksStopped(w booksWriter, sum *pgstore.BooksSummary, err error) error {
	code := exitNotYet
	if sum != nil {
		_ = w.end(newBooksSummaryOut(sum)) // the output may be what failed
		if sum.Drift > 0 {
			code = exitNo
			err = fmt.Errorf("%d drift found before it stopped: %w", sum.Drift, err)
		}
	}
	return &exitError{code, fmt.Errorf("books: the check could not finish: %w", err)}
}

// booksWriter is the writer of the settled --output format.
func (a *app) booksWriter() booksWriter {
	switch a.format {
	case outCSV:
		w := csv.NewWriter(a.stdout)
		return &booksCSV{a: a, w: w, safe: a.csvSafe, terminal: a.isTerminal(a.stdout)}
	case outJSON:
		bw := bufio.NewWriterSize(a.stdout, 64<<10)
		jw := jsonWriter{w: bw}
		if a.isTerminal(a.stdout) {
			jw.secrets = a.secrets // a file or pipe gets the data exact
		}
		return &booksJSON{bw: bw, enc: json.NewEncoder(jw)}
	}
	return &booksTable{a: a}
}

// booksJSON writes {"items": [...], "summary": {...}}, the items one a
// line as they come.
type booksJSON struct {
	bw  *bufio.Writer
	enc *json.Encoder
	n   int
}

func (j *booksJSON) item(o booksItemOut) error {
	sep := ",\n"
	if j.n == 0 {
		sep = "{\"items\": [\n"
	}
	j.n++
	if _, err := j.bw.WriteString(sep); err != nil {
		return err
	}
	return j.enc.Encode(o) // ends with a newline, which JSON allows before the comma
}

func (j *booksJSON) end(s booksSummaryOut) error {
	head := "],\n\"summary\": "
	if j.n == 0 {
		head = "{\"items\": [],\n\"summary\": "
	}
	if _, err := j.bw.WriteString(head); err != nil {
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

// booksCSV writes one row per item, the header first.
type booksCSV struct {
	a              *app
	w              *csv.Writer
	safe, terminal bool
	started        bool
}

func (c *booksCSV) item(o booksItemOut) error {
	if !c.started {
		c.started = true
		if err := c.w.Write(booksCSVHeader); err != nil {
			return err
		}
	}
	return c.w.Write(csvCells(o.csvRecord(), c.safe, c.terminal, c.a.secrets))
}

func (c *booksCSV) end(booksSummaryOut) error {
	if !c.started {
		if err := c.w.Write(booksCSVHeader); err != nil {
			return err
		}
	}
	c.w.Flush()
	return c.w.Error()
}

// booksTable lists the drift and the undecided items (up to
// booksTableCap), then the summary table.
type booksTable struct {
	a     *app
	rows  [][]string
	extra int
}

func (t *booksTable) item(o booksItemOut) error {
	if !o.Drift && o.Class != string(pgstore.BooksUndecided) {
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
	for _, k := range slices.Sorted(maps.Keys(s.DriftAmount)) {
		a.printLine("drift %s: %s", k, signed(s.DriftAmount[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(s.Unfinished)) {
		a.printLine("%s not finished: %s", k, s.Unfinished[k])
	}
	a.printLine("%d drift, %d in flight, %d undecided", s.Drift, s.InFlight, s.Undecided)
	return nil
}
