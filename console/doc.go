// Package console is an operator console for pgstore's payout queue and
// payment tracker, to embed in the merchant's own server: New returns an
// http.Handler to mount under any path prefix, behind the merchant's own
// authentication.
//
// It is server-rendered (html/template, embedded assets, no JavaScript at
// all, a strict Content-Security-Policy) and every page works in any
// browser. There is no user store: Config.Authorize maps each request to an
// Actor (an id and its roles) or refuses it. The server enforces the roles
// (a viewer sees no action, and a viewer's POST is 403); every move names
// its actor in the intent's history; approvals follow the queue's four-eyes
// rule (pgstore.QueueConfig.Approvals), so the console cannot weaken it.
//
// Every unsafe request passes net/http's CrossOriginProtection: a POST
// from another origin is 403 and changes nothing. Every action is
// confirmed on a page of its own; a bulk approve or retry of everything a
// filter matches is confirmed by typing the count. Server text (errors,
// notes, ids) is shown escaped, with control and bidi characters made
// visible (\u202e). No page shows a secret: the console never holds the
// API key, and database errors are logged, not shown.
//
// See docs/console.md for a walk-through and examples/console for a
// program that mounts it behind basic auth.
package console
