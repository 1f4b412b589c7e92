package pgstore

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// namedStatements returns the built statements with named parameters,
// each with an argument for each name ("value of " + the name).
func namedStatements(t *testing.T) map[string]namedArgs {
	t.Helper()
	out := map[string]namedArgs{}
	for _, built := range []any{buildQueueSQL(`"q"`, `"q_history"`, 1000), buildTrackerSQL(`"t"`, `"t_history"`, `"t_moves"`)} {
		for _, stmt := range statements(reflect.ValueOf(built)) {
			if !strings.Contains(stmt, "@") {
				continue
			}
			args := namedArgs{}
			for _, m := range paramCandidate.FindAllStringSubmatch(stmt, -1) {
				args[m[1]] = "value of " + m[1]
			}
			out[stmt] = args
		}
	}
	require.GreaterOrEqual(t, len(out), 6, "the queue's insert, list and set, the tracker's insert, set and record")
	return out
}

// namedArgs sends what pgx.StrictNamedArgs sends, for every statement with
// named parameters: the same text (so the same prepared statement) and the
// same values in the same order.
func TestNamedArgsNumbersAsPgx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for stmt, args := range namedStatements(t) {
		wantSQL, wantArgs, err := pgx.StrictNamedArgs(args).RewriteQuery(ctx, nil, stmt, nil)
		require.NoError(t, err)
		for range 2 { // numbered, then from the numbering kept
			gotSQL, gotArgs, err := args.RewriteQuery(ctx, nil, stmt, nil)
			require.NoError(t, err)
			assert.Equal(t, wantSQL, gotSQL)
			assert.Equal(t, wantArgs, gotArgs)
		}
	}
}

// A name the statement uses and the call lacks, or one it does not use,
// is an error, as with pgx.StrictNamedArgs: never a NULL bound in its
// place, never a value silently dropped.
func TestNamedArgsRefusesMissingOrExtraNames(t *testing.T) {
	t.Parallel()
	const stmt = `UPDATE t SET paid_amount = @paid_amount::numeric, note = '@not_a_name' WHERE order_id = @order_id -- @nor_this`
	for _, tc := range []struct {
		name    string
		args    namedArgs
		wantErr string
	}{
		{"exact", namedArgs{"paid_amount": "10", "order_id": "o1"}, ""},
		{"missing", namedArgs{"order_id": "o1"}, "1 named arguments for a statement with 2 parameters"},
		{"misspelt", namedArgs{"paid_amt": "10", "order_id": "o1"}, "@paid_amount has no named argument"},
		{"extra", namedArgs{"paid_amount": "10", "order_id": "o1", "note": "x"}, "3 named arguments for a statement with 2 parameters"},
		{"a name in a literal", namedArgs{"paid_amount": "10", "order_id": "o1", "not_a_name": "x"}, "3 named arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sql, args, err := tc.args.RewriteQuery(context.Background(), nil, stmt, nil)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, `UPDATE t SET paid_amount = $1::numeric, note = '@not_a_name' WHERE order_id = $2 -- @nor_this`, sql)
			assert.Equal(t, []any{"10", "o1"}, args)
		})
	}
}

// Bound again, a statement costs one allocation (its arguments' slice):
// it is not lexed again (pgx.NamedArgs makes about 80 allocations for
// the tracker's record, every call).
func TestNamedArgsNumberOnce(t *testing.T) {
	ctx := context.Background()
	// The tests before this one may have filled the numberings with their
	// tables' statements: start with room for these.
	numberings.Clear()
	numbered.Store(0)
	for stmt, args := range namedStatements(t) {
		_, _, err := args.RewriteQuery(ctx, nil, stmt, nil)
		require.NoError(t, err)
		allocs := testing.AllocsPerRun(20, func() { _, _, _ = args.RewriteQuery(ctx, nil, stmt, nil) })
		assert.LessOrEqual(t, allocs, 1.0, stmt)
	}
}

// The numberings kept are bounded: statement texts name their table, so a
// process that builds Queues and Trackers on ever more tables must not
// grow the cache without end. Past the bound a text is numbered on every
// call, and still bound exactly.
func TestNamedArgsNumberingsAreBounded(t *testing.T) {
	ctx := context.Background()
	for i := range maxNumberings + 200 {
		stmt := fmt.Sprintf(`SELECT @a::numeric, @b FROM "bounded_%d" WHERE x = @a`, i)
		t.Cleanup(func() { // room again for the other tests' statements
			if _, ok := numberings.LoadAndDelete(stmt); ok {
				numbered.Add(-1)
			}
		})
		sql, args, err := namedArgs{"a": "1", "b": "2"}.RewriteQuery(ctx, nil, stmt, nil)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf(`SELECT $1::numeric, $2 FROM "bounded_%d" WHERE x = $1`, i), sql)
		require.Equal(t, []any{"1", "2"}, args)
	}
	kept := 0
	numberings.Range(func(_, _ any) bool { kept++; return true })
	assert.LessOrEqual(t, kept, maxNumberings)
}
