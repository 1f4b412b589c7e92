package main

import (
	"bytes"
	"encoding/csv"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// TestCommandFlagsComeFromSharedSets walks every command: each takes
// --output from the shared output set, every flag of the shared
// vocabulary from its set (no command defines one itself), none keeps a
// removed spelling, and --output nonsense exits 64 before anything runs,
// given after the command or before it.
func TestCommandFlagsComeFromSharedSets(t *testing.T) {
	type walked struct {
		name string
		fs   *cmdFlags
	}
	var all []walked
	vocabulary := map[string]string{} // flag name → the shared set that registers it
	names := make([]string, 0, len((&app{}).commands()))
	for name := range (&app{}).commands() {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, args := range [][]string{
			append(strings.Fields(name), "--output", "nonsense"),
			append([]string{"--output", "nonsense"}, strings.Fields(name)...),
		} {
			var got *cmdFlags
			var stdout, stderr bytes.Buffer
			a := &app{ctx: t.Context(), stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr,
				getenv: func(string) string { return "" }, isTerminal: func(any) bool { return false }, now: time.Now, login: osLogin,
				seenFlags: func(fs *cmdFlags) { got = fs }}
			code := a.main(args)
			assert.Equal(t, exitUsage, code, "%v: %s", args, stderr.String())
			assert.Contains(t, stderr.String(), `--output "nonsense"`, args)
			assert.Empty(t, stdout.String(), args)
			if got != nil {
				all = append(all, walked{name, got})
				for n, set := range got.sets {
					vocabulary[n] = set
				}
			}
		}
	}
	// fake takes the fake server's own flags: --output is none of them.
	for _, args := range [][]string{{"fake", "--output", "nonsense"}, {"--output", "nonsense", "fake"}} {
		r := (&fixture{t: t, env: map[string]string{}}).run(args...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", args, r.stderr)
	}
	for _, want := range []string{"output", "base-url", "api-key-file", "request-timeout", "database-url", "queue-table",
		"tracker-table", "page-size", "spreadsheet-safe"} {
		assert.Contains(t, vocabulary, want, "a flag of the shared vocabulary")
	}
	require.NotEmpty(t, all)
	for _, w := range all {
		assert.Equal(t, setOutput, w.fs.sets["output"], "%s: --output comes from the output set", w.name)
		assert.Subset(t, outputFormats, w.fs.formats, w.name)
		w.fs.VisitAll(func(f *flag.Flag) {
			assert.NotContains(t, removedFlags, f.Name, "%s: --%s is a removed spelling", w.name, f.Name)
			if set, ok := vocabulary[f.Name]; ok {
				assert.Equal(t, set, w.fs.sets[f.Name], "%s: --%s must come from the shared %s set, not the command", w.name, f.Name, set)
			}
		})
	}
}

// TestOutputFormats: a format a command does not write is refused (64)
// naming those it writes; the removed spellings say what replaces them;
// --output csv writes CSV from the same table.
func TestOutputFormats(t *testing.T) {
	f := setup(t)
	tests := []struct {
		name string
		args []string
		code int
		want string // in stderr (refusals) or stdout
	}{
		{"csv where the command writes none", []string{"payment", "wait", "p1", "--output", "csv"}, exitUsage, `payment wait: --output "csv": want json, table`},
		{"jsonl where nothing streams", []string{"currencies", "--output", "jsonl"}, exitUsage, `--output "jsonl": want json, table, csv`},
		{"table where export streams", []string{"payout", "export", "--output", "table"}, exitUsage, `--output "table": want csv, jsonl`},
		{"removed --format", []string{"payout", "export", "--format", "jsonl"}, exitUsage, "--format is no longer a flag: use --output csv or --output jsonl"},
		{"removed --csv", []string{"books", "--csv"}, exitUsage, "--csv is no longer a flag: use --output csv"},
		{"currencies as csv", []string{"currencies", "--output", "csv"}, exitOK, "currency,network\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.run(tt.args...)
			require.Equal(t, tt.code, r.code, "stdout %s stderr %s", r.stdout, r.stderr)
			if tt.code != exitOK {
				assert.Contains(t, r.stderr, tt.want)
				assert.Empty(t, r.stdout)
				return
			}
			assert.True(t, strings.HasPrefix(r.stdout, tt.want), r.stdout)
			recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
			require.NoError(t, err)
			assert.Greater(t, len(recs), 1)
		})
	}
}

// A move writes its line by default, also in a pipe, and an object under
// --output json; a database command refuses csv like any other format it
// does not write.
func TestMoveOutput(t *testing.T) {
	qf := setupQueue(t)
	row := []string{"v-1", "TCL3eTB75W5qNJEmseEmVMkNJ5pNBciXj4", "10", "usdt", "tron", "c1", "203.0.113.7", "false", "", ""}
	r := qf.run("payout", "batch", "--actor", "carol", "--queue-table", qf.table, csvFile(t, batchHeader, row))
	require.Equal(t, exitOK, r.code, r.stderr)
	_, err := qf.pool.Exec(t.Context(), "UPDATE "+qf.q.Table()+" SET state = 'parked' WHERE order_id = 'v-1'")
	require.NoError(t, err)

	r = qf.run("payout", "queue", "retry", "v-1", "--queue-table", qf.table, "--note", "x", "--output", "csv")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, `--output "csv": want table, json`)
	r = qf.run("payout", "queue", "retry", "v-1", "--queue-table", qf.table, "--actor", "carol", "--note", "no payout at the processor", "--output", "json")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.JSONEq(t, `{"orderId": "v-1", "done": "queued for a new attempt"}`, r.stdout)
	assert.Equal(t, pgstore.StateQueued, qf.state(t, "v-1").State)
}
