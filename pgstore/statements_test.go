package pgstore

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// positional matches a positional parameter ($1, $2, ...).
var positional = regexp.MustCompile(`\$([0-9]+)`)

// maxPositional is the highest positional parameter stmt uses (0: none).
func maxPositional(stmt string) int {
	most := 0
	for _, m := range positional.FindAllStringSubmatch(stmt, -1) {
		n, _ := strconv.Atoi(m[1])
		most = max(most, n)
	}
	return most
}

// No statement pgstore builds takes ten or more positional parameters: one
// that needs as many names them (@name, bound by namedArgs), so
// a call reads like the columns it fills and a missing or misspelt one is
// an error, not a NULL. Checked on what every builder returns and, for the
// statements written inline, on every string literal of the package.
func TestStatementsTakeAtMostNinePositionalParameters(t *testing.T) {
	t.Parallel()
	store := &DedupeStore{table: pgx.Identifier{"dedupe"}}
	store.buildSQL()
	for _, tc := range []struct {
		builder string
		stmts   map[string]string
	}{
		{"buildQueueSQL", statements(reflect.ValueOf(buildQueueSQL(`"q"`, `"q_history"`, 1000)))},
		{"buildTrackerSQL", statements(reflect.ValueOf(buildTrackerSQL(`"t"`, `"t_history"`, `"t_moves"`)))},
		{"DedupeStore.buildSQL", map[string]string{"claim": store.sqlClaim, "takeOver": store.sqlTakeOver,
			"complete": store.sqlComplete, "release": store.sqlRelease, "cleanup": store.sqlCleanup,
			"lock": store.sqlLock, "insertBusy": store.sqlInsertBusy, "markDone": store.sqlMarkDone}},
		{"booksPayoutsSQL", map[string]string{"payouts": booksPayoutsSQL(`"q"`)}},
		{"booksPaymentsSQL", map[string]string{"without a ledger": booksPaymentsSQL(`"t"`, `"t_history"`, "", false),
			"with a ledger": booksPaymentsSQL(`"t"`, `"t_history"`, `SELECT order_id, credited FROM ledger`, true)}},
		{"booksDebitsSQL", map[string]string{"debits": booksDebitsSQL(`"q"`)}},
		{"booksPayoutLedgerSQL", map[string]string{"payout ledger": booksPayoutLedgerSQL(`"q"`, `SELECT order_id, booked FROM ledger`)}},
		{"healthSQL", map[string]string{"health": healthSQL(`"t"`, "true", "true")}},
		{"the package's string literals", sourceLiterals(t)},
	} {
		t.Run(tc.builder, func(t *testing.T) {
			require.NotEmpty(t, tc.stmts)
			for name, stmt := range tc.stmts {
				assert.Less(t, maxPositional(stmt), 10,
					"%s takes ten or more positional parameters: name them (@name, namedArgs)\n%s", name, stmt)
			}
		})
	}
}

// sourceLiterals returns every string literal of the package's source
// (tests aside), by position.
func sourceLiterals(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				s, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				out[fmt.Sprint(fset.Position(lit.Pos()))] = s
			}
			return true
		})
	}
	return out
}

// A statement's highest positional parameter is found wherever it stands.
func TestMaxPositional(t *testing.T) {
	t.Parallel()
	for stmt, want := range map[string]int{
		"SELECT 1":                          0,
		"SELECT $1, $2":                     2,
		"SELECT $9 FROM t WHERE a = $10":    10,
		"UPDATE t SET a = $18::numeric":     18,
		"SELECT @order_id, '$' || @amount":  0,
		"SELECT $3 WHERE b = $1 OR c = $12": 12,
	} {
		assert.Equal(t, want, maxPositional(stmt), stmt)
	}
}
