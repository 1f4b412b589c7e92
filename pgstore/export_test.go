package pgstore

// SetQueueHook makes q call fn at its named points ("attempt-committed",
// "answer-read"): the crash tests kill the worker there.
func SetQueueHook(q *Queue, fn func(point string)) { q.hook = fn }
