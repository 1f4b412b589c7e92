package pgstore_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore"
	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
	"github.com/cryptopay/cryptopay-go/webhook"
)

func TestOptions(t *testing.T) {
	pool := pgtest.Need(t).Pool(t, 1)
	tests := []struct {
		name string
		opt  pgstore.Option
		ok   bool
	}{
		{"table", pgstore.WithTable("my_dedupe"), true},
		{"schema.table", pgstore.WithTable("app.my_dedupe_2"), true},
		{"upper case", pgstore.WithTable("MyTable"), false},
		{"empty", pgstore.WithTable(""), false},
		{"quote", pgstore.WithTable(`x"; DROP TABLE y; --`), false},
		{"three parts", pgstore.WithTable("a.b.c"), false},
		{"empty schema", pgstore.WithTable(".b"), false},
		{"leading digit", pgstore.WithTable("1abc"), false},
		{"name too long", pgstore.WithTable(strings.Repeat("a", 49)), false},
		{"name at limit", pgstore.WithTable(strings.Repeat("a", 48)), true},
		{"non-ASCII", pgstore.WithTable("dédupe"), false},
		{"lease", pgstore.WithLease(time.Second), true},
		{"lease too short", pgstore.WithLease(time.Millisecond), false},
		{"negative lease", pgstore.WithLease(-time.Second), false},
		{"done TTL", pgstore.WithDoneTTL(time.Hour), true},
		{"done TTL zero", pgstore.WithDoneTTL(0), false},
		{"cleanup off", pgstore.WithCleanupEvery(0), true},
		{"cleanup negative", pgstore.WithCleanupEvery(-1), false},
		{"nil option", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := pgstore.NewDedupeStore(pool, tc.opt)
			if tc.ok {
				require.NoError(t, err)
				assert.NotNil(t, st)
				return
			}
			assert.ErrorIs(t, err, pgstore.ErrInvalidOption)
			assert.Nil(t, st)
		})
	}
	_, err := pgstore.NewDedupeStore(nil)
	assert.ErrorIs(t, err, pgstore.ErrInvalidOption)
}

// The DDL in the package documentation is the one CreateTable runs.
func TestDDLInPackageDoc(t *testing.T) {
	st, err := pgstore.NewDedupeStore(pgtest.Need(t).Pool(t, 1))
	require.NoError(t, err)
	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	var want strings.Builder
	for _, line := range strings.Split(st.DDL(), "\n") {
		want.WriteString("//\t" + line + "\n")
	}
	assert.Contains(t, string(doc), want.String())
}

func TestCreateTable(t *testing.T) {
	srv := pgtest.Need(t)
	pool := srv.Pool(t, 2)
	ctx := context.Background()
	schema := pgtest.Name("app")
	_, err := pool.Exec(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	table := schema + "." + pgtest.Name("dedupe")

	// Without the table a Claim fails with an error (the handler answers
	// 503), not a panic.
	st, err := pgstore.NewDedupeStore(pool, pgstore.WithTable(table))
	require.NoError(t, err)
	_, err = st.Claim(ctx, "payment/x/paid")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not exist")

	for range 2 { // idempotent
		st, err = pgstore.NewDedupeStore(pool, pgstore.WithTable(table), pgstore.WithCreateTable())
		require.NoError(t, err)
	}
	got, err := st.Claim(ctx, "payment/x/paid")
	require.NoError(t, err)
	assert.Equal(t, webhook.DedupeClaimed, got)
	var idx int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM pg_indexes WHERE schemaname = $1", schema).Scan(&idx))
	assert.Equal(t, 2, idx, "primary key and expires_at index")

	// A role that may not create tables gets the error from NewDedupeStore.
	_, err = pgstore.NewDedupeStore(pool, pgstore.WithTable("pg_catalog.x"), pgstore.WithCreateTable())
	assert.Error(t, err)
}
