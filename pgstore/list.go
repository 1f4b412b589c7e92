package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pageLimit is a List page's size: limit, 100 when not positive, at most
// 10,000.
func pageLimit(limit int) int {
	if limit <= 0 {
		limit = 100
	}
	return min(limit, 10000)
}

// stateNames is states as the text the tables keep.
func stateNames[S ~string](states []S) []string {
	out := make([]string, len(states))
	for i, s := range states {
		out[i] = string(s)
	}
	return out
}

// listExecMode is how a List statement runs: as a one-off statement,
// planned with its values every time. Each filter (a currency, a date, an
// anomaly) is then served by its index; a cached generic plan, made for
// any value, keeps each "filter unset OR column = filter" whole and walks
// the table in orderId order, reading every row for a value that matches
// none (TestQueueListFiltersUseIndexes).
const listExecMode = pgx.QueryExecModeExec

// listRows runs a List statement (listExecMode) and scans every row; an
// error says what was being listed.
func listRows[T any](ctx context.Context, pool *pgxpool.Pool, what, sql string, scan func(pgx.Row, ...any) (*T, error), args ...any) ([]T, error) {
	rows, err := pool.Query(ctx, sql, append([]any{listExecMode}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("pgstore: listing %s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("pgstore: listing %s: %w", what, err)
		}
		out = append(out, *v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: listing %s: %w", what, err)
	}
	return out, nil
}

// getRow reads the one row of orderID: notFound (with the orderId) when
// there is none; other errors say what was being read.
func getRow[T any](ctx context.Context, pool *pgxpool.Pool, what, sql, orderID string, scan func(pgx.Row, ...any) (*T, error), notFound error) (*T, error) {
	v, err := scan(pool.QueryRow(ctx, sql, orderID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %q", notFound, orderID)
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: reading %s %q: %w", what, orderID, err)
	}
	return v, nil
}

// countStates runs a Counts statement, whose rows are a state and its
// count, and with needAction a third column: how many of them need action,
// summed into the second result. An error says what was being counted.
func countStates[S ~string](ctx context.Context, pool *pgxpool.Pool, what, sql string, needAction bool) (map[S]int, int, error) {
	rows, err := pool.Query(ctx, sql)
	if err != nil {
		return nil, 0, fmt.Errorf("pgstore: counting %s: %w", what, err)
	}
	out := make(map[S]int)
	var st string
	var n, action, total int
	dest := []any{&st, &n}
	if needAction {
		dest = append(dest, &action)
	}
	_, err = pgx.ForEachRow(rows, dest, func() error {
		out[S(st)] = n
		total += action
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("pgstore: counting %s: %w", what, err)
	}
	return out, total, nil
}
