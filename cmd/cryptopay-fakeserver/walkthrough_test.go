package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/cmd/internal/toolnotice"
)

// needTool finds a program the walk-through needs. With CI=true a missing
// one fails the test; otherwise the test is skipped, loudly.
func needTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err == nil {
		return
	}
	toolnotice.Missing(t, name+" is not on PATH")
}

// buildFakeServer builds this command into a temporary directory.
func buildFakeServer(t *testing.T) string {
	t.Helper()
	needTool(t, "go")
	bin := filepath.Join(t.TempDir(), "cryptopay-fakeserver")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// runWalkthrough runs scripts/walkthrough.sh on the binary; doc, when set,
// replaces docs/testing.md.
func runWalkthrough(t *testing.T, bin, doc string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "..", "scripts", "walkthrough.sh"))
	cmd.Env = append(os.Environ(), "FAKESERVER="+bin)
	if doc != "" {
		cmd.Env = append(cmd.Env, "DOC="+doc)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestREADMEWalkthrough runs the curl walk-through of the testing guide the
// README links to, extracted from docs/testing.md, against the built binary:
// every step the guide expects to succeed must answer 2xx, and each step must show what its comment says.
func TestREADMEWalkthrough(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "awk", "sed"} {
		needTool(t, tool)
	}
	bin := buildFakeServer(t)
	out, err := runWalkthrough(t, bin, "")
	require.NoError(t, err, "the walk-through failed:\n%s", out)
	for _, want := range []string{
		`"status":"waiting","payAmount":10.1`,
		`"status":"paid_partial"`,
		`"status":"paid","payAmount":10.1`,
		`"orderId":"o2"`, `"status":"expired"`,
		`"status":"processing"`,
		`"orderId":"w1"`,
		`no answer: was payout w2 created?`,
		`"orderId":"w2"`, `"count":2`,
		"walkthrough: OK",
	} {
		assert.Contains(t, out, want)
	}

	// The walk-through as it once was: the payment id was a placeholder,
	// $PAYOUT_ID was never set, and the script must say so.
	old := filepath.Join(t.TempDir(), "testing.md")
	require.NoError(t, os.WriteFile(old, []byte(strings.Join([]string{
		"<!-- walkthrough -->",
		"```sh",
		"KEY=test_key_cryptopaytest_0000000000",
		"ID=...   # the paymentId from the answer",
		`curl -s -X POST -d '{"amount":"10.1"}'        $API/_control/payments/$ID/pay`,
		`curl -s -X POST -d '{"status":"processing"}'  $API/_control/payouts/$PAYOUT_ID/status`,
		"```",
	}, "\n")), 0o600))
	out, err = runWalkthrough(t, bin, old)
	require.Error(t, err, "a broken walk-through must fail:\n%s", out)
	assert.Contains(t, out, "walkthrough: FAILED")
}
