package main

import (
	"context"
	"flag"
	"io"
	"time"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

// app is one invocation: its streams, environment and global settings.
type app struct {
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	isTerminal     func(any) bool
	now            func() time.Time
	login          func() string      // the operating system's user: the login of a move's principal (osLogin)
	clientOpts     []cryptopay.Option // added to the Client's options (tests: a fast retry policy)
	secrets        []string           // the API key and webhook secret once read: never printed
	dbSecrets      []string           // the database connection string and its password: never printed

	global  globalFlags
	format  string // the output format parse settled: outTable, outJSON, outCSV or outJSONL
	csvSafe bool   // --spreadsheet-safe

	seenFlags func(*cmdFlags) // tests: sees each command's flag set as it is parsed
}

// safeText is server or database text (an answer's fields, an error built
// from one) made safe to print: no part of a secret the CLI read, no
// database password, no control character. Every table cell, status line
// and error line goes through it.
func (a *app) safeText(s string) string {
	return termSafe(redactSecrets(dbErrorText(s, a.dbSecrets), a.secrets...))
}

// globalFlags are accepted before the command and after it.
type globalFlags struct {
	baseURL        string
	apiKeyFile     string
	output         string
	requestTimeout time.Duration
}

// command describes one command for its --help.
type command struct {
	name    string // "payout create"
	args    string // "ID", or ""
	summary string
}

// cmdFlags is a command's FlagSet and what its --help prints.
type cmdFlags struct {
	*flag.FlagSet
	cmd    command
	dbOnly bool // works on the database alone: no API flags (newDBFlagSet)
	// formats are the --output values the command writes; the first is
	// the default off a terminal, table (when listed) the default on one.
	formats []string
	// sets names, for each flag a shared set registered, that set.
	sets map[string]string
}
