package pgstore

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// namedArgs binds a statement's named parameters (@name), as
// pgx.StrictNamedArgs does (a name the statement uses and the call lacks,
// or one it does not use, is an error, never a NULL), but numbers each
// statement text once: pgx's own rewrite lexes the whole statement on
// every call, 6 to 17 µs and 40 to 80 allocations for the tracker's. Pass
// it as the only argument: tx.Exec(ctx, stmt, namedArgs{...}).
type namedArgs map[string]any

// numbering is a statement with its named parameters numbered: sql is the
// text sent ($1, $2, ...), names the name of each position.
type numbering struct {
	sql   string
	names []string
}

// numberings holds the numbering of each statement text seen, three per
// Queue or Tracker table (their texts name the table), up to
// maxNumberings: a process that builds Queues and Trackers on ever more
// tables keeps the first ones' and numbers the rest on every call, as
// pgx's rewrite does, rather than grow without end. numbered counts them.
var (
	numberings sync.Map // string -> *numbering
	numbered   atomic.Int64
)

// maxNumberings bounds the numberings kept (about 1 MB of statement text).
const maxNumberings = 512

// paramCandidate matches what may be a named parameter; pgx's rewrite
// decides which ones are (not those in a literal or a comment).
var paramCandidate = regexp.MustCompile(`@([A-Za-z_][A-Za-z0-9_]*)`)

// numberOf numbers sql's named parameters by pgx's own rewrite, once.
func numberOf(sql string) (*numbering, error) {
	if n, ok := numberings.Load(sql); ok {
		return n.(*numbering), nil
	}
	self := pgx.NamedArgs{}
	for _, m := range paramCandidate.FindAllStringSubmatch(sql, -1) {
		self[m[1]] = m[1] // each name bound to itself: the args say the order
	}
	out, order, err := self.RewriteQuery(context.Background(), nil, sql, nil)
	if err != nil {
		return nil, err
	}
	n := &numbering{sql: out, names: make([]string, len(order))}
	for i, name := range order {
		var ok bool
		if n.names[i], ok = name.(string); !ok {
			return nil, fmt.Errorf("pgstore: parameter $%d of a statement is no name of the form @name", i+1)
		}
	}
	return keep(sql, n), nil
}

// keep stores n as sql's numbering unless maxNumberings are kept, and
// returns the numbering kept for sql (n if none is).
func keep(sql string, n *numbering) *numbering {
	if numbered.Add(1) > maxNumberings {
		numbered.Add(-1)
		return n
	}
	v, loaded := numberings.LoadOrStore(sql, n)
	if loaded {
		numbered.Add(-1)
	}
	return v.(*numbering)
}

// RewriteQuery implements pgx.QueryRewriter: sql numbered, na's values in
// its order.
func (na namedArgs) RewriteQuery(_ context.Context, _ *pgx.Conn, sql string, _ []any) (string, []any, error) {
	n, err := numberOf(sql)
	if err != nil {
		return "", nil, err
	}
	if len(na) != len(n.names) {
		return "", nil, fmt.Errorf("pgstore: %d named arguments for a statement with %d parameters %q", len(na), len(n.names), n.names)
	}
	args := make([]any, len(n.names))
	for i, name := range n.names {
		v, ok := na[name]
		if !ok {
			return "", nil, fmt.Errorf("pgstore: the statement's parameter @%s has no named argument", name)
		}
		args[i] = v
	}
	return n.sql, args, nil
}
