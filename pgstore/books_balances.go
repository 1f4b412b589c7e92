package pgstore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
)

// balancePair is one currency and network.
type balancePair struct{ currency, network string }

func pairOf(currency, network string) balancePair {
	return balancePair{strings.ToLower(currency), strings.ToLower(network)}
}

// balanceAcc is what the balance section gathers for one pair: the
// previous snapshot, our cumulative credits and debits, the provider's
// balance, and the bounds of what is in flight.
type balanceAcc struct {
	prev                    *balanceSnap
	credited                decimal.Decimal // payments' merchantAmount in, all time, at start
	debited                 decimal.Decimal // payouts out, all time, as the list was read
	provider                decimal.NullDecimal
	outFlight, refund, move decimal.Decimal // payouts that may have been taken, given back, or moved since start
	feeOpen                 int             // payouts that may have been taken with a fee not known yet
	inFlight                decimal.Decimal // payments' merchantAmount the provider has and the tracker had not at start
	adjusted                adjSum          // the adjustments booked against the pair
	// What the provider has applied beyond what we count, by its own
	// records read in this check (the payout list, each payment): the
	// payouts' debits, the payments' merchantAmount; rollUnknown counts
	// the items whose part is not known (an opening cannot roll them back).
	rollPayouts, rollPayments decimal.Decimal
	rollUnknown               int
	// steady: the provider's balance read again after our side was read
	// was the same (an opening that rolls back what is in flight needs it).
	steady bool
}

// balanceSnap is a stored snapshot: our expected balance and the
// cumulative credits and debits it was rolled to.
type balanceSnap struct {
	at                         time.Time
	balance, credited, debited decimal.Decimal
	// opening says how the pair's opening was taken (the stored opening
	// row; read back from the pair's first row), openedAt when.
	opening  string
	openedAt time.Time
}

// balanceRun is one check's balance section.
type balanceRun struct {
	start time.Time // the database's clock when our side was read
	pairs map[balancePair]*balanceAcc
	// recent holds the state, at start, of each intent changed within
	// booksClockMargin before it: an intent found later in another state
	// (or not found here, and changed since) may have moved money while
	// the provider's balance was read.
	recent map[string]IntentState
	// debitsRead is set once the payouts section has read the debits
	// (balancePayouts); until then no pair can be decided.
	debitsRead bool
	// recentPay holds, for each tracked payment changed within
	// booksClockMargin before the start, its merchantAmount at start (nil:
	// none): what our credits counted of it.
	recentPay map[string]*string
	// openingColumn: the snapshot table has its opening column (an older
	// one made without CreateTable may not).
	openingColumn bool
}

func (r *balanceRun) acc(p balancePair) *balanceAcc {
	a := r.pairs[p]
	if a == nil {
		a = &balanceAcc{}
		r.pairs[p] = a
	}
	return a
}

// debitClass is what an intent's state says of its payout's debit under
// rule d: taken (the provider has taken it), flight (it may have), or
// none (it cannot have: never sent, refused, failed or, under
// DebitAtPaid, not paid yet). Under DebitAtCreate a created payout is
// taken and may still be given back (refund).
func debitClass(d PayoutDebit, s IntentState) string {
	switch s {
	case StatePaid:
		return "taken"
	case StateCreated:
		if d == DebitAtPaid {
			return "flight"
		}
		return "taken"
	case StateSending, StateReconciling, StateParked:
		return "flight"
	}
	return "none"
}

// debitStates are the intent states of each debitClass under rule d:
// taken, may be taken (flight), may be given back.
func debitStates(d PayoutDebit) (taken, flight, back []string) {
	for _, s := range States() {
		switch debitClass(d, s) {
		case "taken":
			taken = append(taken, string(s))
		case "flight":
			flight = append(flight, string(s))
		}
	}
	if d != DebitAtPaid {
		back = []string{string(StateCreated)}
	}
	return taken, flight, back
}

// movedMoney reports whether an intent now in state now, in state then at
// the start of the check (ok false: not known, changed since), may have
// moved money while the provider's balance was read. An intent that
// cannot have moved money (held for approval, queued, rejected, refused,
// blocked) never counts, nor one whose debit class did not change.
func movedMoney(d PayoutDebit, now, then IntentState, ok bool) bool {
	if ok {
		return debitClass(d, now) != debitClass(d, then)
	}
	switch now {
	case StateSending, StateReconciling, StateParked, StateCreated, StatePaid, StateFailed:
		return true
	}
	return false
}

// balanceStart reads our side in one snapshot (the tracker's credits, the
// state of each intent changed within booksClockMargin, the last
// snapshot), then the provider's balances. The payouts' debits are read
// with the payout list (balancePayouts).
func (b *Books) balanceStart(ctx context.Context, adj map[adjKey]adjSum) (*balanceRun, error) {
	run := &balanceRun{pairs: make(map[balancePair]*balanceAcc), recent: make(map[string]IntentState), recentPay: make(map[string]*string)}
	for k, a := range adj {
		if k.section == "balances" {
			run.acc(balancePair{k.currency, k.network}).adjusted = a
		}
	}
	pool := b.cfg.Queue.cfg.Pool
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&run.start); err != nil {
			return err
		}
		if err := run.sums(ctx, tx, `SELECT currency, network, COALESCE(sum(merchant_amount), 0)::text FROM `+b.cfg.Tracker.Table()+
			` WHERE currency <> '' GROUP BY 1, 2`, nil,
			func(a *balanceAcc, v []decimal.Decimal) { a.credited = a.credited.Add(v[0]) }); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT order_id, state FROM `+b.cfg.Queue.Table()+` WHERE updated_at > $1`,
			run.start.Add(-booksClockMargin))
		if err != nil {
			return err
		}
		var id, st string
		if _, err := pgx.ForEachRow(rows, []any{&id, &st}, func() error {
			run.recent[id] = IntentState(st)
			return nil
		}); err != nil {
			return err
		}
		if rows, err = tx.Query(ctx, `SELECT order_id, merchant_amount::text FROM `+b.cfg.Tracker.Table()+` WHERE updated_at > $1`,
			run.start.Add(-booksClockMargin)); err != nil {
			return err
		}
		var m *string
		if _, err := pgx.ForEachRow(rows, []any{&id, &m}, func() error {
			run.recentPay[id] = m
			return nil
		}); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'opening'
    AND NOT attisdropped)`, b.balanceTable()).Scan(&run.openingColumn); err != nil {
			return err
		}
		return run.readPrev(ctx, tx, b.balanceTable())
	})
	if err != nil {
		return nil, err
	}
	bals, err := b.cfg.Client.GetBalances(ctx)
	if err != nil {
		return nil, fmt.Errorf("the provider's balances: %w", err)
	}
	for _, bal := range bals {
		a := run.acc(pairOf(bal.Currency, bal.Network))
		a.provider = decimal.NewNullDecimal(a.provider.Decimal.Add(bal.Amount))
	}
	return run, nil
}

// sums reads rows of (currency, network, sums as text...) into the pairs.
func (r *balanceRun) sums(ctx context.Context, tx pgx.Tx, sql string, args []any, add func(*balanceAcc, []decimal.Decimal)) error {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		vals := rows.RawValues()
		v := make([]decimal.Decimal, len(vals)-2)
		for i := range v {
			if v[i], err = decimal.NewFromString(string(vals[i+2])); err != nil {
				return err
			}
		}
		add(r.acc(pairOf(string(vals[0]), string(vals[1]))), v)
	}
	return rows.Err()
}

// readPrev reads the latest snapshot of each pair.
func (r *balanceRun) readPrev(ctx context.Context, tx pgx.Tx, table string) error {
	rows, err := tx.Query(ctx, `SELECT DISTINCT ON (currency, network) currency, network, run_at, balance::text, credited::text, debited::text
FROM `+table+` ORDER BY currency, network, run_at DESC`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var cur, net, bal, cred, deb string
		s := &balanceSnap{}
		if err := rows.Scan(&cur, &net, &s.at, &bal, &cred, &deb); err != nil {
			return err
		}
		var err error
		if s.balance, err = decimal.NewFromString(bal); err == nil {
			if s.credited, err = decimal.NewFromString(cred); err == nil {
				s.debited, err = decimal.NewFromString(deb)
			}
		}
		if err != nil {
			return err
		}
		r.acc(pairOf(cur, net)).prev = s
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = tx.Query(ctx, `SELECT DISTINCT ON (currency, network) currency, network, run_at, COALESCE(to_jsonb(b)->>'opening', '')
FROM `+table+` b ORDER BY currency, network, run_at`)
	if err != nil {
		return err
	}
	var cur, net, how string
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&cur, &net, &at, &how}, func() error {
		if s := r.acc(pairOf(cur, net)).prev; s != nil {
			s.openedAt, s.opening = at, how
		}
		return nil
	})
	return err
}

// origin says where the pair's opening came from.
func (s *balanceSnap) origin() string {
	how := cmpOr(s.opening, "how is not recorded (taken by an older version)")
	return "opening of " + s.openedAt.UTC().Format(time.RFC3339) + ": " + how
}

// booksClockMargin is how far before the start of a check a change may
// have been stamped and still not be in the check's snapshot (a
// transaction stamps its rows when it begins and may commit later): the
// in-flight bounds look back that far.
const booksClockMargin = time.Minute

// booksDebitsSQL sums, per currency and network, what the queue's
// payouts took from the balance: the list's merchantAmount where it gives
// one (fees included; zero is how an unpaid payout's may read, so it
// counts as not given), else the intent's amount, which is exact only for
// a payout whose network fee the recipient bears or under FeesExcluded.
// An intent's payout is the first listed in its currency and network that
// can move money (else the first listed there), as in booksPayoutsSQL: a
// failed payout listed beside the paid one, or one in another currency or
// network, is not its debit. One row per pair (order_id NULL), then one row per intent changed since
// $4, in the same snapshot. $1, $2, $3 are the states taken, in flight
// and given back; $5 whether payouts are taken when paid, $6 whether fees
// are included. Each pair's row also has what the list shows the provider
// took beyond what we count (its roll back, for an opening) and how many
// intents' part of it is not known (taken by us and not listed, or a fee
// not known yet).
func booksDebitsSQL(intents string) string {
	return fmt.Sprintf(`WITH l AS (SELECT DISTINCT ON (l.order_id) l.order_id, l.merchant_amount::numeric AS m, l.status
    FROM %[2]s l JOIN %[1]s i ON i.order_id = l.order_id AND lower(l.currency) = lower(i.currency)
        AND lower(l.network) = lower(i.network)
    WHERE l.order_id <> '' ORDER BY l.order_id, l.status IN ('failed', 'cancelled'), l.pos),
q AS (SELECT i.order_id, i.currency, i.network, i.state, i.updated_at, i.network_fee_by_user OR l.m > 0 IS TRUE AS known,
    CASE WHEN l.m > 0 THEN l.m ELSE i.amount END AS debit, l.order_id IS NOT NULL AS listed,
    l.order_id IS NOT NULL AND l.status NOT IN ('failed', 'cancelled') AND (NOT $5 OR l.status = 'paid') AS applied
    FROM %[1]s i LEFT JOIN l ON l.order_id = i.order_id)
SELECT currency, network, NULL::text, '', COALESCE(sum(debit) FILTER (WHERE state = ANY($1)), 0)::text,
    COALESCE(sum(debit) FILTER (WHERE state = ANY($2)), 0)::text, COALESCE(sum(debit) FILTER (WHERE state = ANY($3)), 0)::text,
    (count(*) FILTER (WHERE state = ANY($1 || $2) AND NOT known))::int,
    COALESCE(sum(CASE WHEN applied THEN debit ELSE 0 END - CASE WHEN state = ANY($1) THEN debit ELSE 0 END), 0)::text,
    (count(*) FILTER (WHERE (state = ANY($1) AND NOT listed) OR ($6 AND NOT known AND applied <> (state = ANY($1)))))::int
FROM q GROUP BY 1, 2
UNION ALL
SELECT currency, network, order_id, state, debit::text, '0', '0', (NOT known)::int, '0', 0 FROM q WHERE updated_at > $4`,
		intents, booksListed)
}

// balancePayouts reads, with the payout list in tx (the payouts
// section's), what the queue's payouts took from each pair's balance, the
// bounds of what may be taken or given back, and what moved since the
// start: an intent whose debit class is not what it was at the start (or
// that changed since and can have moved money).
func (b *Books) balancePayouts(ctx context.Context, tx pgx.Tx, run *balanceRun) error {
	taken, flight, back := debitStates(b.cfg.PayoutDebit)
	fees := b.cfg.PayoutFees == FeesIncluded
	rows, err := tx.Query(ctx, booksDebitsSQL(b.cfg.Queue.Table()), taken, flight, back, run.start.Add(-booksClockMargin),
		b.cfg.PayoutDebit == DebitAtPaid, fees)
	if err != nil {
		return err
	}
	var cur, net, state, debit, fl, bk, roll string
	var id *string
	var unknown, rollUnknown int
	if _, err := pgx.ForEachRow(rows, []any{&cur, &net, &id, &state, &debit, &fl, &bk, &unknown, &roll, &rollUnknown}, func() error {
		v := make([]decimal.Decimal, 4)
		for i, s := range []string{debit, fl, bk, roll} {
			var err error
			if v[i], err = decimal.NewFromString(s); err != nil {
				return err
			}
		}
		a := run.acc(pairOf(cur, net))
		if id == nil {
			a.debited, a.outFlight, a.refund = a.debited.Add(v[0]), a.outFlight.Add(v[1]), a.refund.Add(v[2])
			a.rollPayouts, a.rollUnknown = a.rollPayouts.Add(v[3]), a.rollUnknown+rollUnknown
			if fees {
				a.feeOpen += unknown
			}
			return nil
		}
		then, ok := run.recent[*id]
		if movedMoney(b.cfg.PayoutDebit, IntentState(state), then, ok) {
			a.move = a.move.Add(v[0])
			if fees {
				a.feeOpen += unknown
			}
		}
		return nil
	}); err != nil {
		return err
	}
	run.debitsRead = true
	return nil
}

// balanceFinish rolls each pair forward, emits one item per pair and
// stores the new snapshots (not for an undecided pair: the next check
// rolls forward from the last decided one). Without the debits (the
// payout list could not be read) it decides nothing.
func (b *Books) balanceFinish(ctx context.Context, run *balanceRun, out func(BooksItem) error) (string, error) {
	if !run.debitsRead {
		return "the payouts' debits are not known: the payout list was not read to its end", ctx.Err()
	}
	if err := b.balanceAgain(ctx, run); err != nil {
		return "", err
	}
	pool := b.cfg.Queue.cfg.Pool
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		keys := slices.SortedFunc(maps.Keys(run.pairs), func(x, y balancePair) int {
			return cmp.Or(cmp.Compare(x.currency, y.currency), cmp.Compare(x.network, y.network))
		})
		for _, p := range keys {
			it, snap := b.balanceItem(p, run.pairs[p])
			if prev := run.pairs[p].prev; prev != nil { // each check says where its opening came from
				it.Detail = strings.TrimPrefix(it.Detail+"; "+prev.origin(), "; ")
			}
			if snap != nil {
				cols, args := "", []any{run.start, p.currency, p.network, snap.balance.String(), snap.credited.String(), snap.debited.String()}
				if run.openingColumn && snap.opening != "" {
					cols, args = ", opening", append(args, snap.opening)
				}
				if _, err := tx.Exec(ctx, `INSERT INTO `+b.balanceTable()+` (run_at, currency, network, balance, credited, debited`+cols+`)
SELECT $1, $2, $3, $4::numeric, $5::numeric, $6::numeric`+strings.Repeat(", $7", len(args)-6), args...); err != nil {
					return err
				}
			}
			if err := out(it); err != nil {
				return errEmit{err}
			}
		}
		return nil
	})
	if e, ok := err.(errEmit); ok {
		return "", e.err
	}
	if err != nil {
		return "the database: " + err.Error(), ctx.Err()
	}
	return "", nil
}

// balanceAgain reads the provider's balances a second time, if a pair
// without an opening has something in flight that its roll back can
// account for: a pair whose balance is the same as at the start is
// steady (nothing the check's reads saw can have moved it meanwhile). A
// failed read leaves every pair unsteady (no opening this time); only the
// check's own stop is an error.
func (b *Books) balanceAgain(ctx context.Context, run *balanceRun) error {
	need := false
	for _, a := range run.pairs {
		need = need || (a.prev == nil && a.provider.Valid && inFlight(a) && a.rollUnknown == 0)
	}
	if !need {
		return nil
	}
	bals, err := b.cfg.Client.GetBalances(ctx)
	if err != nil {
		return ctx.Err()
	}
	again := make(map[balancePair]decimal.Decimal)
	for _, bal := range bals {
		p := pairOf(bal.Currency, bal.Network)
		again[p] = again[p].Add(bal.Amount)
	}
	for p, a := range run.pairs {
		v, ok := again[p]
		a.steady = ok && a.provider.Valid && v.Equal(a.provider.Decimal)
	}
	return nil
}

// errEmit carries emit's error out of the snapshot's transaction.
type errEmit struct{ err error }

func (e errEmit) Error() string { return e.err.Error() }

// inFlight reports whether anything of the pair may be moving.
func inFlight(a *balanceAcc) bool {
	return !a.outFlight.IsZero() || !a.refund.IsZero() || !a.move.IsZero() || !a.inFlight.IsZero() || a.feeOpen > 0
}

// balanceItem classifies one pair and returns the snapshot to store (nil:
// none).
func (b *Books) balanceItem(p balancePair, a *balanceAcc) (BooksItem, *balanceSnap) {
	it := BooksItem{Section: "balances", Currency: p.currency, Network: p.network, Theirs: a.provider}
	snap := &balanceSnap{credited: a.credited, debited: a.debited}
	switch {
	case !a.provider.Valid:
		it.Class, it.Detail = BooksUndecided, "the provider reports no balance for this currency and network"
		return it, nil
	case a.prev == nil && !inFlight(a):
		snap.balance = a.provider.Decimal
		snap.opening = "taken at a check with nothing in flight: the provider's balance as it was"
		it.Ours = decimal.NewNullDecimal(snap.balance)
		it.Class, it.Detail = BooksOpening, "the first check: "+snap.opening
		return it, snap
	case a.prev == nil && a.rollUnknown > 0:
		it.Class, it.Detail = BooksUndecided, fmt.Sprintf("no opening balance yet: %d payouts or payments in flight cannot be rolled back "+
			"(not listed, not read, or a fee not known yet): the opening is taken at a later check", a.rollUnknown)
		return it, nil
	case a.prev == nil && !a.steady:
		it.Class, it.Detail = BooksUndecided, "no opening balance yet: the provider's balance moved while the check read what is in flight: the opening is taken at a later check"
		return it, nil
	case a.prev == nil:
		snap.balance = a.provider.Decimal.Add(a.rollPayouts).Sub(a.rollPayments)
		snap.opening = fmt.Sprintf("taken at a busy check: the provider's balance %s with what was in flight rolled back "+
			"(payouts taken beyond ours %s, payments in beyond ours %s)", a.provider.Decimal, a.rollPayouts, a.rollPayments)
		it.Ours = decimal.NewNullDecimal(snap.balance)
		it.Class, it.Detail = BooksOpening, "the first check: "+snap.opening
		return it, snap
	case b.cfg.PayoutDebit == DebitUndecided || b.cfg.PayoutFees == FeesUndecided:
		it.Class, it.Detail = BooksUndecided, "when payouts debit the balance, or whether fees are included, is not set: undecided rather than guessed"
		return it, nil
	}
	expected := a.prev.balance.Add(a.credited.Sub(a.prev.credited)).Sub(a.debited.Sub(a.prev.debited))
	snap.balance = expected // without the adjustments: every check adds them all
	it.Ours = decimal.NewNullDecimal(expected.Add(a.adjusted.amount))
	it.Delta = a.provider.Decimal.Sub(it.Ours.Decimal)
	if a.adjusted.n > 0 {
		it.Adjusted = decimal.NewNullDecimal(a.adjusted.amount)
	}
	lo := a.outFlight.Add(a.move).Neg()
	hi := a.refund.Add(a.move).Add(a.inFlight)
	switch {
	case it.Delta.IsZero() && a.adjusted.n > 0 && !expected.Equal(a.provider.Decimal):
		it.Class = BooksAdjusted
		it.Detail = fmt.Sprintf("%d adjustments book %s: the balance ties with them", a.adjusted.n, a.adjusted.amount)
	case it.Delta.IsZero():
		it.Class = BooksMatched
	case it.Delta.GreaterThanOrEqual(lo) && it.Delta.LessThanOrEqual(hi), it.Delta.IsNegative() && a.feeOpen > 0:
		it.Class = BooksInFlight
		it.Detail = fmt.Sprintf("within what is in flight: payouts up to %s out, %s back, payments up to %s in", a.outFlight.Add(a.move), a.refund.Add(a.move), a.inFlight)
		if a.feeOpen > 0 {
			it.Detail += fmt.Sprintf(", and %d payouts may have taken a fee not known until they are paid", a.feeOpen)
		}
	default:
		it.Class = BooksBalanceDrift
		it.Detail = "the provider's balance is not the last snapshot + payments in - payouts out"
	}
	return it, snap
}
