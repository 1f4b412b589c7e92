package pgstore

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The diagram in docs/payout-queue.md is the state table's: a transition
// added, renamed or removed in code and not in the docs (or the other way
// round) fails here.
func TestStateDiagramInDocs(t *testing.T) {
	doc, err := os.ReadFile("../docs/payout-queue.md")
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)```mermaid\n(stateDiagram-v2\n.*?)```").FindSubmatch(doc)
	require.NotNil(t, m, "docs/payout-queue.md has a mermaid state diagram")
	assert.Equal(t, stateDiagram(), string(m[1]), "regenerate the diagram from stateDiagram()")
}

// The table is whole: every state is open (claimed by the workers), final,
// or waits for a person (needs_approval); every transition names known
// states and an actor; every state but the enqueue's targets is reached
// by a transition, and every open state has a way out.
func TestStateTable(t *testing.T) {
	known := States()
	reached := map[IntentState]bool{}
	leaves := map[IntentState]bool{}
	for _, m := range moveDefs {
		assert.Contains(t, known, m.to, m.name)
		assert.Contains(t, []string{byEnqueue, byWorker, byOperator, byBooks}, m.by, m.name)
		assert.Equal(t, m.by == byEnqueue, m.from == nil, "%s: only the enqueue starts from nothing", m.name)
		for _, f := range m.from {
			assert.Contains(t, known, f, m.name)
			assert.False(t, f.IsFinal(), "%s: nothing leaves a final state", m.name)
			leaves[f] = true
		}
		reached[m.to] = true
	}
	for _, d := range stateDefs {
		assert.False(t, d.open && d.final, d.state)
		assert.True(t, reached[d.state], "%s is reached", d.state)
		if !d.final {
			assert.True(t, leaves[d.state], "%s has a way out", d.state)
		}
	}
	assert.True(t, canMove("", StateQueued, byEnqueue))
	assert.True(t, canMove(StateCreated, StateCreated, byWorker), "a poll keeps the state")
	assert.False(t, canMove(StatePaid, StateQueued, byOperator))
	assert.False(t, canMove(StateNeedsApproval, StateQueued, byWorker), "only a person approves")
	assert.True(t, canMove(StateQueued, StateParked, byBooks), "the books park an unsent intent")
	assert.False(t, canMove(StateSending, StateParked, byBooks), "never one a worker is sending")
	assert.False(t, slices.ContainsFunc(moveDefs, func(m moveDef) bool { return m.by == byOperator && m.to == StateSending }),
		"no operator sends")
}

// The moves table in docs/console.md is the code's: a move added or
// changed in Moves and not in the docs fails here.
func TestMovesTableInDocs(t *testing.T) {
	doc, err := os.ReadFile("../docs/console.md")
	require.NoError(t, err)
	assert.Contains(t, string(doc), movesMarkdown(), "regenerate the table from movesMarkdown()")
}
