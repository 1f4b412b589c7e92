package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cryptopay/cryptopay-go"
)

// DefaultChannel is the LISTEN/NOTIFY channel a WakeupBus uses without
// WithChannel.
const DefaultChannel = "cryptopay_wakeup"

// maxPayload is the largest NOTIFY payload PostgreSQL accepts, minus one.
const maxPayload = 7999

// Bus timing: how long Subscribe waits for its first LISTEN, how long the
// listener may sit idle before it checks its connection, and the bounds of
// its reconnection backoff.
const (
	busConnectTimeout = 10 * time.Second
	busIdleCheck      = 30 * time.Second
	busMinBackoff     = 50 * time.Millisecond
	busMaxBackoff     = 5 * time.Second
)

// WakeupBus is a cryptopay.WakeupBus over PostgreSQL's LISTEN/NOTIFY: a
// hint published by one replica reaches every replica listening on the same
// channel of the same database, usually within a millisecond or two. Hints
// are JSON-encoded cryptopay.Wakeup values. Safe for concurrent use; build
// it with NewWakeupBus.
//
// Delivery is best effort, as the interface allows: a hint published while
// a listener is reconnecting (after a server restart, say) is lost, which
// costs only latency because waits keep polling. Anyone who can run NOTIFY
// on the database can send hints; a hint is never a status (the woken wait
// re-reads the object through the API), so a forged one costs at most an
// API read.
type WakeupBus struct {
	pool    *pgxpool.Pool
	channel string
	connCfg *pgx.ConnConfig
}

// BusOption configures NewWakeupBus.
type BusOption func(*WakeupBus) error

// WithChannel sets the channel (lower-case letters, digits and
// underscores, at most 63 bytes; default DefaultChannel). Replicas of one
// service share a channel; give other services on the same database their
// own.
func WithChannel(name string) BusOption {
	return func(b *WakeupBus) error {
		if !identRe.MatchString(name) || len(name) > 63 {
			return fmt.Errorf("%w: channel %q must match [a-z_][a-z0-9_]* (at most 63 bytes)", ErrInvalidOption, name)
		}
		b.channel = name
		return nil
	}
}

// NewWakeupBus returns a bus on pool's database. Publish uses the pool;
// each Subscribe opens its own connection with the pool's connection
// settings (one more connection per subscriber than the pool's own).
func NewWakeupBus(pool *pgxpool.Pool, opts ...BusOption) (*WakeupBus, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: pool is nil", ErrInvalidOption)
	}
	b := &WakeupBus{pool: pool, channel: DefaultChannel, connCfg: pool.Config().ConnConfig}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil option", ErrInvalidOption)
		}
		if err := o(b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// Channel returns the bus's channel name.
func (b *WakeupBus) Channel() string { return b.channel }

// Publish implements cryptopay.WakeupBus: one NOTIFY (SELECT pg_notify) on
// the pool. It fails if the hint's JSON exceeds PostgreSQL's payload limit
// (8000 bytes) or the database is unreachable.
func (b *WakeupBus) Publish(ctx context.Context, w cryptopay.Wakeup) error {
	payload, err := json.Marshal(w)
	if err != nil {
		return fmt.Errorf("pgstore: encoding the hint: %w", err)
	}
	if len(payload) > maxPayload {
		return fmt.Errorf("pgstore: hint of %d bytes exceeds the NOTIFY limit", len(payload))
	}
	if _, err := b.pool.Exec(ctx, "SELECT pg_notify($1, $2)", b.channel, string(payload)); err != nil {
		return fmt.Errorf("pgstore: publishing the hint: %w", err)
	}
	return nil
}

// Subscribe implements cryptopay.WakeupBus. It opens a dedicated
// connection and LISTENs on the channel before returning (an error if that
// fails within 10 s), so every hint published after Subscribe returns
// reaches fn unless the connection breaks. A goroutine then calls fn for
// each hint; payloads that are not a Wakeup with a kind and an id are
// skipped. When the connection breaks (a server restart) it reconnects with
// jittered backoff (50 ms up to 5 s) and listens again. stop closes the
// connection and waits until fn is no longer running; it is safe to call
// twice.
func (b *WakeupBus) Subscribe(fn func(cryptopay.Wakeup)) (stop func(), err error) {
	if fn == nil {
		return nil, fmt.Errorf("%w: Subscribe needs a function", ErrInvalidOption)
	}
	cctx, cancel := context.WithTimeout(context.Background(), busConnectTimeout)
	conn, err := b.listen(cctx)
	cancel()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { b.loop(ctx, conn, fn) })
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			wg.Wait()
		})
	}, nil
}

// listen opens a connection and LISTENs on the channel.
func (b *WakeupBus) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, b.connCfg.Copy())
	if err != nil {
		return nil, fmt.Errorf("pgstore: connecting the listener: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{b.channel}.Sanitize()); err != nil {
		closeConn(conn)
		return nil, fmt.Errorf("pgstore: LISTEN: %w", err)
	}
	return conn, nil
}

// loop delivers notifications until ctx ends, replacing the connection
// when it breaks.
func (b *WakeupBus) loop(ctx context.Context, conn *pgx.Conn, fn func(cryptopay.Wakeup)) {
	defer func() {
		if conn != nil {
			closeConn(conn)
		}
	}()
	for {
		wctx, cancel := context.WithTimeout(ctx, busIdleCheck)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			if w, ok := decodeWakeup(n.Payload); ok {
				fn(w)
			}
			continue
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			// Idle for a while: check that the connection still works.
			pctx, pcancel := context.WithTimeout(ctx, busConnectTimeout)
			err = conn.Ping(pctx)
			pcancel()
			if err == nil {
				continue
			}
		}
		closeConn(conn)
		if conn = b.reconnect(ctx); conn == nil {
			return
		}
	}
}

// reconnect listens again, backing off between attempts, until it
// succeeds (the new connection) or ctx ends (nil).
func (b *WakeupBus) reconnect(ctx context.Context) *pgx.Conn {
	wait := busMinBackoff
	for {
		// Jittered, so replicas cut off together do not reconnect in step.
		t := time.NewTimer(wait/2 + rand.N(wait/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, busConnectTimeout)
		conn, err := b.listen(cctx)
		cancel()
		if err == nil {
			return conn
		}
		wait = min(2*wait, busMaxBackoff)
	}
}

// decodeWakeup reads a payload, refusing anything but a payment or payout
// hint with an id.
func decodeWakeup(payload string) (cryptopay.Wakeup, bool) {
	var w cryptopay.Wakeup
	if json.Unmarshal([]byte(payload), &w) != nil || w.ID == "" || (w.Kind != "payment" && w.Kind != "payout") {
		return cryptopay.Wakeup{}, false
	}
	return w, true
}

func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}
