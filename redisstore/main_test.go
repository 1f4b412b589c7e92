package redisstore_test

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/cryptopay/cryptopay-go/redisstore/internal/redistest"
)

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// TestMain silences go-redis's process-wide logger, which prints a line
// for every failed dial while a test has Redis down on purpose (the
// package itself never touches that global), and starts the redis-server
// the Examples use.
func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{})
	os.Exit(redistest.Main(m))
}
