package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// dbCommand is a command that works on the database alone, with the
// arguments it needs and its table flag.
type dbCommand struct {
	cmd        []string
	tableFlag  string
	extraFlags []string // flags of its own its help lists
}

// dbCommands are the payment tracker's and the payout queue's commands
// that never call the API.
var dbCommands = []dbCommand{
	{[]string{"payment", "tracked"}, "-tracker-table", []string{"-state", "-needs-action", "-after", "-limit"}},
	{[]string{"payment", "tracked", "list"}, "-tracker-table", []string{"-state", "-needs-action", "-after", "-limit"}},
	{[]string{"payment", "tracked", "show", "o-1"}, "-tracker-table", nil},
	{[]string{"payment", "tracked", "health"}, "-tracker-table", nil},
	{[]string{"payment", "tracked", "clear-anomaly", "o-1"}, "-tracker-table", []string{"-note", "-actor"}},
	{[]string{"payout", "queue"}, "-queue-table", []string{"-state", "-after", "-limit"}},
	{[]string{"payout", "queue", "list"}, "-queue-table", []string{"-state", "-after", "-limit"}},
	{[]string{"payout", "queue", "show", "o-1"}, "-queue-table", nil},
	{[]string{"payout", "queue", "health"}, "-queue-table", nil},
	{[]string{"payout", "queue", "approve", "o-1"}, "-queue-table", []string{"-note", "-actor"}},
	{[]string{"payout", "queue", "reject", "o-1"}, "-queue-table", []string{"-reason", "-actor"}},
	{[]string{"payout", "queue", "retry", "o-1"}, "-queue-table", []string{"-note", "-actor"}},
	{[]string{"payout", "batch", "f.csv"}, "-queue-table", []string{"-dry-run", "-actor"}},
	{[]string{"books", "adjust"}, "-queue-table", []string{"-section", "-order-id", "-currency", "-network", "-amount", "-balance-table", "-note", "-actor"}},
}

// Every command of both families that works on the database alone
// refuses each of the API's flags after its name alike: exit 64, naming
// the flag, before anything is opened or read.
func TestDBCommandsRefuseAPIFlags(t *testing.T) {
	f := setup(t)
	delete(f.env, envDatabaseURL)
	for _, c := range dbCommands {
		for _, fl := range []struct{ flag, value string }{
			{"--base-url", "http://127.0.0.1:1"}, {"--api-key-file", "key.txt"}, {"--request-timeout", "5s"},
			{"--base-url=http://127.0.0.1:1", ""}, {"-api-key-file=key.txt", ""},
		} {
			args := append(append([]string{}, c.cmd...), fl.flag)
			if fl.value != "" {
				args = append(args, fl.value)
			}
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				name, _, _ := strings.Cut(strings.TrimLeft(fl.flag, "-"), "=")
				r := f.run(args...)
				assert.Equal(t, exitUsage, r.code)
				assert.Contains(t, r.stderr, "--"+name+" is not a flag of this command: it works on the database alone and never calls the API")
				assert.NotContains(t, r.stderr, "no database")
				assert.Empty(t, r.stdout)
			})
		}
	}
}

// Given before the command, as global flags, the API's flags are accepted
// by both families alike: the command goes on (here, to find no database).
func TestDBCommandsAcceptGlobalAPIFlags(t *testing.T) {
	f := setup(t)
	delete(f.env, envDatabaseURL)
	for _, c := range dbCommands {
		if c.cmd[len(c.cmd)-1] == "f.csv" || slices.Contains(c.extraFlags, "-note") || slices.Contains(c.extraFlags, "-reason") {
			continue // these read a file or need a flag first
		}
		t.Run(strings.Join(c.cmd, " "), func(t *testing.T) {
			r := f.run(append([]string{"--base-url", "http://127.0.0.1:1", "--request-timeout", "5s"}, c.cmd...)...)
			assert.Equal(t, exitUsage, r.code)
			assert.Contains(t, r.stderr, "no database: set CRYPTOPAY_DATABASE_URL or pass --database-url")
		})
	}
}

// A database command's help lists the database flags, --output and its
// own, says it never calls the API, and lists none of the API's flags; a
// command that calls the API too lists both.
func TestDBCommandsHelp(t *testing.T) {
	f := setup(t)
	for _, c := range dbCommands {
		t.Run(strings.Join(c.cmd, " "), func(t *testing.T) {
			r := f.run(append(c.cmd, "--help")...)
			require.Equal(t, exitOK, r.code, r.stderr)
			for _, want := range append([]string{"-database-url", c.tableFlag, "-output"}, c.extraFlags...) {
				assert.Contains(t, r.stdout, want)
			}
			for _, unused := range []string{"-api-key-file", "-base-url", "-request-timeout"} {
				assert.NotContains(t, r.stdout, "  "+unused)
			}
			assert.Contains(t, r.stdout, dbOnlyNote)
		})
	}
	for _, cmd := range [][]string{{"payout", "queue", "resolve"}, {"books"}} {
		t.Run(strings.Join(cmd, " "), func(t *testing.T) {
			r := f.run(append(cmd, "--help")...)
			require.Equal(t, exitOK, r.code, r.stderr)
			for _, want := range []string{"-database-url", "-queue-table", "-base-url", "-api-key-file", "-request-timeout", "$PGPASSWORD"} {
				assert.Contains(t, r.stdout, want)
			}
			assert.NotContains(t, r.stdout, dbOnlyNote)
		})
	}
}

// The tracker's and the queue's lists check --limit and --state alike,
// before the database is opened.
func TestParseList(t *testing.T) {
	tests := []struct {
		name    string
		list    listFlags
		tracked string // the error for the tracker's states, "" for none
		queue   string
	}{
		{"defaults", listFlags{limit: 100}, "", ""},
		{"zero limit", listFlags{limit: 0}, "x: --limit must be 1 to 10000", "x: --limit must be 1 to 10000"},
		{"limit too large", listFlags{limit: 10001}, "x: --limit must be 1 to 10000", "x: --limit must be 1 to 10000"},
		{"states of both", listFlags{limit: 1, states: "late, open"}, "", `x: --state "late": want one of needs_approval, queued, sending`},
		{"unknown state", listFlags{limit: 1, states: "nope"}, `x: --state "nope": want one of unmatched, open, late, closed`, `x: --state "nope": want one of needs_approval, queued, sending`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(err error, want string) {
				if want == "" {
					assert.NoError(t, err)
					return
				}
				require.Error(t, err)
				assert.Contains(t, err.Error(), want)
				assert.Equal(t, exitUsage, exitCode(t.Context(), err))
			}
			_, err := parseList("x", &tt.list, trackStates)
			check(err, tt.tracked)
			_, err = parseList("x", &tt.list, pgstore.States())
			check(err, tt.queue)
		})
	}
	states, err := parseList("x", &listFlags{limit: 1, states: "late, open"}, trackStates)
	require.NoError(t, err)
	assert.Equal(t, []pgstore.TrackState{pgstore.TrackLate, pgstore.TrackOpen}, states)
}
