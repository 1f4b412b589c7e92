package pgstore

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// engine is what the payout queue and the payment tracker share: their
// table, the check of its schema, their workers' logger and watch of
// failures, and the channel that wakes their idle workers.
type engine struct {
	table  pgx.Identifier
	wake   chan struct{}
	log    *slog.Logger
	watch  watch
	schema schema
	// refusals records the webhook refusals WebhookRefused is told of.
	refusals refusalLog
}

// engineConfig is what NewQueue and NewTracker take alike from their
// configurations, defaults applied.
type engineConfig struct {
	config string // the configuration's type, named in errors
	pool   *pgxpool.Pool
	table  string // "name" or "schema.name"
	logger *slog.Logger
	poll   time.Duration
	ddl    func() string // the engine's DDL, for the schema check
}

// init checks c's pool and table and sets the engine up: the logger (the
// default one if c has none), the watch of failures and the schema check.
func (e *engine) init(c engineConfig) error {
	if c.pool == nil {
		return fmt.Errorf("%w: %s.Pool is nil", ErrInvalidOption, c.config)
	}
	table, err := parseTable(c.table)
	if err != nil {
		return err
	}
	e.table, e.wake, e.log = table, make(chan struct{}, 1), c.logger
	if e.log == nil {
		e.log = defaultLogger()
	}
	e.watch.log, e.watch.key.base = e.log, c.poll
	e.schema = schema{pool: c.pool, config: c.config, ddl: c.ddl}
	e.refusals.init(c.pool, sibling(table, "_webhook_refusals").Sanitize(), &e.watch)
	return nil
}

// health is the Health of the engine's work (the health statement stmt)
// with the webhook refusals recorded beside its table.
func (e *engine) health(ctx context.Context, pool *pgxpool.Pool, noun, stmt string, lease time.Duration) (Health, error) {
	h, err := e.watch.health(ctx, pool, noun, stmt, lease)
	if err != nil {
		return Health{}, err
	}
	if err := e.refusals.stats(ctx, &h); err != nil {
		return Health{}, err
	}
	return h, nil
}

// poke wakes this process's idle workers.
func (e *engine) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}
