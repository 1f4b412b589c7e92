package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

// seededRow is what the export must say about seeded payout i (the fake
// takes the 0.5% network fee from the amount when the user bears it, and
// on top of it otherwise; merchantAmount is null until paid).
func seededRow(i int) []string {
	return []string{"", "created", trimAmount(seedAmount(i)), "0", "usdt", "tron", seedOrder(i), fmt.Sprintf("c%d", i%7),
		fmt.Sprintf("TW%05d", i), fmt.Sprintf("customer c%d", i%7), fmt.Sprintf("TW%05d", i)}
}

// trimAmount drops trailing zeros as decimal.String does.
func trimAmount(s string) string {
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// TestPayoutExport10000 exports 10,000 payouts as CSV and as JSON lines
// and checks every row against what was seeded.
func TestPayoutExport10000(t *testing.T) {
	const n = 10_000
	f := setup(t)
	f.seedPayouts(n)

	t.Run("csv", func(t *testing.T) {
		r := f.run("payout", "export", "--output", "csv")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Empty(t, r.stderr, "no progress bar when stderr is not a terminal")
		recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
		require.NoError(t, err)
		require.Len(t, recs, n+1)
		assert.Equal(t, csvHeader, recs[0])
		seen := make(map[string]bool, n)
		for i, rec := range recs[1:] {
			require.Len(t, rec, len(csvHeader))
			var idx int
			_, err := fmt.Sscanf(rec[6], "exp-%05d", &idx)
			require.NoError(t, err, "row %d", i)
			require.False(t, seen[rec[6]], "row %d repeats %s", i, rec[6])
			seen[rec[6]] = true
			require.Equal(t, seededRow(idx), rec[:11], "row %d", i)
			require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$`, rec[11])
		}
		assert.Len(t, seen, n)
	})
	t.Run("jsonl", func(t *testing.T) {
		r := f.run("payout", "export", "--output", "jsonl", "--page-size", "100")
		require.Equal(t, 0, r.code, r.stderr)
		sc := bufio.NewScanner(strings.NewReader(r.stdout))
		seen := make(map[string]bool, n)
		for i := 0; sc.Scan(); i++ {
			var m map[string]any
			dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
			dec.UseNumber()
			require.NoError(t, dec.Decode(&m), "line %d", i)
			var idx int
			_, err := fmt.Sscanf(m["orderId"].(string), "exp-%05d", &idx)
			require.NoError(t, err, "line %d", i)
			require.False(t, seen[seedOrder(idx)], "line %d repeats", i)
			seen[seedOrder(idx)] = true
			want := seededRow(idx)
			require.Equal(t, map[string]any{"status": want[1], "amount": want[2], "merchantAmount": "0", "currency": "usdt", "network": "tron",
				"orderId": want[6], "customerId": want[7], "paidAddress": want[8], "walletLabel": want[9], "walletAddress": want[10],
				"createdAt": m["createdAt"]}, m, "line %d", i)
		}
		require.NoError(t, sc.Err())
		assert.Len(t, seen, n)
	})
}

func TestPayoutExportProgressAndSafety(t *testing.T) {
	f := setup(t)
	f.seedPayouts(250)
	f.createPayout("=HYPERLINK(\"http://x\")", "1")

	r := f.runCLI(terms{stderr: true}, "", "payout", "export", "--page-size", "100")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "\r[..............................] 0/251 payouts")
	assert.Contains(t, r.stderr, "\r[##############################] 251/251 payouts\n")
	assert.Equal(t, 252, strings.Count(r.stdout, "\n"), "the bar never touches stdout")
	assert.Contains(t, r.stdout, `"=HYPERLINK(""http://x"")"`, "exact data by default")

	r = f.run("payout", "export", "--spreadsheet-safe")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"'=HYPERLINK(""http://x"")"`)

	r = f.run("payout", "export", "--output", "xml")
	assert.Equal(t, exitUsage, r.code)
	r = f.run("payout", "export", "--page-size", "0")
	assert.Equal(t, exitUsage, r.code)
}

// faultOnWrite injects a fault into the list route on the first write, so
// the request for the second page fails.
type faultOnWrite struct {
	bytes.Buffer
	once sync.Once
	srv  *cryptopaytest.Server
}

func (w *faultOnWrite) Write(p []byte) (int, error) {
	w.once.Do(func() {
		w.srv.InjectFault(cryptopaytest.RouteListPayouts, cryptopaytest.Fault{Status: 404})
	})
	return w.Buffer.Write(p)
}

func TestPayoutExportFailsMidway(t *testing.T) {
	for _, format := range []string{"csv", "jsonl"} {
		t.Run(format, func(t *testing.T) {
			f := setup(t)
			f.seedPayouts(250)
			out := &faultOnWrite{srv: f.srv}
			r := f.runWith(t.Context(), terms{}, strings.NewReader(""), out, "payout", "export", "--output", format, "--page-size", "100")
			assert.Equal(t, exitFailed, r.code)
			assert.Regexp(t, `^cryptopay: payout export: stopped after 100 payouts, the output is incomplete: .*404`, r.stderr)
			lines := strings.Count(out.String(), "\n")
			if format == "csv" {
				lines-- // header
			}
			assert.Equal(t, 100, lines, "everything read before the error is written")
		})
	}
}

// TestCSVCellsSpreadsheetSafe: --spreadsheet-safe neutralises every cell a
// spreadsheet would run as a formula, but an exact decimal (a negative
// delta, a signed amount) stays a number, to the digit: "'-2.5" would be
// text to the sum of a column.
func TestCSVCellsSpreadsheetSafe(t *testing.T) {
	for in, want := range map[string]string{
		"-2.5":                     "-2.5",
		"+10.25":                   "+10.25",
		"-0.000000000000000001":    "-0.000000000000000001",
		"=HYPERLINK(\"http://x\")": "'=HYPERLINK(\"http://x\")",
		"-2+3+cmd|' /C calc'!A0":   "'-2+3+cmd|' /C calc'!A0",
		"+1E+3":                    "'+1E+3",
		"-":                        "'-",
		"-.5":                      "'-.5",
		"@SUM(A1)":                 "'@SUM(A1)",
		"\t=1":                     "'\t=1",
		"ord-1":                    "ord-1",
	} {
		assert.Equal(t, want, csvCells([]string{in}, true, false, nil)[0], "%q", in)
		assert.Equal(t, in, csvCells([]string{in}, false, false, nil)[0], "exact without the flag: %q", in)
	}
}
