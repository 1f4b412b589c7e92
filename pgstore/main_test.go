package pgstore_test

import (
	"os"
	"testing"

	"github.com/cryptopay/cryptopay-go/pgstore/internal/pgtest"
)

// One PostgreSQL server serves every test of the package; each test uses
// its own table (or channel).
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
