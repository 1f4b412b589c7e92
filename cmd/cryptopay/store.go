package main

import (
	"context"
	"errors"
	"flag"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cryptopay/cryptopay-go"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// store is a pgstore table the CLI opens: the payout queue or the payment
// tracker.
type store struct {
	what      string // in the flags' help: "the payout queue"
	short     string // "queue"
	tableFlag string // "queue-table"
	table     string // the default table
	config    string // the configuration field naming the table
	maxConns  int32
}

var (
	queueStore   = store{"the payout queue", "queue", "queue-table", pgstore.DefaultQueueTable, "pgstore.QueueConfig.Table", 4}
	trackerStore = store{"the payment tracker", "tracker", "tracker-table", pgstore.DefaultTrackerTable, "pgstore.TrackerConfig.Table", 2}
)

// dbFlags are the database flag set: one connection string, and the
// table of each store the command opens.
type dbFlags struct {
	databaseURL string
	tables      map[string]*string // by store.short
}

// table is store s's table, as its flag names it.
func (f *dbFlags) table(s store) string { return *f.tables[s.short] }

// registerDatabase registers the database flag set for the stores given:
// --database-url (without a password: ps shows flags) and each store's
// table flag.
func registerDatabase(fs *cmdFlags, stores ...store) *dbFlags {
	db := &dbFlags{tables: map[string]*string{}}
	what := make([]string, len(stores))
	for i, s := range stores {
		what[i] = s.what
	}
	fs.shared(setDatabase, func(f *flag.FlagSet) {
		f.StringVar(&db.databaseURL, "database-url", "", "PostgreSQL connection `string` of "+strings.Join(what, " and ")+" (default $"+envDatabaseURL+");\n"+
			"without a password (ps shows flags): put it in $"+envDatabaseURL+", $PGPASSWORD or ~/.pgpass")
		for _, s := range stores {
			db.tables[s.short] = f.String(s.tableFlag, s.table, "the "+s.short+"'s `table` (\"name\" or \"schema.name\"), as in "+s.config)
		}
	})
	return db
}

// newDBFlagSet returns the flag set of a command that works on the
// stores' database and never calls the API (payout queue ... but resolve,
// payout batch, payment tracked ...): the database flags and, of the
// global flags, --output alone. Its --help does not list the API's flags,
// which would do nothing, and parse refuses them naming the flag.
func (a *app) newDBFlagSet(cmd command, stores ...store) (*cmdFlags, *dbFlags) {
	fs := bareFlagSet(cmd)
	fs.dbOnly = true
	fs.shared(setOutput, a.global.registerOutput)
	return fs, registerDatabase(fs, stores...)
}

// newDBAPIFlagSet is newDBFlagSet for a command that also calls the API
// (payout queue resolve, books): it takes every global flag too.
func (a *app) newDBAPIFlagSet(cmd command, stores ...store) (*cmdFlags, *dbFlags) {
	fs := a.newFlagSet(cmd)
	return fs, registerDatabase(fs, stores...)
}

// schemaChecker is a pgstore store: its table can be checked.
type schemaChecker interface {
	CheckSchema(context.Context) error
}

// openStore connects to f's database and builds store st on its table,
// with its schema checked; it returns the pool, for the caller to close.
// The connection string and its password are kept among the secrets: no
// error prints them.
func openStore[S schemaChecker](a *app, f *dbFlags, st store, build func(*pgxpool.Pool, string) (S, error)) (S, *pgxpool.Pool, error) {
	var zero S
	pool, err := a.openPool(f.databaseURL, st.maxConns)
	if err != nil {
		return zero, nil, err
	}
	s, err := build(pool, f.table(st))
	if err == nil {
		err = s.CheckSchema(a.ctx)
	}
	if err != nil {
		pool.Close()
		return zero, nil, storeErr(err)
	}
	return s, pool, nil
}

// withStore opens a store with open, calls read on it and closes it.
func withStore[S, T any](a *app, open func(*dbFlags) (S, *pgxpool.Pool, error), db *dbFlags, read func(S) (T, error)) (T, error) {
	var zero T
	s, pool, err := open(db)
	if err != nil {
		return zero, err
	}
	defer pool.Close()
	return read(s)
}

// recordStore reads one record and its history by orderId: the queue's
// intents, the tracker's payments.
type recordStore[R, H any] interface {
	Get(context.Context, string) (R, error)
	History(context.Context, string) ([]H, error)
}

// readRecord opens a store with open and reads orderID's record and its
// history, for a show command.
func readRecord[R, H any, S recordStore[R, H]](a *app, open func(*dbFlags) (S, *pgxpool.Pool, error), db *dbFlags, orderID string) (R, []H, error) {
	var zero R
	s, pool, err := open(db)
	if err != nil {
		return zero, nil, err
	}
	defer pool.Close()
	r, err := s.Get(a.ctx, orderID)
	if err != nil {
		return zero, nil, err
	}
	hist, err := s.History(a.ctx, orderID)
	return r, hist, err
}

// storeErr maps a pgstore constructor's or schema check's error to the
// CLI's exit codes: a bad table name or a missing or out-of-date table is
// configuration (usage), anything else a failure.
func storeErr(err error) error {
	if errors.Is(err, pgstore.ErrInvalidOption) || errors.Is(err, pgstore.ErrSchema) {
		return &exitError{exitUsage, err}
	}
	return err
}

// listFlags are the flags of a store's list: states, page and size.
type listFlags struct {
	states, after string
	limit         int
}

// registerList registers --state, --after and --limit for a list of noun;
// a list writes a table, JSON or CSV.
func (a *app) registerList(fs *cmdFlags, noun string) *listFlags {
	a.writes(fs, outJSON, outTable, outCSV)
	l := &listFlags{}
	fs.StringVar(&l.states, "state", "", "keep "+noun+" in these `states` (comma-separated; default all)")
	fs.StringVar(&l.after, "after", "", "page: only orderIds after this `orderId` (the last one of the previous page)")
	fs.IntVar(&l.limit, "limit", 100, "at most `n` "+noun+" (up to 10000)")
	return l
}

// parseList checks l's limit and parses its states, each one of valid.
func parseList[S ~string](cmd string, l *listFlags, valid []S) ([]S, error) {
	if l.limit <= 0 || l.limit > 10000 {
		return nil, usageErr("%s: --limit must be 1 to 10000", cmd)
	}
	if l.states == "" {
		return nil, nil
	}
	var states []S
	for s := range strings.SplitSeq(l.states, ",") {
		st := S(strings.TrimSpace(s))
		if !slices.Contains(valid, st) {
			return nil, usageErr("%s: --state %q: want one of %s", cmd, s, strings.Join(names(valid), ", "))
		}
		states = append(states, st)
	}
	return states, nil
}

// names are states as strings.
func names[S ~string](states []S) []string {
	out := make([]string, len(states))
	for i, s := range states {
		out[i] = string(s)
	}
	return out
}

// printList prints items: as JSON, each through out, or as a table of
// header, a row each.
func printList[T, O any](a *app, asJSON bool, items []T, out func(*T) O, header []string, row func(*T) []string) error {
	if asJSON {
		o := make([]O, len(items))
		for i := range items {
			o[i] = out(&items[i])
		}
		return a.printJSON(o)
	}
	rows := make([][]string, len(items))
	for i := range items {
		rows[i] = row(&items[i])
	}
	return a.printTable(header, rows)
}

// openQueue opens the payout queue (with no API client unless one is
// given: only resolve calls the API) and returns its pool, for the caller
// to close.
func (a *app) openQueue(f *dbFlags, g pgstore.Guardrails, client ...*cryptopay.Client) (*pgstore.Queue, *pgxpool.Pool, error) {
	return openStore(a, f, queueStore, func(pool *pgxpool.Pool, table string) (*pgstore.Queue, error) {
		qcfg := pgstore.QueueConfig{Pool: pool, Table: table, Guardrails: g}
		if len(client) > 0 {
			qcfg.Client = client[0]
		}
		return pgstore.NewQueue(a.ctx, qcfg)
	})
}

// openQueueReader opens the payout queue to read it or make an operator's
// move: no guardrails, no API client.
func (a *app) openQueueReader(f *dbFlags) (*pgstore.Queue, *pgxpool.Pool, error) {
	return a.openQueue(f, pgstore.Guardrails{})
}

// openTracker opens the payment tracker (with no API client: no tracker
// command calls the API) and returns its pool, for the caller to close.
func (a *app) openTracker(f *dbFlags) (*pgstore.Tracker, *pgxpool.Pool, error) {
	return openStore(a, f, trackerStore, func(pool *pgxpool.Pool, table string) (*pgstore.Tracker, error) {
		return pgstore.NewTracker(a.ctx, pgstore.TrackerConfig{Pool: pool, Table: table})
	})
}

// refundsStore is the refunds' tables; a refund command opens the queue's
// and the tracker's on the same database too.
var refundsStore = store{"the refunds", "refunds", "refunds-table", pgstore.DefaultRefundsTable, "pgstore.RefundsConfig.Table", 4}

// openRefunds opens the refunds on the queue and the tracker of one
// database (db's tables), every table checked, as a move's stores; it
// returns the pool, for the caller to close.
func (a *app) openRefunds(db *dbFlags) (pgstore.Stores, *pgxpool.Pool, error) {
	var s pgstore.Stores
	rf, pool, err := openStore(a, db, refundsStore, func(pool *pgxpool.Pool, table string) (*pgstore.Refunds, error) {
		q, err := pgstore.NewQueue(a.ctx, pgstore.QueueConfig{Pool: pool, Table: db.table(queueStore)})
		if err != nil {
			return nil, err
		}
		tr, err := pgstore.NewTracker(a.ctx, pgstore.TrackerConfig{Pool: pool, Table: db.table(trackerStore)})
		if err != nil {
			return nil, err
		}
		if err := errors.Join(q.CheckSchema(a.ctx), tr.CheckSchema(a.ctx)); err != nil {
			return nil, err
		}
		s.Queue, s.Tracker = q, tr
		return pgstore.NewRefunds(a.ctx, pgstore.RefundsConfig{Queue: q, Tracker: tr, Table: table})
	})
	s.Refunds = rf
	return s, pool, err
}
