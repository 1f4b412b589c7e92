package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cryptopay/cryptopay-go"
)

// DefaultChannel is the pub/sub channel of NewWakeupBus.
const DefaultChannel = "cryptopay:wakeup"

// maxHint bounds the payload a bus accepts: a Wakeup is about 100 bytes.
const maxHint = 1 << 10

// BusOption configures NewWakeupBus.
type BusOption func(*WakeupBus) error

// WithChannel sets the pub/sub channel (default DefaultChannel). Every
// replica of one service must use the same channel; services that must not
// wake each other's waits need different ones.
func WithChannel(name string) BusOption {
	return func(b *WakeupBus) error {
		if name == "" {
			return errors.New("redisstore: empty channel name")
		}
		b.channel = name
		return nil
	}
}

// WithBusLogger receives a line for each hint dropped as malformed (nil
// discards). The payload itself is never logged.
func WithBusLogger(l *slog.Logger) BusOption {
	return func(b *WakeupBus) error {
		if l != nil {
			b.log = l
		}
		return nil
	}
}

// WakeupBus is a cryptopay.WakeupBus over Redis pub/sub: Publish sends a
// Wakeup as JSON on one channel and every subscriber, in every replica,
// receives it. Delivery is best effort, as the interface allows: a hint
// published while a subscriber is reconnecting is lost, and the waits it
// was meant for end at their next poll instead. A hint is never a status
// (the Client re-reads through the API), so anyone able to publish on the
// channel can cause extra API reads but cannot fake a payment.
type WakeupBus struct {
	rdb     redis.UniversalClient
	channel string
	log     *slog.Logger
}

var _ cryptopay.WakeupBus = (*WakeupBus)(nil)

// NewWakeupBus returns a bus on rdb (which it does not close). Each
// Subscribe holds one Redis connection of its own.
func NewWakeupBus(rdb redis.UniversalClient, opts ...BusOption) (*WakeupBus, error) {
	if rdb == nil {
		return nil, errors.New("redisstore: nil Redis client")
	}
	b := &WakeupBus{rdb: rdb, channel: DefaultChannel, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// Publish implements cryptopay.WakeupBus with one PUBLISH.
func (b *WakeupBus) Publish(ctx context.Context, w cryptopay.Wakeup) error {
	payload, err := json.Marshal(w)
	if err != nil {
		return fmt.Errorf("redisstore: encode wakeup: %w", err)
	}
	if err := b.rdb.Publish(ctx, b.channel, payload).Err(); err != nil {
		return fmt.Errorf("redisstore: publish wakeup: %w", err)
	}
	return nil
}

// Subscribe implements cryptopay.WakeupBus. It returns once Redis has
// confirmed the subscription (or with the error if it cannot within 5 s);
// after that a lost connection is re-established and the channel
// re-subscribed by go-redis, checked by a ping every few seconds. fn gets
// only well-formed hints (kind "payment" or "payout", an id).
func (b *WakeupBus) Subscribe(fn func(cryptopay.Wakeup)) (stop func(), err error) {
	if fn == nil {
		return nil, errors.New("redisstore: nil subscriber")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ps := b.rdb.Subscribe(ctx, b.channel)
	if _, err := ps.ReceiveTimeout(ctx, 5*time.Second); err != nil {
		_ = ps.Close()
		return nil, fmt.Errorf("redisstore: subscribe to %q: %w", b.channel, err)
	}
	msgs := ps.Channel(redis.WithChannelSize(256))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range msgs {
			if w, ok := b.decode(m.Payload); ok {
				fn(w)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { _ = ps.Close() })
		<-done
	}, nil
}

// decode parses a hint, dropping (and logging) anything malformed.
func (b *WakeupBus) decode(payload string) (cryptopay.Wakeup, bool) {
	var w cryptopay.Wakeup
	if len(payload) > maxHint {
		b.log.Warn("redisstore: dropped an oversized wakeup hint", slog.Int("bytes", len(payload)))
		return w, false
	}
	if err := json.Unmarshal([]byte(payload), &w); err != nil || (w.Kind != "payment" && w.Kind != "payout") || w.ID == "" {
		b.log.Warn("redisstore: dropped a malformed wakeup hint", slog.Int("bytes", len(payload)))
		return cryptopay.Wakeup{}, false
	}
	return w, true
}
