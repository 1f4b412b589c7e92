package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cryptopay/cryptopay-go/cmd/internal/fakeserve"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

const helpText = `cryptopay: operator CLI for the cryptopay API

Usage: cryptopay [global flags] <command> [flags] [args]

Commands:
  payment get ID        show a payment
  payment wait ID       follow a payment's status live until it is terminal
  payment create        create a payment
  payment tracked       list the payment tracker's payments (--state late, --needs-action);
                        also 'payment tracked show ORDER_ID' with its history,
                        'payment tracked health' (due, overdue, failing, what to do),
                        'payment tracked clear-anomaly ORDER_ID --note TEXT',
                        'payment tracked accept|write-off ORDER_ID --note TEXT' (a payment
                        that needs action, resolved as accepted or written_off)
  payment refund ID     refund a tracked payment, held for approval, never above what it
                        paid (--rule excess|all_paid|amount); prints the customer's claim link
  payment resolve ID    resolve a payment that needed action: --as refunded|accepted|written_off
  payout create         create a payout (asks for confirmation unless --yes)
  payout get ID         show a payout
  payout find           look a payout up by --order-id: exists, not_created or still_unknown
  payout export         write every payout to stdout (--output csv|jsonl)
  payout queue          list the payout queue's intents (--state parked,...); also
                        'payout queue show|approve|reject|retry|resolve|cancel ORDER_ID',
                        'payout queue release|reject-listed ORDER_ID' (one the books parked),
                        'payout queue health'
  payout batch FILE     enqueue a CSV of payouts in the payout queue (--dry-run first)
  balances              show the balances
  books                 prove the books: the payout queue and the payment tracker against the
                        provider, every difference with its exact amount;
                        'books adjust' books a drift it found (--amount, --actor, --note)
  currencies            list the supported currency/network pairs
  webhook url           print the tokened webhook URL for --order-id
  webhook send          post a tokened test event for a payment or payout to a local receiver
  fake                  run the fake API server on loopback
  help                  show this help

Global flags (also accepted after the command; the database commands that never call the API
take only --output after it):
  --base-url URL          API base URL (default $CRYPTOPAY_BASE_URL)
  --api-key-file PATH     read the API key from PATH (default $CRYPTOPAY_API_KEY)
  --output FORMAT         table, json, csv or jsonl, those the command writes (its --help
                          lists them; default: table on a terminal, json otherwise)
  --request-timeout D     timeout of each HTTP attempt (default 30s)

Environment:
  CRYPTOPAY_API_KEY         API key (never pass it as a flag: ps shows flags)
  CRYPTOPAY_BASE_URL        API base URL
  CRYPTOPAY_DATABASE_URL    the payout queue's and payment tracker's PostgreSQL connection
                            string (never printed)
  CRYPTOPAY_CLAIM_KEY       the key that signs 'payment refund' claim links (pgstore/claim): at
                            least 32 bytes, the claim page's Config.Key
  CRYPTOPAY_WEBHOOK_SECRET  webhook secret for 'webhook url' and 'webhook send': the text
                            itself (make it with: openssl rand -base64 32), never decoded;
                            surrounding white space is dropped; at least 16 bytes

Exit codes:
  0    success (payout find: the payout exists)
  1    negative answer: books found drift, a wait ended on a non-success status, payout find says
       not_created, a receiver refused a webhook, a queued intent is not in the
       state the move needs or the approval does not count, payout batch's file
       conflicts with the queue, a health summary shows work overdue, failing or
       waiting for a person
  2    no answer yet: a wait timed out, payout find says still_unknown, books found no
       drift but something undecided or could not finish
  3    the request failed (API error, network, unreadable answer, database error,
       no such queued intent)
  4    outcome unknown: a create may have taken effect; run 'payout find' before retrying;
       payout batch lost the database's answer to its commit: run the same file again
  5    payout create was not confirmed
  64   usage: bad command, flag, argument or configuration (a queue's or tracker's table
       missing or out of date: create it); a bad row in a batch file
  130  interrupted

Amounts are printed exactly as decimal strings (JSON too), never as floats.
Run 'cryptopay <command> --help' for a command's flags.
`

// dispatch parses the global flags in front of the command and runs it.
func (a *app) dispatch(args []string) error {
	fs := flag.NewFlagSet("cryptopay", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	a.global.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(a.stdout, helpText)
			return nil
		}
		if msg := keyOnArgv(args); msg != "" {
			return &exitError{exitUsage, errors.New(msg)}
		}
		return usageErr("%v (see 'cryptopay help')", err)
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fmt.Fprint(a.stderr, helpText)
		return quietExit(exitUsage)
	}
	if err := checkOutputWord(a.global.output); err != nil {
		return err
	}
	name := rest[0]
	checked := args
	if name == "fake" {
		checked = args[:len(args)-len(rest)] // the fake's own -api-key is a test value
	}
	if msg := keyOnArgv(checked); msg != "" {
		return &exitError{exitUsage, errors.New(msg)}
	}
	switch name {
	case "help", "-h", "--help":
		fmt.Fprint(a.stdout, helpText)
		return nil
	case "fake":
		return a.fake(rest[1:])
	case "payment", "payout", "webhook":
		if len(rest) == 1 {
			fmt.Fprint(a.stderr, groupHelp(name))
			return quietExit(exitUsage)
		}
		if slices.Contains([]string{"-h", "--help", "-help", "help"}, rest[1]) {
			fmt.Fprint(a.stdout, groupHelp(name))
			return nil
		}
	}
	cmds := a.commands()
	for n := min(len(rest), 3); n > 0; n-- { // the longest command the words name
		if run, ok := cmds[strings.Join(rest[:n], " ")]; ok {
			return run(rest[n:])
		}
	}
	if name == "payment" || name == "payout" || name == "webhook" {
		return usageErr("unknown command %q (see 'cryptopay %s --help')", name+" "+rest[1], name)
	}
	return usageErr("unknown command %q (see 'cryptopay help')", name)
}

// commands is every command the CLI runs but fake (which takes the fake
// server's own flags), by its words. Each builds its flags from the shared
// sets (TestCommandFlagsComeFromSharedSets walks this table).
func (a *app) commands() map[string]func([]string) error {
	cmds := map[string]func([]string) error{
		"balances": a.balances, "books": a.books, "books adjust": a.booksAdjust, "currencies": a.currencies,

		"payment get": a.paymentGet, "payment wait": a.paymentWait, "payment create": a.paymentCreate,
		"payment tracked": a.trackedList, "payment tracked list": a.trackedList, "payment tracked show": a.trackedShow,
		"payment tracked health": a.trackedHealth,
		"payment resolve":        a.paymentResolve,

		"payout get": a.payoutGet, "payout create": a.payoutCreate, "payout find": a.payoutFind,
		"payout export": a.payoutExport, "payout batch": a.payoutBatch,
		"payout queue": a.queueList, "payout queue list": a.queueList, "payout queue show": a.queueShow,
		"payout queue health": a.queueHealth,

		"webhook url": a.webhookURL, "webhook send": a.webhookSend,
	}
	for _, m := range pgstore.Moves() { // the operators' moves: "payout queue NAME", "payment tracked NAME"
		run := a.runMove
		if isRefund(m) {
			run = a.paymentRefund // it prints the refund and its claim link
		}
		cmds[moveCommand(m).name] = func(args []string) error { return run(m, args) }
	}
	return cmds
}

// groupHelp is the help of a command group ("cryptopay payout --help"):
// its commands, as the top-level help lists them.
func groupHelp(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: cryptopay %s <command> [flags] [args]\n\nCommands:\n", name)
	_, list, _ := strings.Cut(helpText, "\nCommands:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	keep := false
	for line := range strings.Lines(list) {
		if !strings.HasPrefix(line, "   ") { // a command's first line; more indented ones continue it
			keep = strings.HasPrefix(line, "  "+name+" ")
		}
		if keep {
			b.WriteString(line)
		}
	}
	fmt.Fprintf(&b, "\nRun 'cryptopay %s <command> --help' for a command's flags, and 'cryptopay help' for the\n"+
		"global flags, the environment and the exit codes.\n", name)
	return b.String()
}

// fake runs the fake server until the context ends (SIGINT/SIGTERM), with
// the flags of cryptopay-fakeserver.
func (a *app) fake(args []string) error {
	cfg, err := fakeserve.Parse("cryptopay fake", args, io.Discard)
	if errors.Is(err, flag.ErrHelp) {
		_, _ = fakeserve.Parse("cryptopay fake", args, a.stdout)
		return nil
	}
	if err != nil {
		return usageErr("fake: %v", err)
	}
	if cfg.Log != nil {
		cfg.Log = a.stderr
	}
	if err := fakeserve.Serve(a.ctx, "cryptopay fake", cfg, a.stdout); err != nil {
		return usageErr("fake: %v", err)
	}
	return nil
}
