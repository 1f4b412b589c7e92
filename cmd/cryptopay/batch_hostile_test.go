package main

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tronAddr is a well-formed TRON address (base58check, 0x41 prefix), so
// that these rows pass address checks: only the value under test is bad.
const tronAddr = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"

// hostileRow is a good payout row; set changes one column.
func hostileRow(orderID string, set ...string) []string {
	r := []string{orderID, tronAddr, "12.5", "usdt", "tron", "cust-1", "203.0.113.7", "false", "", ""}
	for i := 0; i+1 < len(set); i += 2 {
		for c, name := range batchHeader {
			if name == set[i] {
				r[c] = set[i+1]
			}
		}
	}
	return r
}

// Every hostile value from issue 24 is refused with its line and column,
// in a dry run and a real run, and nothing is enqueued.
func TestPayoutBatchHostileValues(t *testing.T) {
	tests := []struct {
		name string
		rows [][]string
		want string
	}{
		{"spreadsheet exponent", [][]string{hostileRow("h-1"), hostileRow("h-2", "amount", "1.23457E+11")},
			"line 3, column amount: has an exponent"},
		{"huge exponent", [][]string{hostileRow("h-1", "amount", "1e100")}, "line 2, column amount: has an exponent"},
		{"small exponent", [][]string{hostileRow("h-1", "amount", "1.23457E-06")}, "line 2, column amount: has an exponent"},
		{"orderId with a newline", [][]string{hostileRow("h-1\nh-2")}, `line 2, column orderId: contains the invisible or control character '\n'`},
		{"orderId with ESC and OSC", [][]string{hostileRow("h-1\x1b]0;pwned\x07")}, `line 2, column orderId: contains the invisible or control character '\x1b'`},
		{"orderId with a C1 control", [][]string{hostileRow("h-1\u009b2J")}, `line 2, column orderId: contains the invisible or control character '\u009b'`},
		{"orderId with a right-to-left override", [][]string{hostileRow("h-\u202e1")}, `line 2, column orderId: contains the invisible or control character '\u202e'`},
		{"orderId with a trailing space beside its twin", [][]string{hostileRow("h-1"), hostileRow("h-1 ")},
			"line 3, column orderId: has leading or trailing white space"},
		{"zero-width character in the address", [][]string{hostileRow("h-1", "walletAddress", "TR7NHqjeKQxGTCi8q8\u200bZY4pL8otSzgjLj6t")},
			`line 2, column walletAddress: contains the invisible or control character '\u200b'`},
		{"empty currency", [][]string{hostileRow("h-1", "currency", "")}, "line 2, column currency: is empty"},
		{"currency not canonical", [][]string{hostileRow("h-1", "currency", "USDT")}, `line 2, column currency: "USDT" is not canonical: use "usdt"`},
		{"network with a space", [][]string{hostileRow("h-1", "network", "tron ")}, `line 2, column network: "tron " is not canonical: use "tron"`},
		{"customerId with a control character", [][]string{hostileRow("h-1", "customerId", "c\x001")}, `line 2, column customerId: contains the invisible or control character '\x00'`},
		{"50 MiB of additionalData", [][]string{hostileRow("h-1"), hostileRow("h-2", "additionalData", strings.Repeat("a", 50<<20))},
			"line 3, column additionalData: longer than 8 KiB"},
		{"a field-count error and a bad amount, both named", [][]string{hostileRow("h-1")[:5], hostileRow("h-2", "amount", "1e3")},
			"line 2: 5 fields, want 10 as in the header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qf := setupQueue(t)
			file := csvFile(t, batchHeader, tt.rows...)
			for _, dry := range []bool{true, false} {
				args := []string{"payout", "batch", file}
				if dry {
					args = append(args, "--dry-run")
				}
				r := qf.run(args...)
				assert.Equal(t, exitUsage, r.code, r.stderr)
				assert.Contains(t, r.stderr, tt.want)
				assert.Contains(t, r.stderr, "nothing was enqueued")
				assert.Empty(t, r.stdout)
				assert.Less(t, len(r.stderr), 4<<10, "no value is echoed whole")
			}
			assert.Equal(t, 0, qf.count(t), "nothing enqueued")
		})
	}
	t.Run("both rows of a file whose first bad row has the wrong field count", func(t *testing.T) {
		qf := setupQueue(t)
		r := qf.run("payout", "batch", csvFile(t, batchHeader, hostileRow("h-1"), hostileRow("h-2")[:5], hostileRow("h-3", "amount", "1e3")))
		assert.Equal(t, exitUsage, r.code, r.stderr)
		assert.Contains(t, r.stderr, "line 3: 5 fields, want 10 as in the header")
		assert.Contains(t, r.stderr, "line 4, column amount: has an exponent")
		assert.Equal(t, 0, qf.count(t))
	})
}

// A file of 300,000 rows (16.5 MB) is refused by the row cap once it is
// passed, having read no more than the cap: nothing enqueued, the
// allocations bounded.
func TestPayoutBatchHugeFiles(t *testing.T) {
	qf := setupQueue(t)
	path := filepath.Join(t.TempDir(), "huge.csv")
	fh, err := os.Create(path)
	require.NoError(t, err)
	bw := bufio.NewWriter(fh)
	w := csv.NewWriter(bw)
	require.NoError(t, w.Write(batchHeader))
	for i := range 300_000 {
		require.NoError(t, w.Write(hostileRow(fmt.Sprintf("huge-%06d", i))))
	}
	w.Flush()
	require.NoError(t, bw.Flush())
	require.NoError(t, fh.Close())
	fi, err := os.Stat(path)
	require.NoError(t, err)
	t.Logf("file: %d bytes", fi.Size())

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := qf.run("payout", "batch", path)
	runtime.ReadMemStats(&after)
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, fmt.Sprintf("line %d: more than %d payouts in one file; split it", maxBatchRows+2, maxBatchRows))
	assert.Contains(t, r.stderr, "nothing was enqueued")
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d MiB reading up to the cap", alloc>>20)
	assert.Less(t, alloc, uint64(160<<20), "reading stops at the cap")
	assert.Equal(t, 0, qf.count(t))

}

// A file over the byte cap is refused once the cap is passed.
func TestReadBatchByteCap(t *testing.T) {
	rows := strings.Repeat(strings.Join(hostileRow("x", "additionalData", strings.Repeat("d", 8<<10)), ",")+"\n", (maxBatchBytes>>13)+2)
	_, errs := readBatch(strings.NewReader(strings.Join(batchHeader, ",") + "\n" + rows))
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), "the file is larger than 32 MiB")
}

// A wallet address of another network is refused by
// CreatePayoutParams.Validate (issue 24's offline address checks), named
// by its line and column.
func TestPayoutBatchAddressOfAnotherNetwork(t *testing.T) {
	const ethAddr = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed" // EIP-55's first example
	qf := setupQueue(t)
	r := qf.run("payout", "batch", "--dry-run", csvFile(t, batchHeader, hostileRow("a-0"), hostileRow("a-1", "walletAddress", ethAddr)))
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "line 3, column walletAddress:")
	assert.Equal(t, 0, qf.count(t))
}

// FuzzReadBatch: whatever the file, readBatch does not panic, and a row it
// accepts has a plain-decimal amount and identifiers a server cannot trim.
func FuzzReadBatch(f *testing.F) {
	head := strings.Join(batchHeader, ",") + "\n"
	for _, s := range []string{
		head + strings.Join(hostileRow("f-1"), ",") + "\n",
		head + strings.Join(hostileRow("f-1", "amount", "1e5"), ",") + "\n",
		head + "\"f-1\n\",x,1,usdt,tron,c,ip,false,,\n",
		head + "a,b\n",
		"\ufefforderId,walletAddress,amount,currency,customerId,customerIp\nx,y,1,usdt,c,d\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rows, errs := readBatch(strings.NewReader(s))
		if len(errs) > 0 {
			assert.Empty(t, rows)
			return
		}
		for _, r := range rows {
			assert.NotContains(t, strings.ToLower(r.p.Amount.String()), "e")
			assert.Equal(t, strings.TrimSpace(r.p.OrderID), r.p.OrderID)
			assert.NotEmpty(t, r.p.Currency)
		}
	})
}

// The row cap counts bad rows too: a file whose row past the cap has the
// wrong field count is refused by the cap, not read on.
func TestReadBatchRowCapCountsBadRows(t *testing.T) {
	var b strings.Builder
	b.WriteString(strings.Join(batchHeader, ",") + "\n")
	for i := range maxBatchRows {
		b.WriteString(strings.Join(hostileRow(fmt.Sprintf("c-%06d", i)), ",") + "\n")
	}
	b.WriteString("short,row\n")
	b.WriteString(strings.Join(hostileRow("c-last"), ",") + "\n")
	_, errs := readBatch(strings.NewReader(b.String()))
	require.Len(t, errs, 1)
	assert.Equal(t, fmt.Sprintf("line %d: more than %d payouts in one file; split it", maxBatchRows+2, maxBatchRows), errs[0].Error())
}

// The network column is required, as CreatePayoutParams.Validate requires
// a network (it picks the address check): a file without it is refused at
// its header, not once per row.
func TestReadBatchNetworkColumnRequired(t *testing.T) {
	_, errs := readBatch(strings.NewReader("orderId,walletAddress,amount,currency,customerId,customerIp\nn-1," + tronAddr + ",1,usdt,c,203.0.113.7\nn-2," + tronAddr + ",1,usdt,c,203.0.113.7\n"))
	require.Len(t, errs, 1)
	assert.Equal(t, "line 1, column network: missing (required)", errs[0].Error())
	assert.Contains(t, batchHelp(), "required: orderId, walletAddress, amount, currency, network, customerId, customerIp.")
}

// Each identifier column's byte limit is the SDK's, and the help states
// it: a value at the limit passes, one byte more is refused at its column.
func TestReadBatchIdentifierLimits(t *testing.T) {
	head := strings.Join(batchHeader, ",") + "\n"
	tests := []struct {
		column  string
		max     int
		network string // an unchecked network for a made-up address
		help    string
	}{
		{"orderId", 128, "tron", "orderId and customerId:\nat most 128 bytes"},
		{"customerId", 128, "tron", "orderId and customerId:\nat most 128 bytes"},
		{"customerIp", 64, "tron", "customerIp 64"},
		{"walletAddress", 256, "solana", "walletAddress 256"},
	}
	for _, tt := range tests {
		t.Run(tt.column, func(t *testing.T) {
			assert.Contains(t, batchHelp(), tt.help)
			for _, n := range []int{tt.max, tt.max + 1} {
				row := hostileRow("l-1", "network", tt.network, tt.column, strings.Repeat("a", n))
				rows, errs := readBatch(strings.NewReader(head + strings.Join(row, ",") + "\n"))
				if n == tt.max {
					assert.Empty(t, errs)
					assert.Len(t, rows, 1)
					continue
				}
				require.Len(t, errs, 1)
				assert.Contains(t, errs[0].Error(), "line 2, column "+tt.column+": ")
				assert.Contains(t, errs[0].Error(), strconv.Itoa(tt.max)+" bytes")
			}
		})
	}
}

// A record of millions of empty fields (a 16 MiB line of commas, under
// the file cap) is refused once it has more than maxRecordFields fields,
// before the CSV reader builds the record: reading it allocated about
// 2.9 GiB before (the reader's slices of fields, grown to 16 million).
func TestReadBatchFieldCountCap(t *testing.T) {
	for _, tc := range []struct{ name, file string }{
		{"header", strings.Repeat(",", 16<<20) + "\n"},
		{"row", strings.Join(batchHeader, ",") + "\n" + strings.Join(hostileRow("f-1"), ",") + strings.Repeat(",", 16<<20) + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, errs := readBatch(strings.NewReader(tc.file))
			runtime.ReadMemStats(&after)
			require.Len(t, errs, 1)
			assert.Contains(t, errs[0].Error(), fmt.Sprintf("more than %d fields; a payout has at most %d columns", maxRecordFields, len(batchColumns)))
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("allocated %d KiB", alloc>>10)
			assert.Less(t, alloc, uint64(8<<20), "the record is not built")
			assert.Contains(t, batchHelp(), fmt.Sprintf("%d fields a row", maxRecordFields), "the help states the cap")
		})
	}
}
