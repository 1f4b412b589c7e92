// Package riverbench measures pgstore's payout queue side by side with
// River (github.com/riverqueue/river), the most used PostgreSQL job queue
// for Go, doing comparable work in one process against one PostgreSQL
// server and one fake API: each intent is enqueued in the merchant's
// transaction, sent with one create request, and its outcome recorded
// durably (the queue's own row; for River, the merchant's record and the
// job's completion in one transaction).
//
// It is a module of its own, never released (scripts/ holds tooling), so
// that River is no dependency of pgstore: its go.mod points at this
// repository's modules by directory, and its own go.work keeps River's
// requirements out of the repository's workspace. Run it from here:
//
//	go test -run '^$' -bench SideBySide -benchtime 10000x -rounds 5 .
//
// BENCHMARKS.md ("The payout queue beside River") has the figures.
package riverbench
