package pgstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// countingTracer counts the statements a pool sends (each is one round
// trip to the server).
type countingTracer struct{ n atomic.Int64 }

func (c *countingTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *countingTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// countedPool is a pool whose statements are counted.
func countedPool(t testing.TB, srv *pgtest.Server, maxConns int32) (*pgxpool.Pool, *countingTracer) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(srv.DSN())
	require.NoError(t, err)
	cfg.MaxConns = maxConns
	tr := &countingTracer{}
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool, tr
}

// The cost of an event in statements (round trips), counted: the numbers
// BENCHMARKS.md quotes.
func TestStatementsPerEvent(t *testing.T) {
	f := setup(t)
	pool, tr := countedPool(t, f.srv, 2)
	st, err := pgstore.NewDedupeStore(pool, pgstore.WithTable(f.table), pgstore.WithCleanupEvery(0))
	require.NoError(t, err)
	m := f.merchant(t)
	ctx := context.Background()
	count := func(fn func()) int64 {
		before := tr.n.Load()
		fn()
		return tr.n.Load() - before
	}

	assert.Equal(t, int64(2), count(func() {
		c, err := st.Claim(ctx, "payment/a/paid")
		require.NoError(t, err)
		require.Equal(t, webhook.DedupeClaimed, c)
		require.NoError(t, st.Complete(ctx, "payment/a/paid"))
	}), "new event: Claim + Complete")
	assert.Equal(t, int64(1), count(func() {
		c, err := st.Claim(ctx, "payment/a/paid")
		require.NoError(t, err)
		require.Equal(t, webhook.DedupeSeen, c)
	}), "duplicate: Claim only")
	assert.Equal(t, int64(2), count(func() {
		_, err := st.Claim(ctx, "payment/b/paid")
		require.NoError(t, err)
		require.NoError(t, st.Release(ctx, "payment/b/paid"))
	}), "failed callback: Claim + Release")

	ev := paymentEvent(t, "paid")
	p := &cryptopay.Payment{ID: ev.id, OrderID: ev.orderID, Status: cryptopay.PaymentPaid}
	assert.Equal(t, int64(6), count(func() {
		_, err := st.Claim(ctx, ev.key())
		require.NoError(t, err)
		require.NoError(t, pgstore.OnPayment(st, m.credit)(ctx, p))
		require.NoError(t, st.Complete(ctx, ev.key()))
	}), "transactional: Claim, BEGIN, lock, the merchant's INSERT, done mark, COMMIT; Complete sends nothing")
}

// BenchmarkDedupeStore measures a new event's Claim + Complete and a
// duplicate's Claim on a loopback server, one caller and 16.
func BenchmarkDedupeStore(b *testing.B) {
	srv := pgtest.Need(b)
	pool := srv.Pool(b, 16)
	table := pgtest.Name("bench")
	st, err := pgstore.NewDedupeStore(pool, pgstore.WithTable(table), pgstore.WithCreateTable())
	require.NoError(b, err)
	ctx := context.Background()
	var seq atomic.Int64
	newEvent := func(b *testing.B) {
		k := fmt.Sprintf("payment/%d/paid", seq.Add(1))
		if c, err := st.Claim(ctx, k); err != nil || c != webhook.DedupeClaimed {
			b.Fatalf("Claim: %v %v", c, err)
		}
		if err := st.Complete(ctx, k); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("new/seq", func(b *testing.B) {
		for b.Loop() {
			newEvent(b)
		}
	})
	b.Run("new/16", func(b *testing.B) {
		b.SetParallelism(8) // 8 x GOMAXPROCS(2)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				newEvent(b)
			}
		})
	})
	b.Run("duplicate/seq", func(b *testing.B) {
		for b.Loop() {
			if c, err := st.Claim(ctx, "payment/1/paid"); err != nil || c != webhook.DedupeSeen {
				b.Fatalf("Claim: %v %v", c, err)
			}
		}
	})
}

// BenchmarkTxDelivery measures a transactional delivery with one merchant
// INSERT: Claim, the transaction, Complete.
func BenchmarkTxDelivery(b *testing.B) {
	srv := pgtest.Need(b)
	pool := srv.Pool(b, 16)
	table, credits := pgtest.Name("bench"), pgtest.Name("credits")
	st, err := pgstore.NewDedupeStore(pool, pgstore.WithTable(table), pgstore.WithCreateTable())
	require.NoError(b, err)
	ctx := context.Background()
	_, err = pool.Exec(ctx, "CREATE TABLE "+credits+" (payment_id text, status text)")
	require.NoError(b, err)
	fn := pgstore.OnPayment(st, func(ctx context.Context, tx pgx.Tx, p *cryptopay.Payment) error {
		_, err := tx.Exec(ctx, "INSERT INTO "+credits+" VALUES ($1, $2)", p.ID, string(p.Status))
		return err
	})
	var seq atomic.Int64
	for b.Loop() {
		p := &cryptopay.Payment{ID: fmt.Sprint(seq.Add(1)), Status: cryptopay.PaymentPaid}
		k := "payment/" + p.ID + "/paid"
		if c, err := st.Claim(ctx, k); err != nil || c != webhook.DedupeClaimed {
			b.Fatalf("Claim: %v %v", c, err)
		}
		if err := fn(ctx, p); err != nil {
			b.Fatal(err)
		}
		if err := st.Complete(ctx, k); err != nil {
			b.Fatal(err)
		}
	}
}
