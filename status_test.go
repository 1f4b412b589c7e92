package cryptopay_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
)

var (
	allPaymentStatuses = []cryptopay.PaymentStatus{cryptopay.PaymentWaiting, cryptopay.PaymentConfirming, cryptopay.PaymentLocked,
		cryptopay.PaymentPaid, cryptopay.PaymentPaidOver, cryptopay.PaymentPaidPartial, cryptopay.PaymentFailed,
		cryptopay.PaymentRejected, cryptopay.PaymentExpired}
	allPayoutStatuses = []cryptopay.PayoutStatus{cryptopay.PayoutCreated, cryptopay.PayoutReview, cryptopay.PayoutProcessing,
		cryptopay.PayoutConfirming, cryptopay.PayoutPaid, cryptopay.PayoutFailed, cryptopay.PayoutCancelled}
)

func TestPaymentLifecycle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s                                       cryptopay.PaymentStatus
		terminal, final, success, action, known bool
	}{
		{cryptopay.PaymentWaiting, false, false, false, false, true},
		{cryptopay.PaymentConfirming, false, false, false, false, true},
		{cryptopay.PaymentLocked, false, false, false, true, true},
		{cryptopay.PaymentPaid, true, false, true, false, true},
		{cryptopay.PaymentPaidOver, true, true, true, true, true},
		{cryptopay.PaymentPaidPartial, true, false, false, true, true},
		{cryptopay.PaymentFailed, true, true, false, false, true},
		{cryptopay.PaymentRejected, true, true, false, false, true},
		{cryptopay.PaymentExpired, true, false, false, false, true},
		{"brand_new", false, false, false, false, false},
		{"", false, false, false, false, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.s), func(t *testing.T) {
			assert.Equal(t, tt.terminal, tt.s.IsTerminal(), "IsTerminal")
			assert.Equal(t, tt.final, tt.s.IsFinal(), "IsFinal")
			assert.Equal(t, tt.success, tt.s.IsSuccess(), "IsSuccess")
			assert.Equal(t, tt.action, tt.s.NeedsAction(), "NeedsAction")
			assert.Equal(t, tt.known, tt.s.IsKnown(), "IsKnown")
		})
	}
}

func TestPaymentMoves(t *testing.T) {
	t.Parallel()
	tests := []struct {
		from, to cryptopay.PaymentStatus
		ok       bool
	}{
		{cryptopay.PaymentWaiting, cryptopay.PaymentPaid, true},
		{cryptopay.PaymentExpired, cryptopay.PaymentPaid, true},        // a late transfer
		{cryptopay.PaymentExpired, cryptopay.PaymentPaidPartial, true}, // a late, short transfer
		{cryptopay.PaymentPaidPartial, cryptopay.PaymentPaid, true},    // the rest arrived
		{cryptopay.PaymentPaidPartial, cryptopay.PaymentPaidOver, true},
		{cryptopay.PaymentPaid, cryptopay.PaymentPaidOver, true}, // a transfer on top
		{cryptopay.PaymentPaid, cryptopay.PaymentPaidPartial, false},
		{cryptopay.PaymentPaid, cryptopay.PaymentExpired, false},
		{cryptopay.PaymentPaidOver, cryptopay.PaymentPaid, false},
		{cryptopay.PaymentFailed, cryptopay.PaymentPaid, false},
		{cryptopay.PaymentRejected, cryptopay.PaymentPaid, false},
		{cryptopay.PaymentPaidPartial, cryptopay.PaymentExpired, false},
		{cryptopay.PaymentWaiting, cryptopay.PaymentWaiting, false}, // staying is not a move
		{cryptopay.PaymentWaiting, "brand_new", false},
		{"brand_new", cryptopay.PaymentPaid, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.ok, tt.from.CanMoveTo(tt.to), "%s -> %s", tt.from, tt.to)
	}
	// Nothing moves back to waiting, and a final status moves nowhere.
	for _, from := range allPaymentStatuses {
		assert.False(t, from.CanMoveTo(cryptopay.PaymentWaiting), "%s -> waiting", from)
		for _, to := range allPaymentStatuses {
			if from.IsFinal() {
				assert.False(t, from.CanMoveTo(to), "final %s -> %s", from, to)
			}
		}
	}
}

func TestPayoutLifecycle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s                                       cryptopay.PayoutStatus
		terminal, final, success, action, known bool
	}{
		{cryptopay.PayoutCreated, false, false, false, false, true},
		{cryptopay.PayoutReview, false, false, false, true, true},
		{cryptopay.PayoutProcessing, false, false, false, false, true},
		{cryptopay.PayoutConfirming, false, false, false, false, true},
		{cryptopay.PayoutPaid, true, true, true, false, true},
		{cryptopay.PayoutFailed, true, true, false, false, true},
		{cryptopay.PayoutCancelled, true, true, false, false, true},
		{"brand_new", false, false, false, false, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.s), func(t *testing.T) {
			assert.Equal(t, tt.terminal, tt.s.IsTerminal(), "IsTerminal")
			assert.Equal(t, tt.final, tt.s.IsFinal(), "IsFinal")
			assert.Equal(t, tt.success, tt.s.IsSuccess(), "IsSuccess")
			assert.Equal(t, tt.action, tt.s.NeedsAction(), "NeedsAction")
			assert.Equal(t, tt.known, tt.s.IsKnown(), "IsKnown")
		})
	}
	assert.True(t, cryptopay.PayoutProcessing.CanMoveTo(cryptopay.PayoutPaid))
	assert.False(t, cryptopay.PayoutFailed.CanMoveTo(cryptopay.PayoutPaid))
	assert.False(t, cryptopay.PayoutPaid.CanMoveTo(cryptopay.PayoutFailed))
}

// tableRows returns the cells of the Markdown table whose header line
// starts with header, one slice per row, backticks removed.
func tableRows(t *testing.T, md, header string) [][]string {
	t.Helper()
	i := strings.Index(md, header)
	require.GreaterOrEqual(t, i, 0, "table %q not found", header)
	var rows [][]string
	for n, line := range strings.Split(md[i:], "\n") {
		if n < 2 {
			continue // header and separator
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.Trim(strings.TrimSpace(c), "`*"))
		}
		rows = append(rows, cells)
	}
	return rows
}

func yes(cell string) bool { return cell == "yes" }

// TestReadmeStatusTablesMatchLifecycle keeps the README's status tables
// saying what the lifecycle tables say.
func TestReadmeStatusTablesMatchLifecycle(t *testing.T) {
	t.Parallel()
	md, err := os.ReadFile("README.md")
	require.NoError(t, err)
	rows := tableRows(t, string(md), "| Payment status | Terminal | Final | Success | NeedsAction |")
	require.Len(t, rows, len(allPaymentStatuses))
	for _, r := range rows {
		s := cryptopay.PaymentStatus(r[0])
		require.True(t, s.IsKnown(), r[0])
		assert.Equal(t, []bool{s.IsTerminal(), s.IsFinal(), s.IsSuccess(), s.NeedsAction()},
			[]bool{yes(r[1]), yes(r[2]), yes(r[3]), yes(r[4])}, "README row %s", r[0])
	}
	rows = tableRows(t, string(md), "| Payout status | Terminal | Final | Success | NeedsAction |")
	require.Len(t, rows, len(allPayoutStatuses))
	for _, r := range rows {
		s := cryptopay.PayoutStatus(r[0])
		require.True(t, s.IsKnown(), r[0])
		assert.Equal(t, []bool{s.IsTerminal(), s.IsFinal(), s.IsSuccess(), s.NeedsAction()},
			[]bool{yes(r[1]), yes(r[2]), yes(r[3]), yes(r[4])}, "README row %s", r[0])
	}
}

// TestTestingGuideMovesMatchLifecycle keeps docs/testing.md's table of
// the fake's payment moves saying what PaymentStatus.CanMoveTo says.
func TestTestingGuideMovesMatchLifecycle(t *testing.T) {
	t.Parallel()
	md, err := os.ReadFile("docs/testing.md")
	require.NoError(t, err)
	seen := map[cryptopay.PaymentStatus]bool{}
	for _, r := range tableRows(t, string(md), "| From | To |") {
		to := map[cryptopay.PaymentStatus]bool{}
		for _, s := range strings.Split(r[1], ",") {
			if s = strings.TrimSpace(s); cryptopay.PaymentStatus(s).IsKnown() {
				to[cryptopay.PaymentStatus(s)] = true
			}
		}
		for _, f := range strings.Split(r[0], ",") {
			from := cryptopay.PaymentStatus(strings.TrimSpace(f))
			require.True(t, from.IsKnown(), f)
			seen[from] = true
			for _, s := range allPaymentStatuses {
				assert.Equal(t, from.CanMoveTo(s), to[s], "docs/testing.md: %s -> %s", from, s)
			}
		}
	}
	for _, s := range allPaymentStatuses {
		if len(seen) > 0 && !seen[s] {
			// Every status with moves must have its row; a final one may be
			// listed with "nothing".
			assert.True(t, s.IsFinal(), "docs/testing.md has no row for %s", s)
		}
	}
}
