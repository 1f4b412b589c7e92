package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// Every move of pgstore's table is a command of the CLI: named in the
// help, with a flag per field and --actor, and refusing to run without a
// required field (before any database is opened).
func TestEveryMoveIsACommand(t *testing.T) {
	f := setup(t)
	delete(f.env, envDatabaseURL)
	for _, m := range pgstore.Moves() {
		cmd := strings.Fields(moveCommand(m).name)
		t.Run(m.Name, func(t *testing.T) {
			assert.Contains(t, helpText, m.Name, "the top-level help names it")
			r := f.run(append(cmd, "--help")...)
			assert.Equal(t, exitOK, r.code, r.stderr)
			assert.Contains(t, r.stdout, "cryptopay "+strings.Join(cmd, " ")+" ")
			assert.Contains(t, r.stdout, "-actor")
			for _, fl := range m.Fields {
				assert.Contains(t, r.stdout, "-"+fl.Name, "its field %s is a flag", fl.Name)
			}
			for _, fl := range m.Fields {
				if fl.Required {
					r = f.run(append(cmd, "o-1")...)
					assert.Equal(t, exitUsage, r.code)
					assert.Contains(t, r.stderr, "--"+fl.Name+" is required")
					break
				}
			}
		})
	}
}

func TestWrapText(t *testing.T) {
	for _, c := range []struct {
		in    string
		width int
		want  string
	}{
		{"", 10, ""},
		{"one two three", 7, "one two\nthree"},
		{"  spaced\n words ", 80, "spaced words"},
		{"averyveryverylongword x", 5, "averyveryverylongword\nx"},
	} {
		assert.Equal(t, c.want, wrapText(c.in, c.width), c.in)
	}
}
