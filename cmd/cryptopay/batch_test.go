package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// 10,000 rows are enqueued in one transaction with exact totals and plain
// progress lines; the same file again enqueues nothing new.
func TestPayoutBatchLarge(t *testing.T) {
	qf := setupQueue(t)
	const n = 10_000
	records := make([][]string, n)
	want := map[string]decimal.Decimal{}
	counts := map[string]int{}
	for i := range n {
		records[i] = batchRecord("wd", i)
		want[records[i][3]] = want[records[i][3]].Add(decimal.RequireFromString(records[i][2]))
		counts[records[i][3]]++
	}
	file := csvFile(t, batchHeader, records...)

	r := qf.run("payout", "batch", file)
	require.Equal(t, 0, r.code, r.stderr)
	var out batchOutput
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	assert.Equal(t, n, out.Rows)
	assert.Equal(t, n, out.Enqueued)
	assert.Equal(t, 0, out.AlreadyQueued)
	require.Len(t, out.Currencies, 2)
	for _, c := range out.Currencies {
		assert.Equal(t, want[c.Currency].String(), c.Total, c.Currency)
		assert.Equal(t, counts[c.Currency], c.Count)
	}
	assert.Equal(t, n, qf.count(t))
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	assert.Len(t, lines, n/enqueueChunk, "one plain progress line per chunk")
	assert.Equal(t, "10000/10000 rows enqueued", lines[len(lines)-1])
	in := qf.state(t, "wd-00004")
	assert.Equal(t, pgstore.StateQueued, in.State)
	assert.Equal(t, "5.000005", in.Params.Amount.String(), "exact")

	r = qf.run("payout", "batch", file)
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	assert.Equal(t, 0, out.Enqueued, "a rerun enqueues nothing new")
	assert.Equal(t, n, out.AlreadyQueued)
	assert.Equal(t, n, qf.count(t))
}

// On a terminal: a progress bar on stderr and a table on stdout.
func TestPayoutBatchTerminal(t *testing.T) {
	qf := setupQueue(t)
	file := csvFile(t, batchHeader, batchRecord("t", 1), batchRecord("t", 2), batchRecord("t", 3), batchRecord("t", 2))
	r := qf.cli(terms{stdout: true, stderr: true}, "payout", "batch", file)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "\r[##############################] 3/3 rows enqueued")
	assert.Regexp(t, `Enqueued\s+3\n`, r.stdout)
	assert.Regexp(t, `Repeated rows \(same orderId, same payout\)\s+1\n`, r.stdout)
	assert.Regexp(t, `eth\s+1\s+4\.000004\n`, r.stdout)
	assert.Regexp(t, `usdt\s+2\s+5\.000005\n`, r.stdout)
}

// A bad row names its line and column, and nothing of the file is
// enqueued.
func TestPayoutBatchBadRows(t *testing.T) {
	good := func(i int) []string { return batchRecord("bad", i) }
	with := func(i, col int, v string) []string {
		r := good(i)
		r[col] = v
		return r
	}
	tests := []struct {
		name    string
		header  []string
		rows    [][]string
		raw     string // the file itself, instead of header and rows
		want    []string
		notWant string
	}{
		{"not a decimal", batchHeader, [][]string{good(1), good(2), with(3, 2, "1,5")}, "", []string{"line 4, column amount: not a decimal"}, ""},
		{"float syntax is refused", batchHeader, [][]string{with(1, 2, "NaN")}, "", []string{"line 2, column amount: not a decimal"}, ""},
		{"zero amount", batchHeader, [][]string{good(1), with(2, 2, "0")}, "", []string{"line 3, column amount:"}, ""},
		{"negative amount", batchHeader, [][]string{with(1, 2, "-5")}, "", []string{"line 2, column amount:"}, ""},
		{"too many digits", batchHeader, [][]string{with(1, 2, "1"+strings.Repeat("0", 200))}, "", []string{"line 2, column amount:"}, ""},
		{"empty wallet", batchHeader, [][]string{with(1, 1, "")}, "", []string{"line 2, column walletAddress:"}, ""},
		{"empty orderId", batchHeader, [][]string{with(1, 0, "")}, "", []string{"line 2, column orderId:"}, ""},
		{"not a bool", batchHeader, [][]string{with(1, 7, "yes")}, "", []string{"line 2, column networkFeeByUser: not true or false"}, ""},
		{"several bad rows, each named", batchHeader, [][]string{with(1, 2, "x"), good(2), with(3, 5, "")}, "",
			[]string{"line 2, column amount: not a decimal", "line 4, column customerId:"}, ""},
		{"same orderId, other payout", batchHeader, [][]string{good(1), good(2), with(1, 2, "7")}, "",
			[]string{"line 4, column orderId: repeats line 2's orderId with other parameters"}, ""},
		{"missing required column", batchHeader[:6], [][]string{good(1)[:6]}, "", []string{"line 1, column customerIp: missing (required)"}, ""},
		{"unknown column", append([]string{"amout"}, batchHeader[1:]...), [][]string{good(1)}, "", []string{"line 1, column amout: unknown column"}, ""},
		{"wrong field count", batchHeader, [][]string{good(1), good(2)[:4]}, "", []string{"line 3: 4 fields, want 10 as in the header"}, ""},
		{"broken quote", nil, nil, "orderId,walletAddress,amount,currency,network,customerId,customerIp\na,b,\"1,usdt,tron,c,d\n", []string{"line 2:"}, ""},
		{"empty file", nil, nil, "", []string{"line 1: the file is empty"}, ""},
		{"header only", batchHeader, nil, "", []string{"line 2: no payouts after the header"}, ""},
		{"control characters in a value are not echoed", batchHeader, [][]string{with(1, 0, ""), with(2, 2, "\x1b[2J")}, "",
			[]string{"line 3, column amount: not a decimal"}, "\x1b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qf := setupQueue(t)
			file := ""
			if tt.header == nil {
				file = writeFile(t, "payouts.csv", tt.raw)
			} else {
				file = csvFile(t, tt.header, tt.rows...)
			}
			r := qf.run("payout", "batch", file)
			assert.Equal(t, exitUsage, r.code, r.stderr)
			for _, w := range tt.want {
				assert.Contains(t, r.stderr, w)
			}
			assert.Contains(t, r.stderr, "nothing was enqueued")
			assert.Empty(t, r.stdout)
			assert.Equal(t, 0, qf.count(t), "nothing enqueued")
		})
	}
}

// A row whose orderId is queued already with other parameters refuses the
// whole file, naming its line; the file's new rows are not enqueued.
func TestPayoutBatchConflict(t *testing.T) {
	qf := setupQueue(t)
	r := qf.run("payout", "batch", csvFile(t, batchHeader, batchRecord("c", 1), batchRecord("c", 2)))
	require.Equal(t, 0, r.code, r.stderr)

	changed := batchRecord("c", 2)
	changed[1] = "TNQRVALgBGwj2uEkCN6vF5sKyezNB4N3Fb"
	r = qf.run("payout", "batch", csvFile(t, batchHeader, batchRecord("c", 3), batchRecord("c", 1), changed, batchRecord("c", 4)))
	assert.Equal(t, exitNo, r.code, r.stderr)
	assert.Contains(t, r.stderr, `line 4, column orderId: "c-00002" is queued already with a different walletAddress; nothing was enqueued`)
	assert.Empty(t, r.stdout)
	assert.Equal(t, 2, qf.count(t), "c-00003 and c-00004 were not enqueued")
	assert.Equal(t, testWallet(2), qf.state(t, "c-00002").Params.WalletAddress, "the queued intent is unchanged")
}

// The dry run prints counts, exact totals and the rows the guardrails
// would stop, and changes nothing.
func TestPayoutBatchDryRun(t *testing.T) {
	qf := setupQueue(t)
	row := func(id, wallet, amount, cur string) []string {
		return []string{id, wallet, amount, cur, "tron", "c1", "203.0.113.7", "false", "", ""}
	}
	// One intent is queued already: it is counted, not enqueued again.
	r := qf.run("payout", "batch", csvFile(t, batchHeader, row("d-0", "TCL3eTB75W5qNJEmseEmVMkNJ5pNBciXj4", "1", "usdt")))
	require.Equal(t, 0, r.code, r.stderr)
	file := csvFile(t, batchHeader,
		row("d-0", "TCL3eTB75W5qNJEmseEmVMkNJ5pNBciXj4", "1", "usdt"),
		row("d-1", "TCL3eTB75W5qNJEmseEmVMkNJ5pNBciXj4", "100.000001", "usdt"),
		row("d-2", "TCL3eTB75W5qNJEmseEmVMkNJ5pNBciXj4", "1000.5", "usdt"), // above --max-amount
		row("d-3", "TPfXZX8ma2LGZJeydzqL75WFD9tNsh3ShZ", "5", "usdt"),      // not on the allow-list
		row("d-4", "TCL3eTB75W5qNJEmseEmVMkNJ5pNBciXj4", "600", "eth"),     // above --approval-above
		row("d-5", "TCL3eTB75W5qNJEmseEmVMkNJ5pNBciXj4", "450", "eth"),     // passes the eth velocity cap of 1,000 with d-4
		row("d-6", "TCL3eTB75W5qNJEmseEmVMkNJ5pNBciXj4", "0.25", "usdt"),
		row("d-7", "TCL3eTB75W5qNJEmseEmVMkNJ5pNBciXj4", "2000", "btc"), // no guardrail for btc
	)
	allow := writeFile(t, "allow.txt", "# the only wallets paid\nTCL3eTB75W5qNJEmseEmVMkNJ5pNBciXj4\n\n")
	r = qf.run("payout", "batch", "--dry-run", file, "--max-amount", "usdt=1000", "--max-amount", "eth=5000",
		"--velocity", "eth=1000", "--allow-address-file", allow, "--approval-above", "eth=500")
	require.Equal(t, 0, r.code, r.stderr)
	var out batchOutput
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	assert.True(t, out.DryRun)
	assert.Equal(t, 8, out.Rows)
	assert.Equal(t, 7, out.Enqueued, "would be new")
	assert.Equal(t, 1, out.AlreadyQueued)
	assert.Equal(t, 1, out.NeedsApproval)
	assert.Equal(t, []currencyTotal{
		{Currency: "btc", Count: 1, Total: "2000"},
		{Currency: "eth", Count: 2, Total: "1050"},
		{Currency: "usdt", Count: 5, Total: "1106.750001"},
	}, out.Currencies)
	type stop struct {
		line       int
		order, rul string
	}
	var got []stop
	for _, s := range out.Stopped {
		got = append(got, stop{s.Line, s.OrderID, s.Rule})
		assert.NotEmpty(t, s.Reason)
	}
	assert.Equal(t, []stop{{4, "d-2", "max_amount"}, {5, "d-3", "address"}, {6, "d-4", "approval"}, {7, "d-5", "velocity"}}, got)
	assert.Equal(t, 1, qf.count(t), "a dry run enqueues nothing")
	assert.Contains(t, r.stderr, "8/8 rows checked")

	// On a terminal: the same as tables.
	r = qf.cli(terms{stdout: true}, "payout", "batch", "--dry-run", file, "--max-amount", "usdt=1000")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `Would enqueue\s+7\n`, r.stdout)
	assert.Regexp(t, `4\s+d-2\s+max_amount\s+1000\.5 usdt is above the cap of 1000 per payout\n`, r.stdout)

	// The workers' guardrails are theirs, approval included: outside a
	// dry run these flags would only look enforced.
	for _, flag := range [][]string{{"--max-amount", "usdt=1000"}, {"--approval-above", "usdt=1"}} {
		r = qf.run(append([]string{"payout", "batch", file}, flag...)...)
		assert.Equal(t, exitUsage, r.code, flag)
		assert.Contains(t, r.stderr, "apply to --dry-run only", flag)
	}
	assert.Equal(t, 1, qf.count(t))
}

// The dry run's caps are keyed as the workers' Guardrails are: a
// non-canonical currency key is refused with the canonical spelling named
// (never rewritten), and a second cap for one currency is refused (never
// the last one silently winning), so a dry run checks what a worker with
// these caps checks. Before, "USDT=1" was lower-cased and a second cap
// replaced the first.
func TestPayoutBatchCapFlags(t *testing.T) {
	qf := setupQueue(t)
	file := csvFile(t, batchHeader, []string{"k-1", "TCL3eTB75W5qNJEmseEmVMkNJ5pNBciXj4", "5", "usdt", "tron", "c1", "203.0.113.7", "false", "", ""})
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"upper case", []string{"--max-amount", "USDT=1"}, `use "usdt"`},
		{"space", []string{"--velocity", "usdt =1"}, `"usdt "`},
		{"two caps", []string{"--max-amount", "usdt=1", "--max-amount", "usdt=10"}, "a second cap for usdt"},
		{"two spellings", []string{"--approval-above", "usdt=1", "--approval-above", "Usdt=10"}, `use "usdt"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := qf.run(append([]string{"payout", "batch", "--dry-run", file}, tt.args...)...)
			assert.Equal(t, exitUsage, r.code, r.stdout+r.stderr)
			assert.Contains(t, r.stderr, tt.want)
		})
	}
	r := qf.run("payout", "batch", "--dry-run", file, "--max-amount", "usdt=1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "max_amount")
}
