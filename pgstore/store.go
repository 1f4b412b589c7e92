package pgstore

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults of NewDedupeStore.
const (
	// DefaultTable is the table a DedupeStore uses without WithTable.
	DefaultTable = "cryptopay_dedupe"
	// DefaultLease is how long a claim holds a key without WithLease:
	// longer than a callback should ever run.
	DefaultLease = 60 * time.Second
	// DefaultDoneTTL is how long a completed key is remembered without
	// WithDoneTTL: longer than the sender's retry window.
	DefaultDoneTTL = 72 * time.Hour
	// DefaultCleanupEvery is how often, at most, a store instance deletes
	// a batch of expired rows on its own (see WithCleanupEvery).
	DefaultCleanupEvery = 10 * time.Minute
)

// cleanupBatch bounds the rows one opportunistic cleanup deletes.
const cleanupBatch = 1000

// DedupeStore is a webhook.DedupeStore in a PostgreSQL table, shared by
// every replica that uses the same table. A claim is a lease that expires:
// a replica that dies mid-callback frees the key when its lease ends.
// Complete and Release act only on the caller's own lease, which is
// guarded by a random token per claim. Safe for concurrent use; build it
// with NewDedupeStore.
type DedupeStore struct {
	pool         *pgxpool.Pool
	table        pgx.Identifier
	lease        time.Duration
	doneTTL      time.Duration
	cleanupEvery time.Duration
	create       bool

	sqlClaim, sqlTakeOver, sqlComplete, sqlRelease, sqlCleanup string
	sqlLock, sqlInsertBusy, sqlMarkDone                        string
	beginTx                                                    string

	mu      sync.Mutex
	held    map[string]*lease // this instance's open claims, by key
	sweepAt int

	lastCleanup atomic.Int64 // unix nanoseconds
}

// lease is one claim held by this store instance.
type lease struct {
	token []byte
	at    time.Time
	// settled: a transactional callback (OnPayment, OnPayout) already
	// recorded the outcome in its own transaction.
	settled bool
}

// Option configures NewDedupeStore.
type Option func(*DedupeStore) error

// WithTable sets the table ("name" or "schema.name"; lower-case letters,
// digits and underscores, at most 48 characters for the name). Default
// DefaultTable. Give each application its own table.
func WithTable(name string) Option {
	return func(s *DedupeStore) error {
		id, err := parseTable(name)
		if err != nil {
			return err
		}
		s.table = id
		return nil
	}
}

// WithLease sets how long a claim holds a key before another replica may
// take it (default DefaultLease, at least 10 ms). Keep it well above the
// callback's longest run: a callback still running when its lease ends may
// run a second time on another replica. Keep it below the sender's retry
// window, or an event held by a dead replica is not retried after its lease
// ends.
func WithLease(d time.Duration) Option {
	return func(s *DedupeStore) error {
		if d < 10*time.Millisecond {
			return fmt.Errorf("%w: lease %v is under 10ms", ErrInvalidOption, d)
		}
		s.lease = d
		return nil
	}
}

// WithDoneTTL sets how long a completed key is remembered (default
// DefaultDoneTTL). It must outlast the sender's retry window: a duplicate
// that arrives later is delivered again.
func WithDoneTTL(d time.Duration) Option {
	return func(s *DedupeStore) error {
		if d < 10*time.Millisecond {
			return fmt.Errorf("%w: done TTL %v is under 10ms", ErrInvalidOption, d)
		}
		s.doneTTL = d
		return nil
	}
}

// WithCleanupEvery sets how often, at most, each store instance deletes up
// to 1000 expired rows in passing, after a Complete (default
// DefaultCleanupEvery); 0 turns that off, leaving it to Cleanup.
func WithCleanupEvery(d time.Duration) Option {
	return func(s *DedupeStore) error {
		if d < 0 {
			return fmt.Errorf("%w: cleanup interval %v is negative", ErrInvalidOption, d)
		}
		s.cleanupEvery = d
		return nil
	}
}

// WithCreateTable makes NewDedupeStore create the table and its index if
// they do not exist (CREATE ... IF NOT EXISTS), which needs the CREATE
// privilege. Without it, run the DDL of the package documentation (or call
// CreateTable) before the first event.
func WithCreateTable() Option {
	return func(s *DedupeStore) error {
		s.create = true
		return nil
	}
}

// NewDedupeStore returns a store on pool's database. Every replica builds
// its own instance on the same table; an instance remembers its own open
// claims (a few bytes each, until Complete or Release). With
// WithCreateTable it creates the table first, and fails if it cannot.
func NewDedupeStore(pool *pgxpool.Pool, opts ...Option) (*DedupeStore, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: pool is nil", ErrInvalidOption)
	}
	s := &DedupeStore{
		pool:         pool,
		table:        pgx.Identifier{DefaultTable},
		lease:        DefaultLease,
		doneTTL:      DefaultDoneTTL,
		cleanupEvery: DefaultCleanupEvery,
		held:         make(map[string]*lease),
		sweepAt:      1024,
	}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil option", ErrInvalidOption)
		}
		if err := o(s); err != nil {
			return nil, err
		}
	}
	s.buildSQL()
	s.lastCleanup.Store(time.Now().UnixNano())
	if s.create {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.CreateTable(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Table returns the table name, quoted for SQL.
func (s *DedupeStore) Table() string { return s.table.Sanitize() }

// DDL returns the statements that create the store's table and index.
func (s *DedupeStore) DDL() string {
	ddl := tableDDL(s.Table(), dedupeColumns) + indexDDL(s.table, s.Table(), index{"_expires_at_idx", "(expires_at)"})
	return strings.TrimSuffix(ddl, "\n") // as it always was: no newline after the last statement
}

// dedupeColumns are the dedupe table's columns.
const dedupeColumns = `    key        bytea       PRIMARY KEY,
    token      bytea       NOT NULL,
    done       boolean     NOT NULL DEFAULT false,
    expires_at timestamptz NOT NULL`

// CreateTable creates the table and its index if they do not exist.
func (s *DedupeStore) CreateTable(ctx context.Context) error {
	return createTable(ctx, s.pool, s.table, s.DDL())
}

// buildSQL renders the statements for the store's table. All times are
// the server's clock (clock_timestamp), so replicas with skewed clocks
// agree on when a lease ends.
func (s *DedupeStore) buildSQL() {
	t := s.Table()
	const micros = "$3::bigint * interval '1 microsecond'"
	// One round trip for a new key or a duplicate. The CTE inserts the key
	// if it is free; it neither writes nor waits for a key that exists (a
	// transactional delivery may hold its row lock). The outer SELECT reads
	// the existing row from the statement's snapshot: a row committed
	// concurrently reads as missing, which Claim answers as in progress.
	s.sqlClaim = `WITH ins AS (
  INSERT INTO ` + t + ` (key, token, done, expires_at)
  VALUES ($1, $2, false, clock_timestamp() + ` + micros + `)
  ON CONFLICT (key) DO NOTHING
  RETURNING 1
)
SELECT EXISTS (SELECT FROM ins), d.done, d.expires_at <= clock_timestamp(), d.token = $2
FROM (SELECT) AS one LEFT JOIN ` + t + ` AS d ON d.key = $1`
	// Takes over an expired row (a lease whose holder died, or a done key
	// past its TTL); a second round trip, only for such keys. The token
	// test makes a repeated attempt find its own take-over.
	s.sqlTakeOver = `WITH upd AS (
  UPDATE ` + t + ` SET token = $2, done = false, expires_at = clock_timestamp() + ` + micros + `
  WHERE key = $1 AND (expires_at <= clock_timestamp() OR token = $2)
  RETURNING 1
)
SELECT EXISTS (SELECT FROM upd), (SELECT done FROM ` + t + ` WHERE key = $1)`
	// Marks the key done if the caller's token still holds it. The token
	// stays, so a repeated attempt matches again. No row at all (a cleanup
	// deleted the expired lease, nobody else claimed it): record it done.
	s.sqlComplete = `INSERT INTO ` + t + ` AS d (key, token, done, expires_at)
VALUES ($1, $2, true, clock_timestamp() + ` + micros + `)
ON CONFLICT (key) DO UPDATE SET done = true, expires_at = excluded.expires_at
 WHERE d.token = excluded.token`
	s.sqlRelease = `DELETE FROM ` + t + ` WHERE key = $1 AND token = $2 AND NOT done`
	s.sqlCleanup = `DELETE FROM ` + t + ` WHERE key IN (
  SELECT key FROM ` + t + ` WHERE expires_at < clock_timestamp()
  ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)`
	// Transactional delivery (tx.go).
	s.beginTx = fmt.Sprintf("BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE; SET LOCAL idle_in_transaction_session_timeout = %d", max(s.lease.Milliseconds(), 1))
	s.sqlLock = `SELECT done AND expires_at > clock_timestamp() FROM ` + t + ` WHERE key = $1 FOR UPDATE`
	s.sqlInsertBusy = `INSERT INTO ` + t + ` (key, token, done, expires_at)
VALUES ($1, $2, false, clock_timestamp() + ` + micros + `) ON CONFLICT (key) DO NOTHING`
	s.sqlMarkDone = `UPDATE ` + t + ` SET done = true, expires_at = clock_timestamp() + $2::bigint * interval '1 microsecond' WHERE key = $1`
}

// newToken returns a random lease token.
func newToken() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return b
}
