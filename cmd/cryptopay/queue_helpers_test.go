package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/internal/addrcodec"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/pgstoretest"
)

// One PostgreSQL server serves every test of the package that needs one;
// each test uses its own queue table.
func TestMain(m *testing.M) { os.Exit(pgstoretest.Main(m)) }

// dbPassword is in every test's connection string; it must never reach
// stdout or stderr. (The test server trusts loopback, so any password
// connects.)
const dbPassword = "Pg-s3cret-Passw0rd"

// queueFixture is a fake API, a PostgreSQL database and a queue table the
// CLI is pointed at through CRYPTOPAY_DATABASE_URL.
type queueFixture struct {
	*fixture
	pool  *pgxpool.Pool
	table string
	q     *pgstore.Queue // the application's view of the same table
}

func setupQueue(t *testing.T) *queueFixture {
	t.Helper()
	srv := pgstoretest.Need(t)
	f := setup(t)
	qf := &queueFixture{fixture: f, pool: srv.Pool(t, 8), table: pgstoretest.Name("intents")}
	f.env[envDatabaseURL] = fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/postgres?sslmode=disable", dbPassword, srv.Port)
	qf.q = qf.queue(t, nil, pgstore.Guardrails{})
	return qf
}

// queue is the application's queue on the fixture's table, with its
// guardrails; with a client it can Run.
func (qf *queueFixture) queue(t *testing.T, client *cryptopay.Client, g pgstore.Guardrails) *pgstore.Queue {
	t.Helper()
	q, err := pgstore.NewQueue(context.Background(), pgstore.QueueConfig{
		Pool: qf.pool, Client: client, Table: qf.table, CreateTable: true, Guardrails: g,
		Lease: 4 * time.Second, SendTimeout: time.Second, PollInterval: 20 * time.Millisecond,
		FollowEvery: 30 * time.Millisecond, BackoffMin: 30 * time.Millisecond, BackoffMax: 300 * time.Millisecond,
		ReconcileSettleTime: 300 * time.Millisecond, ReconcileClockSkew: time.Second,
	})
	require.NoError(t, err)
	return q
}

// cli runs the CLI on the fixture's table and checks that neither stream
// carries the database password or a control character other than a
// line break.
func (qf *queueFixture) cli(tm terms, args ...string) result {
	qf.t.Helper()
	r := qf.runCLI(tm, "", append(args, "--queue-table", qf.table)...)
	assertClean(qf.t, r)
	return r
}

func (qf *queueFixture) run(args ...string) result { return qf.cli(terms{}, args...) }

// assertClean: no database password and no terminal control character
// (but the line breaks, and the progress bar's carriage returns on a
// terminal's stderr) in what the CLI printed.
func assertClean(t *testing.T, r result) {
	t.Helper()
	for name, s := range map[string]string{"stdout": r.stdout, "stderr": strings.ReplaceAll(r.stderr, "\r", "")} {
		assert.NotContains(t, s, dbPassword, name)
		assert.False(t, strings.ContainsFunc(s, func(c rune) bool { return c != '\n' && unsafeRune(c) }), "%s has a control character: %q", name, s)
	}
}

// count is how many intents the table holds.
func (qf *queueFixture) count(t *testing.T) int {
	t.Helper()
	n, err := qf.q.Counts(context.Background())
	require.NoError(t, err)
	total := 0
	for _, c := range n {
		total += c
	}
	return total
}

// state is the intent's state.
func (qf *queueFixture) state(t *testing.T, orderID string) *pgstore.Intent {
	t.Helper()
	in, err := qf.q.Get(context.Background(), orderID)
	require.NoError(t, err)
	return in
}

// runWorker runs q until the test ends or stop is called.
func runWorker(t *testing.T, q *pgstore.Queue) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.Run(ctx) }()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return stop
}

// waitState polls (counts, not clocks: the deadline only ends a hung
// test) until orderID is in state want.
func (qf *queueFixture) waitState(t *testing.T, orderID string, want pgstore.IntentState) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		in, err := qf.q.Get(context.Background(), orderID)
		if err == nil && in.State == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s to be %s: %+v %v", orderID, want, in, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// batchHeader is a full header in the columns' order.
var batchHeader = []string{"orderId", "walletAddress", "amount", "currency", "network", "customerId", "customerIp",
	"networkFeeByUser", "additionalData", "webhookUrl"}

// batchRecord is row i of a generated batch: two currencies, 18-decimal
// amounts (a float anywhere on the way would show in the totals).
func batchRecord(prefix string, i int) []string {
	cur := "usdt"
	if i%3 == 0 {
		cur = "eth"
	}
	return []string{fmt.Sprintf("%s-%05d", prefix, i), testWallet(i), fmt.Sprintf("%d.%06d", 1+i%500, i+1), cur, "tron",
		fmt.Sprintf("c%d", i%7), "203.0.113.7", fmt.Sprint(i%2 == 0), "", ""}
}

// testWallet is a valid TRON address for i, derived from fixed text:
// nobody holds its key.
func testWallet(i int) string {
	sum := sha256.Sum256([]byte("cryptopay-go test wallet " + strconv.Itoa(i)))
	return addrcodec.EncodeBase58Check(0x41, sum[:20])
}

// csvFile writes records under header to a temp file and returns its path.
func csvFile(t *testing.T, header []string, records ...[]string) string {
	t.Helper()
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	require.NoError(t, w.Write(header))
	require.NoError(t, w.WriteAll(records))
	return writeFile(t, "payouts.csv", b.String())
}
