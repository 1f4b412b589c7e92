package pgstore

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cryptopay/cryptopay-go/webhook"
)

// refusalFlushEvery bounds the writes of refusals: at most one per this
// interval per Queue or Tracker, however many deliveries are refused
// (a flood of forged requests costs one row update a second).
const refusalFlushEvery = time.Second

// maxRefusalReasons bounds the reasons kept between two writes; reasons
// past it are counted as "other".
const maxRefusalReasons = 32

// refusalColumns are the refusals table's columns: one row per reason.
const refusalColumns = `    reason   text        PRIMARY KEY,
    status   integer     NOT NULL,
    count    bigint      NOT NULL,
    first_at timestamptz NOT NULL DEFAULT now(),
    last_at  timestamptz NOT NULL DEFAULT now()`

// refusalLog records the webhook refusals a handler reports (through
// WebhookRefused) in the table beside a Queue's or a Tracker's, in batches
// at most once per refusalFlushEvery, and reads them back for Health.
type refusalLog struct {
	mu       sync.Mutex
	pending  map[webhook.RefusalReason]pendingRefusal
	flushing bool // a write is scheduled
	failures int  // writes failed in a row
	pool     *pgxpool.Pool
	watch    *watch
	table    string // quoted
	upsert   string
	read     string
	// after runs f after d (time.AfterFunc; a test's own).
	after func(d time.Duration, f func())
}

type pendingRefusal struct {
	n      int64
	status int
}

// init sets the log up on table (quoted).
func (l *refusalLog) init(pool *pgxpool.Pool, table string, w *watch) {
	l.pool, l.table, l.watch = pool, table, w
	l.after = func(d time.Duration, f func()) { time.AfterFunc(d, f) }
	l.upsert = fmt.Sprintf(`INSERT INTO %[1]s AS t (reason, status, count)
SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[])
ON CONFLICT (reason) DO UPDATE SET count = t.count + excluded.count, status = excluded.status, last_at = now()`, table)
	l.read = fmt.Sprintf(`SELECT COALESCE(sum(count), 0)::bigint, min(first_at), max(last_at),
    COALESCE((array_agg(reason ORDER BY last_at DESC, reason))[1], ''),
    COALESCE((array_agg(status ORDER BY last_at DESC, reason))[1], 0),
    COALESCE(max(last_at) > now() - $1 * interval '1 microsecond', false),
    COALESCE(array_agg(reason ORDER BY reason), '{}'), COALESCE(array_agg(count ORDER BY reason), '{}')
FROM %s`, table)
}

// record counts r for the next write and schedules it; it never blocks on
// the database.
func (l *refusalLog) record(r webhook.Refusal) {
	why := r.Reason
	if len(why) > 64 {
		why = why[:64]
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == nil {
		l.pending = make(map[webhook.RefusalReason]pendingRefusal)
	}
	if _, ok := l.pending[why]; !ok && len(l.pending) >= maxRefusalReasons {
		why = "other"
	}
	p := l.pending[why]
	p.n++
	p.status = r.StatusCode
	l.pending[why] = p
	l.schedule()
}

// schedule starts the timer of the next write unless one is set; l.mu
// held.
func (l *refusalLog) schedule() {
	if l.flushing {
		return
	}
	l.flushing = true
	l.after(doubling(refusalFlushEvery, time.Minute, l.failures), func() { _ = l.flush(context.Background()) })
}

// flush writes the pending counts; on failure they stay pending (logged,
// written again later, the wait doubling up to a minute).
func (l *refusalLog) flush(ctx context.Context) error {
	l.mu.Lock()
	batch := l.pending
	l.pending, l.flushing = nil, false
	l.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	reasons, statuses, counts := make([]string, 0, len(batch)), make([]int32, 0, len(batch)), make([]int64, 0, len(batch))
	for why, p := range batch {
		reasons, statuses, counts = append(reasons, string(why)), append(statuses, int32(p.status)), append(counts, p.n)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := l.pool.Exec(ctx, l.upsert, reasons, statuses, counts)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		l.failures = 0
		return nil
	}
	l.failures++
	if l.pending == nil {
		l.pending = make(map[webhook.RefusalReason]pendingRefusal)
	}
	for why, p := range batch {
		q := l.pending[why]
		q.n += p.n
		q.status = cmpOr(q.status, p.status)
		l.pending[why] = q
	}
	l.schedule()
	l.watch.warn(ctx, "pgstore: recording webhook refusals", slog.String("table", l.table), slog.String("error", errText(err)))
	return fmt.Errorf("pgstore: recording webhook refusals: %w", err)
}

// stats reads the recorded refusals into h.
func (l *refusalLog) stats(ctx context.Context, h *Health) error {
	s := &h.WebhookRefusals
	var since, last *time.Time
	var lastReason string
	var lastStatus int32
	var reasons []string
	var counts []int64
	err := l.pool.QueryRow(ctx, l.read, WebhookRefusalWindow.Microseconds()).Scan(&s.Count, &since, &last, &lastReason,
		&lastStatus, &h.WebhookRefusing, &reasons, &counts)
	if err != nil {
		return fmt.Errorf("pgstore: reading the webhook refusals: %w", err)
	}
	if since != nil {
		s.Since = *since
	}
	if last != nil {
		s.LastAt = *last
	}
	s.Last, s.LastStatus = webhook.RefusalReason(lastReason), int(lastStatus)
	if len(reasons) > 0 {
		s.ByReason = make(map[webhook.RefusalReason]int64, len(reasons))
		for i, why := range reasons {
			s.ByReason[webhook.RefusalReason(why)] = counts[i]
		}
	}
	return nil
}
